"""A stop drains, then hands back (DRAIN_SECONDS: how long in-flight runs may finish before they
are cancelled): a run still going when the drain time is up is ended at once, as recovery would end
it, so another process takes its mail now instead of when its lease lapses; a run cut off while it
resumed waits for its answer again, which is applied again (its durable checkpoint kept).

Each test stops a runtime whose run is held inside its preparation (``on_prepared``), with no
drain time, then boots again on the same data: the first run's error says the stop ended it (not
the restart's recovery), and its message is answered once.
"""

from __future__ import annotations

import asyncio

from conftest import Boot, Team
from openbot.config import Settings
from openbot.runtime.commands import ResumeBody
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim

QUICK = [{"match": ".", "reply": "built it"}]


def _hold_runs(team: Team, *, resumed_only: bool = False) -> asyncio.Event:
    """Keep runs (or only resumed ones) inside their preparation until the runtime stops; the
    event is set once one is held."""
    held = asyncio.Event()

    async def hold(claim: Claim, _prepared: Prepared) -> None:
        if resumed_only and not claim.resume:
            return
        held.set()
        await asyncio.Event().wait()  # until the stop cancels it

    team.on_prepared(hold)
    return held


async def test_a_run_the_drain_left_in_flight_is_handed_back_at_the_stop(
    boot: Boot, settings: Settings
) -> None:
    settings.drain_seconds = 0
    async with boot() as rt:
        team = Team(rt)
        await team.script("engineer", QUICK)
        held = _hold_runs(team)
        thread = await team.thread()
        posted = await team.post(thread, "@engineer build")
        async with asyncio.timeout(10):
            await held.wait()
    async with boot() as rt:
        team = Team(rt)
        first, *_ = await team.runs(thread)
        assert first.status == "failed" and first.error is not None
        assert first.error["code"] == "interrupted" and "drain time was up" in first.error["message"]
        await team.idle()
        runs = await team.runs(thread)
        assert [(r.status, r.trigger_message_ids) for r in runs] == [
            ("failed", [posted.message.id]),
            ("completed", [posted.message.id]),  # queued again at the stop, answered once
        ]
        notices = [m for m in await team.messages(thread) if m["metadata"].get("kind") == "run_failed"]
        assert len(notices) == 1 and "drain time was up" in notices[0]["content"]


async def test_a_resume_the_drain_left_in_flight_waits_for_its_answer_again(
    boot: Boot, settings: Settings
) -> None:
    settings.drain_seconds = 0
    async with boot() as rt:
        team = Team(rt)
        await team.asks("qa", "Ship it?", reply="shipping: {tool_result}")
        thread = await team.thread()
        await team.post(thread, "@qa ready?")
        await team.idle()
        (run,) = await team.runs(thread)
        assert run.status == "waiting_human"
        held = _hold_runs(team, resumed_only=True)
        await rt.runs.resume(run.id, ResumeBody(answer="yes"))
        async with asyncio.timeout(10):
            await held.wait()
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        (after,) = await team.runs(thread)
        assert after.id == run.id and after.status == "completed"
        events = [e["type"] for e in (await rt.runs.get(run.id))["events"]]
        assert events.index("resumed") < events.index("resumed_again"), events  # the cut is marked
        messages = await team.messages(thread)
        kinds = [m["metadata"].get("kind") for m in messages]
        assert "run_resumed_again" in kinds
        assert [m["content"] for m in messages if m["run_id"] == run.id and m["sender"]] == ["shipping: yes"]
