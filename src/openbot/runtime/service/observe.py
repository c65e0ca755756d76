"""Status, the activity timeline and the journal: what the API shows about the system itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypedDict

from sqlalchemy import false, func, literal, select, true, union_all

from openbot.core.scheduling import ItemKind
from openbot.core.states import IN_FLIGHT_RUNS, OPEN_ITEMS, ItemStatus, RunStatus
from openbot.runtime.bus import Bus
from openbot.runtime.fanout import PAGE, Fanout
from openbot.runtime.memory.service import MemoryIndexStatus, index_status
from openbot.runtime.scheduler.system import ActorSystem
from openbot.runtime.scope import member_threads
from openbot.runtime.views import ActivityView, activity_view
from openbot.store import fast
from openbot.store.db import Database
from openbot.store.journal import journal_floor, journal_head, read_journal
from openbot.store.models import ActivityLog, Actor, Disposition, Event, InboxItem, Run


class StatusView(TypedDict):
    runs: dict[str, int]
    mailboxes: dict[str, int]
    gate: dict[str, int]
    workers: int
    backend: str
    memory: MemoryIndexStatus


# What ``status`` counts, in-flight work only, each part on a read index, never every run or item
# ever: one statement, so one snapshot on both backends. Work moves gate → mailbox → run → done
# (and a finish queues the next bot's mail in its own transaction); separate reads could each look
# between two steps and together read "idle" while work is in flight.
_WAITING = select(Run.bot_id, Run.thread_id).where(Run.status == RunStatus.WAITING_HUMAN).subquery()
_PARKED = _WAITING.c.bot_id.is_not(None)
_COUNTS = fast.Sql(
    union_all(
        select(
            literal("run").label("part"),
            Run.status.label("status"),
            literal("").label("kind"),
            false().label("parked"),
            func.count().label("n"),
        )
        .where(Run.status.in_((*IN_FLIGHT_RUNS, RunStatus.WAITING_HUMAN)))
        .group_by(Run.status),
        select(literal("mail"), InboxItem.status, InboxItem.kind, _PARKED, func.count())
        .outerjoin(
            _WAITING,
            (_WAITING.c.bot_id == InboxItem.actor_id) & (_WAITING.c.thread_id == InboxItem.thread_id),
        )
        # By bot, then status: SQLite seeks ix_inbox_actor_status for each instead of scanning.
        .where(
            InboxItem.actor_id.in_(select(Actor.id).where(Actor.kind == "bot")),
            InboxItem.status.in_(OPEN_ITEMS),
        )
        .group_by(InboxItem.status, InboxItem.kind, _PARKED),
        # Channel messages whose tier-2 gate decision is still owed (ix_dispositions_pending).
        select(literal("gate"), literal("pending"), literal(""), false(), func.count()).where(
            Disposition.pending == true()
        ),
    )
)


@dataclass(frozen=True)
class ActivityFilter:
    thread_id: str | None = None
    actor: str | None = None
    run_id: str | None = None
    event: str | None = None  # exact, or a prefix ending in "."
    level: str | None = None
    after_id: int | None = None
    limit: int = 200
    member: str | None = None  # an actor token's handle: the rows of its threads only


@dataclass(frozen=True)
class Observer:
    db: Database
    bus: Bus
    system: ActorSystem
    fanout: Fanout = field(init=False)

    def __post_init__(self) -> None:
        fanout = Fanout(self._read_journal, lambda: self.system.settings.poll_seconds)
        object.__setattr__(self, "fanout", fanout)
        self.bus.listen(fanout.publish)

    async def status(self) -> StatusView:
        async with self.db.reader() as r:
            rows = await fast.execute(r, _COUNTS)
        run_counts = {str(k): 0 for k in (*IN_FLIGHT_RUNS, RunStatus.WAITING_HUMAN)}
        mailboxes = {"queued": 0, "processing": 0, "parked": 0}
        pending = 0
        for row in rows:
            if row.part == "run":
                run_counts[row.status] += int(row.n)
            elif row.part == "gate":
                pending += int(row.n)
            elif row.status == ItemStatus.QUEUED and row.parked and row.kind == ItemKind.MESSAGE:
                mailboxes["parked"] += int(row.n)
            else:
                mailboxes[row.status] += int(row.n)
        # A message the gate is still deciding on is work owed to a bot's mailbox: counted as queued,
        # so "idle" never reads true while a tier-2 decision may yet queue it (docs/decisions.md).
        mailboxes["queued"] += pending
        return {
            "runs": run_counts,
            "mailboxes": mailboxes,
            "gate": {"pending": pending},
            "workers": len(self.system.workers),
            "backend": self.db.backend,
            "memory": index_status(self.system.settings),
        }

    async def activity(self, where: ActivityFilter) -> list[ActivityView]:
        stmt = select(ActivityLog)
        if where.member:
            stmt = stmt.where(ActivityLog.thread_id.in_(member_threads(where.member)))
        if where.thread_id:
            stmt = stmt.where(ActivityLog.thread_id == where.thread_id)
        if where.actor:
            stmt = stmt.where(ActivityLog.actor_handle == where.actor)
        if where.run_id:
            stmt = stmt.where(ActivityLog.run_id == where.run_id)
        if where.event:
            prefix = where.event.endswith(".")
            stmt = stmt.where(
                ActivityLog.event.startswith(where.event) if prefix else ActivityLog.event == where.event
            )
        if where.level:
            stmt = stmt.where(ActivityLog.level == where.level)
        async with self.db.read() as s:
            if where.after_id is not None:
                stmt = stmt.where(ActivityLog.id > where.after_id).order_by(ActivityLog.id).limit(where.limit)
                rows = list(await s.scalars(stmt))
            else:
                newest = stmt.order_by(ActivityLog.id.desc()).limit(where.limit)
                rows = list(reversed(list(await s.scalars(newest))))
        return [activity_view(r) for r in rows]

    async def journal_bounds(self) -> tuple[int, int]:
        """(head, floor): the newest journal id, and the id at or below which rows were pruned."""
        async with self.db.read() as s:
            return await journal_head(s), await journal_floor(s)

    async def replay(
        self, thread_id: str | None, after: int, upto: int | None = None
    ) -> AsyncIterator[Event]:
        """Journal rows after ``after`` (up to ``upto``), oldest first, read a page at a time."""
        while True:
            rows = await self._read_journal(thread_id, after, upto, PAGE)
            for row in rows:
                yield row
            if len(rows) < PAGE:
                return
            after = rows[-1].id

    async def _read_journal(
        self, thread_id: str | None, after: int, upto: int | None, limit: int
    ) -> list[Event]:
        async with self.db.reader() as r:
            return await read_journal(r, thread_id, after, upto, limit)


__all__ = ["ActivityFilter", "Observer", "StatusView"]
