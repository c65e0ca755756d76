"""Bots and actors."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from openbot.api.deps import RuntimeDep
from openbot.runtime.commands import ActorCreate, BotCreate, BotUpdate

router = APIRouter()


@router.get("/bots")
async def list_bots(rt: RuntimeDep) -> dict[str, Any]:
    return {"items": await rt.team.list_bots()}


@router.post("/bots", status_code=201)
async def create_bot(rt: RuntimeDep, body: BotCreate) -> dict[str, Any]:
    return dict(await rt.team.create_bot(body))


@router.get("/bots/{handle}")
async def get_bot(rt: RuntimeDep, handle: str) -> dict[str, Any]:
    return dict(await rt.team.get_bot(handle))


@router.patch("/bots/{handle}")
async def update_bot(rt: RuntimeDep, handle: str, body: BotUpdate) -> dict[str, Any]:
    return dict(await rt.team.update_bot(handle, body))


@router.delete("/bots/{handle}", status_code=204)
async def delete_bot(rt: RuntimeDep, handle: str) -> Response:
    await rt.team.delete_bot(handle)
    return Response(status_code=204)


@router.get("/actors")
async def list_actors(rt: RuntimeDep) -> dict[str, Any]:
    return {"items": await rt.team.list_actors()}


@router.post("/actors", status_code=201)
async def create_actor(rt: RuntimeDep, body: ActorCreate) -> dict[str, Any]:
    return dict(await rt.team.create_actor(body))
