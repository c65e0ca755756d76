"""Threads, messages and mailboxes, as the API uses them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, IntegrityError

from openbot.core.errors import InvalidArgument
from openbot.core.states import ACTIVE_RUNS
from openbot.runtime import idempotency, threads
from openbot.runtime.commands import InboxAck, MessageCreate, ThreadCreate, ThreadUpdate
from openbot.runtime.delivery import inbox
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.scheduler.system import ActorSystem
from openbot.runtime.team import get_actor
from openbot.runtime.tools.workspace import normalise_directory
from openbot.runtime.views import ItemView, MessageView, PostView, ThreadView
from openbot.store.db import Database, is_deadlock
from openbot.store.models import Run

_DEADLOCK_RETRIES = 3


@dataclass(frozen=True)
class Posted:
    view: PostView
    replayed: bool  # the answer of an earlier request with the same Idempotency-Key


@dataclass(frozen=True)
class ThreadService:
    db: Database
    delivery: Delivery
    system: ActorSystem

    async def create(self, command: ThreadCreate) -> ThreadView:
        directory = self._working_directory(command.working_directory)
        command = command.model_copy(update={"working_directory": directory})
        async with self.db.transaction() as s:
            thread = await threads.create_thread(s, command)
            return await threads.view(s, thread)

    async def update(self, thread_id: str, command: ThreadUpdate) -> ThreadView:
        changes = command.model_dump(exclude_unset=True)
        if changes.get("working_directory"):
            changes["working_directory"] = self._working_directory(changes["working_directory"])
        async with self.db.transaction() as s:
            thread = await threads.update_thread(s, thread_id, changes)
            return await threads.view(s, thread)

    def _working_directory(self, value: str | None) -> str | None:
        """``value`` relative to the workspaces root; 422 when it resolves outside it."""
        if value is None:
            return None
        try:
            return normalise_directory(self.system.settings.resolved_workspaces_root(), value)
        except ValueError as exc:
            raise InvalidArgument(str(exc), {"field": "working_directory", "value": value}) from exc

    async def list_threads(self, *, q: str | None, actor: str, limit: int) -> list[ThreadView]:
        async with self.db.read() as s:
            return await threads.list_threads(s, q=q, limit=limit, actor=await threads.find_actor(s, actor))

    async def get(self, thread_id: str, *, actor: str) -> ThreadView:
        async with self.db.read() as s:
            thread = await threads.get_thread(s, thread_id)
            return await threads.view(s, thread, actor=await threads.find_actor(s, actor))

    async def delete(self, thread_id: str) -> None:
        """Delete a thread with everything in it; its open runs stop here too.

        Its locks are taken in the order finishes take theirs (``threads.delete_thread``), but a
        run claimed and finishing into the thread while the deletion runs can still make
        PostgreSQL pick the deletion as a deadlock's victim: it is run again (a few times)."""
        for attempt in range(_DEADLOCK_RETRIES + 1):
            try:
                async with self.db.transaction() as s:
                    open_runs = list(
                        await s.scalars(
                            select(Run.id).where(Run.thread_id == thread_id, Run.status.in_(ACTIVE_RUNS))
                        )
                    )
                    await threads.delete_thread(s, thread_id)
                break
            except DBAPIError as error:
                if not is_deadlock(error) or attempt == _DEADLOCK_RETRIES:
                    raise
        for run_id in open_runs:
            await self.system.cancel(run_id)

    async def messages(
        self, thread_id: str, *, after: str | None, before: str | None, latest: bool, limit: int
    ) -> list[MessageView]:
        async with self.db.read() as s:
            return await threads.list_messages(
                s, thread_id, after=after, before=before, latest=latest, limit=limit
            )

    async def post(
        self, thread_id: str, command: MessageCreate, *, idempotency_key: str | None = None
    ) -> Posted:
        """Post a message; with a key, a retry of the same post answers what the first one did."""
        if not command.content.strip():
            raise InvalidArgument("content must not be empty", {"field": "content"})
        key = idempotency.check_key(idempotency_key) if idempotency_key is not None else None
        try:
            return await self._post(thread_id, command, key)
        except IntegrityError:
            if key is None:
                raise
            # A concurrent first attempt with this key committed first (the primary key refused
            # ours, and our message rolled back with it): answer what it did.
            async with self.db.read() as s:
                thread = await threads.get_thread(s, thread_id)
                sender = await get_actor(s, command.from_)
                row = await idempotency.find(s, thread.id, sender.id, key)
                if row is None:
                    raise
                return Posted(idempotency.replay(row, idempotency.fingerprint(command)), replayed=True)

    async def _post(self, thread_id: str, command: MessageCreate, key: str | None) -> Posted:
        async with self.db.transaction() as s:
            thread, sender = await threads.thread_and_actor(s, thread_id, command.from_)
            if sender is None:
                raise InvalidArgument(f"unknown sender @{command.from_}", {"field": "from"})
            asked = idempotency.fingerprint(command) if key is not None else ""
            earlier = await idempotency.find(s, thread.id, sender.id, key) if key is not None else None
            if earlier is not None:
                return Posted(idempotency.replay(earlier, asked), replayed=True)
            result = await self.delivery.post(s, thread, command.content, sender=sender, to=command.to)
            view = PostView(
                message=result.view,
                addressed=result.addressed,
                held=result.held,
                unknown_mentions=result.unknown_mentions,
            )
            if key is not None:
                idempotency.remember(s, thread.id, sender.id, key, asked, view)
                await s.flush()  # a concurrent first attempt's key refuses ours here, before commit
            return Posted(view, replayed=False)

    async def inbox(
        self, handle: str, *, status: str | None, kind: str | None, thread_id: str | None, limit: int
    ) -> list[ItemView]:
        async with self.db.read() as s:
            actor = await get_actor(s, handle)
            return await inbox.list_items(
                s, actor, status=status, kind=kind, thread_id=thread_id, limit=limit
            )

    async def ack_item(self, item_id: str, *, owner: str | None = None) -> ItemView:
        async with self.db.transaction() as s:
            return await inbox.ack_item(s, item_id, owner=owner)

    async def ack_thread(self, command: InboxAck) -> int:
        async with self.db.transaction() as s:
            actor = await get_actor(s, command.actor)
            await threads.get_thread(s, command.thread_id)  # 404 for a thread that does not exist
            return await inbox.ack_thread(s, actor, command.thread_id)
