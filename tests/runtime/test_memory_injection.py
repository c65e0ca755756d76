"""Memory across threads (DESIGN §8): written by ``manage_memory`` in one thread, injected into the
bot's next run elsewhere (as ``GET /runs/{id}/context`` shows), never into another bot's run; the
top 8 of many are the most relevant, and a memory that matches nothing is never injected."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from conftest import Team, watch_statements
from openbot.runtime.engine import Runtime
from openbot.runtime.memory import store
from openbot.runtime.memory.store import BotRef
from openbot.runtime.team import get_actor
from openbot.store.models import Memory

FACT = "The deploy freeze for the payments service starts every Friday at noon"
REMEMBER = {
    "match": "(?i)remember",
    "reply": "noted: {tool_result}",
    "tool_calls": [{"name": "manage_memory", "args": {"action": "create", "content": FACT, "tier": "long"}}],
}


async def _only_run(team: Team, thread_id: str) -> str:
    runs = await team.runs(thread_id)
    assert len(runs) == 1 and runs[0].status == "completed", [(r.status, r.error) for r in runs]
    return runs[0].id


async def _context(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/runs/{run_id}/context")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_memory_made_in_one_thread_is_injected_in_the_next_run_elsewhere(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    await team.script("engineer", [REMEMBER])
    first = await team.thread("a")
    await team.post(first, "@engineer please remember the payments freeze rule")
    await team.idle()
    made = await _context(client, await _only_run(team, first))
    assert made["memories"] == [] and "deploy freeze" not in made["system"]

    second = await team.thread("b")
    await team.post(second, "@engineer can I deploy payments on Friday afternoon?")
    await team.post(third := await team.thread("c"), "@reviewer can I deploy payments on Friday afternoon?")
    await team.idle()

    seen = await _context(client, await _only_run(team, second))
    assert [m["content"] for m in seen["memories"]] == [FACT]
    assert seen["memories"][0]["score"] > 0
    assert FACT in seen["system"]
    assert seen["messages"][-1]["role"] == "user" and "Friday afternoon" in seen["messages"][-1]["content"]
    assert seen["run_id"] != made["run_id"] and seen["scoped"] is False and seen["omitted"] == 0

    other = await _context(client, await _only_run(team, third))
    assert other["memories"] == [] and FACT not in other["system"]

    async with rt.db.read() as s:
        memory = (await s.scalars(select(Memory))).one()
    assert (memory.source, memory.origin_thread_id, memory.thread_id) == ("tool", first, None)
    assert memory.access_count == 1  # injected once (thread b); @reviewer never saw it


async def test_the_eight_injected_are_the_eight_most_relevant_of_two_hundred(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    async with rt.db.read() as s:
        actor = await get_actor(s, "engineer")
    bot = BotRef(actor.id, actor.handle)
    topics = ["kubernetes", "staging", "rollback", "canary", "helm"]
    best: list[str] = []
    async with rt.db.transaction() as s:
        for i in range(8):  # every topic word: the most relevant
            best.append((await store.create(s, bot, f"note {i}: {' '.join(topics)} checklist")).id)
        for i in range(40):  # one topic word each: relevant, less so
            await store.create(s, bot, f"aside {i} mentions {topics[i % 5]} once among other words")
        for i in range(152):  # nothing in common with the trigger
            await store.create(s, bot, f"lunch order {i}: sandwiches and soup")
    thread = await team.thread()
    await team.post(thread, "@engineer plan the kubernetes staging rollback with a canary helm release")
    await team.idle()

    seen = await _context(client, await _only_run(team, thread))
    assert sorted(m["id"] for m in seen["memories"]) == sorted(best)
    scores = [m["score"] for m in seen["memories"]]
    assert scores == sorted(scores, reverse=True)


async def test_nothing_matching_means_nothing_injected(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    async with rt.db.read() as s:
        actor = await get_actor(s, "engineer")
    bot = BotRef(actor.id, actor.handle)
    async with rt.db.transaction() as s:
        match = await store.create(s, bot, "The invoice service is written in Rust")
        await store.create(s, bot, "Lunch is served at noon on the terrace")
    thread = await team.thread()
    await team.post(thread, "@engineer which language is the invoice service in?")
    await team.idle()

    seen = await _context(client, await _only_run(team, thread))
    assert [m["id"] for m in seen["memories"]] == [match.id]
    assert "Lunch is served" not in seen["system"]


async def test_a_bot_without_memory_gets_neither_memories_nor_the_tools(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    await team.script("engineer", [REMEMBER], memory_enabled=False)
    thread = await team.thread()
    await team.post(thread, "@engineer remember the payments freeze rule")
    await team.idle()
    runs = await team.runs(thread)
    seen = await _context(client, runs[0].id)
    assert "manage_memory" not in seen["system"] and seen["memories"] == []
    async with rt.db.read() as s:
        assert list(await s.scalars(select(Memory.id))) == []


async def test_a_run_costs_one_memory_read_and_one_batched_bump(rt: Runtime, team: Team) -> None:
    """Prepare reads memories with one statement; the injected ones are bumped with one more, in the
    run's finish transaction (with the context row); a trigger with no word to match reads none."""
    seen: list[str] = []

    def record(statement: str, _parameters: Any) -> None:
        if _searches_or_bumps_memories(statement):
            seen.append(statement.split()[0].upper())

    async with rt.db.read() as s:
        actor = await get_actor(s, "engineer")
    async with rt.db.transaction() as s:
        for i in range(20):
            await store.create(
                s, BotRef(actor.id, actor.handle), f"deploy note {i} about the payments service"
            )
    with watch_statements(rt.db, record):
        thread = await team.thread()
        await team.post(thread, "@engineer how do we deploy payments?")
        await team.idle()
        injected = seen[:]
        seen.clear()
        await team.post(thread, "@engineer ?!")
        await team.idle()
    assert injected == ["WITH" if rt.db.backend == "postgresql" else "SELECT", "UPDATE"]
    assert seen == []


def _searches_or_bumps_memories(statement: str) -> bool:
    """A statement about memories other than the run's head read (which only asks whether the
    bot has any) and its context row."""
    return "memories" in statement and "run_contexts" not in statement and "bot_profiles" not in statement


async def test_a_bot_with_no_memories_yet_is_not_searched_until_it_has_one(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    seen: list[str] = []

    def record(statement: str, _parameters: Any) -> None:
        if _searches_or_bumps_memories(statement):
            seen.append(statement.split()[0].upper())

    thread = await team.thread()
    with watch_statements(rt.db, record):
        await team.post(thread, "@engineer how do we deploy payments?")
        await team.idle()
    assert seen == []  # memory is on, but there was nothing to search
    async with rt.db.read() as s:
        actor = await get_actor(s, "engineer")
    async with rt.db.transaction() as s:
        await store.create(s, BotRef(actor.id, actor.handle), "deploy payments with the release train")
    with watch_statements(rt.db, record):
        await team.post(thread, "@engineer how do we deploy payments?")
        await team.idle()
    assert seen == ["WITH" if rt.db.backend == "postgresql" else "SELECT", "UPDATE"]
    runs = await team.runs(thread)
    injected = await _context(client, runs[-1].id)
    assert [m["content"] for m in injected["memories"]] == ["deploy payments with the release train"]
