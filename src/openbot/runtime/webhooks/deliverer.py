"""The delivery loop: POST what is due, then mark it delivered, due again later, or failed.

Time is the runtime's clock. An attempt first claims its delivery in a short transaction (the
count goes up and ``next_attempt_at`` moves past a claim window), so two processes never send one
attempt twice and a process that dies mid-request leaves the delivery due again once the window
passes; the request runs outside any transaction, and its outcome is written only if the row is
still at the attempt that was claimed. After a failure the ``n``-th retry waits
``webhook_retries[n-1]`` seconds; a failure with no retries left marks the delivery failed.

``deliver_due()`` is one pass (tests call it after moving a ``FakeClock``); ``running()`` owns the
background loop, which passes when told a delivery was recorded, when the next one is due, and
every ``poll_seconds`` (deliveries recorded by other processes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select

from openbot.config import Settings
from openbot.core import signing
from openbot.core.errors import InvalidArgument
from openbot.runtime.loops import background, sleep_or_wake, stop_if_cancelled
from openbot.runtime.webhooks import outbox
from openbot.runtime.webhooks.sender import Sender
from openbot.store.db import Database, now
from openbot.store.models import Actor, ExternalProfile, WebhookDelivery

log = logging.getLogger(__name__)

CLAIM = timedelta(minutes=2)  # an attempt in flight is not due again before this
BATCH = 20  # attempts sent at once


@dataclass(frozen=True)
class Attempt:
    delivery_id: str
    number: int  # the attempt's count once claimed: its outcome is written only at this count
    claimed_until: datetime | None = None  # the claim window's end, its next_attempt_at


class Webhooks:
    def __init__(self, db: Database, settings: Settings, sender: Sender | None = None) -> None:
        self.db = db
        self.clock = db.clock
        self.settings = settings
        self.sender = sender or Sender(
            allow_private=settings.webhook_allow_private, timeout=settings.webhook_timeout_seconds
        )
        self._wake = asyncio.Event()
        self._one_pass_at_a_time = asyncio.Lock()
        db.webhook_listeners.append(self._wake.set)

    async def deliver_due(self) -> int:
        """Attempt every delivery due now; returns how many attempts were made."""
        async with self._one_pass_at_a_time:
            made = 0
            while attempts := await self._claim_due():
                await asyncio.gather(*(self._attempt(a) for a in attempts))
                made += len(attempts)
                if len(attempts) < BATCH:
                    break
            return made

    async def _claim_due(self) -> list[Attempt]:
        async with self.db.transaction() as s:
            stamp = now(s)
            stmt = (
                select(WebhookDelivery)
                .where(WebhookDelivery.status == outbox.PENDING, WebhookDelivery.next_attempt_at <= stamp)
                .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
                .limit(BATCH)
            )
            rows = list(await s.scalars(self.db.dialect.for_update(stmt, skip_locked=True)))
            for row in rows:
                row.attempts += 1
                row.next_attempt_at = stamp + CLAIM
            return [Attempt(row.id, row.attempts, stamp + CLAIM) for row in rows]

    async def _attempt(self, attempt: Attempt) -> None:
        try:
            async with self.db.read() as s:
                found = (
                    await s.execute(
                        select(WebhookDelivery, Actor.handle, ExternalProfile)
                        .join(Actor, Actor.id == WebhookDelivery.actor_id)
                        .outerjoin(ExternalProfile, ExternalProfile.actor_id == Actor.id)
                        .where(WebhookDelivery.id == attempt.delivery_id)
                    )
                ).first()
                if found is None:
                    return  # its thread or actor was deleted meanwhile
                row, _handle, profile = found
                payload = await outbox.body(s, row)
            if payload is None:
                error: str | None = "the thread is gone"
            elif profile is None or not profile.webhook_url:
                error = "the actor has no webhook_url"
            else:
                encoded = outbox.encode(payload)
                stamp = str(int(self.clock.now().timestamp()))
                headers = signing.headers(profile.webhook_secret, row.id, stamp, encoded)
                error = await self.sender.send(profile.webhook_url, headers, encoded)
            await self._settle(attempt, error)
        except Exception:  # supervision boundary: the claim window makes it due again
            log.exception("webhook delivery %s failed unexpectedly", attempt.delivery_id)

    async def _settle(self, attempt: Attempt, error: str | None) -> None:
        async with self.db.transaction() as s:
            row = await s.get(WebhookDelivery, attempt.delivery_id)
            if row is None or row.attempts != attempt.number or row.status != outbox.PENDING:
                return  # retried or deleted meanwhile: that attempt's outcome is the one to write
            actor = await s.get(Actor, row.actor_id)
            handle = actor.handle if actor else ""
            stamp = now(s)
            row.updated_at = stamp
            row.last_error = error
            # A retry asked for while this attempt was in flight moved its due time back to "now":
            # that is one more attempt, which this attempt's failure must not schedule away.
            retried = (
                attempt.claimed_until is not None
                and row.next_attempt_at is not None
                and row.next_attempt_at < attempt.claimed_until
            )
            if error is None:
                row.status, row.next_attempt_at = outbox.DELIVERED, None
                event = "webhook.delivered"
                summary = f"delivered to @{handle} (attempt {row.attempts})"
            elif retried:
                summary, event = (
                    f"delivery to @{handle} failed, retrying now as asked: {error}",
                    "webhook.attempt_failed",
                )
            elif (wait := self._retry_wait(row.attempts)) is not None:
                row.next_attempt_at = stamp + timedelta(seconds=wait)
                summary, event = (
                    f"delivery to @{handle} failed, retry in {wait:g}s: {error}",
                    "webhook.attempt_failed",
                )
            else:
                row.status, row.next_attempt_at = outbox.FAILED, None
                summary, event = (
                    f"delivery to @{handle} failed after {row.attempts} attempts: {error}",
                    "webhook.failed",
                )
            outbox.changed(s, row, handle, event=event, summary=summary)

    def _retry_wait(self, attempts: int) -> float | None:
        """Seconds before the next attempt after ``attempts`` failed ones, or None: none left."""
        schedule = self.settings.webhook_retries
        return schedule[attempts - 1] if attempts - 1 < len(schedule) else None

    async def next_due(self) -> datetime | None:
        async with self.db.read() as s:
            due: datetime | None = await s.scalar(
                select(func.min(WebhookDelivery.next_attempt_at)).where(
                    WebhookDelivery.status == outbox.PENDING
                )
            )
        return due

    # ── the API's side ───────────────────────────────────────────────────────────────────────
    async def list_deliveries(
        self, *, actor: str | None = None, status: str | None = None, limit: int = 200
    ) -> list[outbox.DeliveryView]:
        if status and status not in outbox.STATUSES:
            raise InvalidArgument(
                f"status must be one of {', '.join(outbox.STATUSES)}", {"field": "status", "value": status}
            )
        async with self.db.read() as s:
            return await outbox.list_deliveries(s, actor=actor, status=status, limit=limit)

    async def retry(self, delivery_id: str) -> outbox.DeliveryView:
        """Make a delivery due now (the loop is woken at commit); 409 once it was delivered."""
        async with self.db.transaction() as s:
            return await outbox.retry(s, delivery_id)

    # ── the loop ─────────────────────────────────────────────────────────────────────────────
    @asynccontextmanager
    async def running(self) -> AsyncIterator[Webhooks]:
        """Run the delivery loop for the duration of the block (the runtime owns it)."""
        async with background(self._loop(), "openbot-webhooks"):
            yield self

    async def _loop(self) -> None:
        while True:
            try:
                await self.deliver_due()
                due = await self.next_due()
            except Exception:  # supervision boundary: the next pass tries again
                stop_if_cancelled()
                log.exception("webhook delivery pass failed")
                due = None
            wait = self.settings.poll_seconds
            if due is not None:
                wait = min(wait, max((due - self.clock.now()).total_seconds(), 0.0))
            await self._sleep(wait)

    async def _sleep(self, seconds: float) -> None:
        """Until ``seconds`` pass on the clock or a delivery is recorded, whichever comes first."""
        await sleep_or_wake(self.clock, seconds, self._wake)


__all__ = ["Attempt", "Webhooks"]
