"""Who a request acts as (``runtime.access.Principal``), from its bearer token.

- The admin token (``OPENBOT_API_TOKEN``), or no token at all when none is configured (loopback),
  makes the admin: it may act for any actor and acts as ``@you`` by default.
- An actor token (``POST /api/v1/actors/{handle}/tokens``) acts as its actor only.
- Any other token, or none where one is needed, is 401.

``?token=`` stands in for the header only on the event stream (browsers' EventSource cannot send
headers); ``/api/v1/health`` needs nothing.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, Request

from openbot.api.exposure import PUBLIC_ENDPOINTS, QUERY_TOKEN_ENDPOINTS
from openbot.core.errors import Unauthorized
from openbot.runtime.access import ADMIN, Principal
from openbot.runtime.scope import Scope


def _given(request: Request) -> str | None:
    """The token the request carries, if any (a header, or ``?token=`` where allowed)."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        # The header's bytes as they came: a non-ASCII token is a wrong token, not an error.
        return credentials.strip().encode("latin-1").decode("utf-8", "surrogateescape")
    if request.scope.get("endpoint") in QUERY_TOKEN_ENDPOINTS:
        return request.query_params.get("token") or None
    return None


async def authenticate(request: Request) -> Principal:
    """The route dependency: resolve the caller once and keep it on ``request.state``."""
    principal = await _resolve(request)
    request.state.principal = principal
    if principal.actor is not None:
        await _scope(request, principal.actor)
    return principal


async def still_valid(request: Request) -> bool:
    """Whether the request's token still resolves to the principal it was authenticated as (an
    event stream asks once it is subscribed: a revocation committed since then ends it live)."""
    try:
        return await _resolve(request) == request.state.principal
    except Unauthorized:
        return False


async def _scope(request: Request, handle: str) -> None:
    """An actor token reaches only the threads it takes part in: a thread or run named in the path
    or the query outside them is 404 (``runtime.scope``); lists filter themselves."""
    scope = Scope(request.app.state.runtime.db)
    thread_id = request.path_params.get("thread_id") or request.query_params.get("thread_id")
    if thread_id:
        await scope.require_thread(handle, thread_id)
    run_id = request.path_params.get("run_id") or request.query_params.get("run_id")
    if run_id:
        await scope.require_run(handle, run_id)


async def _resolve(request: Request) -> Principal:
    runtime = request.app.state.runtime
    admin_token: str | None = runtime.settings.api_token
    endpoint = request.scope.get("endpoint")
    given = _given(request)
    if given is None:
        if not admin_token or endpoint in PUBLIC_ENDPOINTS:
            return ADMIN
        raise Unauthorized(_missing(request, endpoint))
    if admin_token and hmac.compare_digest(_bytes(given), _bytes(admin_token)):
        return ADMIN
    actor = await runtime.team.principal_of(given)
    if actor is not None:
        return actor
    if endpoint in PUBLIC_ENDPOINTS:
        return ADMIN
    raise Unauthorized(_missing(request, endpoint))


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _missing(request: Request, endpoint: object) -> str:
    message = "a valid bearer token is required (Authorization: Bearer <token>)"
    if "token" in request.query_params and endpoint not in QUERY_TOKEN_ENDPOINTS:
        message += "; ?token= is accepted only on /api/v1/events"
    return message


async def current(request: Request) -> Principal:
    """The principal :func:`authenticate` resolved for this request."""
    principal: Principal = getattr(request.state, "principal", ADMIN)
    return principal


PrincipalDep = Annotated[Principal, Depends(current)]


def admin_only(what: str) -> Any:
    """A route dependency: an actor token is refused (403) — it acts in its own threads, not on the
    team (bots, actors) nor on a bot's memory, which holds what the bot learned in every thread."""

    async def check(principal: PrincipalDep) -> None:
        principal.require_admin(what)

    return Depends(check)
