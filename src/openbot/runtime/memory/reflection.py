"""Reflection: after a burst of completed runs in one thread, the bot revises its memory (DESIGN §8).

Each due pending reflection (``memory.pending``) is handled in three steps, none inside a run:

1. take its row (a lease) and read the thread's messages since the first run of the burst, the
   bot's profile and its active memories (one read transaction);
2. make one model call with the bot's own model (``memory.jobs``; the scripted model answers from
   ``model_settings.reflection``), outside any transaction;
3. check the answer (``core.reflection.plan_reflection``: fields, known ids, and the scope rule,
   invariant 10) and write, in one transaction, the memory changes through ``memory.store``, one
   ``memory.reflected`` activity row listing what changed and what was refused, and the row's end.

A failed call leaves the row for a later round, :data:`~openbot.runtime.memory.pending.MAX_ATTEMPTS`
times at most (then ``memory.reflected`` says it gave up). A bot deleted or with memory switched off
since drops its rows.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.config import Settings
from openbot.core import memory as rules
from openbot.core.reflection import Change, Known, plan_reflection
from openbot.runtime.memory import embeddings, jobs, pending, store
from openbot.runtime.memory.pending import Taken
from openbot.store.db import Database
from openbot.store.journal import log_activity
from openbot.store.models import Actor, BotProfile, Memory, Message, Thread

log = logging.getLogger(__name__)

MESSAGES = 40  # newest messages of the burst shown to the model
MESSAGE_CHARS = 2_000
SHOWN = 200  # active memories a reflection may name


@dataclass(frozen=True)
class Scene:
    """What one reflection reads before its model call."""

    bot: store.BotRef
    profile: BotProfile
    thread: Thread
    messages: list[dict[str, str]]
    newest_message_id: str | None
    memories: list[Known]


class Reflector:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        #: (bot, thread) rows this process has taken and not settled yet.
        self.holding: set[tuple[str, str]] = set()

    @property
    def delay(self) -> float:
        return self.settings.memory_reflection_delay

    async def run_due(self) -> int:
        """Reflect on every due (bot, thread), one after another; return how many were handled."""
        async with self.db.read() as s:
            due = await pending.due(s, self.delay)
        handled = 0
        for bot_id, thread_id in due:
            if await self.reflect(bot_id, thread_id):
                handled += 1
        return handled

    async def reflect(self, bot_id: str, thread_id: str) -> bool:
        """Reflect on one (bot, thread) if it is due and nobody else is on it."""
        async with self.db.transaction() as s:
            taken = await pending.take(s, bot_id, thread_id, self.delay)
        if taken is None:
            return False
        key = (bot_id, thread_id)
        self.holding.add(key)
        try:
            await self._reflect(taken)
        except asyncio.CancelledError:
            raise  # still held: release() gives it back as the process stops
        except BaseException:
            self.holding.discard(key)
            raise
        self.holding.discard(key)
        return True

    async def release(self) -> None:
        """Give back the rows still held (the process stops mid-reflection): due again at once,
        the interrupted attempt not counted, rather than after the lease."""
        for bot_id, thread_id in list(self.holding):
            async with self.db.transaction() as s:
                await pending.release(s, bot_id, thread_id)
        self.holding.clear()

    async def _reflect(self, taken: Taken) -> None:
        async with self.db.read() as s:
            scene = await _scene(s, taken)
        if scene is None:
            async with self.db.transaction() as s:
                await pending.drop(s, taken)
            return
        try:
            model = jobs.job_model(
                scene.profile.model,
                dict(scene.profile.model_settings or {}),
                handle=scene.bot.handle,
                job="reflection",
            )
            answer = await jobs.ask(model, "reflection", scene.bot.handle, _payload(scene))
            # What the plan will most likely write, embedded before the transaction (the plan is
            # made again inside it, against the memories as they are then).
            likely = plan_reflection(
                answer, scene.memories, thread_id=scene.thread.id, thread_title=scene.thread.title
            )
            vectors = await embeddings.ahead(self.db, [change.content for change in likely.changes])
        except Exception as exc:  # supervision boundary: recorded, retried, never fatal
            log.warning("reflection of %s in %s failed: %r", taken.bot_id, taken.thread_id, exc)
            await self._failed(taken, scene, exc)
            return
        async with self.db.transaction() as s:
            embeddings.use(s, vectors)
            await _apply(s, taken, scene, answer)

    async def _failed(self, taken: Taken, scene: Scene, exc: Exception) -> None:
        async with self.db.transaction() as s:
            if taken.attempts < pending.MAX_ATTEMPTS:
                await pending.settle(s, taken, done=False)
                return
            await pending.drop(s, taken)
            log_activity(
                s,
                "memory.reflected",
                f"@{scene.bot.handle} gave up reflecting after {taken.attempts} attempts",
                level="error",
                thread_id=taken.thread_id,
                actor_id=scene.bot.id,
                actor_handle=scene.bot.handle,
                detail={"error": str(exc) or type(exc).__name__, "attempts": taken.attempts},
            )


async def _scene(session: AsyncSession, taken: Taken) -> Scene | None:
    row = (
        await session.execute(
            select(Actor, BotProfile, Thread)
            .join(BotProfile, BotProfile.actor_id == Actor.id)
            .join(Thread, Thread.id == taken.thread_id)
            .where(Actor.id == taken.bot_id)
        )
    ).first()
    if row is None or row[0].deleted or not row[1].memory_enabled:
        return None
    bot, profile, thread = row
    stmt = (
        select(Message.id, Message.content, Actor.handle)
        .outerjoin(Actor, Actor.id == Message.sender_id)
        .where(Message.thread_id == taken.thread_id)
        .order_by(Message.id.desc())
        .limit(MESSAGES)
    )
    if taken.from_message_id:
        stmt = stmt.where(Message.id >= taken.from_message_id)
    rows = list(reversed((await session.execute(stmt)).all()))
    messages = [{"from": f"@{h}" if h else "system", "content": c[:MESSAGE_CHARS]} for _i, c, h in rows]
    memories = await _known(session, bot.id)
    newest = rows[-1][0] if rows else None
    return Scene(store.BotRef(bot.id, bot.handle), profile, thread, messages, newest, memories)


async def _known(session: AsyncSession, bot_id: str) -> list[Known]:
    found = await store.listing(session, bot_id, limit=SHOWN)
    return [Known(m.id, m.content) for m in found if m.thread_id is None]


def _payload(scene: Scene) -> dict[str, Any]:
    return {
        "conversation": scene.messages,
        "memories": [{"id": m.id, "content": m.content} for m in scene.memories],
    }


async def _apply(session: AsyncSession, taken: Taken, scene: Scene, answer: Any) -> None:
    """Write the checked plan, the activity row and the pending row's end, in one transaction."""
    known = await _known(session, scene.bot.id)  # fresh: a run may have changed memory meanwhile
    plan = plan_reflection(answer, known, thread_id=scene.thread.id, thread_title=scene.thread.title)
    origin = store.Origin(source="reflection", thread_id=taken.thread_id)
    done: dict[str, list[str]] = {"created": [], "updated": [], "deleted": []}
    for change in plan.changes:
        done[_past(change.op)].append(await _write(session, scene.bot, change, origin))
    counts = ", ".join(f"{len(ids)} {what}" for what, ids in done.items() if ids) or "no change"
    log_activity(
        session,
        "memory.reflected",
        f"@{scene.bot.handle} reflected on {taken.runs} run(s): {counts}",
        level="warning" if plan.refused else "info",
        thread_id=taken.thread_id,
        actor_id=scene.bot.id,
        actor_handle=scene.bot.handle,
        detail={**done, "refused": list(plan.refused), "runs": taken.runs},
    )
    await pending.settle(session, taken, done=True, seen_upto=scene.newest_message_id)


def _past(op: str) -> str:
    return {"create": "created", "update": "updated", "delete": "deleted"}[op]


async def _write(session: AsyncSession, bot: store.BotRef, change: Change, origin: store.Origin) -> str:
    reason = "reflection"
    if change.op == "create":
        created = await store.create(
            session,
            bot,
            change.content or "",
            segment=change.segment or rules.DEFAULT_SEGMENT,
            tier=change.tier or rules.DEFAULT_TIER,
            importance=rules.DEFAULT_IMPORTANCE if change.importance is None else change.importance,
            origin=origin,
            reason=reason,
        )
        return created.id
    memory = await session.get(Memory, change.id)
    if memory is None:  # plan_reflection only names ids read in this transaction
        return str(change.id)
    if change.op == "update":
        await store.update(
            session,
            bot,
            memory,
            content=change.content,
            segment=change.segment,
            tier=change.tier,
            importance=change.importance,
            origin=origin,
            reason=reason,
        )
    else:
        await store.delete(session, bot, memory, origin=origin, reason=reason)
    return memory.id
