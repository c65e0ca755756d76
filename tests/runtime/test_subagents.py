"""spawn_agent: an ephemeral sub-agent with a subset of its parent's tools, inside the run."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from conftest import Team
from openbot.core.errors import InvalidArgument
from openbot.runtime.commands import BotUpdate
from openbot.runtime.team import get_bot, update_bot
from openbot.runtime.tools.subagents import ANSWER_CAP
from openbot.store.models import TodoList

TODO = {"name": "todo_write", "args": {"todos": [{"content": "leaked", "status": "pending"}]}}
# A sub-agent answering with @handles would hand off from the reply: these tests use todo_write.


def spawn(tools: list[str], task: str = "count the bots of the team") -> dict[str, Any]:
    return {"name": "spawn_agent", "args": {"task": task, "tools": tools}}


async def _bot(team: Team, parent: list[dict[str, Any]], sub: list[dict[str, Any]], **settings: Any) -> None:
    """@engineer with spawn_agent; its own script, and its sub-agents' (``subagent_script``)."""
    update = BotUpdate(
        model="scripted",
        tools=["spawn_agent"],
        model_settings={"script": parent, "subagent_script": sub, **settings},
    )
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", update)


async def _run(
    team: Team, text: str = "@engineer research the team"
) -> tuple[Any, list[dict[str, Any]], str]:
    thread = await team.thread()
    await team.post(thread, text)
    await team.idle()
    run = (await team.runs(thread))[0]
    events = (await team.rt.runs.get(run.id))["events"]
    return run, events, (await team.messages(thread))[-1]["content"]


async def test_a_sub_agent_works_with_its_tools_and_answers_its_parent(team: Team) -> None:
    parent = [{"match": "research", "tool_calls": [spawn(["todo_write"])], "reply": "Found: {tool_result}"}]
    sub = [{"match": "count the bots", "tool_calls": [TODO], "reply": "sub says {tool_result}"}]
    await _bot(team, parent, sub)
    deltas: list[str] = []
    team.rt.bus.listen(
        lambda sig: deltas.append(sig.data["delta"]) if sig.type == "text.delta" and sig.data else None
    )
    run, events, reply = await _run(team)
    assert run.status == "completed"
    assert reply == "Found: sub says Saved 1 todo(s), 0 completed."  # the sub-agent's answer, relayed
    assert "".join(deltas) == reply  # only the parent's reply streams, not the sub-agent's tokens
    async with team.rt.db.read() as s:  # it acted for the run: the bot's todo list in this thread
        (todos,) = list(await s.scalars(select(TodoList)))
    assert (todos.thread_id, todos.todos[0]["content"]) == (run.thread_id, "leaked")
    steps = [(e["type"], e["payload"].get("name"), e["payload"].get("agent")) for e in events]
    assert steps == [
        ("tool_call", "spawn_agent", None),
        ("tool_call", "todo_write", "sub-1"),
        ("tool_result", "todo_write", "sub-1"),
        ("tool_result", "spawn_agent", None),
        ("message", None, None),
    ]
    spawn_id = events[0]["payload"]["id"]
    assert {e["payload"]["parent"] for e in events[1:3]} == {spawn_id}
    assert run.model_calls == 4  # two of the parent's, two of the sub-agent's


async def test_a_tool_outside_the_subset_cannot_be_called(team: Team) -> None:
    """The sub-agent has list_bots only: todo_write (which its parent has) is not even bound."""
    parent = [{"match": "research", "tool_calls": [spawn(["list_bots"])], "reply": "{tool_result}"}]
    sub = [{"match": ".", "tool_calls": [TODO], "reply": "tried: {tool_result}"}]
    await _bot(team, parent, sub)
    run, events, reply = await _run(team)
    result = next(e["payload"] for e in events if e["type"] == "tool_result" and e["payload"].get("agent"))
    assert (result["name"], result["status"]) == ("todo_write", "error")
    assert "not a valid tool" in result["content"]
    assert reply.startswith("tried: Error")
    async with team.rt.db.read() as s:
        assert list(await s.scalars(select(TodoList))) == []  # nothing was written
    assert run.status == "completed"


async def test_spawn_agent_refuses_tools_a_sub_agent_cannot_have(team: Team) -> None:
    """Not the parent's, spawn_agent itself, ask_human, or behind the parent's approval: the model
    reads why and which tools it may give; no sub-agent runs."""
    for tools in (["run_shell"], ["spawn_agent"], ["ask_human"], ["nope"]):
        parent = [{"match": "research", "tool_calls": [spawn(tools)], "reply": "{tool_result}"}]
        await _bot(team, parent, [{"match": ".", "reply": "should not run"}])
        run, events, reply = await _run(team)
        assert f"a sub-agent cannot have {tools[0]}" in reply and "Available: " in reply, reply
        assert "list_bots" in reply and "should not run" not in reply
        assert not [e for e in events if e["payload"].get("agent")]
        assert run.model_calls == 2


async def test_a_tool_behind_approval_stays_with_the_parent(team: Team) -> None:
    parent = [{"match": "research", "tool_calls": [spawn(["todo_write"])], "reply": "{tool_result}"}]
    await _bot(team, parent, [{"match": ".", "reply": "should not run"}])
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", BotUpdate(approval_tools=["todo_write"]))
    _run_row, _events, reply = await _run(team)
    assert "a sub-agent cannot have todo_write" in reply and "should not run" not in reply


async def test_a_sub_agent_is_bounded(team: Team) -> None:
    """Its own model-call limit (it stops, and the run goes on), and its answer is capped."""
    parent = [{"match": "research", "tool_calls": [spawn(["todo_write"])], "reply": "<{tool_result}>"}]
    looping = [{"match": ".", "tool_calls": [TODO], "reply": "again"}]
    await _bot(team, parent, looping, subagent_max_model_calls=1)
    run, events, _reply = await _run(team)
    assert run.status == "completed"
    assert len([e for e in events if e["payload"].get("agent") and e["type"] == "tool_call"]) == 1
    assert run.model_calls == 3
    long = [{"match": ".", "reply": "x" * (ANSWER_CAP + 500)}]
    await _bot(team, parent, long)
    run, _events, reply = await _run(team)
    assert "x" * ANSWER_CAP in reply and "x" * (ANSWER_CAP + 1) not in reply
    assert "[answer cut: 500 more characters]" in reply


async def test_without_a_subagent_script_the_bots_script_matches_the_task(team: Team) -> None:
    parent = [
        {"match": "research", "tool_calls": [spawn([], task="summarise please")], "reply": "{tool_result}"},
        {"match": "summarise", "reply": "summary from the sub-agent"},
    ]
    update = BotUpdate(model="scripted", tools=["spawn_agent"], model_settings={"script": parent})
    async with team.rt.db.transaction() as s:
        await update_bot(s, "engineer", update)
    _run_row, _events, reply = await _run(team)
    assert reply == "summary from the sub-agent"


async def test_the_runs_tool_bounds_apply_to_a_sub_agents_tool_calls(team: Team) -> None:
    """OPENBOT_TOOL_OUTPUT_MAX_CHARS caps a sub-agent's tool result as it does the bot's own."""
    team.rt.runner.settings.tool_output_max_chars = 200
    parent = [{"match": "research", "tool_calls": [spawn(["list_bots"])], "reply": "done"}]
    sub = [{"match": ".", "tool_calls": [{"name": "list_bots", "args": {}}], "reply": "listed"}]
    await _bot(team, parent, sub)
    _run_row, events, _reply = await _run(team)
    (listed,) = [e["payload"] for e in events if e["type"] == "tool_result" and e["payload"].get("agent")]
    assert "characters cut: the tool's output was over 200" in listed["content"]


async def test_a_bad_subagent_script_is_refused_and_nothing_is_saved(team: Team) -> None:
    bad = BotUpdate(model="scripted", model_settings={"script": [], "subagent_script": [{"match": "("}]})
    with pytest.raises(InvalidArgument) as refused:
        async with team.rt.db.transaction() as s:
            await update_bot(s, "engineer", bad)
    assert "model_settings.subagent_script is not valid" in refused.value.message
    async with team.rt.db.read() as s:
        _bot_row, profile = await get_bot(s, "engineer")
    assert "subagent_script" not in (profile.model_settings or {})
