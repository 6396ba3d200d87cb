"""``/metrics``: the device in Prometheus's text format (``prometheus-client``).

Counters and histograms are fed from the event bus (``metrics.turn``, ``barge_in``,
``audio.xrun``, ``reply.done``); gauges that are states rather than events (echo
reduction, CPU, temperature, memory) are read when Prometheus scrapes. Each console
has its own registry, so two daemons in one process (tests) never share series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from edgevoice.device.events import Event, EventType
from edgevoice.device.system.sysinfo import SystemSampler

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds: from a fast endpoint decision (~50 ms) to a slow cloud agent's first token.
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)


class _Gauges(Collector):
    """Gauges read at scrape time from the device's telemetry and /proc."""

    def __init__(self, telemetry: Callable[[], Mapping[str, Any]], sampler: SystemSampler) -> None:
        self._telemetry = telemetry
        self._sampler = sampler

    def collect(self) -> Iterator[GaugeMetricFamily]:
        data = self._telemetry()
        echo = data.get("echo_reduction_db")
        if echo is not None:
            yield GaugeMetricFamily("edgevoice_echo_reduction_db",
                                    "Echo removed by the canceller (ERLE), dB, as last measured.",
                                    value=float(echo))
        state = data.get("state")
        if state:
            family = GaugeMetricFamily("edgevoice_state", "1 for the conversation's current state.",
                                       labels=["state"])
            for name in ("idle", "listening", "thinking", "speaking", "muted"):
                family.add_metric([name], 1.0 if state == name else 0.0)
            yield family
        stats = self._sampler.sample()
        for name, doc, value in (
            ("edgevoice_cpu_percent", "System CPU use since the previous scrape, percent.",
             stats.cpu_percent),
            ("edgevoice_soc_temperature_celsius", "SoC temperature.", stats.soc_temp_c),
            ("edgevoice_memory_total_bytes", "Physical memory.", stats.mem_total_bytes),
            ("edgevoice_memory_available_bytes", "Memory available to new work (MemAvailable).",
             stats.mem_available_bytes),
            ("edgevoice_load_1m", "System load average over one minute.", stats.load_1m),
        ):
            if value is not None:
                yield GaugeMetricFamily(name, doc, value=float(value))


class ConsoleMetrics:
    def __init__(self, telemetry: Callable[[], Mapping[str, Any]],
                 sampler: SystemSampler | None = None) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.turns = Counter("edgevoice_turns", "Replies by how they ended.", ["status"], registry=registry)
        self.barge_ins = Counter("edgevoice_barge_ins", "Times the person talked over a reply.",
                                 registry=registry)
        self.latency = Histogram("edgevoice_stage_latency_seconds",
                                 "Per-turn latency of each stage (metrics.turn stages_ms).", ["stage"],
                                 buckets=LATENCY_BUCKETS, registry=registry)
        self.xruns = Counter("edgevoice_audio_xruns", "ALSA overruns and underruns.", ["device"],
                             registry=registry)
        self.agent_errors = Counter("edgevoice_agent_errors", "Failed replies by error code.", ["code"],
                                    registry=registry)
        self.errors = Counter("edgevoice_errors", "error events by source and code.", ["source", "code"],
                              registry=registry)
        registry.register(_Gauges(telemetry, sampler or SystemSampler()))
        registry.register(ProcessCollector(registry=None))

    def on_event(self, event: Event) -> None:
        data = event.data
        kind = event.type
        if kind == EventType.METRICS_TURN:
            self.turns.labels(str(data.get("status") or "unknown")).inc()
            for stage, ms in (data.get("stages_ms") or {}).items():
                if isinstance(ms, int | float) and ms >= 0:
                    self.latency.labels(stage).observe(ms / 1000.0)
        elif kind == EventType.BARGE_IN:
            self.barge_ins.inc()
        elif kind == EventType.AUDIO_XRUN:
            new = data.get("new")
            if isinstance(new, int) and new > 0:
                self.xruns.labels(str(data.get("device", ""))).inc(new)
        elif kind == EventType.REPLY_DONE and data.get("status") == "failed":
            error = data.get("error") or {}
            self.agent_errors.labels(str(error.get("code") or "unknown")).inc()
        elif kind == EventType.ERROR:
            self.errors.labels(str(data.get("source", "")), str(data.get("code", ""))).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
