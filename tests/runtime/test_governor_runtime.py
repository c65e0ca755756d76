"""The turn governor's drops, each with its documented disposal (DESIGN §7, invariant 13):
the bounded mailbox sheds, channel triggers go stale, a recovered backlog collapses into one run,
mail that exhausts its attempts is dropped."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from conftest import Boot, Team
from openbot.core.clock import FakeClock
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engagement.explain import why
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim
from openbot.runtime.team import get_actor, update_bot
from openbot.store.models import Disposal, InboxItem


async def _disposals(team: Team, reason: str | None = None) -> list[Disposal]:
    async with team.rt.db.read() as s:
        stmt = select(Disposal).order_by(Disposal.id)
        if reason:
            stmt = stmt.where(Disposal.reason == reason)
        return list(await s.scalars(stmt))


async def _set(team: Team, handle: str, **fields: Any) -> None:
    async with team.rt.db.transaction() as s:
        await update_bot(s, handle, BotUpdate(**fields))


async def _posts(team: Team, thread: str, texts: list[str]) -> list[str]:
    return [(await team.post(thread, text)).message.id for text in texts]


async def test_a_full_mailbox_sheds_the_oldest_channel_triggers_never_task_mentions(team: Team) -> None:
    await _set(team, "qa", max_queued=3)
    channel = await team.thread("room", kind="channel", participants=["qa"])
    task = await team.thread("task")
    team.rt.system.pause()
    in_channel = await _posts(team, channel, ["@qa one", "@qa two"])
    in_task = await _posts(team, task, [f"@qa task {n}" for n in range(4)])
    team.rt.system.unpause()
    await team.idle()
    [shed] = await _disposals(team, "shed")
    assert shed.message_ids == in_channel and shed.thread_id == channel
    assert (shed.queue_depth, shed.bound, shed.collapsed_count) == (6, 3, None)
    assert all(i.status == "cancelled" for i in await team.items("qa", thread_id=channel))
    # Four task triggers addressed by mention stay above the bound of three: never shed.
    [run] = [r for r in await team.runs(task)]
    assert run.trigger_message_ids == in_task and run.status == "completed"
    assert not await team.runs(channel)


async def test_a_channel_trigger_older_than_the_bound_is_demoted_to_context(
    team: Team, clock: FakeClock
) -> None:
    channel = await team.thread("room", kind="channel", participants=["qa"])
    task = await team.thread("task")
    team.rt.system.pause()
    [old] = await _posts(team, channel, ["@qa is the build green?"])
    [old_task] = await _posts(team, task, ["@qa old task"])
    bound = max(team.rt.settings.stale_trigger_seconds, team.rt.settings.run_time_limit_seconds)
    clock.advance(bound + 1)
    [fresh] = await _posts(team, channel, ["@qa and now?"])
    team.rt.system.unpause()
    await team.idle()
    [stale] = await _disposals(team, "stale")
    assert stale.message_ids == [old] and stale.bound == bound and stale.trigger_age_s == bound + 1
    [run] = await team.runs(channel)
    assert run.trigger_message_ids == [fresh]  # the old message is context, no longer a trigger
    [task_run] = await team.runs(task)
    assert task_run.trigger_message_ids == [old_task]  # task threads do not go stale


async def test_the_staleness_bound_is_the_bot_s_run_limit_when_that_is_longer(
    team: Team, clock: FakeClock
) -> None:
    limit = team.rt.settings.run_time_limit_seconds + 600
    await _set(team, "qa", model_settings={"run_timeout_seconds": limit})
    channel = await team.thread("room", kind="channel", participants=["qa"])
    team.rt.system.pause()
    [old] = await _posts(team, channel, ["@qa slow question"])
    clock.advance(limit - 1)
    team.rt.system.unpause()
    await team.idle()
    assert not await _disposals(team)
    [run] = await team.runs(channel)
    assert run.trigger_message_ids == [old]


async def test_a_backlog_found_at_start_collapses_into_one_run_per_thread(
    boot: Boot, clock: FakeClock
) -> None:
    async with boot() as rt:
        team = Team(rt)
        thread = await team.thread()
        other = await team.thread()
        rt.system.pause()
        backlog = await _posts(team, thread, [f"@qa point {n}" for n in range(3)])
        [single] = await _posts(team, other, ["@qa alone"])
    clock.advance(60)  # the server was down for a minute
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        [collapsed] = await _disposals(team, "collapsed")
        [run] = await team.runs(thread)
        assert run.trigger_message_ids == backlog and run.status == "completed"
        assert collapsed.message_ids == backlog and collapsed.collapsed_count == 3
        assert collapsed.run_id == run.id and collapsed.trigger_age_s == 60
        [alone] = await team.runs(other)
        assert alone.trigger_message_ids == [single]  # one trigger: nothing collapsed


async def test_mail_that_exhausts_its_attempts_gets_a_disposal(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    rt.system.pause()
    [message] = await _posts(team, thread, ["@engineer crash me"])
    async with rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    for _attempt in range(rt.settings.max_item_attempts):
        assert await rt.system.claim(engineer.id) is not None
        assert not await _disposals(team)
        await rt.system.recover(expired_only=False)  # the process "restarts" mid-run
    [dropped] = await _disposals(team, "attempts_exhausted")
    assert dropped.message_ids == [message] and dropped.bound == rt.settings.max_item_attempts
    [item] = await team.items("engineer")
    assert item.status == "failed" and dropped.item_ids == [item.id]
    assert await rt.system.claim(engineer.id) is None
    last = (await team.messages(thread))[-1]
    assert last["metadata"]["exhausted"] == 1 and "will not be answered" in last["content"]
    async with rt.db.read() as s:
        answer = await why(s, message, "engineer")
    assert answer["answer"] == "disposed" and answer["disposal"]["reason"] == "attempts_exhausted"
    assert answer["run"]["status"] == "failed" and "will not be answered" in answer["summary"]


async def test_a_collapsed_backlog_whose_run_fails_is_failed_not_disposed(
    boot: Boot, clock: FakeClock
) -> None:
    """A ``collapsed`` disposal lists messages that were served (folded into one run): when that
    run fails, ``why`` says failed; only ``attempts_exhausted`` of that run means given up."""
    async with boot() as rt:
        team = Team(rt)
        await rt.team.update_bot("qa", BotUpdate(model="anthropic:claude-sonnet-4-5"))  # model_auth
        thread = await team.thread()
        rt.system.pause()
        backlog = await _posts(team, thread, [f"@qa point {n}" for n in range(3)])
    clock.advance(60)
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        [run] = await team.runs(thread)
        assert run.status == "failed" and [d.reason for d in await _disposals(team)] == ["collapsed"]
        async with rt.db.read() as s:
            answer = await why(s, backlog[0], "qa")
    assert answer["answer"] == "failed" and "disposal" not in answer


async def test_a_busy_bot_s_mailbox_is_shed_by_the_maintenance_pass(team: Team) -> None:
    await _set(team, "qa", max_queued=2, model="scripted", model_settings={"script": [], "delay_ms": 60_000})
    started = asyncio.Event()

    async def busy(_claim: Claim, _prepared: Prepared) -> None:
        started.set()

    team.on_prepared(busy)
    channel = await team.thread("room", kind="channel", participants=["qa"])
    await _posts(team, channel, ["@qa first"])
    async with asyncio.timeout(10):
        await started.wait()  # qa is at its ceiling now: it claims nothing until this run ends
    waiting = await _posts(team, channel, [f"@qa more {n}" for n in range(4)])
    await team.rt.system.maintain()
    [shed] = await _disposals(team, "shed")
    assert shed.message_ids == waiting[:2] and (shed.queue_depth, shed.bound) == (4, 2)
    assert [i.message_id for i in await team.items("qa", status="queued")] == waiting[2:]
    await team.rt.system.maintain()  # at the bound now: nothing more goes
    assert len(await _disposals(team)) == 1
    [run] = await team.runs(channel)
    await team.rt.runs.cancel(run.id)


async def test_deleting_a_thread_or_a_bot_records_the_mail_it_drops(team: Team) -> None:
    from openbot.runtime import threads
    from openbot.runtime.team import delete_bot

    doomed, kept = await team.thread("doomed"), await team.thread("kept")
    team.rt.system.pause()
    in_doomed = await _posts(team, doomed, ["@qa one", "@qa @reviewer two"])
    [for_reviewer] = await _posts(team, kept, ["@reviewer three"])
    async with team.rt.db.transaction() as s:
        await threads.delete_thread(s, doomed)
    by_bot = {d.bot_id: d for d in await _disposals(team, "thread_deleted")}
    async with team.rt.db.read() as s:
        qa, reviewer = await get_actor(s, "qa"), await get_actor(s, "reviewer")
    assert by_bot[qa.id].message_ids == in_doomed and by_bot[reviewer.id].message_ids == in_doomed[1:]
    assert {d.thread_id for d in by_bot.values()} == {doomed}
    async with team.rt.db.transaction() as s:
        await delete_bot(s, "reviewer")
    [gone] = await _disposals(team, "bot_disabled")
    assert (gone.bot_id, gone.thread_id, gone.message_ids) == (reviewer.id, kept, [for_reviewer])
    async with team.rt.db.read() as s:
        statuses = list(await s.scalars(select(InboxItem.status).where(InboxItem.actor_id == reviewer.id)))
    assert statuses == ["cancelled"]
    team.rt.system.unpause()
    await team.idle()
    assert not await team.runs(kept)


async def test_mail_re_queued_by_recovery_collapses_with_the_rest_into_one_run(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    rt.system.pause()
    [first] = await _posts(team, thread, ["@engineer first"])
    async with rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    assert await rt.system.claim(engineer.id) is not None  # in flight when the process "dies"
    [second] = await _posts(team, thread, ["@engineer second"])
    await rt.system.recover(expired_only=False)
    rt.system.unpause()
    await team.idle()
    failed, served = await team.runs(thread)
    assert failed.status == "failed" and served.trigger_message_ids == [first, second]
    [collapsed] = await _disposals(team, "collapsed")
    assert (collapsed.collapsed_count, collapsed.run_id) == (2, served.id)
    assert collapsed.message_ids == [first, second]
