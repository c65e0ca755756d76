"""Tier 2 of the channel gate: one cheap model call per candidate (DESIGN §7, §11). The scripted
model answers from ``model_settings.gate``; an error, a timeout or a spent budget observes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import Team
from openbot.core.errors import InvalidArgument
from openbot.runtime.commands import ActorCreate, BotUpdate
from openbot.runtime.engagement import explain
from openbot.runtime.team import create_actor, update_bot


async def _setup(team: Team, **settings: Any) -> str:
    async with team.rt.db.transaction() as s:
        for handle in ("p1", "p2"):
            await create_actor(s, ActorCreate(kind="human", handle=handle, name=handle))
        model_settings = {"script": [{"match": ".", "reply": "here"}], **settings}
        await update_bot(s, "qa", BotUpdate(model="scripted", model_settings=model_settings))
    team.rt.gate.paused = True  # the test settles candidates itself
    return await team.thread(kind="channel", participants=["engineer", "qa", "p1", "p2"])


async def _qa(team: Team, message_id: str) -> dict[str, Any]:
    async with team.rt.db.read() as s:
        rows = await explain.dispositions(s, message_id)
    return dict(next(r for r in rows if r["bot"] == "qa"))


async def test_tier2_engage_queues_the_message_and_the_bot_answers(team: Team) -> None:
    thread = await _setup(team, gate=[{"match": r"^qa[,:]", "verdict": "engage"}])
    posted = await team.post(thread, "QA, can you rerun the smoke tests?")
    assert (await _qa(team, posted.message.id))["pending"] is True
    assert await team.rt.gate.classify_pending() == 1
    row = await _qa(team, posted.message.id)
    assert (row["disposition"], row["tier"], row["signal"], row["pending"]) == ("engage", 2, "model", False)
    await team.idle()
    runs = await team.runs(thread)
    assert [r.trigger_message_ids for r in runs] == [[posted.message.id]]
    assert runs[0].status == "completed"


async def test_tier2_observe_for_a_third_person_reference(team: Team) -> None:
    thread = await _setup(team, gate=[{"match": r"^qa[,:]", "verdict": "engage"}])
    posted = await team.post(thread, "I already asked QA about that yesterday")
    await team.rt.gate.classify_pending()
    row = await _qa(team, posted.message.id)
    assert (row["disposition"], row["tier"], row["signal"]) == ("observe", 2, "model")
    await team.idle()
    assert not await team.runs(thread)


async def test_tier2_error_observes(team: Team) -> None:
    # Real providers are forbidden in tests: building the gate model fails, and the bot observes.
    thread = await _setup(team, gate_model="anthropic:claude-haiku-4-5")
    posted = await team.post(thread, "QA, are you there?")
    await team.rt.gate.classify_pending()
    row = await _qa(team, posted.message.id)
    assert (row["disposition"], row["tier"], row["signal"]) == ("observe", 2, "model")
    assert "failed" in row["reason"]
    await team.idle()
    assert not await team.runs(thread)


async def test_tier2_timeout_observes(team: Team) -> None:
    thread = await _setup(team, gate=[{"match": ".", "verdict": "engage"}], delay_ms=2000)
    team.rt.gate.timeout = 0.05
    posted = await team.post(thread, "QA, are you there?")
    await team.rt.gate.classify_pending()
    row = await _qa(team, posted.message.id)
    assert (row["disposition"], row["tier"], row["signal"]) == ("observe", 2, "model")
    assert "did not answer within 0.05 s" in row["reason"]


async def test_tier2_budget_per_thread_observes_when_spent(team: Team) -> None:
    thread = await _setup(team, gate=[{"match": ".", "verdict": "engage"}])
    team.rt.gate.per_minute = 1
    first = await team.post(thread, "QA, one")
    second = await team.post(thread, "QA, two")
    await team.rt.gate.classify_pending()
    assert (await _qa(team, first.message.id))["disposition"] == "engage"
    spent = await _qa(team, second.message.id)
    assert spent["disposition"] == "observe" and "budget" in spent["reason"]


async def test_a_bad_gate_setting_is_refused(team: Team) -> None:
    with pytest.raises(InvalidArgument, match=r"gate\[0\]\.verdict"):
        async with team.rt.db.transaction() as s:
            await update_bot(
                s, "qa", BotUpdate(model_settings={"gate": [{"match": ".", "verdict": "maybe"}]})
            )


async def test_the_loop_settles_a_candidate_when_it_is_written(team: Team) -> None:
    thread = await _setup(team, gate=[{"match": r"^qa[,:]", "verdict": "engage"}])
    team.rt.gate.paused = False
    settled = asyncio.Event()
    team.rt.db.activity_listeners.append(
        lambda rows: settled.set() if any(r.event == "message.engaged" for r in rows) else None
    )
    posted = await team.post(thread, "QA, please rerun it")  # its commit wakes the loop
    await asyncio.wait_for(settled.wait(), timeout=10)
    assert (await _qa(team, posted.message.id))["signal"] == "model"
    await team.idle()
    assert [r.trigger_message_ids for r in await team.runs(thread)] == [[posted.message.id]]


async def test_status_is_not_idle_while_a_gate_decision_is_owed(team: Team) -> None:
    # A client polling /status for idle right after a post must not stop before the bot engages.
    thread = await _setup(team, gate=[{"match": r"^qa[,:]", "verdict": "engage"}])
    team.rt.system.pause()  # @qa's worker would take the mail the moment the gate queues it
    await team.post(thread, "QA, can you rerun the smoke tests?")
    status = await team.rt.observer.status()
    assert status["gate"] == {"pending": 1}
    assert status["mailboxes"]["queued"] == 1
    assert await team.rt.gate.classify_pending() == 1
    status = await team.rt.observer.status()  # settled and queued, in one transaction: still 1
    assert (status["gate"], status["mailboxes"]["queued"]) == ({"pending": 0}, 1)
    team.rt.system.unpause()
    await team.idle()
    status = await team.rt.observer.status()
    assert (status["gate"], status["mailboxes"], status["runs"]["running"]) == (
        {"pending": 0},
        {"queued": 0, "processing": 0, "parked": 0},
        0,
    )
