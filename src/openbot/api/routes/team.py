"""Bots and actors."""

from __future__ import annotations

from fastapi import APIRouter, Response

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep, admin_only
from openbot.api.schemas import ActorList, BotList, errors
from openbot.runtime.commands import ActorCreate, ActorUpdate, BotCreate, BotUpdate
from openbot.runtime.views import ActorView, BotView

router = APIRouter()


@router.get("/bots")
async def list_bots(rt: RuntimeDep) -> BotList:
    return {"items": await rt.team.list_bots()}


@router.post(
    "/bots", status_code=201, responses=errors(403, 409), dependencies=[admin_only("creating a bot")]
)
async def create_bot(rt: RuntimeDep, body: BotCreate) -> BotView:
    return await rt.team.create_bot(body)


@router.get("/bots/{handle}", responses=errors(404))
async def get_bot(rt: RuntimeDep, handle: str) -> BotView:
    return await rt.team.get_bot(handle)


@router.patch("/bots/{handle}", responses=errors(403, 404), dependencies=[admin_only("changing a bot")])
async def update_bot(rt: RuntimeDep, handle: str, body: BotUpdate) -> BotView:
    return await rt.team.update_bot(handle, body)


@router.delete(
    "/bots/{handle}",
    status_code=204,
    responses=errors(403, 404, 409),
    dependencies=[admin_only("deleting a bot")],
)
async def delete_bot(rt: RuntimeDep, handle: str) -> Response:
    await rt.team.delete_bot(handle)
    return Response(status_code=204)


@router.get("/actors")
async def list_actors(rt: RuntimeDep) -> ActorList:
    return {"items": await rt.team.list_actors()}


@router.post(
    "/actors", status_code=201, responses=errors(403, 409), dependencies=[admin_only("creating an actor")]
)
async def create_actor(rt: RuntimeDep, body: ActorCreate) -> ActorView:
    return await rt.team.create_actor(body)


@router.patch("/actors/{handle}", responses=errors(403, 404))
async def update_actor(rt: RuntimeDep, principal: PrincipalDep, handle: str, body: ActorUpdate) -> ActorView:
    """Partial: ``name``, and an external actor's ``webhook_url`` (the SSRF rule: 422) and
    ``webhook_secret``. The admin, or the actor's own token."""
    principal.speaker(handle)
    return await rt.team.update_actor(handle, body)
