"""Actor tokens: bearer tokens that act as one actor (``runtime.access``)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import errors
from openbot.runtime.views import TokenIssued, WhoAmI

router = APIRouter()


@router.post("/actors/{handle}/tokens", status_code=201, responses=errors(403, 404))
async def issue_token(rt: RuntimeDep, principal: PrincipalDep, handle: str) -> TokenIssued:
    """A new token acting as ``handle``, shown this once (the admin token is needed when one is set)."""
    principal.require_admin("issuing a token")
    return await rt.team.issue_token(handle)


@router.delete("/actors/{handle}/tokens", status_code=204, responses=errors(403, 404))
async def revoke_tokens(rt: RuntimeDep, principal: PrincipalDep, handle: str) -> Response:
    """Revoke every token of ``handle``: requests carrying one get 401 from now on."""
    principal.require_admin("revoking tokens")
    await rt.team.revoke_tokens(handle)
    return Response(status_code=204)


@router.get("/whoami")
async def whoami(principal: PrincipalDep) -> WhoAmI:
    """Which kind of token the caller holds: an actor's (``actor`` set) or the admin's."""
    return {"actor": principal.actor, "admin": principal.admin}
