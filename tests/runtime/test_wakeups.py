"""Wake-ups: the poll wakes only bots a claim could serve; announcements name the bots they woke."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conftest import Team
from openbot.config import Settings
from openbot.runtime.commands import BotUpdate
from openbot.runtime.engine import Runtime
from openbot.runtime.runs.outcome import Outcome, finish
from openbot.runtime.team import get_actor, update_bot
from openbot.store.dialect import announcement, announcement_of, parse_announcement


def record_wakes(rt: Runtime) -> list[str]:
    """Every bot id the system is asked to wake from now on (the workers are not woken)."""
    woken: list[str] = []

    def notify(bot_ids: Iterable[str]) -> None:
        woken.extend(bot_ids)

    rt.system.notify = notify  # type: ignore[method-assign]
    return woken


async def test_the_poll_leaves_a_bot_at_its_ceiling_alone_until_its_run_settles(team: Team) -> None:
    rt = team.rt
    rt.system.pause()
    async with rt.db.transaction() as s:
        await update_bot(s, "engineer", BotUpdate(max_parallel_threads=1))
        engineer = (await get_actor(s, "engineer")).id
    first, second = await team.thread("first"), await team.thread("second")
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


async def test_a_claim_announces_that_it_only_took_mail(rt: Runtime) -> None:
    """Another process that hears a claim has nothing new to look for (the claim took mail)."""
    team = Team(rt)
    rt.system.pause()
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    sent: list[str] = []
    dialect = rt.db.dialect
    original = dialect.write_journal

    def spy(session: Any, activity: Any, events: Any, sender: str) -> None:
        original(session, activity, events, sender)
        if events:
            sent.append(announcement_of(session, sender))

    dialect.write_journal = spy  # type: ignore[method-assign]
    async with rt.db.read() as s:
        engineer = (await get_actor(s, "engineer")).id
    assert await rt.system.claim(engineer) is not None
    assert [parse_announcement(p)[2] for p in sent] == [False]


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
