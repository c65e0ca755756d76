"""Scale-out on PostgreSQL: processes that share one database wake each other with NOTIFY."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

import pytest
from sqlalchemy import select, text

from conftest import PG_URL, Boot, Team
from openbot.runtime.engine import Runtime
from openbot.runtime.team import get_actor
from openbot.store.journal import append_event
from openbot.store.models import Event

pytestmark = pytest.mark.skipif(not PG_URL, reason="scale-out needs PostgreSQL (OPENBOT_TEST_DATABASE_URL)")


@pytest.fixture
def backend() -> str:
    return "postgresql"


async def wait_for(rt: Runtime, check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    """Wait on ``rt``'s journal signals until ``check`` holds."""
    sub = rt.bus.subscribe()
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await sub.next(timeout=timeout)
    finally:
        sub.close()


async def test_a_post_in_one_process_wakes_a_worker_in_another(boot: Boot) -> None:
    """The runtimes run on a fake clock, so no poll ever runs: only NOTIFY can wake ``worker``,
    and only NOTIFY can tell ``api``'s event stream about the reply ``worker`` committed."""
    async with boot() as api, boot() as worker:
        api.system.pause()  # the API process runs no bots of its own
        team = Team(api)
        thread = await team.thread()
        await team.post(thread, "@engineer hello from the other process")

        async def answered() -> bool:
            messages = await team.messages(thread)
            return any(m["sender"] and m["sender"]["handle"] == "engineer" for m in messages)

        await wait_for(api, answered)
        (run,) = await team.runs(thread)
        assert run.status == "completed" and run.lease_owner == worker.system.owner


async def test_an_announcement_from_elsewhere_reaches_this_process_s_readers(boot: Boot) -> None:
    async with boot() as one, boot() as two:
        sub = one.bus.subscribe()
        try:
            await Team(two).thread("made by two")  # a commit in two: a journal row, one NOTIFY
            async with asyncio.timeout(10):
                signal = await sub.next(timeout=10)
                while signal is None or signal.type != "journal":
                    signal = await sub.next(timeout=10)
        finally:
            sub.close()


async def test_a_post_elsewhere_wakes_the_bot_it_named_without_a_poll(boot: Boot) -> None:
    """The announcement names the bots the post gave mail to: the other process wakes them
    straight away, without first querying for queued mail."""
    async with boot() as api, boot() as worker:
        api.system.pause()
        woken: list[str] = []
        named = asyncio.Event()

        def notify(bot_ids: Iterable[str]) -> None:
            woken.extend(bot_ids)
            named.set()

        async def poll() -> None:
            """Finds nothing: only an announcement that names the engineer can wake it."""

        worker.system.notify = notify  # type: ignore[method-assign]
        worker.system.wake_queued = poll  # type: ignore[method-assign]
        team = Team(api)
        thread = await team.thread()
        await team.post(thread, "@engineer wake up over there")
        async with api.db.read() as s:
            engineer = (await get_actor(s, "engineer")).id
        async with asyncio.timeout(10):
            while engineer not in woken:
                named.clear()
                await named.wait()


async def test_a_journal_row_draws_its_id_only_once_it_holds_the_journal_lock(boot: Boot) -> None:
    """Journal ids commit in order: a transaction that writes the journal takes the lock before
    it draws an id, so an id drawn while another transaction holds the lock is always smaller
    than its own (a reader tailing ``id > last`` never skips a row that commits late)."""
    async with boot() as rt, rt.db.engine.connect() as holder:
        rt.system.pause()
        await holder.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": JOURNAL_LOCK})

        async def write() -> list[int]:
            async with rt.db.transaction() as s:
                append_event(s, "test.first", {"n": 1}, None)
                append_event(s, "test.second", {"n": 2}, "thr_x")
            async with rt.db.read() as s:
                rows = (await s.execute(select(Event.id, Event.type).where(Event.type.like("test.%")))).all()
            assert [t for _id, t in sorted(rows)] == ["test.first", "test.second"]
            return sorted(i for i, _t in rows)

        writer = asyncio.create_task(write())
        async with rt.db.engine.connect() as probe, asyncio.timeout(10):
            while not (await probe.scalar(text(_JOURNAL_LOCK_WAITERS), {"key": JOURNAL_LOCK})):
                await probe.rollback()
                await asyncio.sleep(0.01)  # polling the server's lock table: another process's state
        drawn = await holder.scalar(text("SELECT nextval('events_id_seq')"))
        await holder.commit()
        ids = await writer
        assert drawn is not None and min(ids) > drawn


JOURNAL_LOCK = 0x0B07
_JOURNAL_LOCK_WAITERS = (
    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE NOT l.granted AND l.locktype = 'advisory' AND l.objid = :key AND a.datname = current_database()"
)
