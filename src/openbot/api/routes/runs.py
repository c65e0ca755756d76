"""Runs: list, read, resume, cancel."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import select

from openbot.api.deps import RuntimeDep
from openbot.api.schemas import ResumeBody
from openbot.core.errors import NotFound
from openbot.runtime import runs
from openbot.runtime.team import get_actor
from openbot.store.models import Actor, Run, RunEvent
from openbot.store.views import run_event_view, run_view

router = APIRouter()


@router.get("/runs")
async def list_runs(
    rt: RuntimeDep,
    thread_id: str | None = None,
    bot: str | None = None,
    status: str | None = None,
    limit: int = Query(200, ge=1, le=2000),
) -> dict[str, Any]:
    async with rt.db.read() as s:
        stmt = select(Run, Actor.handle).join(Actor, Actor.id == Run.bot_id)
        if thread_id:
            stmt = stmt.where(Run.thread_id == thread_id)
        if bot:
            stmt = stmt.where(Run.bot_id == (await get_actor(s, bot)).id)
        if status:
            stmt = stmt.where(Run.status == status)
        rows = (await s.execute(stmt.order_by(Run.id.desc()).limit(limit))).all()
    return {"items": [run_view(r, h) for r, h in reversed(rows)]}


@router.get("/runs/{run_id}")
async def get_run(rt: RuntimeDep, run_id: str) -> dict[str, Any]:
    async with rt.db.read() as s:
        row = (
            await s.execute(
                select(Run, Actor.handle).join(Actor, Actor.id == Run.bot_id).where(Run.id == run_id)
            )
        ).first()
        if row is None:
            raise NotFound(f"run {run_id} not found")
        run, handle = row
        events = await s.scalars(select(RunEvent).where(RunEvent.run_id == run_id).order_by(RunEvent.seq))
        return {**run_view(run, handle), "events": [run_event_view(e, run.thread_id) for e in events]}


@router.post("/runs/{run_id}/resume", status_code=202)
async def resume(rt: RuntimeDep, run_id: str, body: ResumeBody) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        run = await runs.request_resume(s, run_id, body.model_dump(exclude_none=True))
        bot = await s.get(Actor, run.bot_id)
    rt.system.notify([run.bot_id])
    return run_view(run, bot.handle if bot else "")


@router.post("/runs/{run_id}/cancel", status_code=202)
async def cancel(rt: RuntimeDep, run_id: str) -> dict[str, Any]:
    async with rt.db.transaction() as s:
        run = await runs.cancel(s, run_id, rt.delivery, reason="cancelled by a human")
        bot = await s.get(Actor, run.bot_id)
    await rt.system.cancel(run_id)
    rt.system.notify([run.bot_id])  # its thread is no longer parked or busy
    return run_view(run, bot.handle if bot else "")
