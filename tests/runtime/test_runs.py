"""Runs end to end: failures, cancellation of a running run, checkpoints, built-in tools."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from conftest import Boot, Team
from openbot.runtime.commands import BotUpdate, ResumeBody
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim
from openbot.runtime.team import get_actor
from openbot.store.models import Run, RunEvent


async def _calls_tool(
    team: Team,
    handle: str,
    name: str,
    args: dict[str, Any],
    *,
    match: str = ".",
    reply: str = "{tool_result}",
) -> None:
    """Script ``handle`` to call the tool ``name`` when a trigger matches ``match``, then ``reply``."""
    await team.script(
        handle, [{"match": match, "reply": reply, "tool_calls": [{"name": name, "args": args}]}]
    )


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
    thread = await team.slow_run_started("@engineer slow", delay_ms=20_000)
    run = (await team.runs(thread))[0]
    await team.rt.runs.cancel(run.id)
    await team.idle()
    assert [r.status for r in await team.runs(thread)] == ["cancelled"]
    messages = await team.messages(thread)
    assert [m["metadata"].get("kind") for m in messages] == [None, "run_cancelled"]
    assert not team.rt.system.in_flight


async def test_checkpoints_are_kept_while_waiting_and_deleted_when_terminal(team: Team) -> None:
    await team.asks("engineer", "?", reply="ok {tool_result}")
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
    await _calls_tool(team, "engineer", "recall_messages", {"query": "banana"}, reply="found: {tool_result}")
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
    await _calls_tool(team, "engineer", "read_history", {"offset": 1, "limit": 2}, match="page")
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
    todos = [{"content": "write the parser", "status": "in_progress"}]
    await _calls_tool(team, "engineer", "todo_write", {"todos": todos}, match="plan", reply="planned")
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
    await _calls_tool(team, "qa", "list_bots", {})
    thread = await team.thread()
    await team.post(thread, "@qa who is here")
    await team.idle()
    reply = next(m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "qa")
    assert reply.splitlines()[0].startswith("@chief_of_staff (Chief of Staff)")
    assert "@engineer" in reply and "@qa" in reply


async def test_stopping_lets_in_flight_runs_finish_first(boot: Boot) -> None:
    async with boot() as rt:
        thread = await Team(rt).slow_run_started("@engineer finish this", delay_ms=300)
    async with boot() as rt:
        team = Team(rt)
        assert [r.status for r in await team.runs(thread)] == ["completed"]
        assert (await team.messages(thread))[-1]["content"] == "(scripted) engineer received 1 message(s)."


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


async def test_bots_of_one_shape_share_a_compiled_agent_and_each_answers_as_itself(team: Team) -> None:
    """The agent cache is keyed by what the graph is built from, not by the bot: bots with the same
    tools share one compiled graph, and each run still gets its own model and system prompt."""
    prompts: dict[str, str] = {}

    async def seen(claim: Claim, prepared: Prepared) -> None:
        prompts[claim.bot_handle] = prepared.system_prompt

    team.on_prepared(seen)
    await team.script(
        "engineer", [{"match": "ping", "reply": "engineer here"}], tools=[], workspace_access="read"
    )
    await team.script("qa", [{"match": "ping", "reply": "qa here"}], tools=[], workspace_access="read")
    await team.script("reviewer", [{"match": "ping", "reply": "reviewer here"}], tools=["save_draft"])
    thread = await team.thread()
    await team.post(thread, "@engineer @qa @reviewer ping")
    await team.idle()
    replies = {m["content"] for m in (await team.messages(thread))[1:]}
    assert replies == {"engineer here", "qa here", "reviewer here"}
    assert len(team.rt.runner.agents) == 2  # engineer and qa share one graph; reviewer has a tool more
    assert "@engineer" in prompts["engineer"] and "@qa" in prompts["qa"]
    assert prompts["engineer"] != prompts["qa"]
