"""The store's fast path (``store.fast``): what it writes reads back identically through the ORM
and the reverse, on both backends, in the session's transaction and on a plain reader."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, func, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from conftest import Team
from openbot.core.ids import new_id
from openbot.runtime.engine import Runtime
from openbot.store import driver, fast, inserts
from openbot.store.dialect import WAL_CHECKPOINT_PAGES
from openbot.store.journal import append_event, log_activity
from openbot.store.models import ActivityLog, Event, Message

_BY_THREAD = fast.Sql(
    select(Message.id, Message.mentions, Message.metadata_, Message.created_at, Message.hop)
    .where(Message.thread_id == bindparam("thread_id"), Message.id.in_(bindparam("ids", expanding=True)))
    .order_by(Message.id)
)
_HOP_ZERO = fast.Sql(select(Message.id).where(Message.hop == 0, Message.thread_id == bindparam("thread_id")))
_BUMP = fast.Sql(update(Message).where(Message.id == bindparam("id")).values(hop=Message.hop + 1))


async def test_fast_path_rows_read_back_through_the_orm_and_back(rt: Runtime, team: Team) -> None:
    thread = await team.thread()
    stamp = datetime(2026, 12, 1, 9, 30, 0, tzinfo=UTC)  # no microseconds: stored as the ORM stores it
    message = Message(
        id=new_id("msg"),
        thread_id=thread,
        sender_id=None,
        content="hello",
        mentions=["qa", "engineer"],
        hop=0,
        metadata_={"kind": "test", "n": [1, 2]},
        created_at=stamp,
    )
    async with rt.db.transaction() as s:
        await inserts.insert(s, message)
        await fast.execute(s, _BUMP, {"id": message.id})  # sees the insert: same transaction
    async with rt.db.read() as s:
        loaded = await s.get(Message, message.id)
        assert loaded is not None
        assert (loaded.mentions, loaded.metadata_, loaded.created_at, loaded.hop) == (
            ["qa", "engineer"],
            {"kind": "test", "n": [1, 2]},
            stamp,
            1,
        )
        # An ORM-written message (the team's post) and the fast one, through an expanding IN.
        posted = (await s.scalars(select(Message.id).where(Message.thread_id == thread))).all()
    ids = sorted(posted)
    async with rt.db.reader() as r:
        rows = await fast.execute(r, _BY_THREAD, {"thread_id": thread, "ids": ids})
        assert [row.id for row in rows] == ids
        mine = next(row for row in rows if row.id == message.id)
        # Records are named by column: Message.metadata_ is the column ``metadata``.
        assert (mine.mentions, mine.metadata, mine.created_at, mine.hop) == (
            ["qa", "engineer"],
            {"kind": "test", "n": [1, 2]},
            stamp,
            1,
        )
        # A literal bound in the statement itself (hop == 0) needs no parameter from the caller.
        assert await fast.execute(r, _HOP_ZERO, {"thread_id": thread}) == []


async def test_statements_on_the_fast_path_are_seen_by_the_listeners(rt: Runtime, team: Team) -> None:
    thread = await team.thread()
    seen: list[str] = []

    def record(sql: str, _params: object) -> None:
        seen.append(sql)

    driver.statement_listeners.append(record)
    try:
        async with rt.db.reader() as r:
            await fast.execute(r, _HOP_ZERO, {"thread_id": thread})
    finally:
        driver.statement_listeners.remove(record)
    assert len(seen) == 1 and "FROM messages" in seen[0]


def _message(thread: str, content: str, message_id: str | None = None) -> Message:
    return Message(
        id=message_id or new_id("msg"),
        thread_id=thread,
        sender_id=None,
        content=content,
        mentions=[],
        hop=0,
        metadata_={},
        created_at=datetime(2026, 12, 1, 9, 30, 0, tzinfo=UTC),
    )


async def test_writes_held_for_one_round_trip_come_before_every_read_and_the_commit(
    rt: Runtime, team: Team
) -> None:
    """On PostgreSQL a write without RETURNING waits for the next round trip; whatever the
    transaction reads next (fast path or ORM) sees it, and a rollback drops it (on SQLite every
    statement runs at once: the same assertions hold)."""
    thread = await team.thread()
    first, second = _message(thread, "one"), _message(thread, "two")
    async with rt.db.transaction() as s:
        await inserts.insert(s, first)
        await fast.execute(s, _BUMP, {"id": first.id})
        rows = await fast.execute(s, _BY_THREAD, {"thread_id": thread, "ids": [first.id]})
        assert [(row.id, row.hop) for row in rows] == [(first.id, 1)]  # a fast read sees both
        await inserts.insert(s, second)
        assert await s.get(Message, second.id) is not None  # and so does the ORM
    with pytest.raises(RuntimeError):
        async with rt.db.transaction() as s:
            dropped = _message(thread, "dropped")
            await inserts.insert(s, dropped)
            raise RuntimeError("changed my mind")
    async with rt.db.read() as s:
        contents = (await s.scalars(select(Message.content).where(Message.thread_id == thread))).all()
    assert sorted(contents) == ["one", "two"]


async def test_a_held_write_that_fails_fails_its_transaction_with_the_usual_error(
    rt: Runtime, team: Team
) -> None:
    thread = await team.thread()
    taken = _message(thread, "first")
    async with rt.db.transaction() as s:
        await inserts.insert(s, taken)
    after = _message(thread, "never written")
    with pytest.raises(IntegrityError):
        async with rt.db.transaction() as s:
            await inserts.insert(s, after)
            await inserts.insert(s, _message(thread, "duplicate", message_id=taken.id))
    async with rt.db.read() as s:
        contents = (await s.scalars(select(Message.content).where(Message.thread_id == thread))).all()
    assert contents == ["first"]  # nothing of the failed transaction was written
    async with rt.db.transaction() as s:  # and the connection it used works as before
        await inserts.insert(s, _message(thread, "later"))


async def test_reads_sent_together_come_back_in_order_after_the_held_writes(rt: Runtime, team: Team) -> None:
    """``fast.execute_all``: each statement's rows, in the order given, seeing the writes before
    them; on PostgreSQL the writes and the reads travel in one round trip."""
    thread = await team.thread()
    first, second = _message(thread, "one"), _message(thread, "two")
    trips: list[int] = []
    driver.trip_listeners.append(trips.append)
    try:
        async with rt.db.transaction() as s:
            await inserts.insert(s, first, second)
            await fast.execute(s, _BUMP, {"id": second.id})
            trips.clear()
            bumped, unbumped = await fast.execute_all(
                s,
                [
                    (_BY_THREAD, {"thread_id": thread, "ids": [first.id, second.id]}),
                    (_HOP_ZERO, {"thread_id": thread}),
                ],
            )
    finally:
        driver.trip_listeners.remove(trips.append)
    assert [(row.id, row.hop) for row in bumped] == [(first.id, 0), (second.id, 1)]
    assert [row.id for row in unbumped] == [first.id]
    if rt.db.dialect.shared:
        # The insert, the update and both reads: one round trip; then the COMMIT, alone (nothing
        # was held back for it).
        assert trips == [4, 0]
    else:
        assert trips == []  # SQLite has no round trips: everything ran at once


async def test_the_last_writes_and_the_journal_go_out_with_the_commit(rt: Runtime, team: Team) -> None:
    """The writes still held at commit, the activity and journal rows (``store.journal``) and the
    COMMIT: one round trip on PostgreSQL; the journal's ids are set once it has committed, and
    the rows read back as written."""
    thread = await team.thread()
    row = _message(thread, "with the commit")
    trips: list[int] = []
    heads: list[dict[str | None, int]] = []
    driver.trip_listeners.append(trips.append)
    rt.db.journal_listeners.append(heads.append)
    try:
        async with rt.db.transaction() as s:
            await fast.execute(s, _HOP_ZERO, {"thread_id": thread})  # begins: one round trip
            trips.clear()
            await inserts.insert(s, row)
            await fast.execute(s, _BUMP, {"id": row.id})
            log_activity(s, "test.logged", "a row of activity", thread_id=thread)
            append_event(s, "test.event", {"n": 1}, thread)
            append_event(s, "test.event", {"n": 2}, thread)
    finally:
        driver.trip_listeners.remove(trips.append)
        rt.db.journal_listeners.remove(heads.append)
    if rt.db.dialect.shared:
        assert trips == [4]  # insert, update, activity, journal — and the COMMIT with them
    else:
        assert trips == []
    async with rt.db.read() as s:
        events = (await s.scalars(select(Event).where(Event.type == "test.event").order_by(Event.id))).all()
        hop = await s.scalar(select(Message.hop).where(Message.id == row.id))
        logged = await s.scalar(
            select(func.count()).select_from(ActivityLog).where(ActivityLog.event == "test.logged")
        )
    assert [e.data for e in events] == [{"n": 1}, {"n": 2}]
    assert (hop, logged) == (1, 1)
    assert heads == [{thread: events[-1].id}]  # the ids the listeners got are the committed ones


async def test_a_reader_leaves_no_transaction_to_end(rt: Runtime, team: Team) -> None:
    """``Database.reader``: on PostgreSQL each read is a transaction of its own (autocommit), so
    nothing is left open between reads and no ROLLBACK goes out at the end; it sees what was
    committed before each read, on both backends."""
    thread = await team.thread()
    row = _message(thread, "read me")
    async with rt.db.transaction() as s:
        await inserts.insert(s, row)
    trips: list[int] = []
    driver.trip_listeners.append(trips.append)
    try:
        async with rt.db.reader() as r:
            found = await fast.execute(r, _HOP_ZERO, {"thread_id": thread})
            if rt.db.dialect.shared:
                assert isinstance(r, AsyncSession)
                raw, _info = await driver.connection_of(r)
                assert raw.info.transaction_status == 0  # idle: the read committed by itself
    finally:
        driver.trip_listeners.remove(trips.append)
    assert row.id in {f.id for f in found}
    assert trips == ([1] if rt.db.dialect.shared else [])  # the read; no BEGIN, no ROLLBACK


async def test_a_held_row_lock_is_taken_before_the_read_it_travels_with(rt: Runtime, team: Team) -> None:
    """``fast.hold``: a ``SELECT … FOR UPDATE`` whose rows nobody reads goes out with the next
    read, and before it: once that read has returned, the row is locked."""
    if not rt.db.dialect.shared:
        pytest.skip("SQLite has no row locks: its writers are serialised at BEGIN IMMEDIATE")
    thread = await team.thread()
    row = _message(thread, "locked")
    async with rt.db.transaction() as s:
        await inserts.insert(s, row)
    lock = fast.Sql(select(Message.id).where(Message.id == bindparam("id")).with_for_update())
    async with rt.db.transaction() as s:
        await fast.hold(s, lock, {"id": row.id})
        assert [r.id for r in await fast.execute(s, _HOP_ZERO, {"thread_id": thread})] == [row.id]
        async with rt.db.engine.connect() as other:
            busy = select(Message.id).where(Message.id == row.id).with_for_update(nowait=True)
            with pytest.raises(OperationalError):
                await other.execute(busy)


_TWO_LISTS = fast.Sql(
    select(Message.id)
    .where(
        Message.thread_id == bindparam("thread_id"),
        Message.id.in_(bindparam("ids", expanding=True)),
        Message.hop.in_(bindparam("hops", expanding=True)),
        Message.hop < 9,
    )
    .order_by(Message.id)
)


@pytest.mark.parametrize("dialect_name", ["sqlite", "postgresql"])
def test_in_lists_bind_as_sqlalchemy_renders_them_whatever_their_lengths(dialect_name: str) -> None:
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = sqlite.dialect() if dialect_name == "sqlite" else postgresql.psycopg.dialect()  # type: ignore[attr-defined]
    compiled = _TWO_LISTS.compiled(dialect)
    # Rendered lengths are remembered; every call binds its own values, in SQLAlchemy's order.
    for ids, hops in [(["a", "b"], [1]), (["c", "d"], [2]), ([], [3, 4, 5]), (["e"], []), (["f", "g"], [6])]:
        params = {"thread_id": "t1", "ids": ids, "hops": hops}
        expected = compiled.compiled.construct_expanded_state({**compiled.fixed, **params})
        text, values = fast.bound(_TWO_LISTS, dialect, params)
        assert text == expected.statement
        if compiled.named:
            assert values == expected.parameters
        else:
            assert values == [expected.parameters[n] for n in expected.positiontup or ()]
    assert sorted(compiled.expansions) == [(0, 3), (1, 0), (2, 1)]  # (2, 1) rendered once for three calls


async def test_rows_that_share_a_value_each_read_back_their_own(rt: Runtime, team: Team) -> None:
    """A multi-row INSERT binds a value once while the next row holds the very same object
    (``_Rows.params``): rows that share one, change it and go back to it still read back each
    their own."""
    thread = await team.thread()
    first, second = datetime(2026, 12, 1, 9, 0, tzinfo=UTC), datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    shared = {"kind": "shared"}
    plan = [(first, shared), (first, shared), (second, {"kind": "own"}), (first, shared), (second, None)]
    messages = [
        Message(
            id=new_id("msg"),
            thread_id=thread,
            sender_id=None,
            content=f"row {i}",
            mentions=[],
            hop=i,
            metadata_=meta,
            created_at=stamp,
        )
        for i, (stamp, meta) in enumerate(plan)
    ]
    async with rt.db.transaction() as s:
        await inserts.insert(s, *messages)
    async with rt.db.read() as s:
        rows = (await s.execute(select(Message).where(Message.hop.in_(range(len(plan)))))).scalars().all()
        got = {m.content: (m.created_at, m.metadata_) for m in rows if m.thread_id == thread}
    assert got == {f"row {i}": (stamp, meta or {}) for i, (stamp, meta) in enumerate(plan)}


async def test_objects_of_a_failed_transaction_are_rolled_back_in_the_orm_too(
    rt: Runtime, team: Team
) -> None:
    """A transaction that raises rolls back the ORM's side as well as the database's: an object it
    added and flushed is transient again, so a later transaction that adds it inserts it."""
    thread = await team.thread()
    message = Message(
        id=new_id("msg"),
        thread_id=thread,
        sender_id=None,
        content="again",
        mentions=[],
        hop=0,
        metadata_={},
        created_at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
    )
    with pytest.raises(RuntimeError):
        async with rt.db.transaction() as s:
            s.add(message)
            await s.flush()
            raise RuntimeError("the body fails after the flush")
    async with rt.db.transaction() as s:
        s.add(message)
    async with rt.db.read() as s:
        assert await s.get(Message, message.id) is not None


async def test_the_sqlite_writer_checkpoints_its_log_every_few_thousand_pages(rt: Runtime) -> None:
    """The writer's log settings (``store.dialect``): WAL, NORMAL sync, checkpoints at 4,000 pages."""
    if rt.db.dialect.shared:
        pytest.skip("SQLite's write-ahead log")
    async with rt.db.transaction() as s:
        connection, _info = await driver.connection_of(s)
        settings = [connection.execute(f"PRAGMA {name}").fetchone()[0] for name in _LOG_SETTINGS]
    assert settings == ["wal", 1, WAL_CHECKPOINT_PAGES] and WAL_CHECKPOINT_PAGES == 4000


_LOG_SETTINGS = ("journal_mode", "synchronous", "wal_autocheckpoint")
