"""Bad input and faults, each against a real server on loopback: every one ends the turn
with an AgentError carrying a stable code, after yielding what had arrived."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support.agent_server import serve
from support.raw_http import raw_server, read_request

from edgevoice.device.agents import AgentClient, AgentError, UserTurn, build_agent
from edgevoice.device.config.loader import build_config
from edgevoice.device.config.schema import Config


def agent_config(url: str, **llm: Any) -> Config:
    return build_config([("test", {"llm": {"provider": "agent", **llm},
                                   "agent": {"url": url, "timeout_ms": 2000}})])


def openai_config(base_url: str, **openai: Any) -> Config:
    return build_config([("test", {"llm": {"provider": "openai", "tools": []},
                                   "openai": {"base_url": base_url, "timeout_ms": 3000, **openai}})])


async def run_turn(client: AgentClient, text: str = "hello") -> tuple[str, AgentError | None]:
    got: list[str] = []
    error: AgentError | None = None
    try:
        async with asyncio.timeout(10):  # a wedged turn fails the test instead of hanging
            async for delta in client.reply(UserTurn(text)):
                got.append(delta)
    except AgentError as err:
        error = err
    finally:
        await client.aclose()
    return "".join(got), error


def app_with(handler: Any, path: str = "/agent") -> web.Application:
    app = web.Application()
    app.router.add_post(path, handler)
    return app


async def test_malformed_json() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b'{"text": "unterminated', content_type="application/json")

    async with serve(app_with(handler)) as url:
        text, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert text == "" and err is not None and err.code == "agent_bad_reply"
    assert "not valid JSON" in err.message


async def test_json_without_text_field() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"answer": "wrong key"})

    async with serve(app_with(handler)) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert err is not None and err.code == "agent_bad_reply"


async def test_json_response_alias() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"response": "via the alias"})

    async with serve(app_with(handler)) as url:
        text, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert (text, err) == ("via the alias", None)


async def test_sse_garbage_lines_are_ignored() -> None:
    body = (b"garbage line\n: comment\nretry: 10\ndata: {\"delta\": \"Hello \"}\n\n"
            b"\x00\xffnonsense\n\ndata: raw words\n\ndata: {\"other\": 1}\n\ndata: [DONE]\n\n"
            b"data: {\"delta\": \"after done\"}\n\n")

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/event-stream")

    async with serve(app_with(handler)) as url:
        text, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert (text, err) == ("Hello raw words", None)


async def test_sse_with_only_garbage_fails() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"what\nis\nthis\n\n", content_type="text/event-stream")

    async with serve(app_with(handler)) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert err is not None and err.code == "agent_bad_reply"


async def test_openai_garbage_data_line_fails_after_what_arrived() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Partial. "}, "finish_reason": None}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: <html>oops</html>\n\n".encode()

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/event-stream")

    async with serve(app_with(handler, "/v1/chat/completions")) as url:
        text, err = await run_turn(build_agent(openai_config(url + "/v1")))
    assert text == "Partial. " and err is not None and err.code == "agent_bad_reply"


async def test_reply_without_content_type() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        await writer.drain()

    async with raw_server(handler) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert err is not None and err.code == "agent_bad_reply" and "Content-Type" in err.message


async def test_reply_over_the_cap_is_truncated(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(50):
            await response.write(b"0123456789" * 5)
        await response.write_eof()
        return response

    async with serve(app_with(handler)) as url:
        text, err = await run_turn(build_agent(agent_config(url + "/agent", max_reply_chars=120)))
    assert len(text) == 120 and err is not None and err.code == "agent_reply_too_large"
    assert "passed 120 characters" in caplog.text


async def test_buffered_reply_over_the_cap() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"text": "x" * 200_000})

    async with serve(app_with(handler)) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent", max_reply_chars=100)))
    assert err is not None and err.code == "agent_reply_too_large"


async def test_connection_reset_mid_stream_yields_what_arrived() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"d\r\nHello there. \r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.transport.abort()

    async with raw_server(handler) as url:
        text, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert text == "Hello there. " and err is not None and err.code == "agent_connection_lost"


@pytest.mark.parametrize("status", [401, 404, 500, 503])
async def test_http_status_fails_the_turn(status: int, caplog: pytest.LogCaptureFixture) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text="nope " + "y" * 1000)

    async with serve(app_with(handler)) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert err is not None and err.code == "agent_http_status"
    assert err.as_dict()["status"] == str(status)
    assert f"answered {status}" in caplog.text and "y" * 400 not in caplog.text  # truncated
    if status == 401:
        assert "api_key" in err.message


async def test_dns_failure() -> None:
    _, err = await run_turn(build_agent(agent_config("http://nonexistent.invalid/agent")))
    assert err is not None and err.code == "agent_dns"


async def test_connection_refused() -> None:
    async with raw_server(read_request) as url:  # take a free port, then close it
        pass
    _, err = await run_turn(build_agent(agent_config(url + "/agent")))
    assert err is not None and err.code == "agent_unreachable"


async def test_tls_verification_failure(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    openssl = await asyncio.create_subprocess_exec(
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
        "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    assert await openssl.wait() == 0
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"text": "secret"})

    async with serve(app_with(handler), ssl_context=context) as url:
        _, err = await run_turn(build_agent(agent_config(url + "/agent")))
        # Trusting the test's own certificate as ca_file is not enough (CN, not SAN), but
        # verify_tls = false lets a lab server through.
        lab = build_config([("t", {"llm": {"provider": "agent"},
                                   "agent": {"url": url + "/agent", "verify_tls": False}})])
        text, lab_err = await run_turn(build_agent(lab))
    assert err is not None and err.code == "agent_tls"
    assert (text, lab_err) == ("secret", None)


async def test_server_that_never_answers() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(30)

    async with raw_server(handler) as url:
        config = build_config([("t", {"llm": {"provider": "agent"},
                                      "agent": {"url": url + "/agent", "timeout_ms": 300}})])
        started = time.monotonic()
        _, err = await run_turn(build_agent(config))
    assert err is not None and err.code == "agent_timeout"
    assert time.monotonic() - started < 1.5


async def test_trickle_is_bounded_by_the_whole_turn_budget() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n")
        for byte in b"Trickling along":
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(1.0)

    async with raw_server(handler) as url:
        config = build_config([("t", {"llm": {"provider": "agent"},
                                      "agent": {"url": url + "/agent", "timeout_ms": 1500}})])
        started = time.monotonic()
        text, err = await run_turn(build_agent(config))
    elapsed = time.monotonic() - started
    assert err is not None and err.code == "agent_timeout"
    assert text == "Tr" and 1.4 < elapsed < 2.5


async def test_openai_idle_stream_is_resent_once_then_fails() -> None:
    requests: list[float] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        requests.append(time.monotonic())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        role = {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
        await response.write(f"data: {json.dumps(role)}\n\n".encode())
        await asyncio.sleep(5)
        return response

    async with serve(app_with(handler, "/v1/chat/completions")) as url:
        _, err = await run_turn(build_agent(openai_config(url + "/v1", idle_timeout_ms=200)))
    assert err is not None and err.code == "agent_idle_timeout"
    assert len(requests) == 2


async def test_openai_heartbeats_keep_a_slow_stream_alive() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for _ in range(6):
            await response.write(b": keep-alive\n\n")
            await asyncio.sleep(0.1)
        for delta in ({"role": "assistant", "content": ""}, {"content": "Done."}):
            chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await response.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
        return response

    async with serve(app_with(handler, "/v1/chat/completions")) as url:
        text, err = await run_turn(build_agent(openai_config(url + "/v1", idle_timeout_ms=300)))
    assert (text, err) == ("Done.", None)


async def test_openai_endpoint_that_will_not_stream() -> None:
    async def plain_json(request: web.Request) -> web.Response:
        return web.json_response({"choices": [{"message": {"content": "whole"}}]})

    async def refuses(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "stream is not supported"}}, status=400)

    async with serve(app_with(plain_json, "/v1/chat/completions")) as url:
        _, err = await run_turn(build_agent(openai_config(url + "/v1")))
    async with serve(app_with(refuses, "/v1/chat/completions")) as url:
        _, err2 = await run_turn(build_agent(openai_config(url + "/v1")))
    for error in (err, err2):
        assert error is not None and error.code == "agent_stream_refused" and "stream" in error.message


async def test_ollama_error_line_and_homeassistant_bad_reply() -> None:
    async def ollama(request: web.Request) -> web.Response:
        return web.Response(body=b'{"error": "model is loading"}\n', content_type="application/x-ndjson")

    async def assist(request: web.Request) -> web.Response:
        return web.json_response({"response": {"speech": {}}})

    async with serve(app_with(ollama, "/api/chat")) as url:
        cfg = build_config([("t", {"llm": {"provider": "ollama"}, "ollama": {"base_url": url}})])
        _, err = await run_turn(build_agent(cfg))
    async with serve(app_with(assist, "/api/conversation/process")) as url:
        cfg = build_config([("t", {"llm": {"provider": "homeassistant"}, "homeassistant": {"url": url}})])
        _, err2 = await run_turn(build_agent(cfg))
    assert err is not None and err.code == "agent_bad_reply" and "model is loading" in err.message
    assert err2 is not None and err2.code == "agent_bad_reply"
