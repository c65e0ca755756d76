"""Runs end to end: failures, cancellation of a running run, checkpoints, built-in tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sqlalchemy import select

from conftest import Boot, Team
from openbot.runtime.commands import BotUpdate, ResumeBody
from openbot.runtime.team import get_actor
from openbot.store.models import Run, RunEvent


async def wait_for(team: Team, check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    """Wait on journal signals (not on the clock) until ``check`` holds."""
    sub = team.rt.bus.subscribe()
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await sub.next(timeout=1)
    finally:
        sub.close()


async def test_a_model_error_fails_the_run_with_a_clear_notice(team: Team) -> None:
    await team.rt.team.update_bot("engineer", BotUpdate(model="anthropic:claude-sonnet-4-5"))  # forbidden
    thread = await team.thread()
    await team.post(thread, "@engineer hi")
    await team.idle()
    run = (await team.runs(thread))[0]
    assert run.status == "failed" and run.error is not None and run.error["code"] == "model_auth"
    notice = (await team.messages(thread))[-1]
    assert notice["sender"] is None and notice["metadata"]["kind"] == "run_failed"
    assert "model_auth" in notice["content"]
    assert [i.status for i in await team.items("engineer")] == ["failed"]


async def test_cancelling_a_running_run_stops_it_and_says_so(team: Team) -> None:
    await team.script("engineer", [], delay_ms=20_000)
    thread = await team.thread()
    await team.post(thread, "@engineer slow")

    async def running() -> bool:
        return any(r.status == "running" for r in await team.runs(thread))

    await wait_for(team, running)
    run = (await team.runs(thread))[0]
    await team.rt.runs.cancel(run.id)
    await team.idle()
    assert [r.status for r in await team.runs(thread)] == ["cancelled"]
    messages = await team.messages(thread)
    assert [m["metadata"].get("kind") for m in messages] == [None, "run_cancelled"]
    assert not team.rt.system.in_flight


async def test_checkpoints_are_kept_while_waiting_and_deleted_when_terminal(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": ".",
                "reply": "ok {tool_result}",
                "tool_calls": [{"name": "ask_human", "args": {"question": "?"}}],
            }
        ],
    )
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    run = (await team.runs(thread))[0]
    saver = team.rt.runner.checkpointer
    config = {"configurable": {"thread_id": run.id}}
    assert await saver.aget_tuple(config) is not None
    await team.rt.runs.resume(run.id, ResumeBody(answer="fine"))
    await team.idle()
    assert (await team.runs(thread))[0].status == "completed"
    assert await saver.aget_tuple(config) is None


async def test_tool_calls_and_results_are_recorded_as_run_events(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": ".",
                "reply": "found: {tool_result}",
                "tool_calls": [{"name": "recall_messages", "args": {"query": "banana"}}],
            }
        ],
    )
    thread = await team.thread()
    await team.post(thread, "the banana is ripe")
    await team.post(thread, "@engineer what about it")
    await team.idle()
    reply = next(m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "engineer")
    assert reply.startswith("found: #0 [@you]: the banana is ripe")
    async with team.rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
        run = (await s.scalars(select(Run).where(Run.thread_id == thread, Run.bot_id == engineer.id))).one()
        events = list(
            await s.scalars(select(RunEvent).where(RunEvent.run_id == run.id).order_by(RunEvent.seq))
        )
    assert [e.type for e in events] == ["tool_call", "tool_result", "message"]
    assert events[0].payload["name"] == "recall_messages" and [e.seq for e in events] == [1, 2, 3]


async def test_read_history_pages_chronologically(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": "page",
                "reply": "{tool_result}",
                "tool_calls": [{"name": "read_history", "args": {"offset": 1, "limit": 2}}],
            }
        ],
    )
    thread = await team.thread()
    for word in ("zero", "one", "two", "three"):
        await team.post(thread, word)  # to the chief, who answers each in turn
        await team.idle()
    await team.post(thread, "@engineer page")
    await team.idle()
    reply = next(m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "engineer")
    assert reply.splitlines()[0].startswith("#1 [@chief_of_staff]")
    assert reply.splitlines()[-1] == "(next offset: 3)"


async def test_todo_list_is_saved_per_bot_per_thread_and_shown_in_the_prompt(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": "plan",
                "reply": "planned",
                "tool_calls": [
                    {
                        "name": "todo_write",
                        "args": {"todos": [{"content": "write the parser", "status": "in_progress"}]},
                    }
                ],
            }
        ],
    )
    thread, other = await team.thread(), await team.thread()
    await team.post(thread, "@engineer plan")
    await team.idle()
    prepared = team.prepared()
    await team.post(thread, "@engineer next")
    await team.post(other, "@engineer elsewhere")
    await team.idle()
    prompts = [p.system_prompt for p in prepared]
    assert "[in_progress] write the parser" in prompts[0]
    assert "write the parser" not in prompts[1]


async def test_list_bots_tool_lists_the_team(team: Team) -> None:
    await team.script(
        "qa", [{"match": ".", "reply": "{tool_result}", "tool_calls": [{"name": "list_bots", "args": {}}]}]
    )
    thread = await team.thread()
    await team.post(thread, "@qa who is here")
    await team.idle()
    reply = next(m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "qa")
    assert reply.splitlines()[0].startswith("@chief_of_staff (Chief of Staff)")
    assert "@engineer" in reply and "@qa" in reply


async def test_stopping_lets_in_flight_runs_finish_first(boot: Boot) -> None:
    async with boot() as rt:
        team = Team(rt)
        await team.script("engineer", [], delay_ms=300)
        thread = await team.thread()
        await team.post(thread, "@engineer finish this")

        async def running() -> bool:
            return any(r.status == "running" for r in await team.runs(thread))

        await wait_for(team, running)
    async with boot() as rt:
        team = Team(rt)
        assert [r.status for r in await team.runs(thread)] == ["completed"]
        assert (await team.messages(thread))[-1]["content"] == "(scripted) engineer received 1 message."


async def test_two_questions_in_one_turn_resume_together(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": ".",
                "reply": "got {tool_result}",
                "tool_calls": [
                    {"name": "ask_human", "args": {"question": "Which branch?"}},
                    {"name": "ask_human", "args": {"question": "Which tag?"}},
                ],
            }
        ],
    )
    thread = await team.thread()
    await team.post(thread, "@engineer release")
    await team.idle()
    run = (await team.runs(thread))[0]
    assert run.status == "waiting_human" and len(run.interrupt["interrupt_ids"]) == 2  # type: ignore[index]
    await team.rt.runs.resume(run.id, ResumeBody(answer="main"))
    await team.idle()
    assert [r.status for r in await team.runs(thread)] == ["completed"]
    assert (await team.messages(thread))[-1]["content"] == "got main"
