"""Bots and actors, as the API uses them; a bot's view carries its live state."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from openbot.config import Settings
from openbot.core.errors import Conflict
from openbot.core.states import ACTIVE_RUNS, ItemStatus, RunStatus
from openbot.runtime import access, team
from openbot.runtime.commands import ActorCreate, ActorUpdate, BotCreate, BotUpdate
from openbot.runtime.scheduler.system import ActorSystem
from openbot.runtime.views import ActorView, BotState, BotView, TokenIssued, actor_view, bot_view
from openbot.runtime.webhooks.sender import Sender
from openbot.store.db import Database
from openbot.store.models import Actor, BotProfile, ExternalProfile, InboxItem, Run


@contextmanager
def _handle_taken(handle: str) -> Iterator[None]:
    """Two creations racing for one handle both pass the check (``team._check_handle``) on
    PostgreSQL; the database's unique index refuses the second, which is the same 409."""
    try:
        yield
    except IntegrityError as error:
        if "handle" not in str(error.orig):
            raise
        raise Conflict(f"the handle @{handle} is taken", {"handle": handle}) from None


@dataclass(frozen=True)
class TeamService:
    db: Database
    settings: Settings
    system: ActorSystem

    async def list_bots(self) -> list[BotView]:
        async with self.db.read() as s:
            rows = (
                await s.execute(
                    select(Actor, BotProfile)
                    .join(BotProfile, BotProfile.actor_id == Actor.id)
                    .where(Actor.deleted.is_(False))
                    .order_by(Actor.created_at, Actor.id)
                )
            ).all()
        states = await self.states([a.id for a, _ in rows])
        return [{**bot_view(a, p), "state": states[a.id]} for a, p in rows]

    async def get_bot(self, handle: str) -> BotView:
        async with self.db.read() as s:
            actor, profile = await team.get_bot(s, handle)
        return await self._with_state(actor, profile)

    async def create_bot(self, command: BotCreate) -> BotView:
        if command.model is None:
            command = command.model_copy(update={"model": self.settings.default_model()})
        with _handle_taken(command.handle):
            async with self.db.transaction() as s:
                actor, profile = await team.create_bot(s, command)
        return await self._with_state(actor, profile)

    async def update_bot(self, handle: str, command: BotUpdate) -> BotView:
        async with self.db.transaction() as s:
            actor, profile = await team.update_bot(s, handle, command)
        if actor.enabled:
            self.system.notify([actor.id])  # a re-enabled bot or a raised ceiling may have work waiting
        return await self._with_state(actor, profile)

    async def delete_bot(self, handle: str) -> None:
        async with self.db.transaction() as s:
            await team.delete_bot(s, handle)

    async def list_actors(self) -> list[ActorView]:
        async with self.db.read() as s:
            rows = (
                await s.execute(
                    select(Actor, ExternalProfile)
                    .outerjoin(ExternalProfile, ExternalProfile.actor_id == Actor.id)
                    .where(Actor.deleted.is_(False))
                    .order_by(Actor.created_at, Actor.id)
                )
            ).all()
        return [actor_view(a, e) for a, e in rows]

    async def create_actor(self, command: ActorCreate) -> ActorView:
        if command.webhook_url is not None:  # the SSRF rule, on what the name resolves to now (422)
            await Sender(allow_private=self.settings.webhook_allow_private).check_url(command.webhook_url)
        with _handle_taken(command.handle):
            async with self.db.transaction() as s:
                actor = await team.create_actor(s, command)
                external = await s.get(ExternalProfile, actor.id)
        return actor_view(actor, external)

    async def update_actor(self, handle: str, command: ActorUpdate) -> ActorView:
        if command.webhook_url is not None:  # the SSRF rule, as at creation (422)
            await Sender(allow_private=self.settings.webhook_allow_private).check_url(command.webhook_url)
        async with self.db.transaction() as s:
            actor, external = await team.update_actor(s, handle, command)
        return actor_view(actor, external)

    async def _with_state(self, actor: Actor, profile: BotProfile) -> BotView:
        return {**bot_view(actor, profile), "state": (await self.states([actor.id]))[actor.id]}

    async def states(self, bot_ids: list[str]) -> dict[str, BotState]:
        """Live state per bot: idle, running in threads, waiting for a human, queue depth."""
        states: dict[str, BotState] = {
            b: {"status": "idle", "running_threads": [], "waiting_threads": [], "queue_depth": 0}
            for b in bot_ids
        }
        async with self.db.read() as s:
            runs = await s.execute(
                select(Run.bot_id, Run.thread_id, Run.status).where(
                    Run.bot_id.in_(bot_ids), Run.status.in_(ACTIVE_RUNS)
                )
            )
            for bot_id, thread_id, status in runs:
                key = "waiting_threads" if status == RunStatus.WAITING_HUMAN else "running_threads"
                states[bot_id][key].append(thread_id)  # type: ignore[literal-required]
            depth = await s.execute(
                select(InboxItem.actor_id, func.count())
                .where(InboxItem.actor_id.in_(bot_ids), InboxItem.status == ItemStatus.QUEUED)
                .group_by(InboxItem.actor_id)
            )
            for bot_id, count in depth:
                states[bot_id]["queue_depth"] = int(count)
        for state in states.values():
            if state["running_threads"]:
                state["status"] = RunStatus.RUNNING
            elif state["waiting_threads"]:
                state["status"] = RunStatus.WAITING_HUMAN
        return states

    async def issue_token(self, handle: str) -> TokenIssued:
        """A new bearer token that acts as ``handle`` (shown once: only its digest is stored)."""
        async with self.db.transaction() as s:
            actor = await team.get_actor(s, handle)
            token = await access.issue_token(s, actor)
        return {"token": token, "actor": handle}

    async def revoke_tokens(self, handle: str) -> int:
        """Revoke every token of ``handle``; returns how many there were."""
        async with self.db.transaction() as s:
            return await access.revoke_tokens(s, await team.get_actor(s, handle))

    async def principal_of(self, token: str) -> access.Principal | None:
        """Who an actor token acts as, or None when it is not a live actor's token."""
        async with self.db.read() as s:
            handle = await access.actor_of_token(s, token)
        return access.Principal(handle) if handle else None
