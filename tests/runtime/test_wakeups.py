"""Wake-ups: the poll wakes only bots a claim could serve; announcements name the bots they woke."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from conftest import Team
from openbot.config import Settings
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engine import Runtime
from openbot.runtime.runs.outcome import Outcome, finish
from openbot.runtime.scheduler import system as system_module
from openbot.runtime.team import get_actor, update_bot
from openbot.store.dialect import announcement, announcement_of, parse_announcement


def record_wakes(rt: Runtime) -> list[str]:
    """Every bot id the system is asked to wake from now on (the workers are not woken)."""
    woken: list[str] = []

    def notify(bot_ids: Iterable[str]) -> None:
        woken.extend(bot_ids)

    rt.system.notify = notify  # type: ignore[method-assign]
    return woken


async def _engineer_of_one_thread(team: Team) -> tuple[str, str, str]:
    """The system paused, @engineer's ceiling one thread: its id, and two threads."""
    team.rt.system.pause()
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", BotUpdate(max_parallel_threads=1))
        engineer = (await get_actor(s, "engineer")).id
    return engineer, await team.thread("first"), await team.thread("second")


async def test_the_poll_leaves_a_bot_at_its_ceiling_alone_until_its_run_settles(team: Team) -> None:
    rt = team.rt
    engineer, first, second = await _engineer_of_one_thread(team)
    await team.post(first, "@engineer one")
    await team.post(second, "@engineer two")
    claim = await rt.system.claim(engineer)
    assert claim is not None and claim.at_ceiling

    woken = record_wakes(rt)
    await rt.system.wake_queued()
    assert engineer not in woken  # mail is queued, but a claim would find the bot at its ceiling

    async with rt.db.transaction() as s:
        await finish(s, claim, Outcome(reply="done"), rt.delivery)
    await rt.system.wake_queued()
    assert engineer in woken  # its thread is free again: the second post can be claimed


def test_an_announcement_names_the_bots_given_mail_once_each() -> None:
    assert parse_announcement(announcement("p1", ["b1", "b2", "b1"])) == ("p1", ["b1", "b2"], False)
    assert parse_announcement(announcement("p1", [])) == ("p1", [], True)  # look for claimable mail
    assert parse_announcement(announcement("p1", [], took_only=True)) == ("p1", [], False)
    assert parse_announcement(announcement("p1", ["b1"], took_only=True)) == ("p1", ["b1"], False)
    too_many = [f"act_{i:020d}" for i in range(400)]
    assert announcement("p1", too_many) == "p1"  # over NOTIFY's payload limit: listeners poll instead


def record_announcements(rt: Runtime) -> list[str]:
    """The announcement of every transaction that writes journal rows, from now on."""
    sent: list[str] = []
    dialect = rt.db.dialect
    original = dialect.write_journal

    def spy(session: Any, activity: Any, events: Any, sender: str) -> None:
        original(session, activity, events, sender)
        if events:
            sent.append(announcement_of(session, sender))

    dialect.write_journal = spy  # type: ignore[method-assign]
    return sent


async def test_a_claim_announces_that_it_only_took_mail(rt: Runtime) -> None:
    """Another process that hears a claim has nothing new to look for (the claim took mail)."""
    team = Team(rt)
    rt.system.pause()
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    sent = record_announcements(rt)
    async with rt.db.read() as s:
        engineer = (await get_actor(s, "engineer")).id
    assert await rt.system.claim(engineer) is not None
    assert [parse_announcement(p)[2] for p in sent] == [False]


async def test_a_finish_names_its_bot_while_it_has_mail_and_sends_nobody_looking(team: Team) -> None:
    """Other processes that hear a run finish wake its bot if it has mail left (it has room
    again), instead of looking for work everywhere; without mail left, they look for nothing."""
    rt = team.rt
    engineer, first, second = await _engineer_of_one_thread(team)
    await team.post(first, "@engineer one")
    await team.post(second, "@engineer two")
    claim = await rt.system.claim(engineer)
    assert claim is not None and claim.at_ceiling  # "two" waits for this run
    sent = record_announcements(rt)
    async with rt.db.transaction() as s:
        assert await finish(s, claim, Outcome(reply="done"), rt.delivery)
    [(_sender, named, look)] = [parse_announcement(p) for p in sent]
    assert engineer in named and not look

    again = await rt.system.claim(engineer)
    assert again is not None
    sent.clear()
    async with rt.db.transaction() as s:
        assert not await finish(s, again, Outcome(reply="done"), rt.delivery)
    [(_sender, named, look)] = [parse_announcement(p) for p in sent]
    assert engineer not in named and not look


async def test_an_announcement_that_names_bots_wakes_them_without_a_poll(rt: Runtime) -> None:
    woken = record_wakes(rt)
    rt.system.heard(announcement("elsewhere", ["act_a", "act_b"]))
    assert woken == ["act_a", "act_b"]
    assert not rt.system._poll_wanted.is_set()
    rt.system.heard(announcement(rt.db.instance, ["act_c"]))  # our own: woken in-process already
    assert woken == ["act_a", "act_b"]


async def test_an_announcement_that_names_no_bot_asks_for_a_poll(rt: Runtime) -> None:
    woken = record_wakes(rt)
    rt.system.heard(announcement("elsewhere", [], took_only=True))
    assert not rt.system._poll_wanted.is_set()  # a claim elsewhere: nothing new to look for
    rt.system.heard(announcement("elsewhere", []))
    assert rt.system._poll_wanted.is_set()  # the poll task looks for bots with room and mail
    assert woken == []


async def test_an_api_only_process_tells_its_readers_and_looks_for_no_work(tmp_path: Path) -> None:
    async with Runtime(Settings(data_dir=tmp_path / "data", run_workers=False)) as rt:
        sub = rt.bus.subscribe()
        woken = record_wakes(rt)
        rt.system.heard(announcement("elsewhere", []))
        rt.system.heard(announcement("elsewhere", ["act_a"]))
        assert sub.queue.get_nowait().type == "journal"  # its event streams read the journal
        assert woken == [] and not rt.system._poll_wanted.is_set()
        sub.close()


async def test_mail_posted_while_a_run_finishes_is_claimed_by_one_side_or_the_other(team: Team) -> None:
    """A bot at its ceiling: while its run's finish is open, mail arrives and the bot's claim runs.
    Either the claim waits for the finish and finds room, or the finish's mail check sees the mail:
    never both miss it (on PostgreSQL the claim used to see the run still running and give up,
    after the finish had checked for mail, and the mail sat queued until the next poll)."""
    rt = team.rt
    if not rt.db.dialect.shared:
        pytest.skip("SQLite serialises writers: a claim cannot run while a finish is open")
    engineer, first, second = await _engineer_of_one_thread(team)
    await team.post(first, "@engineer one")
    running = await rt.system.claim(engineer)
    assert running is not None and running.at_ceiling
    async with rt.db.transaction() as s:
        more = await finish(s, running, Outcome(reply="done"), rt.delivery)
        assert not more  # nothing queued yet
        await team.post(second, "@engineer two")  # committed while the finish is open
        claiming = asyncio.create_task(rt.system.claim(engineer))

        async def claim_ended_or_waits() -> bool:
            return claiming.done() or await _a_claim_waits_for_its_bot(rt)

        await _until(claim_ended_or_waits)
        assert not claiming.done()  # the claim waits for the finish instead of giving up
    claim = await claiming
    assert claim is not None and claim.thread_id == second


async def test_a_claim_the_system_is_paused_during_starts_no_run(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's claim that began before a pause and ends after it (on PostgreSQL, one that waited
    for the bot's lock while a run finished) is rolled back: pausing stops starting runs, and
    ``settle`` then means nothing starts until ``unpause``."""
    rt = team.rt
    began, go_on = asyncio.Event(), asyncio.Event()

    async def claim_next_held(*args: Any, **kwargs: Any) -> Any:
        began.set()
        await go_on.wait()
        return await real_claim_next(*args, **kwargs)

    async def claim_seen(bot_id: str, **kwargs: Any) -> Any:
        try:
            return await real_claim(bot_id, **kwargs)
        finally:
            ended.set()

    real_claim_next, real_claim, ended = system_module.claim_next, rt.system.claim, asyncio.Event()
    monkeypatch.setattr(system_module, "claim_next", claim_next_held)
    monkeypatch.setattr(rt.system, "claim", claim_seen)
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await asyncio.wait_for(began.wait(), 10)  # the engineer's worker is claiming
    rt.system.pause()
    go_on.set()
    await asyncio.wait_for(ended.wait(), 10)  # the claim committed or rolled back
    assert await rt.system.settle(10)
    assert not await team.runs(thread)  # the claim found the mail, and was rolled back
    [item] = await team.items("engineer", kind="message")
    assert item.status == "queued"
    monkeypatch.setattr(system_module, "claim_next", real_claim_next)
    rt.system.unpause()
    await team.idle()
    [run] = await team.runs(thread)
    assert run.status == "completed"


async def test_a_claim_rolled_back_by_a_pause_is_made_again_when_unpaused_meanwhile(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``unpause`` while the paused claim rolls back (on PostgreSQL the rollback is a round trip):
    the worker claims again, instead of leaving the mail queued until the next poll."""
    rt = team.rt
    began, go_on = asyncio.Event(), asyncio.Event()
    real_claim_next = system_module.claim_next

    async def claim_next_held(*args: Any, **kwargs: Any) -> Any:
        if go_on.is_set():
            return await real_claim_next(*args, **kwargs)
        began.set()
        await go_on.wait()
        found = await real_claim_next(*args, **kwargs)
        asyncio.get_running_loop().call_soon(rt.system.unpause)  # lands during the rollback
        return found

    monkeypatch.setattr(system_module, "claim_next", claim_next_held)
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await asyncio.wait_for(began.wait(), 10)
    rt.system.pause()
    go_on.set()
    await team.idle()
    [run] = await team.runs(thread)
    assert run.status == "completed"
    [item] = await team.items("engineer", kind="message")
    assert item.status == "done"


async def _a_claim_waits_for_its_bot(rt: Runtime) -> bool:
    """Whether a claim's bot lock (``FOR NO KEY UPDATE`` of actors) waits in this database."""
    waiting = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query LIKE '%FROM actors%FOR NO KEY UPDATE%'"
    )
    async with rt.db.engine.connect() as conn:
        return bool((await conn.execute(waiting)).scalar())


async def _until(condition: Callable[[], Awaitable[bool]]) -> None:
    """Wait for another connection's state (the database's): there is no event to await."""
    async with asyncio.timeout(10):
        while not await condition():  # noqa: ASYNC110 - the state is the database's, no event to await
            await asyncio.sleep(0.01)
