"""Pending reflections across rounds: a run that ends while its bot reflects is reflected on next
time, a reflection whose process died is taken over after its lease, a failing model is retried
and then given up on, visibly (invariant 12, DESIGN §8)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy import select

from conftest import Boot, Team
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.runtime.commands import BotUpdate
from openbot.runtime.memory import pending
from openbot.runtime.team import get_actor, update_bot
from openbot.store.models import ActivityLog, Memory, PendingReflection

DELAY = 30.0


async def script(team: Team, model: str = "scripted", **jobs: Any) -> None:
    """@engineer replies "done"; ``jobs`` are more model settings (reflection, delay_ms…)."""
    command = BotUpdate(model=model, model_settings={"script": [{"match": ".", "reply": "done"}], **jobs})
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", command)


async def rows(team: Team) -> list[PendingReflection]:
    async with team.rt.db.read() as s:
        return list(await s.scalars(select(PendingReflection)))


async def reflected(team: Team) -> list[ActivityLog]:
    async with team.rt.db.read() as s:
        found = await s.scalars(select(ActivityLog).where(ActivityLog.event == "memory.reflected"))
        return list(found)


async def contents(team: Team) -> list[str]:
    async with team.rt.db.read() as s:
        return sorted(await s.scalars(select(Memory.content)))


async def test_a_run_that_ends_during_a_reflection_is_reflected_on_next_time(
    team: Team, clock: FakeClock
) -> None:
    await script(team, reflection=[{"op": "create", "content": "Prefer small pull requests"}])
    thread = await team.thread()
    await team.post(thread, "@engineer first")
    await team.idle()
    async with team.rt.db.transaction() as s:  # taken at once (a delay of 0): the loop stays out
        bot = await get_actor(s, "engineer")
        taken = await pending.take(s, bot.id, thread, 0)
    assert taken is not None
    async with team.rt.db.transaction() as s:
        await pending.schedule(s, bot.id, thread, None)  # a later run ends while it reflects
    async with team.rt.db.transaction() as s:
        assert not await pending.settle(s, taken, done=True, seen_upto="msg_x")
    (row,) = await rows(team)
    assert (row.runs, row.lease_until, row.from_message_id) == (1, None, "msg_x")
    await team.rt.upkeep.step()
    assert len(await rows(team)) == 1  # quiet for 0 s only: not due yet
    clock.advance(DELAY)
    await team.rt.upkeep.step()
    assert await rows(team) == [] and len(await reflected(team)) == 1


async def test_a_reflection_whose_process_died_is_taken_over_after_its_lease(
    team: Team, clock: FakeClock
) -> None:
    await script(team, reflection=[{"op": "create", "content": "Prefer small pull requests"}])
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    clock.advance(DELAY)
    async with team.rt.db.transaction() as s:
        bot = await get_actor(s, "engineer")
        assert await pending.take(s, bot.id, thread, DELAY) is not None  # then the process "dies"
    await team.rt.upkeep.step()
    assert await reflected(team) == []  # leased to someone else
    clock.advance(pending.LEASE.total_seconds())
    await team.rt.upkeep.step()
    assert await contents(team) == ["Prefer small pull requests"]
    assert await rows(team) == []


async def test_a_failing_reflection_is_retried_then_given_up_visibly(
    team: Team, clock: FakeClock, client: httpx.AsyncClient
) -> None:
    await script(team)
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    async with team.rt.db.transaction() as s:  # the model cannot be built any more (no provider)
        await update_bot(s, "engineer", BotUpdate(model="openai:gpt-4.1"))
    clock.advance(DELAY)
    for attempt in range(1, pending.MAX_ATTEMPTS + 1):
        await team.rt.upkeep.step()
        if attempt < pending.MAX_ATTEMPTS:
            (row,) = await rows(team)
            retry = pending.RETRY_AFTER * attempt
            assert (row.attempts, row.lease_until) == (attempt, clock.now() + retry)
            await team.rt.upkeep.step()
            assert (await rows(team))[0].attempts == attempt  # not before its time
            clock.advance(retry.total_seconds())
    assert await rows(team) == []
    (gave_up,) = await reflected(team)
    assert gave_up.level == "error" and gave_up.detail["attempts"] == pending.MAX_ATTEMPTS
    shown = (await client.get("/api/v1/activity", params={"event": "memory."})).json()["items"]
    assert [item["event"] for item in shown] == ["memory.reflected"]


async def test_a_stop_mid_reflection_gives_the_row_back(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    settings.drain_seconds = 0
    async with boot() as rt:
        team = Team(rt)
        lesson = [{"op": "create", "content": "Prefer small pull requests"}]
        await script(team, reflection=lesson)
        thread = await team.thread()
        await team.post(thread, "@engineer go")
        await team.idle()
        await script(team, reflection=lesson, delay_ms=60_000)  # the reflection call never ends
        clock.advance(DELAY)  # the upkeep loop wakes and starts reflecting
        async with asyncio.timeout(10):
            while not rt.upkeep.reflector.holding:  # noqa: ASYNC110 - yields to the loop's task; no time passes
                await asyncio.sleep(0)
        (row,) = await rows(team)
        assert row.lease_until is not None and row.attempts == 1
    async with boot() as rt:  # the clock has not moved: no lease expired, yet it is due again
        team = Team(rt)
        (row,) = await rows(team)
        assert (row.lease_until, row.attempts) == (None, 0)
        await script(team, reflection=lesson)
        await rt.upkeep.step()
        assert await contents(team) == ["Prefer small pull requests"]
