"""Automations: one-shot and cron firings on a fake clock, exactly once across runtimes, catch-up
after downtime (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from conftest import Boot, Team
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.runtime.automations.commands import AutomationCreate
from openbot.runtime.automations.definitions import HEARTBEAT_PROMPT
from openbot.runtime.engine import Runtime
from openbot.runtime.team import get_actor
from openbot.store.models import AutomationOccurrence, Message, TodoList


async def occurrences(rt: Runtime, automation_id: str) -> list[dict[str, Any]]:
    return [dict(o) for o in reversed(await rt.automations.occurrences(automation_id))]


async def automation_messages(rt: Runtime) -> list[Message]:
    async with rt.db.read() as s:
        rows = await s.scalars(select(Message).order_by(Message.id))
        return [m for m in rows if m.metadata_.get("kind") == "automation"]


async def test_a_one_shot_two_seconds_ahead_fires_once(rt: Runtime, team: Team, clock: FakeClock) -> None:
    at = (clock.now() + timedelta(seconds=2)).isoformat()
    made = await rt.automations.create(
        AutomationCreate(bot="engineer", content="check the deploy", at=at, title="Deploy check"), owner="you"
    )
    assert made["next_run_at"] == at and made["owner"] == "you"
    clock.advance(1.5)
    await rt.automations.fire_due()
    assert await occurrences(rt, made["id"]) == []
    clock.advance(0.5)
    await rt.automations.fire_due()
    for _ in range(3):
        clock.advance(5)
        await rt.automations.fire_due()
    fired = await occurrences(rt, made["id"])
    assert [(o["status"], o["scheduled_for"]) for o in fired] == [("fired", at)]
    [message] = await automation_messages(rt)
    assert message.id == fired[0]["message_id"] and message.thread_id == fired[0]["thread_id"]
    assert message.metadata_ == {"kind": "automation", "automation_id": made["id"]}
    assert message.content == "check the deploy"
    thread = await team.thread_row(message.thread_id)
    assert thread.title == "Deploy check"
    done = await rt.automations.get(made["id"])
    assert done["enabled"] is False and done["next_run_at"] is None and done["last_run_at"] is not None
    assert done["updated_at"] == done["last_run_at"] != made["updated_at"]  # done: the definition changed
    await team.idle()
    [run] = await team.runs(message.thread_id)
    assert run.trigger_message_ids == [message.id] and run.status == "completed"


async def test_a_cron_automation_fires_on_schedule_in_its_time_zone(
    rt: Runtime, team: Team, clock: FakeClock
) -> None:
    thread = await team.thread("standup")
    every5 = await rt.automations.create(
        AutomationCreate(bot="qa", content="@qa status?", cron="*/5 * * * *", thread_id=thread), owner="you"
    )
    paris = await rt.automations.create(
        AutomationCreate(bot="qa", content="morning", cron="0 9 * * *", timezone="Europe/Paris"), owner="you"
    )
    assert paris["next_run_at"] == "2026-01-01T08:00:00+00:00"  # 9:00 in Paris is 8:00 UTC in winter
    assert every5["next_run_at"] == "2026-01-01T00:05:00+00:00"
    clock.advance(299)
    await rt.automations.fire_due()
    assert await occurrences(rt, every5["id"]) == []
    for _ in range(3):
        clock.advance(1)
        await rt.automations.fire_due()
        clock.advance(299)
        await rt.automations.fire_due()
    fired = await occurrences(rt, every5["id"])
    assert [o["scheduled_for"][11:19] for o in fired] == ["00:05:00", "00:10:00", "00:15:00"]
    assert {o["status"] for o in fired} == {"fired"} and {o["thread_id"] for o in fired} == {thread}
    assert (await rt.automations.get(every5["id"]))["next_run_at"] == "2026-01-01T00:20:00+00:00"
    assert await occurrences(rt, paris["id"]) == []


async def test_two_runtimes_on_one_database_never_fire_an_occurrence_twice(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    async with boot() as first:
        thread = await Team(first).thread("shared")
        made = []
        for i in range(6):
            at = (clock.now() + timedelta(seconds=10)).isoformat()
            cron = {"cron": "* * * * *"} if i % 2 else {"at": at}
            body = AutomationCreate(bot="engineer", content=f"job {i}", thread_id=thread, **cron)
            made.append((await first.automations.create(body, owner="you"))["id"])
        other = settings.model_copy(update={"node_id": "second-node", "data_dir": settings.data_dir / "b"})
        async with Runtime(other, clock=clock) as second:
            for _ in range(3):
                clock.advance(60)
                await asyncio.gather(first.automations.fire_due(), second.automations.fire_due())
            async with first.db.read() as s:
                rows = list(await s.scalars(select(AutomationOccurrence)))
            pairs = [(r.automation_id, r.scheduled_for) for r in rows]
            assert len(pairs) == len(set(pairs))
            assert len(rows) == 3 + 3 * 3  # three one-shots once, three per-minute crons three times
            messages = await automation_messages(first)
            assert sorted(m.id for m in messages) == sorted(r.message_id for r in rows if r.message_id)
            assert len(messages) == len(rows)


async def test_downtime_across_a_due_time_is_caught_up_once_or_skipped(boot: Boot, clock: FakeClock) -> None:
    async with boot() as rt:
        thread = await Team(rt).thread("nightly")
        once = await rt.automations.create(
            AutomationCreate(bot="engineer", content="catch me", cron="0 * * * *", thread_id=thread),
            owner="you",
        )
        skip = await rt.automations.create(
            AutomationCreate(bot="engineer", content="skip me", cron="0 * * * *", catch_up="skip"),
            owner="you",
        )
    clock.advance(3 * 3600 + 600)  # the server is down across three due times
    async with boot() as rt:
        await rt.automations.fire_due()
        clock.advance(1)
        await rt.automations.fire_due()
        caught = await occurrences(rt, once["id"])
        skipped = await occurrences(rt, skip["id"])
        assert [(o["status"], o["scheduled_for"][11:19]) for o in caught] == [("caught_up", "03:00:00")]
        assert [(o["status"], o["message_id"]) for o in skipped] == [("skipped", None)]
        [message] = await automation_messages(rt)
        assert message.content == "catch me" and message.id == caught[0]["message_id"]
        assert (await rt.automations.get(once["id"]))["next_run_at"] == "2026-01-01T04:00:00+00:00"
        clock.advance(3000)  # 04:00: on time again
        await rt.automations.fire_due()
        assert [o["status"] for o in await occurrences(rt, once["id"])] == ["caught_up", "fired"]


async def test_a_firing_into_a_deleted_thread_fails_once_and_disables_the_automation(
    rt: Runtime, team: Team, clock: FakeClock
) -> None:
    thread = await team.thread("gone soon")
    made = await rt.automations.create(
        AutomationCreate(bot="engineer", content="hello", cron="* * * * *", thread_id=thread), owner="you"
    )
    await rt.threads.delete(thread)
    clock.advance(60)
    await rt.automations.fire_due()
    [failed] = await occurrences(rt, made["id"])
    assert failed["status"] == "failed" and failed["message_id"] is None
    assert failed["error"] is not None and thread in failed["error"]["message"]
    stopped = await rt.automations.get(made["id"])
    assert stopped["enabled"] is False and stopped["next_run_at"] is None
    clock.advance(120)
    await rt.automations.fire_due()
    assert len(await occurrences(rt, made["id"])) == 1


async def test_a_heartbeat_wakes_the_bot_in_each_thread_with_unfinished_todos(
    rt: Runtime, team: Team, clock: FakeClock
) -> None:
    open_thread, done_thread = await team.thread("open"), await team.thread("done")
    async with rt.db.transaction() as s:
        bot = await get_actor(s, "engineer")
        for thread, status in ((open_thread, "in_progress"), (done_thread, "completed")):
            todos = [{"content": "ship", "status": status}]
            s.add(TodoList(thread_id=thread, bot_id=bot.id, todos=todos, updated_at=clock.now()))
    beat = await rt.automations.create(
        AutomationCreate(bot="engineer", kind="heartbeat", cron="*/30 * * * *"), owner="you"
    )
    assert beat["content"] == HEARTBEAT_PROMPT and beat["kind"] == "heartbeat"
    clock.advance(30 * 60)
    await rt.automations.fire_due()
    [fired] = await occurrences(rt, beat["id"])
    [message] = await automation_messages(rt)
    assert fired["status"] == "fired" and fired["message_id"] == message.id
    assert message.thread_id == open_thread and message.content == HEARTBEAT_PROMPT
    await team.idle()
    assert [r.status for r in await team.runs(open_thread)] == ["completed"]
    assert await team.runs(done_thread) == []


async def test_a_crash_between_the_occurrence_and_the_message_leaves_neither(
    rt: Runtime, team: Team, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies (here: the firing task is cancelled) after the occurrence row is flushed and
    while the message is being posted: nothing of that firing is committed, so the scheduled time
    is fired again by the next pass (the runtime's loop or ours), once, with its message. Had the
    occurrence been committed alone, the unique index would forbid the second firing."""
    thread = await team.thread("crash")
    made = await rt.automations.create(
        AutomationCreate(bot="engineer", content="survive", cron="* * * * *", thread_id=thread), owner="you"
    )
    post = rt.delivery.post
    crashed: list[int] = []

    async def dies_once(*args: Any, **kwargs: Any) -> Any:
        if not crashed:
            crashed.append(1)
            raise asyncio.CancelledError
        return await post(*args, **kwargs)

    monkeypatch.setattr(rt.delivery, "post", dies_once)
    clock.advance(60)
    with pytest.raises(asyncio.CancelledError):
        await rt.automations.fire_due()
    assert crashed == [1]
    await rt.automations.fire_due()
    [fired] = await occurrences(rt, made["id"])
    [message] = await automation_messages(rt)
    assert fired["status"] == "fired" and fired["message_id"] == message.id
    assert fired["scheduled_for"] == "2026-01-01T00:01:00+00:00" and message.content == "survive"
