"""Bots and actors."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy import func, select

from openbot.api.deps import RuntimeDep
from openbot.api.schemas import ActorCreate, BotCreate, BotUpdate
from openbot.runtime import team
from openbot.store.models import Actor, BotProfile, ExternalProfile, InboxItem, Run
from openbot.store.views import actor_view, bot_view

router = APIRouter()


async def _states(rt: RuntimeDep, bot_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Live state per bot: idle, running in threads, waiting for a human, queue depth."""
    states: dict[str, dict[str, Any]] = {
        b: {"status": "idle", "running_threads": [], "waiting_threads": [], "queue_depth": 0} for b in bot_ids
    }
    async with rt.db.read() as s:
        runs = await s.execute(
            select(Run.bot_id, Run.thread_id, Run.status).where(
                Run.bot_id.in_(bot_ids), Run.status.in_(("queued", "running", "waiting_human"))
            )
        )
        for bot_id, thread_id, status in runs:
            key = "waiting_threads" if status == "waiting_human" else "running_threads"
            states[bot_id][key].append(thread_id)
        depth = await s.execute(
            select(InboxItem.actor_id, func.count())
            .where(InboxItem.actor_id.in_(bot_ids), InboxItem.status == "queued")
            .group_by(InboxItem.actor_id)
        )
        for bot_id, count in depth:
            states[bot_id]["queue_depth"] = int(count)
    for state in states.values():
        if state["running_threads"]:
            state["status"] = "running"
        elif state["waiting_threads"]:
            state["status"] = "waiting_human"
    return states


async def _bot_out(rt: RuntimeDep, actor: Actor, profile: BotProfile) -> dict[str, Any]:
    return {**bot_view(actor, profile), "state": (await _states(rt, [actor.id]))[actor.id]}


@router.get("/bots")
async def list_bots(rt: RuntimeDep) -> dict[str, Any]:
    async with rt.db.read() as s:
        rows = (
            await s.execute(
                select(Actor, BotProfile)
                .join(BotProfile, BotProfile.actor_id == Actor.id)
                .where(Actor.deleted.is_(False))
                .order_by(Actor.created_at, Actor.handle)
            )
        ).all()
    states = await _states(rt, [a.id for a, _ in rows])
    return {"items": [{**bot_view(a, p), "state": states[a.id]} for a, p in rows]}


@router.post("/bots", status_code=201)
async def create_bot(rt: RuntimeDep, body: BotCreate) -> dict[str, Any]:
    data = body.model_dump(exclude_unset=True)
    data.setdefault("model", rt.settings.default_model())
    async with rt.db.transaction() as s:
        actor, profile = await team.create_bot(s, data)
    return await _bot_out(rt, actor, profile)


@router.get("/bots/{handle}")
async def get_bot(rt: RuntimeDep, handle: str) -> dict[str, Any]:
    async with rt.db.read() as s:
        actor, profile = await team.get_bot(s, handle)
    return await _bot_out(rt, actor, profile)


@router.patch("/bots/{handle}")
async def update_bot(rt: RuntimeDep, handle: str, body: BotUpdate) -> dict[str, Any]:
    data = {k: v for k, v in body.model_dump(exclude_unset=True).items()}
    async with rt.db.transaction() as s:
        actor, profile = await team.update_bot(s, handle, data)
    if actor.enabled:
        rt.system.notify([actor.id])  # a re-enabled bot or a raised ceiling may have work waiting
    return await _bot_out(rt, actor, profile)


@router.delete("/bots/{handle}", status_code=204)
async def delete_bot(rt: RuntimeDep, handle: str) -> Response:
    async with rt.db.transaction() as s:
        await team.delete_bot(s, handle)
    return Response(status_code=204)


@router.get("/actors")
async def list_actors(rt: RuntimeDep) -> dict[str, Any]:
    async with rt.db.read() as s:
        rows = (
            await s.execute(
                select(Actor, ExternalProfile)
                .outerjoin(ExternalProfile, ExternalProfile.actor_id == Actor.id)
                .where(Actor.deleted.is_(False))
                .order_by(Actor.created_at, Actor.handle)
            )
        ).all()
    return {"items": [actor_view(a, e) for a, e in rows]}


@router.post("/actors", status_code=201)
async def create_actor(rt: RuntimeDep, body: ActorCreate) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        actor = await team.create_actor(s, body.model_dump(exclude_unset=True))
        external = await s.get(ExternalProfile, actor.id)
    return actor_view(actor, external)
