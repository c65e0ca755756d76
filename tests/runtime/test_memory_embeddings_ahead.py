"""The embeddings provider is asked before a memory's transaction begins, never inside it: a write
transaction holds SQLite's one writer (every post, claim and finish of the server waits behind
it) or a memory's row lock on PostgreSQL, and a provider's round trip takes as long as it takes.

Every way a memory is written or searched is driven here (the API, a bot's tool, reflection,
consolidation) with an embedder that notes whether its caller was inside ``Database.transaction``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Team
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engine import Runtime
from openbot.runtime.memory.embeddings import HashingEmbeddings
from openbot.runtime.team import update_bot
from openbot.store.models import Memory, MemoryVector

SPEC = "hashing:256"
#: Tasks inside ``Database.transaction`` now (by task, not by context variable: a task started
#: from inside a transaction, a bot's worker woken at its commit, copies the context).
_IN_TRANSACTION: set[asyncio.Task[Any] | None] = set()


class Watched:
    """The hashing embedder, noting every text it is asked for and which of them came from inside
    a write transaction."""

    def __init__(self) -> None:
        self.inner = HashingEmbeddings(256)
        self.asked: list[str] = []
        self.inside: list[str] = []

    def _note(self, texts: list[str]) -> None:
        self.asked.extend(texts)
        if asyncio.current_task() in _IN_TRANSACTION:
            self.inside.extend(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self._note(texts)
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self._note([text])
        return await self.inner.aembed_query(text)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.embeddings = SPEC
    return settings


@pytest.fixture
def watched(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> Watched:
    embedder = Watched()
    embeddings = rt.db.embeddings
    assert embeddings is not None
    monkeypatch.setattr(embeddings, "embedder", embedder)
    transaction = rt.db.transaction

    @asynccontextmanager
    async def marked() -> AsyncIterator[Any]:
        task = asyncio.current_task()
        outer = task in _IN_TRANSACTION
        _IN_TRANSACTION.add(task)
        try:
            async with transaction() as session:
                yield session
        finally:
            if not outer:
                _IN_TRANSACTION.discard(task)

    monkeypatch.setattr(rt.db, "transaction", marked)
    return embedder


async def _vectors(rt: Runtime) -> dict[str, list[float]]:
    async with rt.db.read() as s:
        rows = await s.execute(
            select(Memory.content, MemoryVector.vector).join(
                MemoryVector, MemoryVector.memory_id == Memory.id
            )
        )
        return {content: list(vector) for content, vector in rows}


async def test_the_api_embeds_before_its_transactions(
    rt: Runtime, client: httpx.AsyncClient, watched: Watched
) -> None:
    base = "/api/v1/bots/engineer/memories"
    made = await client.post(base, json={"content": "  deploys happen on tuesdays  "})
    assert made.status_code == 201, made.text
    edited = await client.patch(f"{base}/{made.json()['id']}", json={"content": "releases ship on fridays"})
    assert edited.status_code == 200, edited.text
    found = await client.get(base, params={"q": "when do releases ship"})
    assert [m["id"] for m in found.json()["items"]] == [made.json()["id"]]
    assert watched.asked == [
        "deploys happen on tuesdays",
        "releases ship on fridays",
        "when do releases ship",
    ]
    assert watched.inside == []
    expected = await HashingEmbeddings(256).aembed_documents(["releases ship on fridays"])
    assert await _vectors(rt) == {"releases ship on fridays": pytest.approx(expected[0])}


async def test_a_bots_tool_reflection_and_consolidation_embed_before_their_transactions(
    team: Team, client: httpx.AsyncClient, clock: FakeClock, watched: Watched
) -> None:
    fact = "The payments deploy freeze starts Friday at noon"
    tool = {
        "match": "(?i)remember",
        "reply": "noted",
        "tool_calls": [{"name": "manage_memory", "args": {"action": "create", "content": fact}}],
    }
    search = {
        "match": "(?i)look up",
        "reply": "{tool_result}",
        "tool_calls": [{"name": "search_memory", "args": {"query": "payments freeze"}}],
    }
    lesson = {"op": "create", "content": "Always run the linter before pushing", "segment": "correction"}
    merged = "Every deploy freeze starts Friday at noon"
    proposal = {"action": "merge", "match": "freeze", "content": merged, "reason": "same rule"}
    settings = {"script": [tool, search], "reflection": [lesson], "consolidation": [proposal]}
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", BotUpdate(model="scripted", model_settings=settings))
    thread = await team.thread()
    await team.post(thread, "@engineer remember the payments freeze")
    await team.idle()
    await team.post(thread, "@engineer look up the payments freeze")
    await team.idle()
    clock.advance(team.rt.settings.memory_reflection_delay + 1)
    await team.rt.upkeep.step()
    await client.post(
        "/api/v1/bots/engineer/memories", json={"content": "The payments freeze starts each Friday at noon"}
    )
    answer = await client.post("/api/v1/bots/engineer/memories/consolidate")
    assert answer.status_code == 200, answer.text
    assert [d["action"] for d in answer.json()["decisions"]] == ["merge"]

    assert watched.inside == []
    for text in (fact, "payments freeze", lesson["content"], merged):
        assert text in watched.asked
    vectors = await _vectors(team.rt)
    assert {fact, lesson["content"], merged} <= set(vectors)
