"""The memory store: every write checked and logged, the lexical index kept by the database."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from openbot.core.clock import FakeClock
from openbot.core.errors import InvalidArgument
from openbot.runtime.engine import Runtime
from openbot.runtime.memory import store
from openbot.runtime.memory.store import BotRef, Origin
from openbot.runtime.team import get_actor
from openbot.store.models import ActivityLog, Memory


async def _bot(rt: Runtime, handle: str = "engineer") -> BotRef:
    async with rt.db.read() as s:
        actor = await get_actor(s, handle)
    return BotRef(actor.id, actor.handle)


async def test_the_index_follows_creates_updates_and_deletes(rt: Runtime) -> None:
    bot = await _bot(rt)
    async with rt.db.transaction() as s:
        kept = await store.create(s, bot, "The staging cluster runs on Kubernetes")
        moved = await store.create(s, bot, "Deploys happen on Tuesdays", segment="project", tier="short")
        gone = await store.create(s, bot, "Kubernetes upgrades need a freeze window")
    async with rt.db.transaction() as s:
        row = await store.get(s, bot.id, moved.id)
        assert row is not None
        await store.update(s, bot, row, content="Deploys to the cluster happen on Fridays")
        doomed = await store.get(s, bot.id, gone.id)
        assert doomed is not None
        await store.delete(s, bot, doomed)
    async with rt.db.read() as s:
        found = [m.id for m, _ in await store.search(s, bot.id, "kubernetes cluster")]
        fridays = [h.id for h in await store.relevant(s, bot.id, "what happens on friday?")]
        tuesdays = await store.relevant(s, bot.id, "tuesdays")
        events = list(await s.scalars(select(ActivityLog.event).where(ActivityLog.event.like("memory.%"))))
    assert set(found) == {kept.id, moved.id} and gone.id not in found
    assert fridays == [moved.id]
    assert tuesdays == []
    assert events == ["memory.created"] * 3 + ["memory.updated", "memory.deleted"]


async def test_relevance_orders_by_overlap_and_skips_other_bots_and_archived(rt: Runtime) -> None:
    bot, other = await _bot(rt), await _bot(rt, "reviewer")
    async with rt.db.transaction() as s:
        best = await store.create(s, bot, "postgres vacuum tuning for the billing database")
        some = await store.create(s, bot, "the billing team owns invoices")
        archived = await store.create(s, bot, "postgres vacuum billing database tuning notes")
        await store.archive(s, bot, archived)
        await store.create(s, other, "postgres vacuum tuning for the billing database")
        await store.create(s, bot, "lunch is at noon", origin=Origin(source="tool"))
    async with rt.db.read() as s:
        hits = await store.relevant(s, bot.id, "How should we tune vacuum on the billing postgres database?")
    assert [h.id for h in hits] == [best.id, some.id]
    assert hits[0].score > hits[1].score > 0


async def test_one_is_not_a_word_that_says_what_a_text_is_about(rt: Runtime) -> None:
    """SQLite's Porter stemmer makes "one" "on": without "one" among the stop words, asking about
    "one" found every memory with an "on" in it."""
    bot = await _bot(rt)
    async with rt.db.transaction() as s:
        await store.create(s, bot, "The deploy pipeline runs on jenkins")
    async with rt.db.read() as s:
        assert await store.relevant(s, bot.id, "hello one") == []
        assert await store.search(s, bot.id, "ones") == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"content": "  "}, "content"),
        ({"content": "x", "segment": "gossip"}, "segment"),
        ({"content": "x", "tier": "forever"}, "tier"),
        ({"content": "x", "importance": 1.5}, "importance"),
        ({"content": "x", "importance": -0.1}, "importance"),
    ],
)
async def test_bad_fields_write_nothing(rt: Runtime, fields: dict[str, object], field: str) -> None:
    bot = await _bot(rt)
    with pytest.raises(InvalidArgument) as raised:
        async with rt.db.transaction() as s:
            await store.create(s, bot, **fields)  # type: ignore[arg-type]
    assert raised.value.details["field"] == field
    async with rt.db.read() as s:
        assert list(await s.scalars(select(Memory.id))) == []
        assert list(await s.scalars(select(ActivityLog.id).where(ActivityLog.event.like("memory.%")))) == []


async def test_touch_counts_uses_in_one_statement(rt: Runtime, clock: FakeClock) -> None:
    bot = await _bot(rt)
    async with rt.db.transaction() as s:
        a = await store.create(s, bot, "alpha")
        b = await store.create(s, bot, "beta")
    clock.advance(60)
    async with rt.db.transaction() as s:
        await store.touch(s, [a.id, b.id])
    async with rt.db.read() as s:
        rows = {m.id: m for m in await s.scalars(select(Memory))}
    assert rows[a.id].access_count == rows[b.id].access_count == 1
    assert rows[a.id].last_accessed_at > rows[a.id].created_at


async def test_a_memory_confined_to_a_thread_is_searchable_but_never_injected(rt: Runtime) -> None:
    bot = await _bot(rt)
    async with rt.db.transaction() as s:
        general = await store.create(s, bot, "The payments service deploys on Fridays")
        local = await store.create(s, bot, "In this thread the payments deploy waits for Anna")
        local.thread_id = "thr_elsewhere"  # invariant 10: nothing writes these; injection skips them
    async with rt.db.read() as s:
        injected = [h.id for h in await store.relevant(s, bot.id, "when does payments deploy?")]
        found = {m.id for m, _ in await store.search(s, bot.id, "when does payments deploy?")}
    assert injected == [general.id]
    assert found == {general.id, local.id}
