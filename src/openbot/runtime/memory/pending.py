"""Pending reflections: the durable debounce timer of reflection (DESIGN §8, invariant 12).

A completed run of a bot with ``memory_enabled`` adds one statement to its finish transaction,
:func:`schedule`: an upsert of the (bot, thread) row that moves ``last_run_at`` to now. A burst of
runs keeps moving it, so the row becomes due (``MEMORY_REFLECTION_DELAY`` after the last run)
once. Nothing lives only in memory: a crash before the reflection leaves the row, and the next
process reflects on it.

A process takes a due row with :func:`take` (a lease, so two processes never reflect on one row
at once; an expired lease is taken over) and ends it with :func:`settle`: the row is deleted
unless another run finished meanwhile, in which case it stays, unleased, for the next round.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.store import fast
from openbot.store.db import now
from openbot.store.models import PendingReflection

LEASE = timedelta(minutes=5)
"""How long a process may take to reflect before another may take the row over."""
MAX_ATTEMPTS = 3
"""A reflection that failed this often is dropped (and says so in the activity log)."""
RETRY_AFTER = timedelta(minutes=1)
"""A failed reflection is tried again after this, times its attempts so far."""

_STAMP = PendingReflection.last_run_at.type

# Built once: it runs in every completed run's finish transaction. The SELECT finds the bot's
# profile only when its memory is enabled, so a bot without memory writes nothing.
_SCHEDULE = fast.Sql(
    text(
        "INSERT INTO pending_reflections "
        "(bot_id, thread_id, from_message_id, runs, last_run_at, lease_until, attempts, created_at) "
        "SELECT CAST(:bot_id AS VARCHAR(40)), CAST(:thread_id AS VARCHAR(40)), "
        "CAST(:from_message_id AS VARCHAR(40)), 1, :stamp, NULL, 0, :stamp "
        "FROM bot_profiles WHERE actor_id = CAST(:bot_id AS VARCHAR(40)) AND memory_enabled "
        "ON CONFLICT (bot_id, thread_id) DO UPDATE SET "
        "last_run_at = excluded.last_run_at, runs = pending_reflections.runs + 1"
    ).bindparams(bindparam("stamp", type_=_STAMP))
)

_DUE = (
    select(PendingReflection.bot_id, PendingReflection.thread_id)
    .where(
        PendingReflection.last_run_at <= bindparam("quiet_since", type_=_STAMP),
        or_(
            PendingReflection.lease_until.is_(None),
            PendingReflection.lease_until <= bindparam("stamp", type_=_STAMP),
        ),
    )
    .order_by(PendingReflection.last_run_at)
    .limit(bindparam("limit"))
)


@dataclass(frozen=True)
class Taken:
    """A due reflection this process holds until ``lease_until``."""

    bot_id: str
    thread_id: str
    from_message_id: str | None
    runs: int
    last_run_at: datetime
    attempts: int


async def schedule(session: AsyncSession, bot_id: str, thread_id: str, from_message_id: str | None) -> None:
    """Owe a reflection for (bot, thread), due after the delay (one statement, in the run's end)."""
    params = {"bot_id": bot_id, "thread_id": thread_id, "from_message_id": from_message_id}
    await fast.execute(session, _SCHEDULE, {**params, "stamp": now(session)})


async def due(session: AsyncSession, delay: float, limit: int = 20) -> list[tuple[str, str]]:
    """(bot, thread) pairs quiet for ``delay`` seconds and not being reflected on, oldest first."""
    stamp = now(session)
    quiet_since = stamp - timedelta(seconds=delay)
    rows = await session.execute(_DUE, {"quiet_since": quiet_since, "stamp": stamp, "limit": limit})
    return [(bot_id, thread_id) for bot_id, thread_id in rows]


async def take(session: AsyncSession, bot_id: str, thread_id: str, delay: float) -> Taken | None:
    """Lease one due row to this process, or None when it is not due or someone else has it."""
    stamp = now(session)
    row = await session.get(PendingReflection, (bot_id, thread_id), with_for_update=True)
    if row is None or row.last_run_at > stamp - timedelta(seconds=delay):
        return None
    if row.lease_until is not None and row.lease_until > stamp:
        return None
    row.lease_until = stamp + LEASE
    row.attempts += 1
    return Taken(bot_id, thread_id, row.from_message_id, row.runs, row.last_run_at, row.attempts)


async def settle(session: AsyncSession, taken: Taken, *, done: bool, seen_upto: str | None = None) -> bool:
    """End a taken row: deleted when done and no run finished since it was taken (returns True);
    otherwise released for the next round; a failed attempt keeps its count and waits
    :data:`RETRY_AFTER` × attempts. ``seen_upto``: the newest message the reflection read; the
    next round starts there."""
    key = (PendingReflection.bot_id == taken.bot_id) & (PendingReflection.thread_id == taken.thread_id)
    if done:
        result = await session.execute(
            delete(PendingReflection)
            .where(
                key,
                PendingReflection.last_run_at == taken.last_run_at,  # no run ended since it was taken
                PendingReflection.runs == taken.runs,  # (not even one at the same instant)
            )
            .execution_options(synchronize_session=False)
        )
        if getattr(result, "rowcount", 0):
            return True
    values: dict[str, object] = {"lease_until": None}
    if not done:
        values["lease_until"] = now(session) + RETRY_AFTER * taken.attempts
    if done:  # newer runs arrived: reflect on them next time, starting after what was just seen
        values.update(attempts=0, runs=PendingReflection.runs - taken.runs)
        if seen_upto is not None:
            values["from_message_id"] = seen_upto
    await session.execute(update(PendingReflection).where(key).values(**values))
    return False


async def release(session: AsyncSession, bot_id: str, thread_id: str) -> None:
    """Give a taken row back unfinished (its process is stopping): due again, attempt not counted."""
    await session.execute(
        update(PendingReflection)
        .where(PendingReflection.bot_id == bot_id, PendingReflection.thread_id == thread_id)
        .values(lease_until=None, attempts=PendingReflection.attempts - 1)
    )


async def drop(session: AsyncSession, taken: Taken) -> None:
    """Forget a row for good (its bot is gone, its memory off, or it failed too often)."""
    await session.execute(
        delete(PendingReflection).where(
            PendingReflection.bot_id == taken.bot_id, PendingReflection.thread_id == taken.thread_id
        )
    )
