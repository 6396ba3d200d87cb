"""The console over real HTTP and WebSocket on loopback, with aiohttp's own client:
who may open what, the commands and their errors (the MQTT ones), the events, /metrics."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import stat
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.console import Console, serving

from edgevoice.device.console.auth import COOKIE
from edgevoice.device.console.errors import ConsoleError
from edgevoice.device.console.server import bind_warning, is_loopback, parse_listen, safe_next
from edgevoice.device.events import Event, EventType
from edgevoice.device.mqtt.commands import CommandError, parse_request


async def _next(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(5.0):
        while True:
            message = await ws.receive_json()
            if message["type"] == kind:
                return message  # type: ignore[no-any-return]


# --- who may open what ----------------------------------------------------------------


async def test_without_a_token_every_page_socket_and_metrics_are_refused(console: Console) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/captions", "/operator", "/metrics", "/"):
            async with http.get(console.url + path, allow_redirects=False) as response:
                assert response.status == 401, path
                assert response.headers["WWW-Authenticate"] == "Bearer"
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(console.url + "/v1/events")
        assert refused.value.status == 401
        async with http.get(console.url + "/captions", headers=console.bearer("not-the-token")) as response:
            assert response.status == 401


async def test_the_token_lives_in_the_state_dir_is_private_and_survives_a_restart(tmp_path: Path) -> None:
    async with serving(tmp_path) as first:
        token, captions = first.token, first.captions_token
    path = tmp_path / "state" / "console-token"
    assert path.read_text().strip() == token and len(token) >= 40
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert token != captions
    async with serving(tmp_path) as second:
        assert (second.token, second.captions_token) == (token, captions)


def _browser_like() -> aiohttp.ClientSession:
    # A cookie jar that keeps cookies from an IP host (aiohttp's default refuses them).
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def test_login_sets_an_httponly_cookie_and_never_sends_the_token_back(console: Console) -> None:
    async with _browser_like() as http:
        async with http.post(console.url + "/login", data={"token": console.token, "next": "/captions"},
                             allow_redirects=False) as response:
            assert response.status == 303
            assert response.headers["Location"] == "/captions"
            cookie = response.cookies[COOKIE]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
            assert cookie.value != console.token
            assert console.token not in response.headers.get("Set-Cookie", "")
        for path in ("/captions", "/operator", "/static/socket.js", "/static/operator.js"):
            async with http.get(console.url + path) as page:
                assert page.status == 200, path
                body = await page.text()
                assert console.token not in body and console.captions_token not in body
                assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        async with http.ws_connect(console.url + "/v1/events") as ws:  # the cookie serves here
            hello = await _next(ws, "console.hello")
            assert hello["role"] == "full" and hello["state"] == "listening"
            assert console.token not in json.dumps(hello)
        async with http.post(console.url + "/logout", allow_redirects=False) as response:
            assert response.status == 303
        async with http.get(console.url + "/operator", allow_redirects=False) as response:
            assert response.status == 401


async def test_a_login_never_redirects_off_the_device(console: Console) -> None:
    assert safe_next("https://evil.example/x", "/captions") == "/captions"
    assert safe_next("//evil.example/x", "/captions") == "/captions"
    assert safe_next("/operator", "/captions") == "/operator"
    async with aiohttp.ClientSession() as http, http.post(console.url + "/login", allow_redirects=False,
                         data={"token": console.token, "next": "https://evil.example/"}) as response:
        assert response.headers["Location"] == "/operator"


async def test_failed_logins_are_throttled_even_for_the_right_token(console: Console) -> None:
    async with aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(7):
            async with http.post(console.url + "/login", data={"token": "guess"},
                                 allow_redirects=False) as response:
                statuses.append(response.status)
        assert statuses[:5] == [401] * 5 and statuses[-1] == 429
        async with http.post(console.url + "/login", data={"token": console.token},
                             allow_redirects=False) as response:
            assert response.status == 429 and int(response.headers["Retry-After"]) >= 1


async def test_the_captions_token_opens_captions_only_and_takes_no_commands(console: Console) -> None:
    async with _browser_like() as http:
        async with http.get(console.url + "/login", params={"token": console.captions_token},
                            allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"] == "/captions"
        async with http.get(console.url + "/captions") as page:
            assert page.status == 200
        for path in ("/operator", "/metrics"):
            async with http.get(console.url + path) as response:
                assert response.status == 403, path
        async with http.ws_connect(console.url + "/v1/events") as ws:
            assert (await _next(ws, "console.hello"))["role"] == "captions"
            await ws.send_json({"command": "interrupt", "id": 1})
            refused = await _next(ws, "console.error")
            assert refused["error"]["code"] == "forbidden" and refused["id"] == 1
            await ws.send_json({"type": "operator.join"})
            assert (await _next(ws, "console.error"))["error"]["code"] == "forbidden"
    assert console.target.calls == []


async def test_a_socket_from_another_origin_is_refused(console: Console) -> None:
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(console.url + "/v1/events", origin="http://evil.example",
                                  headers=console.bearer())
        assert refused.value.status == 403
        async with http.ws_connect(console.url + "/v1/events", origin=console.url,
                                   headers=console.bearer()) as ws:
            assert (await _next(ws, "console.hello"))["role"] == "full"


async def test_allowed_origins_extend_the_consoles_own(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, 'console.allowed_origins=["https://kiosk.lan"]') as served,
        aiohttp.ClientSession() as http,
        http.ws_connect(served.url + "/v1/events", origin="https://kiosk.lan",
                        headers=served.bearer()) as ws,
    ):
        assert (await _next(ws, "console.hello"))["type"] == "console.hello"


def test_listen_addresses_and_loopback() -> None:
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    for bad in ("8080", "localhost:", "host:99999", ":80"):
        with pytest.raises(ConsoleError):
            parse_listen(bad)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("kiosk.lan")


# --- commands: the MQTT ones, with the same validation and error codes -----------------


def _mqtt_error(name: str, args: dict[str, Any]) -> str:
    try:
        parse_request(name, json.dumps(args).encode())
    except CommandError as err:
        return err.code
    raise AssertionError("the request validated")


async def test_commands_run_and_answer_like_mqtt(console: Console) -> None:
    async with aiohttp.ClientSession(headers=console.bearer()) as http, \
            http.ws_connect(console.url + "/v1/events") as ws:
        await _next(ws, "console.hello")
        sent = [
            {"command": "set_volume", "id": "v", "level": 0.25},
            {"command": "mute", "id": 2, "mic": True},
            {"command": "say", "id": 3, "text": "Welcome"},
            {"command": "interrupt", "id": 4},
            {"command": "reset_session", "id": 5},
        ]
        answers = []
        for message in sent:
            await ws.send_json(message)
            answers.append(await _next(ws, "command.result"))
    assert [a["id"] for a in answers] == ["v", 2, 3, 4, 5]
    assert all(a["ok"] and a["device"] == "test-device" for a in answers)
    assert answers[0]["result"] == {"volume": 0.25} and answers[1]["result"] == {"mic_muted": True}
    assert console.target.calls == [("set_volume", 0.25), ("mute", True), ("say", "Welcome"),
                                    ("interrupt", None), ("reset_session", None)]


@pytest.mark.parametrize(("message", "code"), [
    ({"command": "set_volume", "level": 2}, "invalid_argument"),
    ({"command": "set_volume", "level": "loud"}, "invalid_argument"),
    ({"command": "set_volume"}, "missing_argument"),
    ({"command": "mute", "mic": "yes"}, "invalid_argument"),
    ({"command": "say", "text": "  "}, "invalid_argument"),
    ({"command": "interrupt", "now": True}, "invalid_argument"),
])
async def test_bad_commands_get_the_mqtt_error_codes(console: Console, message: dict[str, Any],
                                                     code: str) -> None:
    args = {k: v for k, v in message.items() if k != "command"}
    assert _mqtt_error(message["command"], args) == code  # the same check MQTT runs
    async with aiohttp.ClientSession(headers=console.bearer()) as http, \
            http.ws_connect(console.url + "/v1/events") as ws:
        await _next(ws, "console.hello")
        await ws.send_json({**message, "id": "x"})
        answer = await _next(ws, "command.result")
    assert answer["ok"] is False and answer["id"] == "x"
    assert answer["error"]["code"] == code and answer["error"]["message"]
    assert console.target.calls == []


async def test_fleet_only_commands_and_garbage_are_refused(console: Console) -> None:
    async with aiohttp.ClientSession(headers=console.bearer()) as http, \
            http.ws_connect(console.url + "/v1/events") as ws:
        await _next(ws, "console.hello")
        await ws.send_json({"command": "restart", "id": 9})
        answer = await _next(ws, "command.result")
        assert answer["error"]["code"] == "unknown_command" and "MQTT" in answer["error"]["message"]
        await ws.send_str("{not json")
        assert (await _next(ws, "console.error"))["error"]["code"] == "invalid_json"
        await ws.send_str("[1, 2]")
        assert (await _next(ws, "console.error"))["error"]["code"] == "invalid_request"
        await ws.send_json({"command": "ping", "id": 10})
        pong = await _next(ws, "command.result")
        assert pong["ok"] and pong["result"]["pong"] is True
    assert console.target.calls == []


async def test_commands_are_rate_limited(console: Console) -> None:
    # The fixture allows a burst of 5 at 0.5 per second.
    async with aiohttp.ClientSession(headers=console.bearer()) as http, \
            http.ws_connect(console.url + "/v1/events") as ws:
        await _next(ws, "console.hello")
        answers = []
        for n in range(7):
            await ws.send_json({"command": "interrupt", "id": n})
            answers.append(await _next(ws, "command.result"))
    assert [a["ok"] for a in answers] == [True] * 5 + [False, False]
    assert answers[-1]["error"]["code"] == "rate_limited" and answers[-1]["error"]["retry_after_s"] > 0
    assert len(console.target.calls) == 5


# --- events ---------------------------------------------------------------------------


async def test_events_arrive_as_edgevoice_run_events_prints_them(console: Console) -> None:
    async with aiohttp.ClientSession(headers=console.bearer()) as http, \
            http.ws_connect(console.url + "/v1/events") as ws:
        await _next(ws, "console.hello")
        event = Event(EventType.TRANSCRIPT_USER, {"text": "hello there", "confidence": 0.9})
        console.bus.publish(event)
        console.bus.emit(EventType.STATE_CHANGED, state="thinking", previous="listening")
        assert await _next(ws, "transcript.user") == event.as_dict()
        changed = await _next(ws, "state.changed")
        assert changed["state"] == "thinking" and changed["previous"] == "listening" and changed["ts"] > 0


async def test_without_transcripts_the_words_are_withheld(tmp_path: Path) -> None:
    async with serving(tmp_path) as served, aiohttp.ClientSession(headers=served.bearer()) as http, \
            http.ws_connect(served.url + "/v1/events") as ws:
        assert (await _next(ws, "console.hello"))["transcripts"] is False
        served.bus.emit(EventType.TRANSCRIPT_USER, text="my name is alice")
        served.bus.emit(EventType.REPLY_DONE, utterance_id="u1", status="interrupted", heard_text="Nice")
        served.bus.emit(EventType.STATE_CHANGED, state="listening", previous="speaking")
        done = await _next(ws, "reply.done")
        assert done["status"] == "interrupted" and "heard_text" not in done
        await _next(ws, "state.changed")
        # Nothing else was queued in between: the transcript event never went out.
        served.bus.emit(EventType.MIC_MUTED, muted=True)
        assert (await ws.receive_json())["type"] == "mic.muted"


# --- /metrics --------------------------------------------------------------------------


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_metrics_parse_with_prometheus_clients_own_parser(console: Console) -> None:
    bus = console.bus
    bus.emit(EventType.METRICS_TURN, turn_id="t1", status="completed",
             stages_ms={"endpoint": 320.0, "first_text": 41.0, "voice_to_voice": 612.0})
    bus.emit(EventType.METRICS_TURN, turn_id="t2", status="interrupted",
             stages_ms={"voice_to_voice": 1450.0, "interrupt_to_silence": 210.0})
    bus.emit(EventType.BARGE_IN, onset_s=1.0, detected_s=1.2)
    bus.emit(EventType.AUDIO_XRUN, device="duplex", overruns=2, underruns=1, new=3)
    bus.emit(EventType.REPLY_DONE, utterance_id="u3", status="failed",
             error={"code": "agent_timeout", "message": "slow"})
    async with aiohttp.ClientSession(headers=console.bearer()) as http:
        # CPU use is measured between two scrapes (the first has no interval to report)
        async with http.get(console.url + "/metrics") as first:
            assert first.status == 200
        await asyncio.sleep(0.1)  # > one kernel tick, so /proc/stat has moved
        async with http.get(console.url + "/metrics") as response:
            assert response.status == 200 and response.content_type == "text/plain"
            samples = _samples(await response.text())
    assert samples[("edgevoice_turns_total", (("status", "completed"),))] == 1
    assert samples[("edgevoice_turns_total", (("status", "interrupted"),))] == 1
    assert samples[("edgevoice_barge_ins_total", ())] == 1
    assert samples[("edgevoice_audio_xruns_total", (("device", "duplex"),))] == 3
    assert samples[("edgevoice_agent_errors_total", (("code", "agent_timeout"),))] == 1
    v2v = (("stage", "voice_to_voice"),)
    assert samples[("edgevoice_stage_latency_seconds_count", v2v)] == 2
    assert samples[("edgevoice_stage_latency_seconds_sum", v2v)] == pytest.approx(2.062)
    assert samples[("edgevoice_stage_latency_seconds_bucket", (("le", "0.75"), *v2v))] == 1
    assert samples[("edgevoice_stage_latency_seconds_bucket", (("le", "0.5"), ("stage", "endpoint")))] == 1
    assert samples[("edgevoice_echo_reduction_db", ())] == 23.5
    assert samples[("edgevoice_state", (("state", "listening"),))] == 1
    assert samples[("edgevoice_state", (("state", "speaking"),))] == 0
    assert samples[("edgevoice_memory_total_bytes", ())] > 0
    total = samples[("edgevoice_memory_total_bytes", ())]
    assert 0 < samples[("edgevoice_memory_available_bytes", ())] <= total
    assert samples[("process_resident_memory_bytes", ())] > 0
    assert ("edgevoice_cpu_percent", ()) in samples


# --- TLS and the bind warning ----------------------------------------------------------


def _self_signed(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "console.pem", folder / "console.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


async def test_over_tls_the_cookie_is_secure_and_the_socket_is_wss(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path / "tls")
    trust = ssl.create_default_context(cafile=str(cert))
    async with serving(tmp_path, f"console.tls_cert={cert}", f"console.tls_key={key}") as served:
        assert served.url.startswith("https://127.0.0.1:")
        connector = aiohttp.TCPConnector(ssl=trust)
        async with aiohttp.ClientSession(connector=connector,
                                         cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(served.url + "/login", data={"token": served.token},
                                 allow_redirects=False) as response:
                assert response.cookies[COOKIE]["secure"]
            async with http.ws_connect(served.url.replace("https", "wss") + "/v1/events",
                                       origin=served.url) as ws:
                assert (await _next(ws, "console.hello"))["role"] == "full"


async def test_half_a_tls_setting_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    cert, _ = _self_signed(tmp_path / "tls")
    with pytest.raises(ConsoleError, match="tls_cert and tls_key go together"):
        async with serving(tmp_path, f"console.tls_cert={cert}"):
            pass


def test_only_a_non_loopback_address_without_tls_is_warned_about() -> None:
    assert bind_warning("127.0.0.1", tls=False) is None
    assert bind_warning("::1", tls=False) is None
    assert bind_warning("0.0.0.0", tls=True) is None
    warning = bind_warning("0.0.0.0", tls=False)
    assert warning is not None and "tls_cert" in warning
