"""The HTTP transport every networked provider shares: one aiohttp session, error mapping,
deadline- and idle-bounded reads, non-2xx handling, connection closing on barge-in."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from edgevoice.device.agents.errors import (
    AgentBadReplyError,
    AgentConfigError,
    AgentConnectionLostError,
    AgentDnsError,
    AgentError,
    AgentHttpStatusError,
    AgentIdleTimeoutError,
    AgentTimeoutError,
    AgentTlsError,
    AgentUnreachableError,
)

_LOGGER = logging.getLogger(__name__)

ERROR_BODY_LOG_CHARS = 300
_ERROR_BODY_READ = 4096

_STATUS_HINTS = {
    400: "the agent rejected the request; check the model name and options",
    401: "the agent refused the credentials; check the api_key/token in the config",
    403: "the agent refused access; check the api_key/token and its permissions",
    404: "nothing answers at that route; check the URL in the config",
    408: "the agent timed out the request",
    429: "the agent is rate-limiting this device; wait and try again",
    500: "the agent server failed; see its logs",
    502: "a proxy in front of the agent could not reach it",
    503: "the agent is unavailable (overloaded or starting); try again later",
    504: "a proxy in front of the agent timed out",
}


def status_hint(status: int) -> str:
    if status in _STATUS_HINTS:
        return _STATUS_HINTS[status]
    return "the agent server failed; see its logs" if status >= 500 else "the agent rejected the request"


def bearer(token: str) -> dict[str, str]:
    """``Authorization: Bearer`` when a token is set; nothing otherwise."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def _ssl_setting(verify: bool, ca_file: str) -> ssl.SSLContext | bool:
    if not verify:
        return False
    if ca_file:
        try:
            return ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as err:
            raise AgentConfigError(f"cannot load the CA file {ca_file!r}: {err}") from err
    return True


class HttpTransport:
    """One pooled aiohttp session for one provider; created on first use."""

    def __init__(self, *, provider: str, verify_tls: bool = True, ca_file: str = "") -> None:
        self.provider = provider
        self._ssl = _ssl_setting(verify_tls, ca_file)
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=4, ttl_dns_cache=300, ssl=self._ssl)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None)
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @asynccontextmanager
    async def post(
        self,
        url: str,
        *,
        json_body: Mapping[str, Any],
        headers: Mapping[str, str],
        deadline: float,
        what: str,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST and hand over a 2xx response; its connection is closed unless fully read.

        Any non-2xx status raises :class:`AgentHttpStatusError` with the body logged
        (truncated). Cancellation (barge-in) closes the connection at once.
        """
        session = self._get_session()
        response: aiohttp.ClientResponse | None = None
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    response = await session.post(url, json=json_body, headers=dict(headers))
            except AgentError:
                raise
            except Exception as err:
                raise self.wrap(err, what=what, url=url, started=False) from err
            if response.status >= 300:
                await self._fail_status(response, deadline, what, url)
            yield response
        finally:
            if response is not None and not response.closed:
                # Not read to the end (barge-in, error, cap): drop the connection now.
                if response.content.at_eof():
                    response.release()
                else:
                    response.close()

    async def _fail_status(
        self, response: aiohttp.ClientResponse, deadline: float, what: str, url: str
    ) -> None:
        body = ""
        try:
            async with asyncio.timeout_at(min(deadline, asyncio.get_running_loop().time() + 2.0)):
                raw = await response.content.read(_ERROR_BODY_READ)
            body = raw.decode("utf-8", errors="replace")
        except asyncio.CancelledError:
            raise
        except Exception:  # the status alone still explains the failure
            body = ""
        shown = body[:ERROR_BODY_LOG_CHARS] + ("…" if len(body) > ERROR_BODY_LOG_CHARS else "")
        _LOGGER.warning("%s answered %s %s: %s", what, response.status, response.reason, shown)
        raise AgentHttpStatusError(
            f"{what} at {url} answered HTTP {response.status}: {status_hint(response.status)}",
            status=response.status,
            body=body,
        )

    async def read_chunk(
        self, response: aiohttp.ClientResponse, *, deadline: float, idle_s: float | None, what: str
    ) -> bytes:
        """The next piece of the body (``b""`` at its end), bounded by the turn deadline and
        by ``idle_s`` of silence (raising :class:`AgentIdleTimeoutError`)."""
        loop = asyncio.get_running_loop()
        limit = deadline if idle_s is None else min(deadline, loop.time() + idle_s)
        try:
            async with asyncio.timeout_at(limit):
                return await response.content.readany()
        except TimeoutError as err:
            if limit < deadline:
                raise AgentIdleTimeoutError(
                    f"{what} went silent for {idle_s:.1f} s mid-reply; raise idle_timeout_ms or "
                    "check the server",
                ) from err
            raise self.wrap(err, what=what, url=str(response.url), started=True) from err
        except AgentError:
            raise
        except Exception as err:
            raise self.wrap(err, what=what, url=str(response.url), started=True) from err

    async def finish(self, response: aiohttp.ClientResponse, *, deadline: float) -> None:
        """After an in-band end marker ([DONE], done): read the body's last bytes for a
        moment so the connection goes back to the pool instead of being closed."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(min(deadline, loop.time() + 0.05)):
                while await response.content.readany():
                    pass
        except asyncio.CancelledError:
            raise
        except Exception:  # the reply is complete; a slow tail only costs the pooled connection
            return

    async def read_all(
        self, response: aiohttp.ClientResponse, *, deadline: float, limit_bytes: int, what: str
    ) -> bytes:
        """The whole body, or :class:`AgentReplyTooLargeError` past ``limit_bytes``."""
        from edgevoice.device.agents.errors import AgentReplyTooLargeError

        parts: list[bytes] = []
        size = 0
        while True:
            chunk = await self.read_chunk(response, deadline=deadline, idle_s=None, what=what)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > limit_bytes:
                _LOGGER.warning("%s reply passed %d bytes; dropped", what, limit_bytes)
                raise AgentReplyTooLargeError(
                    f"{what} sent a reply larger than {limit_bytes} bytes; shorten the agent's "
                    "replies or raise [llm] max_reply_chars"
                )
            parts.append(chunk)

    def wrap(self, err: BaseException, *, what: str, url: str, started: bool) -> AgentError:
        """An aiohttp/ssl/socket error as the AgentError that says what to do."""
        if isinstance(err, AgentError):
            return err
        if isinstance(err, TimeoutError):
            stage = "while the reply was arriving" if started else "before it answered"
            return AgentTimeoutError(
                f"{what} at {url} ran out of the turn's time {stage}; raise timeout_ms or "
                "make the agent answer sooner"
            )
        if isinstance(err, aiohttp.InvalidURL):
            return AgentConfigError(f"{what} URL {url!r} is not a valid http(s) URL; fix it in the config")
        if isinstance(err, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
            return AgentTlsError(
                f"TLS with {what} at {url} failed ({err}); install the server's CA (ca_file), "
                "fix its certificate, or set verify_tls = false for a lab server"
            )
        if isinstance(err, aiohttp.ClientConnectorError):
            if isinstance(err.os_error, socket.gaierror) or _is_dns_error(err):
                return AgentDnsError(
                    f"cannot resolve the host of {what} ({url}); check the URL and the "
                    "device's DNS"
                )
            return AgentUnreachableError(
                f"cannot connect to {what} at {url} ({err.os_error.strerror or err}); is it "
                "running and reachable from the device?"
            )
        if isinstance(err, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError
                      | aiohttp.ClientOSError | ConnectionError):
            if started:
                return AgentConnectionLostError(
                    f"the connection to {what} broke while the reply was arriving ({err})"
                )
            return AgentConnectionLostError(
                f"{what} at {url} closed the connection without answering ({err})"
            )
        if isinstance(err, aiohttp.ClientResponseError):
            return AgentBadReplyError(f"{what} at {url} sent a malformed HTTP response ({err})")
        if isinstance(err, aiohttp.ClientError):
            return AgentUnreachableError(f"request to {what} at {url} failed: {err}")
        return AgentError(f"request to {what} at {url} failed: {err!r}")


def _is_dns_error(err: aiohttp.ClientConnectorError) -> bool:
    dns_error = getattr(aiohttp, "ClientConnectorDNSError", None)
    return dns_error is not None and isinstance(err, dns_error)
