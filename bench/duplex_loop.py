"""Duplex loop cost: CPU per second of audio and the worst iteration.

    ./dev bench duplex_loop [--seconds 10]

Runs the real DuplexLoop (capture + reference + playback, frames handed to an asyncio
consumer) against alsa-lib virtual devices (file capture of a 4-channel array, file
playback) and against the simulated room, unpaced so the figures are pure cost. Beside
each ALSA case, the raw engine: a bare pyalsaaudio read()+write() loop on the same
devices, with no conversion. Target on a 2-core x86 machine: <= 2 % of one core and no
iteration over 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.alsa_devices import AlsaDevices, start_fifo_writer, write_alsa_config, write_raw

from edgevoice.audio.io.backend import AudioBackend
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.speaking.playback import Speaker

PERIOD = 160  # 10 ms at 16 kHz


async def _run_loop(backend: AudioBackend, seconds: float, speech: bool) -> dict[str, float]:
    speaker = Speaker(PERIOD)
    if speech:  # keep the speaker busy: the reference is real signal, the echo path works
        rng = np.random.default_rng(1)
        speaker.enqueue((rng.standard_normal(int(seconds * 16000)) * 3000).astype(np.int16),
                        utterance_id="bench")
    duplex = DuplexLoop(backend, speaker, queue_periods=200)
    periods = int(seconds * 100)
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    duplex.start(asyncio.get_running_loop())
    count = 0
    async for _frame in duplex.frames():
        count += 1
        if count >= periods:
            break
    wall = time.perf_counter() - wall0
    process_cpu = time.process_time() - cpu0
    duplex.stop()
    stats = duplex.stats
    audio_s = count * PERIOD / 16000
    return {
        "audio_s": audio_s,
        "thread_pct": 100.0 * stats.thread_cpu_s / audio_s,
        "process_pct": 100.0 * process_cpu / audio_s,
        "worst_ms": stats.max_iteration_ms,
        "worst_cpu_ms": stats.max_iteration_cpu_ms,
        "speed": audio_s / wall,
    }


def _raw_alsa(capture: str, playback: str, *, channels: int, rate: int, fmt: str, out_channels: int,
              seconds: float) -> dict[str, float]:
    import alsaaudio

    period = rate // 100
    out_rate = rate
    out_period = out_rate // 100
    cap = alsaaudio.PCM(alsaaudio.PCM_CAPTURE, device=capture, channels=channels, rate=rate,
                        format=getattr(alsaaudio, f"PCM_FORMAT_{fmt}"), periodsize=period, periods=4)
    play = alsaaudio.PCM(alsaaudio.PCM_PLAYBACK, device=playback, channels=out_channels, rate=out_rate,
                         format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=out_period, periods=4)
    silence = bytes(out_period * out_channels * 2)
    periods = int(seconds * 100)
    worst = 0.0
    cpu0 = time.process_time()
    for _ in range(periods):
        start = time.perf_counter()
        cap.read()
        play.write(silence)
        worst = max(worst, time.perf_counter() - start)
    cpu = time.process_time() - cpu0
    cap.close()
    play.close()
    audio_s = periods / 100
    return {"audio_s": audio_s, "thread_pct": 100 * cpu / audio_s, "process_pct": 100 * cpu / audio_s,
            "worst_ms": worst * 1000, "worst_cpu_ms": float("nan"), "speed": 0.0}


def _paced(devices: AlsaDevices, folder: Path, source: Path, *, rate: int, fmt: str, out_channels: int,
           seconds: float) -> dict[str, float]:
    """The loop as it runs on a card: reads block until the next period arrives (a FIFO
    written at 1x by another process), so the thread sleeps between periods."""
    from edgevoice.audio.io.alsa import AlsaBackend

    fifo = folder / f"mic{rate}.fifo"
    writer = start_fifo_writer(fifo, source, (rate // 100) * 4 * (4 if fmt == "S32_LE" else 2), 0.01)
    try:
        backend = AlsaBackend(PERIOD, capture_device=devices.mic(fifo, 4, rate, fmt),
                              playback_device=devices.speaker(folder / f"paced{rate}.raw", out_channels,
                                                              rate),
                              capture_channels=4, capture_rate=rate, capture_format=fmt,
                              mic_channels=(0, 1, 2), reference_channel=3, playback_rate=rate,
                              playback_channels=out_channels)
        result = asyncio.run(_run_loop(backend, seconds, True))
    finally:
        writer.kill()
        writer.wait()
    # Wall time per iteration includes the wait for the next period here: not a cost.
    return {**result, "worst_ms": float("nan"), "worst_of_all_ms": float("nan")}


def _paced_raw(devices: AlsaDevices, folder: Path, source: Path, *, rate: int, fmt: str,
               out_channels: int, seconds: float) -> dict[str, float]:
    """The raw engine on the same FIFO: what blocking reads alone cost per second."""
    fifo = folder / f"raw{rate}.fifo"
    writer = start_fifo_writer(fifo, source, (rate // 100) * 4 * (4 if fmt == "S32_LE" else 2), 0.01)
    try:
        result = _raw_alsa(devices.mic(fifo, 4, rate, fmt),
                           devices.speaker(folder / f"rawpaced{rate}.raw", out_channels, rate),
                           channels=4, rate=rate, fmt=fmt, out_channels=out_channels, seconds=seconds)
    finally:
        writer.kill()
        writer.wait()
    return {**result, "worst_ms": float("nan"), "worst_of_all_ms": float("nan")}


def _best(repeat: int, run: Callable[[], dict[str, float]]) -> dict[str, float]:
    results = [run() for _ in range(max(1, repeat))]
    best = min(results, key=lambda r: r["thread_pct"])
    return {**best, "worst_ms": min(r["worst_ms"] for r in results),
            "worst_of_all_ms": max(r["worst_ms"] for r in results),
            "worst_cpu_ms": max(r["worst_cpu_ms"] for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="audio per case (default 10)")
    parser.add_argument("--paced-seconds", type=float, default=5.0,
                        help="audio for the real-time runs through a FIFO (0: skip; default 5)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per case; the least CPU and the least worst-iteration are kept, "
                             "so other load on the machine does not count (default 3)")
    args = parser.parse_args()
    seconds = args.seconds
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["ALSA_CONFIG_PATH"] = write_alsa_config(folder / "alsa")
        devices = AlsaDevices(folder)
        rng = np.random.default_rng(0)
        for rate, fmt, out_channels in ((16000, "S16_LE", 1), (48000, "S32_LE", 2)):
            frames = (rng.standard_normal((int(rate * (seconds + 1)), 4)) * 3000).astype(np.int64)
            if fmt == "S32_LE":
                frames <<= 16
            mic = write_raw(folder / f"mic{rate}.raw", frames, fmt)
            capture = devices.mic(mic, 4, rate, fmt)
            playback = devices.speaker(folder / f"spk{rate}.raw", out_channels, rate)

            def make(capture: str = capture, playback: str = playback, rate: int = rate,
                     fmt: str = fmt, out_channels: int = out_channels) -> AudioBackend:
                from edgevoice.audio.io.alsa import AlsaBackend

                return AlsaBackend(PERIOD, capture_device=capture, playback_device=playback,
                                   capture_channels=4, capture_rate=rate, capture_format=fmt,
                                   mic_channels=(0, 1, 2), reference_channel=3,
                                   playback_rate=rate, playback_channels=out_channels, paced=False)

            label = f"ALSA {rate // 1000} kHz/10 ms, 4 ch {fmt} (3 mics + loopback), play {out_channels} ch"
            rows.append((f"{label}: edgevoice",
                         _best(args.repeat, lambda make=make: asyncio.run(_run_loop(make(), seconds, True)))))
            rows.append((f"{label}: raw pyalsaaudio read+write",
                         _best(args.repeat, lambda capture=capture, playback=playback, rate=rate, fmt=fmt,
                               out_channels=out_channels: _raw_alsa(
                                   capture, playback, channels=4, rate=rate, fmt=fmt,
                                   out_channels=out_channels, seconds=seconds))))
            if args.paced_seconds > 0:
                rows.append((f"{label}: edgevoice, paced at 1x through a FIFO",
                             _paced(devices, folder, mic, rate=rate, fmt=fmt, out_channels=out_channels,
                                    seconds=args.paced_seconds)))
                rows.append((f"{label}: raw pyalsaaudio read+write, paced at 1x through a FIFO",
                             _paced_raw(devices, folder, mic, rate=rate, fmt=fmt, out_channels=out_channels,
                                        seconds=args.paced_seconds)))

        from edgevoice.audio.io.room import SimulatedRoom

        for rt60 in (0.0, 0.25):
            def room(rt60: float = rt60) -> dict[str, float]:
                backend = SimulatedRoom(PERIOD, speed=0, rt60_s=rt60, echo_delay_ms=30, noise_dbfs=-60)
                return asyncio.run(_run_loop(backend, seconds, True))

            rows.append((f"room 16 kHz/10 ms, RT60 {rt60:g} s, speech playing", _best(args.repeat, room)))

    load = os.getloadavg()[0]
    print(f"\nDuplex loop cost, {seconds:g} s of audio per case, best of {args.repeat} "
          f"({os.cpu_count()} cores, load average {load:.1f})\n")
    width = max(len(name) for name, _ in rows)
    head = ("audio thread CPU %", "process CPU %", "worst iteration CPU ms",
            "worst iteration wall ms (best run / all)", "x real time")
    print(f"| {'case':<{width}} | " + " | ".join(head) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(h) + 1) + ":" for h in head) + "|")
    for name, r in rows:
        cells = (f"{r['thread_pct']:.2f}", f"{r['process_pct']:.2f}",
                 "-" if r["worst_cpu_ms"] != r["worst_cpu_ms"] else f"{r['worst_cpu_ms']:.2f}",
                 "-" if r["worst_ms"] != r["worst_ms"]
                 else f"{r['worst_ms']:.2f} / {r['worst_of_all_ms']:.2f}",
                 f"{r['speed']:.0f}" if r["speed"] else "-")
        print(f"| {name:<{width}} | " + " | ".join(f"{c:>{len(h)}}" for c, h in zip(cells, head, strict=True))
              + " |")
    print("\nCPU % is CPU seconds per second of audio in % of one core ('process' adds the asyncio "
          "consumer).\nWorst iteration: read + conversion + write + hand-over of one period, as CPU time "
          "(the work)\nand as wall time (on a loaded machine preemptions and GIL waits land in it too).")


if __name__ == "__main__":
    main()
