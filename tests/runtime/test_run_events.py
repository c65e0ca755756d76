"""A run's events keep the order the model produced them in (seq), on both backends."""

from __future__ import annotations

from conftest import Team
from openbot.runtime.commands import ResumeBody


async def test_text_beside_tool_calls_comes_before_them(team: Team) -> None:
    """Providers often say something beside their tool calls: that text is event 1, not last."""
    await team.script(
        "engineer",
        [
            {
                "match": ".",
                "say": "Let me check who is on the team.",
                "tool_calls": [{"name": "list_bots", "args": {}}],
                "reply": "done",
            }
        ],
    )
    thread = await team.thread()
    await team.post(thread, "@engineer who is here?")
    await team.idle()
    (run,) = await team.rt.runs.list_runs(thread_id=thread, bot=None, status=None, limit=10)
    events = (await team.rt.runs.get(run["id"]))["events"]
    assert [(e["seq"], e["type"]) for e in events] == [
        (1, "text"),
        (2, "tool_call"),
        (3, "tool_result"),
        (4, "message"),
    ]
    assert events[0]["payload"]["text"] == "Let me check who is on the team."


async def test_a_paused_run_says_its_text_before_the_question(team: Team) -> None:
    await team.script(
        "engineer",
        [
            {
                "match": ".",
                "say": "I need a decision.",
                "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it?"}}],
                "reply": "shipping: {tool_result}",
            }
        ],
    )
    thread = await team.thread()
    await team.post(thread, "@engineer release")
    await team.idle()
    (run,) = await team.runs(thread)
    await team.rt.runs.resume(run.id, ResumeBody(answer="yes"))
    await team.idle()
    types = [e["type"] for e in (await team.rt.runs.get(run.id))["events"]]
    assert types == ["text", "tool_call", "interrupt", "resumed", "tool_result", "message"]


async def test_a_run_stops_at_its_model_call_limit_without_a_reply(team: Team) -> None:
    """``max_model_calls``: the call past the limit is not made, the run completes with the calls
    it made and says nothing more (its tool calls and their results are on record)."""
    await team.script(
        "engineer",
        [{"match": ".", "tool_calls": [{"name": "list_bots", "args": {}}], "reply": "done"}],
        max_model_calls=1,
    )
    thread = await team.thread()
    await team.post(thread, "@engineer who is here?")
    await team.idle()
    (run,) = await team.runs(thread)
    view = await team.rt.runs.get(run.id)
    assert view["status"] == "completed"
    assert view["usage"]["model_calls"] == 1
    assert [e["type"] for e in view["events"]] == ["tool_call", "tool_result"]
    said = [m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "engineer"]
    assert said == []


async def test_a_run_within_its_model_call_limit_replies(team: Team) -> None:
    await team.script(
        "engineer",
        [{"match": ".", "tool_calls": [{"name": "list_bots", "args": {}}], "reply": "done"}],
        max_model_calls=2,
    )
    thread = await team.thread()
    await team.post(thread, "@engineer who is here?")
    await team.idle()
    (run,) = await team.runs(thread)
    view = await team.rt.runs.get(run.id)
    assert view["usage"]["model_calls"] == 2
    assert [e["type"] for e in view["events"]] == ["tool_call", "tool_result", "message"]
