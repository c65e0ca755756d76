"""Dispositions through the real delivery transaction (DESIGN §7, invariant 13): task threads record
the routing rule that decided; channels run the gate's tiers 0 and 1; the escape hatch."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import select

from conftest import Team
from openbot.runtime import threads as threads_module
from openbot.runtime.commands import ActorCreate, BotUpdate
from openbot.runtime.engagement import explain
from openbot.runtime.memory.service import MemoryService
from openbot.runtime.team import create_actor, update_bot
from openbot.store.models import Disposition


async def seen(team: Team, message_id: str) -> dict[str, tuple[str, int, str]]:
    async with team.rt.db.read() as s:
        rows = await explain.dispositions(s, message_id)
    return {r["bot"]: (r["disposition"], r["tier"], r["signal"]) for r in rows}


async def person(team: Team, handle: str) -> None:
    async with team.rt.db.transaction() as s:
        await create_actor(s, ActorCreate(kind="human", handle=handle, name=handle.title()))


async def bot_set(team: Team, handle: str, **fields: Any) -> None:
    async with team.rt.db.transaction() as s:
        await update_bot(s, handle, BotUpdate(**fields))


# ── task threads: the routing rule is the signal ────────────────────────────────────────────
async def test_task_mention_engages_and_the_other_participants_observe(team: Team) -> None:
    thread = await team.thread(participants=["engineer", "qa"])
    result = await team.post(thread, "@engineer fix it")
    got = await seen(team, result.message.id)
    assert got == {"engineer": ("engage", 0, "mention"), "qa": ("observe", 0, "not_addressed")}


async def test_task_default_bot_only_bot_and_fallback(team: Team) -> None:
    thread = await team.thread(participants=["engineer", "qa"], default_bot="qa")
    result = await team.post(thread, "anyone?")
    assert (await seen(team, result.message.id))["qa"] == ("engage", 0, "default_bot")
    only = await team.thread(participants=["engineer"])
    result = await team.post(only, "anyone?")
    assert await seen(team, result.message.id) == {"engineer": ("engage", 0, "only_bot")}


async def test_task_handoff_own_message_and_system_notice(team: Team) -> None:
    await team.script("engineer", [{"match": "go", "reply": "@qa please verify"}])
    await team.script("qa", [{"match": ".", "reply": "verified"}])
    thread = await team.thread(participants=["engineer", "qa"])
    await team.post(thread, "@engineer go")
    await team.idle()
    handoff = next(m for m in await team.messages(thread) if m["content"] == "@qa please verify")
    got = await seen(team, handoff["id"])
    assert got == {"engineer": ("ignore", 0, "own_message"), "qa": ("engage", 0, "handoff")}


async def test_task_hop_limit_is_recorded(team: Team) -> None:
    team.rt.delivery.max_hops = 1
    await team.script("engineer", [{"match": ".", "reply": "@qa over to you"}])
    thread = await team.thread(participants=["engineer", "qa"])
    await team.post(thread, "@engineer start")
    await team.idle()
    await team.post(thread, "@engineer again")  # hop 1 reply to qa is hop-limited
    await team.idle()
    limited = [m for m in await team.messages(thread) if m["metadata"].get("hop_limited")]
    assert limited
    assert (await seen(team, limited[0]["id"]))["qa"] == ("observe", 0, "hop_limit")
    notice = next(m for m in await team.messages(thread) if m["sender"] is None)
    assert set((await seen(team, notice["id"])).values()) == {("ignore", 0, "system")}


# ── channels: the gate ──────────────────────────────────────────────────────────────────────
async def channel(team: Team, *bots: str, people: int = 1, **extra: Any) -> str:
    handles = [f"p{i}" for i in range(1, people)]
    for handle in handles:
        await person(team, handle)
    return await team.thread(kind="channel", participants=[*bots, *handles], **extra)


async def test_channel_mention_engages_and_the_default_fallback_is_off(team: Team) -> None:
    thread = await channel(team, "engineer", "qa", "reviewer", people=3)
    result = await team.post(thread, "@qa can you run the suite")
    assert result.addressed == ["qa"]
    got = await seen(team, result.message.id)
    assert got["qa"] == ("engage", 0, "mention")
    assert got["engineer"] == ("observe", 1, "not_addressed")
    quiet = await team.post(thread, "lunch anyone?")
    assert quiet.addressed == []  # no @chief_of_staff, no only-bot: the gate observes
    assert "chief_of_staff" not in await seen(team, quiet.message.id)


async def test_channel_direct_shape_engages(team: Team) -> None:
    thread = await channel(team, "engineer")
    result = await team.post(thread, "how is the build?")
    assert result.addressed == ["engineer"]
    assert await seen(team, result.message.id) == {"engineer": ("engage", 0, "direct")}


async def test_channel_small_group_reply_engages_the_bot_that_spoke_last(team: Team) -> None:
    await team.script("engineer", [{"match": ".", "reply": "looking"}])
    thread = await channel(team, "engineer", "qa")  # you + 2 bots: a small group
    await team.post(thread, "@engineer the retry budget")
    await team.idle()
    follow = await team.post(thread, "specifically the backoff")
    assert follow.addressed == ["engineer"]
    got = await seen(team, follow.message.id)
    assert got["engineer"] == ("engage", 0, "small_group_reply")
    assert got["qa"] == ("observe", 1, "not_addressed")


async def test_channel_other_bots_messages_are_observed_and_own_ignored(team: Team) -> None:
    await team.script("engineer", [{"match": ".", "reply": "QA should look at this"}])
    thread = await channel(team, "engineer", "qa", people=3)
    await team.post(thread, "@engineer status?")
    await team.idle()
    reply = next(m for m in await team.messages(thread) if m["content"] == "QA should look at this")
    got = await seen(team, reply["id"])
    assert got["engineer"] == ("ignore", 0, "own_message")
    assert got["qa"] == ("observe", 0, "not_addressed")  # named, but a bot's message never triggers
    assert not await team.items("qa")


async def test_channel_alias_makes_a_pending_candidate(team: Team) -> None:
    team.rt.gate.paused = True  # else tier 2's loop may settle the candidate before it is read
    await bot_set(team, "qa", aliases=["tester"])
    thread = await channel(team, "engineer", "qa", people=3)
    result = await team.post(thread, "did the tester's run pass?")
    assert result.addressed == []
    got = await seen(team, result.message.id)
    assert got["qa"] == ("observe", 1, "alias")
    async with team.rt.db.read() as s:
        rows = await explain.dispositions(s, result.message.id)
    assert next(r for r in rows if r["bot"] == "qa")["pending"] is True


async def test_channel_require_mention_turns_off_direct_and_names(team: Team) -> None:
    thread = await channel(team, "engineer", require_mention=True)
    result = await team.post(thread, "engineer, how is the build?")
    assert result.addressed == []
    assert await seen(team, result.message.id) == {"engineer": ("observe", 0, "require_mention")}
    mentioned = await team.post(thread, "@engineer how is the build?")
    assert mentioned.addressed == ["engineer"]


async def test_escape_hatch_folds_the_observed_messages_into_the_run(team: Team) -> None:
    await team.script("qa", [{"match": ".", "reply": "on it"}])
    thread = await channel(team, "engineer", "qa", people=3)
    first = await team.post(thread, "the login test fails on firefox")
    second = await team.post(thread, "only with the new cookie banner")
    other = await team.post(thread, "unrelated chatter", sender="p1")
    asked = await team.post(thread, "@qa can you look?")
    await team.idle()
    runs = await team.runs(thread)
    assert len(runs) == 1
    assert runs[0].trigger_message_ids == [first.message.id, second.message.id, asked.message.id]
    assert other.message.id not in runs[0].trigger_message_ids
    context = await MemoryService(team.rt.db).run_context(runs[0].id)
    text = "\n".join(m["content"] for m in context["messages"])
    assert "cookie banner" in text and "firefox" in text


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_property_every_bot_participant_has_exactly_one_disposition(team: Team, seed: int) -> None:
    """Random traffic over task threads and channels: each message has one disposition for every
    bot taking part when it was posted (and for every bot it mentions), and none for anyone else."""
    rng = random.Random(seed)
    for handle in ("engineer", "qa", "reviewer"):
        await team.script(
            handle, [{"match": "pass", "reply": "@qa pass it on"}, {"match": ".", "reply": "ok"}]
        )
    await person(team, "p1")
    threads = [
        await team.thread(
            kind=rng.choice(["task", "channel"]), participants=rng.sample(["engineer", "qa", "p1"], 2)
        )
        for _ in range(3)
    ]
    expected: dict[str, set[str]] = {}
    for _ in range(12):
        thread = rng.choice(threads)
        words = rng.sample(["@qa", "@reviewer", "engineer", "pass", "hello", "@chief_of_staff"], 2)
        result = await team.post(thread, " ".join(words), sender=rng.choice(["you", "p1"]))
        expected[result.message.id] = await bot_participants(team, thread)
        if rng.random() < 0.5:
            await team.idle()
    await team.idle()
    for thread in threads:
        for message in await team.messages(thread):
            got = await seen(team, message["id"])
            if message["id"] in expected:
                assert set(got) == expected[message["id"]], message["content"]
            elif message["sender"] is not None:  # a bot's reply: its author ignores it
                assert got[message["sender"]["handle"]] == ("ignore", 0, "own_message")
    async with team.rt.db.read() as s:
        pairs = (await s.execute(select(Disposition.message_id, Disposition.bot_id))).all()
    assert len(pairs) == len(set(pairs))


async def bot_participants(team: Team, thread_id: str) -> set[str]:
    async with team.rt.db.read() as s:
        thread = await threads_module.get_thread(s, thread_id)
        view = await threads_module.view(s, thread)
    return {p["handle"] for p in view["participants"] if p["kind"] == "bot"}


async def test_channel_handoff_engages_only_its_target(team: Team) -> None:
    await team.script("engineer", [{"match": "review", "reply": "@reviewer please look, and QA too"}])
    thread = await channel(team, "engineer", "qa", "reviewer", people=3)
    await team.post(thread, "@engineer send it for review")
    await team.idle()
    handoff = next(m for m in await team.messages(thread) if m["content"].startswith("@reviewer please"))
    got = await seen(team, handoff["id"])
    assert got["reviewer"] == ("engage", 0, "handoff")
    assert got["qa"] == ("observe", 0, "not_addressed")  # named by a bot: read, never triggered
    assert got["engineer"] == ("ignore", 0, "own_message")


async def test_task_held_handoff_is_recorded_and_why_follows_it(team: Team) -> None:
    await team.script(
        "engineer", [{"match": "first", "reply": "@qa take over"}, {"match": ".", "reply": "noted"}]
    )
    await team.script("qa", [{"match": ".", "reply": "taken"}])
    thread = await team.thread(participants=["engineer", "qa"])
    team.post_when_prepared(thread, "@engineer second thing")  # mail that lands mid-run
    while_held: list[str] = []

    async def ask_why(claim: Any, _prepared: Any) -> None:
        held = [m for m in await team.messages(thread) if m["metadata"].get("held_handoff")]
        if claim.bot_handle == "engineer" and held and not while_held:
            async with team.rt.db.read() as s:
                while_held.append((await explain.why(s, held[0]["id"], "qa"))["answer"])

    team.on_prepared(ask_why)
    team.rt.system.pause()
    await team.post(thread, "@engineer first thing")
    team.rt.system.unpause()
    await team.idle()
    handoff = next(m for m in await team.messages(thread) if m["content"] == "@qa take over")
    assert handoff["metadata"].get("held_handoff") == ["qa"]
    assert (await seen(team, handoff["id"]))["qa"] == ("observe", 0, "held")
    async with team.rt.db.read() as s:
        answer = await explain.why(s, handoff["id"], "qa")
    assert while_held == ["held"]  # while the engineer still had the second message to handle
    assert answer["answer"] == "answered"  # released once the engineer's mail was handled
    assert answer["disposition"]["signal"] == "held"
