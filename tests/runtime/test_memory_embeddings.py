"""Relevance by embeddings (OPENBOT_EMBEDDINGS): vectors written with the memories, ranked by
cosine similarity, reported in /status, filled in for older memories at start, and a spec that
cannot be used stops the start instead of falling back to the lexical index.

``hashing:<dims>`` is the built-in offline embedder (hashed words: similarity is word overlap),
so these tests need no provider."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

from conftest import Boot
from openbot.config import Settings
from openbot.runtime.engine import Runtime
from openbot.runtime.memory import store
from openbot.runtime.memory.embeddings import HashingEmbeddings, make_embedder
from openbot.runtime.memory.store import BotRef
from openbot.runtime.team import get_actor
from openbot.store.models import MemoryVector

SPEC = "hashing:256"


async def _bot(rt: Runtime, handle: str = "engineer") -> BotRef:
    async with rt.db.read() as s:
        actor = await get_actor(s, handle)
    return BotRef(actor.id, actor.handle)


async def test_memories_are_ranked_by_their_vectors(settings: Settings, boot: Boot) -> None:
    settings.embeddings = SPEC
    async with boot() as rt:
        bot, other = await _bot(rt), await _bot(rt, "reviewer")
        async with rt.db.transaction() as s:
            best = await store.create(s, bot, "postgres vacuum tuning for the billing database")
            some = await store.create(s, bot, "the billing team owns invoices")
            await store.create(s, bot, "lunch is at noon")
            await store.create(s, other, "postgres vacuum tuning for the billing database")
        async with rt.db.read() as s:
            hits = await store.relevant(s, bot.id, "tune vacuum on the billing postgres database")
            found = await store.search(s, bot.id, "invoices billing team")
            vectors = list(await s.scalars(select(MemoryVector.model)))
    assert [h.id for h in hits] == [best.id, some.id]  # lunch shares no word: not injected
    assert hits[0].score > hits[1].score > 0
    assert found[0][0].id == some.id
    assert vectors == [SPEC] * 4


async def test_an_edited_memory_is_found_by_its_new_words(settings: Settings, boot: Boot) -> None:
    settings.embeddings = SPEC
    async with boot() as rt:
        bot = await _bot(rt)
        async with rt.db.transaction() as s:
            memory = await store.create(s, bot, "deploys happen on tuesdays")
        async with rt.db.transaction() as s:
            row = await store.get(s, bot.id, memory.id)
            assert row is not None
            await store.update(s, bot, row, content="releases ship on fridays")
        async with rt.db.read() as s:
            assert [h.id for h in await store.relevant(s, bot.id, "when do releases ship?")] == [memory.id]
            assert await store.relevant(s, bot.id, "tuesdays deploys") == []


async def test_memories_from_before_get_their_vectors_at_start(settings: Settings, boot: Boot) -> None:
    async with boot() as rt:  # embeddings off: no vectors
        bot = await _bot(rt)
        async with rt.db.transaction() as s:
            older = await store.create(s, bot, "the staging cluster runs kubernetes")
        async with rt.db.read() as s:
            assert list(await s.scalars(select(MemoryVector.memory_id))) == []
    settings.embeddings = SPEC
    async with boot() as rt:
        async with rt.db.read() as s:
            assert list(await s.scalars(select(MemoryVector.memory_id))) == [older.id]
            assert [h.id for h in await store.relevant(s, bot.id, "is staging on kubernetes?")] == [older.id]


def test_a_spec_that_cannot_be_used_stops_the_start(settings: Settings) -> None:
    for spec, why in (
        ("nonsense", "expected provider:model"),
        ("hashing:3", "dimension from 8 to 4096"),
        ("no-such-provider:model", "cannot be used"),
    ):
        settings.embeddings = spec
        with pytest.raises(ValueError, match=why):
            Runtime(settings)


async def test_the_hashing_embedder_is_word_overlap() -> None:
    embedder = make_embedder("hashing:64")
    assert isinstance(embedder, HashingEmbeddings)
    same, other = await embedder.aembed_documents(["billing database", "lunch at noon"])
    query = await embedder.aembed_query("the billing database")
    assert sum(a * b for a, b in zip(query, same, strict=True)) > 0.5
    assert abs(sum(a * b for a, b in zip(query, other, strict=True))) < 0.5


async def test_the_status_route_reports_embeddings(settings: Settings, boot: Boot) -> None:
    from openbot.api.app import create_app

    settings.embeddings = SPEC
    async with boot() as rt:
        app = create_app(settings, runtime=rt)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
            status = (await c.get("/api/v1/status")).json()
    assert status["memory"] == {"index": "embeddings", "model": SPEC}
