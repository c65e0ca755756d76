"""Who may reach the API: the Host and Origin checks (ASGI middleware) and the bearer token.

- **Host** (DNS rebinding): a page on an attacker's name that resolves to this machine reaches the
  server with its own name in ``Host``. Only ``Settings.allowed_hosts`` (any port) and the address
  the connection arrived on (``scope["server"]``: an address literal cannot be rebound) are
  served; a request without ``Host`` comes from no browser and is served.
- **Origin**: a state-changing request (POST/PUT/PATCH/DELETE) that carries an ``Origin`` must
  come from this origin (its host:port is the ``Host``) or one of ``Settings.cors_origins``.
- **Token**: ``Authorization: Bearer``; ``?token=`` only where a browser cannot send a header
  (the SSE stream); the health check is open to load balancers.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from openbot.api.errors import envelope
from openbot.api.routes import observability
from openbot.config import Settings
from openbot.core.errors import ErrorCode

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Routes by endpoint: a route's path in the scope is not prefixed alike in every FastAPI version.
PUBLIC_ENDPOINTS = frozenset({observability.health})
QUERY_TOKEN_ENDPOINTS = frozenset({observability.events})  # EventSource cannot set headers

_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]+))(?::(?P<port>[0-9]{1,5}))?")
_DEFAULT_PORT = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _canonical(name: str) -> str:
    """One spelling per name: lower case, no trailing dot, IP addresses compressed (v4-mapped → v4)."""
    name = name.lower().removesuffix(".")
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return str(address)


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``Example.COM:8000`` → ``("example.com", 8000)``, ``[::1]`` → ``("::1", None)``; None if malformed."""
    match = _HOST.fullmatch(value.strip().lower())
    if match is None:
        return None
    port = match["port"]
    return _canonical(match["v6"] or match["name"]), int(port) if port else None


def _host_entry(entry: str) -> str:
    entry = entry.strip()
    try:  # a bare IPv6 address ("::1") is an address here, not host:port
        return _canonical(str(ipaddress.ip_address(entry)))
    except ValueError:
        parsed = parse_host(entry)
        return parsed[0] if parsed else entry.lower()


def host_allowed(host: str, allowed: Iterable[str], server: tuple[str, int | None] | None = None) -> bool:
    entries = list(allowed)
    if "*" in entries:
        return True
    parsed = parse_host(host)
    if parsed is None:
        return False
    name = parsed[0]
    if server and server[0] and _canonical(str(server[0])) == name:
        return True
    return name in {_host_entry(e) for e in entries}


@functools.lru_cache(maxsize=256)
def _host_allowed(host: str, allowed: tuple[str, ...], server: tuple[str, int | None] | None) -> bool:
    """:func:`host_allowed` once per (Host header, setting, listening address): every request asks."""
    return host_allowed(host, allowed, server)


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORT or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, _canonical(parts.hostname), port or _DEFAULT_PORT[parts.scheme]


def origin_allowed(origin: str, host: str | None, allowed: Iterable[str]) -> bool:
    entries = list(allowed)
    if "*" in entries:
        return True
    key = _origin_key(origin)
    if key is None:  # "null" (sandboxed frames, file:) and the like: only if listed verbatim
        return origin.strip() in entries
    if key in {_origin_key(e) for e in entries}:
        return True
    mine = parse_host(host) if host else None
    if mine is None:
        return False
    scheme, name, port = key
    return mine[0] == name and (mine[1] or _DEFAULT_PORT[scheme]) == port


class Exposure:
    """Refuse a request addressed to a host that is not allowed (400 ``invalid_argument``, as the
    HTTP contract says: the request is malformed for this server, not a matter of permission) and a
    cross-origin state-changing request from an origin that is not allowed (403 ``forbidden``).
    Reads ``settings`` on every request (tests change them on a running app)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        server = scope.get("server")
        allowed = tuple(self.settings.allowed_hosts)
        if host is not None and not _host_allowed(host, allowed, tuple(server) if server else None):
            message = f"host {host!r} is not allowed here (OPENBOT_ALLOWED_HOSTS)"
            await _refuse(scope, receive, send, message, {"host": host}, ErrorCode.INVALID_ARGUMENT, 400)
            return
        origin = headers.get("origin")
        changes = scope["type"] == "websocket" or scope["method"] in UNSAFE_METHODS
        if changes and origin is not None and not origin_allowed(origin, host, self.settings.cors_origins):
            message = f"cross-origin requests from {origin!r} may not change anything (OPENBOT_CORS_ORIGINS)"
            await _refuse(scope, receive, send, message, {"origin": origin}, ErrorCode.FORBIDDEN, 403)
            return
        await self.app(scope, receive, send)


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    message: str,
    details: dict[str, object],
    code: ErrorCode,
    status: int,
) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    await envelope(code, message, details, status=status)(scope, receive, send)
