"""The console's web server: routes, who may open what, start and stop.

``/captions`` (captions or full token), ``/operator`` (full), ``/v1/events`` (the
WebSocket: full, or captions read-only), ``/metrics`` (full), ``/login``, ``/logout``
and the static assets. Every page and socket needs a token: ``Authorization: Bearer``
or the session cookie ``/login`` sets.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from edgevoice.device.config.schema import ConsoleConfig, OperatorConfig
from edgevoice.device.console import pages
from edgevoice.device.console.auth import COOKIE, Authenticator, LoginThrottled, Role, Sessions, allows
from edgevoice.device.console.control import ConsoleCommands
from edgevoice.device.console.desk import OperatorDesk
from edgevoice.device.console.errors import ConsoleError
from edgevoice.device.console.events_ws import EventSocket, serve_socket
from edgevoice.device.console.metrics import CONTENT_TYPE, ConsoleMetrics
from edgevoice.device.console.tokens import load_tokens
from edgevoice.device.control import DeviceControl
from edgevoice.device.events import EventBus

_LOGGER = logging.getLogger(__name__)


def parse_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too; port 0: any free one) -> (host, port); a clear error otherwise."""
    host, sep, port_text = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise ConsoleError(f"[console] listen = {listen!r} is not host:port (e.g. 127.0.0.1:8080)")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_warning(host: str, tls: bool) -> str | None:
    """What to warn about a listen address: anything but loopback without TLS."""
    if tls or is_loopback(host):
        return None
    return (f"console: listening on {host} without TLS: tokens and transcripts cross the network in "
            "clear; set [console] tls_cert and tls_key, or listen on 127.0.0.1")


def safe_next(target: str, default: str) -> str:
    """Only a path on this server (no scheme, no host, no //) may follow a login."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return default
    return target


class ConsoleServer:
    def __init__(
        self,
        config: ConsoleConfig,
        operator: OperatorConfig,
        *,
        bus: EventBus,
        target: DeviceControl,
        desk: OperatorDesk | None,
        device_id: str,
        state_dir: Path,
        telemetry: Callable[[], Mapping[str, Any]],
        operator_words: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._bus = bus
        self._target = target
        self.desk = desk
        self._device_id = device_id
        self._operator_words = operator_words
        self._clock = clock
        self.tokens = load_tokens(config, state_dir)
        self.auth = Authenticator(self.tokens, Sessions(config.session_hours * 3600.0), clock())
        self.metrics = ConsoleMetrics(telemetry)
        self._unsubscribe: Callable[[], None] | None = None
        self._runner: web.AppRunner | None = None
        self._sockets: set[EventSocket] = set()
        self.url = ""
        self.apply_config(config, operator)

    def apply_config(self, config: ConsoleConfig, operator: OperatorConfig) -> None:
        """Keys read at use: transcripts, rate limits (new sockets), origins, quick replies."""
        self.config = config
        if self.desk is not None:
            self.desk.quick_replies = operator.quick_replies

    # --- life cycle ------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        host, port = parse_listen(config.listen)
        tls = self._tls_context()
        warning = bind_warning(host, tls is not None)
        if warning:
            _LOGGER.warning("%s", warning)
        self._unsubscribe = self._bus.subscribe(self.metrics.on_event)
        self._runner = web.AppRunner(self._app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=tls)
        try:
            await site.start()
        except OSError as err:
            await self.stop()
            raise ConsoleError(f"the console cannot listen on {config.listen}: {err}; "
                               "choose another [console] listen") from err
        bound = self._runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        self.url = f"{'https' if tls else 'http'}://{shown}:{bound[1]}"
        _LOGGER.info("console: serving on %s (captions %s/captions, operator %s/operator)",
                     self.url, self.url, self.url)

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for sock in list(self._sockets):
            await sock.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _tls_context(self) -> ssl.SSLContext | None:
        cert, key = self.config.tls_cert, self.config.tls_key
        if not cert and not key:
            return None
        if not (cert and key):
            raise ConsoleError("[console] tls_cert and tls_key go together: set both, or neither")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as err:
            raise ConsoleError(f"the console's TLS certificate or key cannot be loaded: {err}") from err
        return context

    # --- the app ---------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._authenticate], client_max_size=64 * 1024)
        app.router.add_get("/", self._index)
        app.router.add_get("/login", self._login)
        app.router.add_post("/login", self._login)
        app.router.add_post("/logout", self._logout)
        app.router.add_get("/captions", self._page("captions.html", Role.CAPTIONS))
        app.router.add_get("/operator", self._page("operator.html", Role.FULL))
        app.router.add_get("/static/{name}", pages.asset)
        app.router.add_get("/v1/events", self._events)
        app.router.add_get("/metrics", self._metrics)
        return app

    @web.middleware
    async def _authenticate(self, request: web.Request,
                            handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                            ) -> web.StreamResponse:
        if request.path == "/login" or request.path.startswith("/static/"):
            return await handler(request)
        role = self._role_of(request)
        if role is None:
            if request.path in ("/captions", "/operator", "/"):
                # A browser gets the login form (with 401, so scripts see the refusal).
                return pages.page("login.html", status=401, headers={"WWW-Authenticate": "Bearer"})
            raise web.HTTPUnauthorized(text="a console token is needed (Authorization: Bearer, or log in)",
                                       headers={"WWW-Authenticate": "Bearer"})
        return await handler(request)

    def _role_of(self, request: web.Request) -> Role | None:
        return self.auth.from_headers(request.headers.get("Authorization"), request.cookies.get(COOKIE),
                                      self._clock())

    def _role(self, request: web.Request) -> Role:
        """The role of a request the middleware let through."""
        role = self._role_of(request)
        if role is None:  # the session expired between the middleware and here
            raise web.HTTPUnauthorized(text="the console session expired; log in again")
        return role

    async def _index(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPSeeOther("/operator" if self._role(request) is Role.FULL else "/captions")

    def _page(self, name: str, need: Role) -> Any:
        async def handler(request: web.Request) -> web.StreamResponse:
            if not allows(self._role(request), need):
                raise web.HTTPForbidden(text="this token opens /captions only")
            return pages.page(name)

        return handler

    async def _login(self, request: web.Request) -> web.StreamResponse:
        form: Mapping[str, Any] = await request.post() if request.method == "POST" else request.query
        token = str(form.get("token", ""))
        if not token:
            return pages.page("login.html")
        try:
            role = self.auth.login(token, self._clock())
        except LoginThrottled as err:
            raise web.HTTPTooManyRequests(text=str(err),
                                          headers={"Retry-After": str(int(err.retry_after_s) + 1)}) from err
        if role is None:
            return pages.page("login.html", status=401)
        default = "/operator" if role is Role.FULL else "/captions"
        target = safe_next(str(form.get("next", "")), default)
        response = web.HTTPSeeOther(target)
        session = self.auth.sessions.open(role, self._clock())
        response.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/",
                            secure=request.secure, max_age=int(self.config.session_hours * 3600))
        raise response

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        session = request.cookies.get(COOKIE)
        if session:
            self.auth.sessions.close(session)
        response = web.HTTPSeeOther("/login")
        response.del_cookie(COOKIE, path="/")
        raise response

    def _origin_allowed(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser: a script with the Bearer token or a cookie it was given
        own = f"{request.scheme}://{request.host}"
        return origin == own or origin in self.config.allowed_origins

    async def _events(self, request: web.Request) -> web.StreamResponse:
        if not self._origin_allowed(request):
            _LOGGER.warning("console: WebSocket from origin %s refused", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="this origin may not open the console's socket; "
                                         "add it to [console] allowed_origins")
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=64 * 1024)
        await ws.prepare(request)
        role = self._role(request)
        commands = ConsoleCommands(self._target, device_id=self._device_id,
                                   rate=self.config.command_rate, burst=self.config.command_burst)
        sock = EventSocket(ws, role, transcripts=lambda: self.config.transcripts,
                           operator_words=self._operator_words, commands=commands, desk=self.desk)
        hello = {"type": "console.hello", "role": str(role), "device": self._device_id,
                 "transcripts": self.config.transcripts, "operator_desk": self.desk is not None,
                 **(await self._target.state())}
        self._sockets.add(sock)
        try:
            await serve_socket(sock, self._bus, hello)
        finally:
            self._sockets.discard(sock)
        return ws

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        if self._role(request) is not Role.FULL:
            raise web.HTTPForbidden(text="/metrics needs the full console token")
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})
