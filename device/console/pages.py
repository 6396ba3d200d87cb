"""The console's pages and assets, shipped as package data (no CDN, system fonts).

Pages are static files: nothing secret or personal is ever templated into them; what
they show arrives on the WebSocket after the browser has logged in.
"""

from __future__ import annotations

import functools
from importlib import resources

from aiohttp import web

ASSETS = {
    "console.css": "text/css",
    "socket.js": "text/javascript",
    "captions.js": "text/javascript",
    "operator.js": "text/javascript",
}
PAGES = ("captions.html", "operator.html", "login.html")

# Same-origin only: no inline script, no remote fonts, images or connections.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@functools.cache
def read(name: str) -> bytes:
    return resources.files("edgevoice.device.console.static").joinpath(name).read_bytes()


def page(name: str, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=read(name), status=status, content_type="text/html", charset="utf-8",
                        headers={**SECURITY_HEADERS, **(headers or {})})


async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    kind = ASSETS.get(name)
    if kind is None:
        raise web.HTTPNotFound(text="no such asset")
    return web.Response(body=read(name), content_type=kind, charset="utf-8", headers=SECURITY_HEADERS)
