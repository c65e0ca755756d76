"""Tier 2 of the channel gate: one cheap model call per candidate, outside any transaction.

A channel message that names a bot without mentioning it is written with a *pending* disposition
(observe, tier 1, ``alias``). :meth:`Tier2.classify_pending` asks each such bot's gate model — its
``model_settings.gate_model``, else its own model — whether the message is addressed to it, with a
bounded input (``core.gate_input``), no tools and a timeout; then settles the row (tier 2, signal
``model``) and, on engage, queues the message for the bot. Every failure observes: an error, a
timeout, or the thread's budget of classifications per minute being spent (a chatty channel makes
bots quieter, never busier). A scripted bot answers from ``model_settings.gate``: the first rule
whose ``match`` finds the message decides its ``verdict``; none observes (DESIGN §11).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from langchain_core.messages import HumanMessage
from sqlalchemy import select, true, update

from openbot.core.gate_input import Line, prompt
from openbot.core.scheduling import ItemKind
from openbot.runtime.delivery.inbox import enqueue
from openbot.runtime.engagement.gate_script import Verdict, scripted_verdict
from openbot.runtime.loops import background, sleep_or_wake, stop_if_cancelled
from openbot.runtime.runner.models import build_chat_model
from openbot.store.db import Database
from openbot.store.journal import log_activity
from openbot.store.models import Actor, BotProfile, Disposition, Message

log = logging.getLogger(__name__)

BATCH = 20
# The oldest pending candidates: ``pending = 1`` on SQLite, as ix_dispositions_pending is predicated
# (a partial index serves only a term SQLite can match; ``IS 1`` made every pass scan the table).
PENDING = (
    select(Disposition.id, Disposition.message_id, Disposition.thread_id, Disposition.bot_id)
    .where(Disposition.pending == true())
    .order_by(Disposition.id)
    .limit(BATCH)
)
HISTORY = 30


@dataclass(frozen=True)
class Candidate:
    disposition_id: int
    message_id: str
    thread_id: str
    bot_id: str


class Tier2:
    def __init__(
        self, db: Database, *, per_minute: int = 10, timeout: float = 10.0, poll_seconds: float = 2.0
    ) -> None:
        self.db = db
        self.clock = db.clock
        self.per_minute = per_minute
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self._spent: dict[str, deque[float]] = {}
        self._wake = asyncio.Event()
        self.paused = False  # tests pause the loop to see candidates before they are settled
        db.gate_listeners.append(self._wake.set)

    async def classify_pending(self) -> int:
        """Settle every pending candidate; returns how many were settled."""
        settled = 0
        while batch := await self._pending():
            for candidate in batch:
                verdict = await self._classify(candidate)
                settled += await self._settle(candidate, verdict)
            if len(batch) < BATCH:
                break
        return settled

    async def _pending(self) -> list[Candidate]:
        async with self.db.read() as s:
            rows = await s.execute(PENDING)
            return [Candidate(*row) for row in rows]

    def _within_budget(self, thread_id: str) -> bool:
        now = self.clock.now().timestamp()
        spent = self._spent.setdefault(thread_id, deque())
        while spent and spent[0] <= now - 60:
            spent.popleft()
        if len(spent) >= self.per_minute:
            return False
        spent.append(now)
        return True

    async def _classify(self, candidate: Candidate) -> Verdict:
        if not self._within_budget(candidate.thread_id):
            return Verdict(
                False, f"the thread's budget of {self.per_minute} classifications a minute is spent"
            )
        try:
            async with asyncio.timeout(self.timeout):
                return await self._ask(candidate)
        except TimeoutError:
            return Verdict(False, f"the gate model did not answer within {self.timeout:g} s")
        except Exception as exc:  # supervision boundary: any failure of the call observes
            log.info("tier-2 classification failed for %s", candidate.message_id, exc_info=True)
            return Verdict(False, f"classification failed ({type(exc).__name__}): {str(exc)[:200]}")

    async def _ask(self, candidate: Candidate) -> Verdict:
        async with self.db.read() as s:
            bot = await s.get(Actor, candidate.bot_id)
            profile = await s.get(BotProfile, candidate.bot_id)
            message = await s.get(Message, candidate.message_id)
            if bot is None or profile is None or message is None:
                return Verdict(False, "the bot or the message is gone")
            earlier = (
                await s.execute(
                    select(Message.content, Actor.handle, Actor.kind)
                    .outerjoin(Actor, Actor.id == Message.sender_id)
                    .where(Message.thread_id == message.thread_id, Message.id < message.id)
                    .order_by(Message.id.desc())
                    .limit(HISTORY)
                )
            ).all()
            author = await s.get(Actor, message.sender_id) if message.sender_id else None
        settings = profile.model_settings or {}
        model = str(settings.get("gate_model") or profile.model)
        if model == "scripted":
            delay = settings.get("delay_ms") or 0
            if delay:
                await asyncio.sleep(delay / 1000)  # the scripted model's simulated latency (DESIGN §11)
            return scripted_verdict(list(settings.get("gate") or []), message.content)
        history = [Line(h or "system", k == "bot", c) for c, h, k in reversed(earlier)]
        current = Line(
            author.handle if author else "system", bool(author and author.kind == "bot"), message.content
        )
        chat = build_chat_model(model, {}, handle=bot.handle, trigger_text=message.content, trigger_count=1)
        answer = await chat.ainvoke([HumanMessage(prompt(bot.handle, history, current))])
        said = str(answer.content).strip().lower()
        return Verdict(said.startswith("engage"), f"the gate model ({model}) said {said[:20]!r}")

    async def _settle(self, candidate: Candidate, verdict: Verdict) -> int:
        async with self.db.transaction() as s:
            result = await s.execute(
                update(Disposition)
                .where(Disposition.id == candidate.disposition_id, Disposition.pending.is_(True))
                .values(
                    pending=False,
                    tier=2,
                    signal="model",
                    disposition="engage" if verdict.engage else "observe",
                    reason=verdict.reason,
                )
            )
            if not getattr(result, "rowcount", 0):
                return 0  # another process settled it
            bot = await s.get(Actor, candidate.bot_id)
            if verdict.engage and bot is not None and bot.enabled:
                await enqueue(
                    s, bot, candidate.thread_id, kind=ItemKind.MESSAGE, message_id=candidate.message_id
                )
            handle = bot.handle if bot else "?"
            doing = "engages" if verdict.engage else "observes"
            log_activity(
                s,
                "message.engaged" if verdict.engage else "message.observed",
                f"@{handle} {doing}: {verdict.reason}",
                thread_id=candidate.thread_id,
                actor_id=candidate.bot_id,
                actor_handle=bot.handle if bot else None,
                message_id=candidate.message_id,
                detail={"tier": 2, "signal": "model", "engage": verdict.engage},
            )
            return 1

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Own the loop: a pass when candidates are written here, and every ``poll_seconds``."""
        async with background(self._loop(), "openbot-gate-tier2"):
            yield

    async def _loop(self) -> None:
        while True:
            try:
                if not self.paused:
                    await self.classify_pending()
            except Exception:  # supervision boundary: the next pass tries again
                stop_if_cancelled()
                log.exception("tier-2 pass failed")
            await self._sleep(self.poll_seconds)

    async def _sleep(self, seconds: float) -> None:
        """Until ``seconds`` pass on the runtime's clock or a candidate is written here."""
        await sleep_or_wake(self.clock, seconds, self._wake)
