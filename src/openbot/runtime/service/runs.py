"""Runs, as the API uses them: list, read, answer, cancel."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from openbot.core.errors import Forbidden, InvalidArgument, NotFound
from openbot.runtime.access import ADMIN, Principal
from openbot.runtime.commands import ResumeBody
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.runs.ending import cancel
from openbot.runtime.runs.resume import request_resume
from openbot.runtime.scheduler.system import ActorSystem
from openbot.runtime.scope import member_threads
from openbot.runtime.team import get_actor
from openbot.runtime.tools.registry import ToolRegistry
from openbot.runtime.views import RunDetail, RunView, run_event_view, run_view
from openbot.store.db import Database
from openbot.store.models import Actor, Run, RunEvent


@dataclass(frozen=True)
class RunService:
    db: Database
    delivery: Delivery
    system: ActorSystem
    tools: ToolRegistry  # an edit's args are checked against its tool's parameters

    async def list_runs(
        self,
        *,
        thread_id: str | None,
        bot: str | None,
        status: str | None,
        limit: int,
        member: str | None = None,
    ) -> list[RunView]:
        """Newest ``limit`` runs, oldest first; with ``member`` (an actor token) in its threads only."""
        async with self.db.read() as s:
            stmt = select(Run, Actor.handle).join(Actor, Actor.id == Run.bot_id)
            if member:
                stmt = stmt.where(Run.thread_id.in_(member_threads(member)))
            if thread_id:
                stmt = stmt.where(Run.thread_id == thread_id)
            if bot:
                stmt = stmt.where(Run.bot_id == (await get_actor(s, bot)).id)
            if status:
                stmt = stmt.where(Run.status == status)
            rows = (await s.execute(stmt.order_by(Run.id.desc()).limit(limit))).all()
        return [run_view(r, h) for r, h in reversed(rows)]

    async def get(self, run_id: str) -> RunDetail:
        async with self.db.read() as s:
            row = (
                await s.execute(
                    select(Run, Actor.handle).join(Actor, Actor.id == Run.bot_id).where(Run.id == run_id)
                )
            ).first()
            if row is None:
                raise NotFound(f"run {run_id} not found", {"run_id": run_id})
            run, handle = row
            events = await s.scalars(select(RunEvent).where(RunEvent.run_id == run_id).order_by(RunEvent.seq))
            return {**run_view(run, handle), "events": [run_event_view(e, run.thread_id) for e in events]}

    async def resume(self, run_id: str, command: ResumeBody, principal: Principal = ADMIN) -> RunView:
        """Answer a waiting run as the principal (or whom the admin names); the bot wakes at commit."""
        speaker = principal.speaker(command.from_)
        async with self.db.transaction() as s:
            try:
                answerer = await get_actor(s, speaker)
            except NotFound as exc:
                raise InvalidArgument(f"unknown actor @{speaker}", {"field": "from"}) from exc
            if answerer.kind == "bot":  # a human's decision, as a draft's (runtime.drafts)
                raise Forbidden(
                    f"@{speaker} is a bot: a question or an approval is answered by a person or an "
                    "external system",
                    {"field": "from", "actor": speaker},
                )
            run, bot = await request_resume(
                s,
                run_id,
                command,
                answerer,
                asked_only=not principal.admin,
                parameters=self.tools.parameters,
            )
        return run_view(run, bot.handle)

    async def cancel(self, run_id: str) -> RunView:
        """End a run now (queued, running or waiting); its agent stops if it runs in this process."""
        async with self.db.transaction() as s:
            run = await cancel(s, run_id, self.delivery, reason="cancelled by a human")
            bot = await s.get(Actor, run.bot_id)
        await self.system.cancel(run_id)
        self.system.notify([run.bot_id])  # its thread is no longer parked or busy
        return run_view(run, bot.handle if bot else "")
