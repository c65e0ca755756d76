"""Memory upkeep (DESIGN §8): reflection debounced and durable (invariant 12), decay with
reinforcement, consolidation by proposer → adversary → judge; all with the scripted model and a
fake clock, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Boot, Team
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.core.decay import Fading, score
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engine import Runtime
from openbot.runtime.memory import store
from openbot.runtime.team import get_actor, update_bot
from openbot.store.models import ActivityLog, Memory, PendingReflection

DELAY = 30.0
REPLY = [{"match": ".", "reply": "done"}]


async def scripted(team: Team, **jobs: Any) -> None:
    """Script @engineer: it replies "done"; ``jobs`` are its memory jobs (reflection, consolidation)."""
    command = BotUpdate(model="scripted", model_settings={"script": REPLY, **jobs})
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", command)


async def remember(rt: Runtime, handle: str, content: str, **fields: Any) -> str:
    async with rt.db.transaction() as s:
        bot = await get_actor(s, handle)
        memory = await store.create(s, store.BotRef(bot.id, bot.handle), content, **fields)
        return memory.id


async def memories(rt: Runtime, handle: str = "engineer") -> dict[str, Memory]:
    async with rt.db.read() as s:
        bot = await get_actor(s, handle)
        return {m.id: m for m in await s.scalars(select(Memory).where(Memory.bot_id == bot.id))}


async def activity(rt: Runtime, event: str) -> list[ActivityLog]:
    async with rt.db.read() as s:
        rows = await s.scalars(select(ActivityLog).where(ActivityLog.event == event).order_by(ActivityLog.id))
        return list(rows)


async def pending_rows(rt: Runtime) -> list[PendingReflection]:
    async with rt.db.read() as s:
        return list(await s.scalars(select(PendingReflection)))


# ── reflection ──────────────────────────────────────────────────────────────────────────────
async def test_a_burst_of_five_runs_reflects_once(team: Team, clock: FakeClock) -> None:
    rt = team.rt
    lesson = {"op": "create", "content": "Always run the linter before pushing", "segment": "correction"}
    await scripted(team, reflection=[lesson])
    thread = await team.thread()
    for i in range(5):
        await team.post(thread, f"@engineer step {i}")
        await team.idle()
        clock.advance(DELAY / 3)  # each run ends before the last one's delay is up
        await rt.upkeep.step()
    assert len([r for r in await team.runs(thread) if r.status == "completed"]) == 5
    assert await activity(rt, "memory.reflected") == []
    (row,) = await pending_rows(rt)
    assert row.runs == 5
    clock.advance(DELAY)
    await rt.upkeep.step()
    await rt.upkeep.step()  # nothing left to do
    (reflected,) = await activity(rt, "memory.reflected")
    assert reflected.thread_id == thread and reflected.detail["runs"] == 5
    (memory,) = (await memories(rt)).values()
    assert (memory.content, memory.source, memory.segment) == (lesson["content"], "reflection", "correction")
    assert reflected.detail["created"] == [memory.id]
    assert memory.thread_id is None and memory.origin_thread_id == thread  # bot-level, learned here
    assert await pending_rows(rt) == []


async def test_a_pending_reflection_survives_a_stop_and_fires_after_the_restart(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    settings.drain_seconds = 0
    lesson = {"op": "create", "content": "The team squashes commits when merging"}
    async with boot() as rt:
        team = Team(rt)
        await scripted(team, reflection=[lesson])
        thread = await team.thread()
        await team.post(thread, "@engineer merge it")
        await team.idle()
        assert len(await pending_rows(rt)) == 1
    # Stopped before the delay was up: nothing was flushed, nothing reflected.
    clock.advance(DELAY + 1)
    async with boot() as rt:
        assert await activity(rt, "memory.reflected") == []
        await rt.upkeep.step()
        (reflected,) = await activity(rt, "memory.reflected")
        assert reflected.thread_id == thread
        assert [m.content for m in (await memories(rt)).values()] == [lesson["content"]]
        assert await pending_rows(rt) == []


async def test_reflection_updates_and_deletes_and_refuses_thread_facts(team: Team, clock: FakeClock) -> None:
    rt = team.rt
    wrong = await remember(rt, "engineer", "The team uses merge commits")
    stale = await remember(rt, "engineer", "CI runs on Jenkins")
    kept = await remember(rt, "engineer", "Reviews need two approvals")
    thread = await team.thread("Release v2.3 checklist")
    operations = [
        {"op": "update", "match": "merge commits", "content": "The team uses squash merges"},
        {"op": "delete", "match": "Jenkins"},
        {"op": "create", "content": f"Thread {thread} is about the release"},
        {"op": "create", "content": "  "},
    ]
    await scripted(team, reflection=operations)
    await team.post(thread, "@engineer we moved CI to GitHub Actions and squash now")
    await team.idle()
    clock.advance(DELAY)
    await rt.upkeep.step()
    after = await memories(rt)
    assert set(after) == {wrong, kept}
    assert after[wrong].content == "The team uses squash merges"
    (reflected,) = await activity(rt, "memory.reflected")
    assert (reflected.detail["updated"], reflected.detail["deleted"], reflected.detail["created"]) == (
        [wrong],
        [stale],
        [],
    )
    reasons = [r["reason"] for r in reflected.detail["refused"]]
    assert reasons == ["names the thread's id", "content must be a non-empty string"]
    assert [a.detail["memory_id"] for a in await activity(rt, "memory.deleted")] == [stale]


async def test_no_reflection_is_owed_for_a_bot_without_memory(team: Team, clock: FakeClock) -> None:
    await team.script("engineer", REPLY, memory_enabled=False)
    thread = await team.thread()
    await team.post(thread, "@engineer hi")
    await team.idle()
    assert await pending_rows(team.rt) == []


# ── decay ───────────────────────────────────────────────────────────────────────────────────
async def test_maintain_archives_and_prunes_as_the_formula_says(
    team: Team, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rt = team.rt
    now = clock.now()
    ago = {"fresh": 1, "fading": 14, "gone": 40, "old_but_permanent": 4_000, "long_tier": 40}
    ids: dict[str, str] = {}
    for name, days in ago.items():
        tier = {"old_but_permanent": "permanent", "long_tier": "long"}.get(name, "short")
        stamp = now - timedelta(days=days)
        fields = {"tier": tier, "created_at": stamp, "last_accessed_at": stamp}
        ids[name] = await remember(rt, "engineer", f"memory {name}", **fields)
    # Expected from the formula itself: importance 0.5, short half-life 7 days, long 90.
    before = await memories(rt)
    expected = {
        name: score(Fading(m.id, m.tier, m.importance, m.access_count, m.last_accessed_at, m.created_at), now)
        for name, m in ((n, before[i]) for n, i in ids.items())
    }
    assert expected["fading"] == pytest.approx(0.125) and expected["gone"] < 0.05
    answer = await client.post("/api/v1/bots/engineer/memories/maintain")
    assert answer.status_code == 200
    assert answer.json() == {"archived": [ids["fading"]], "pruned": [ids["gone"]]}
    after = await memories(rt)
    assert ids["gone"] not in after and after[ids["fading"]].lifecycle == "archived"
    for name in ("fresh", "old_but_permanent", "long_tier"):
        assert after[ids[name]].lifecycle == "active"
    (archived,) = await activity(rt, "memory.archived")
    (pruned,) = await activity(rt, "memory.pruned")
    assert archived.detail["memory_id"] == ids["fading"] and "0.125" in archived.detail["reason"]
    assert pruned.detail["memory_id"] == ids["gone"]
    again = await client.post("/api/v1/bots/engineer/memories/maintain")
    assert again.json() == {"archived": [], "pruned": []}


async def test_a_restored_memory_decays_from_when_it_was_restored(
    team: Team, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    stamp = clock.now() - timedelta(days=14)
    fields = {"tier": "short", "created_at": stamp, "last_accessed_at": stamp}
    fading = await remember(team.rt, "engineer", "memory fading", **fields)
    assert (await client.post("/api/v1/bots/engineer/memories/maintain")).json()["archived"] == [fading]
    restored = await client.patch(f"/api/v1/bots/engineer/memories/{fading}", json={"lifecycle": "active"})
    assert restored.status_code == 200 and restored.json()["last_accessed_at"] == clock.now().isoformat()
    assert (await client.post("/api/v1/bots/engineer/memories/maintain")).json()["archived"] == []
    clock.advance(timedelta(days=14).total_seconds())  # as long again after the restore: archived again
    assert (await client.post("/api/v1/bots/engineer/memories/maintain")).json()["archived"] == [fading]


async def test_a_memory_used_often_outlives_one_that_is_not(team: Team, clock: FakeClock) -> None:
    rt = team.rt
    used = await remember(rt, "engineer", "Deploy on Tuesdays", tier="short")
    unused = await remember(rt, "engineer", "Lunch is at noon", tier="short")
    async with rt.db.transaction() as s:
        for _ in range(30):
            await store.touch(s, [used])
    clock.advance(timedelta(days=14).total_seconds())
    assert await rt.upkeep.maintain("engineer") == {"archived": [unused], "pruned": []}
    after = await memories(rt)
    assert after[used].lifecycle == "active" and after[used].access_count == 30


async def test_decay_runs_on_its_schedule(team: Team, clock: FakeClock, settings: Settings) -> None:
    rt = team.rt
    await rt.upkeep.step()  # first sight: the schedule starts counting now
    stale = await remember(rt, "engineer", "An old habit", tier="short")
    clock.advance(timedelta(days=40).total_seconds())
    await rt.upkeep.step()
    assert stale not in await memories(rt)
    assert [a.detail["memory_id"] for a in await activity(rt, "memory.pruned")] == [stale]


async def test_upkeep_of_an_unknown_bot_is_404(client: httpx.AsyncClient) -> None:
    for action in ("maintain", "consolidate"):
        answer = await client.post(f"/api/v1/bots/nobody/memories/{action}")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


# ── consolidation ───────────────────────────────────────────────────────────────────────────
async def test_near_duplicates_are_merged_and_the_decisions_returned_and_logged(
    team: Team, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rt = team.rt
    first = await remember(rt, "engineer", "Deploys go through CI first", importance=0.4)
    clock.advance(60)
    second = await remember(rt, "engineer", "Deploys always go through CI first", importance=0.7)
    other = await remember(rt, "engineer", "Python 3.11 is the minimum version")
    merged_text = "Every deploy goes through CI first"
    proposal = {"action": "merge", "match": "CI first", "content": merged_text, "reason": "same rule"}
    await scripted(team, consolidation=[proposal])
    answer = await client.post("/api/v1/bots/engineer/memories/consolidate")
    assert answer.status_code == 200
    (decision,) = answer.json()["decisions"]
    assert decision["action"] == "merge" and sorted(decision["memory_ids"]) == sorted([first, second])
    assert "same rule" in decision["reason"] and "judge: scripted judge" in decision["reason"]
    after = await memories(rt)
    merged = after[decision["result_id"]]
    assert (merged.content, merged.source, merged.lifecycle) == (merged_text, "consolidation", "active")
    assert merged.supersedes == second and merged.importance == pytest.approx(0.7)
    assert after[first].lifecycle == after[second].lifecycle == "archived"
    assert after[other].lifecycle == "active"
    (logged,) = await activity(rt, "memory.consolidated")
    assert logged.detail["decisions"] == answer.json()["decisions"]
    assert {a.detail["memory_id"] for a in await activity(rt, "memory.archived")} == {first, second}


async def test_consolidation_without_similar_memories_asks_nobody(
    team: Team, client: httpx.AsyncClient
) -> None:
    await remember(team.rt, "engineer", "Deploys go through CI first")
    await remember(team.rt, "engineer", "Python 3.11 is the minimum version")
    proposal = {"action": "prune", "match": "Python"}
    await scripted(team, consolidation=[proposal])
    answer = await client.post("/api/v1/bots/engineer/memories/consolidate")
    assert answer.json() == {"decisions": []}
    assert await activity(team.rt, "memory.consolidated") == []


@pytest.mark.parametrize(
    ("jobs", "problem"),
    [
        ({"reflection": {"op": "create"}}, "reflection must be a list"),
        ({"reflection": [{"op": "remember"}]}, "reflection[0].op must be one of"),
        ({"consolidation": [{"action": "merge", "match": "(a+)+$"}]}, "could backtrack"),
        ({"consolidation": [{"action": "merge", "match": "("}]}, "not a valid regular expression"),
    ],
)
async def test_bad_memory_job_settings_are_refused_and_nothing_is_written(
    client: httpx.AsyncClient, jobs: dict[str, Any], problem: str
) -> None:
    before = (await client.get("/api/v1/bots/qa")).json()
    answer = await client.patch("/api/v1/bots/qa", json={"model_settings": {"script": [], **jobs}})
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_argument"
    assert problem in answer.json()["error"]["message"]
    assert (await client.get("/api/v1/bots/qa")).json() == before


async def test_consolidation_runs_on_its_schedule(team: Team, clock: FakeClock, settings: Settings) -> None:
    rt = team.rt
    await rt.upkeep.step()  # first sight: the schedule starts counting now
    await remember(rt, "engineer", "Deploys go through CI first", tier="permanent")
    await remember(rt, "engineer", "Deploys always go through CI first", tier="permanent")
    merge = {"action": "merge", "match": "CI", "content": "Deploys go through CI"}
    await scripted(team, consolidation=[merge])
    clock.advance(settings.memory_consolidation_interval - 1)
    await rt.upkeep.step()
    assert await activity(rt, "memory.consolidated") == []
    clock.advance(1)
    await rt.upkeep.step()
    (logged,) = await activity(rt, "memory.consolidated")
    assert [d["action"] for d in logged.detail["decisions"]] == ["merge"]
    assert sorted(m.lifecycle for m in (await memories(rt)).values()) == ["active", "archived", "archived"]


async def test_supersede_keeps_the_newest_and_prune_deletes(
    team: Team, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rt = team.rt
    older = await remember(rt, "engineer", "The team merges with merge commits")
    clock.advance(60)
    newer = await remember(rt, "engineer", "The team merges with squash commits")
    noise = await remember(rt, "engineer", "Flaky test flaky test rerun")
    dup = await remember(rt, "engineer", "Flaky test rerun flaky")
    proposals = [
        {"action": "supersede", "match": "merges with", "content": "The team squash-merges"},
        {"action": "prune", "match": "^Flaky test flaky"},
    ]
    await scripted(team, consolidation=proposals)
    decisions = (await client.post("/api/v1/bots/engineer/memories/consolidate")).json()["decisions"]
    assert [(d["action"], d.get("result_id")) for d in decisions] == [("supersede", newer), ("prune", None)]
    after = await memories(rt)
    assert after[newer].content == "The team squash-merges" and after[newer].supersedes == older
    assert after[older].lifecycle == "archived" and noise not in after and after[dup].lifecycle == "active"
    assert [a.detail["memory_id"] for a in await activity(rt, "memory.pruned")] == [noise]
