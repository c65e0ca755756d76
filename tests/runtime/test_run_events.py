"""A run's events keep the order the model produced them in (seq), on both backends."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("limit", "calls", "events", "said"),
    [
        (1, 1, ["tool_call", "tool_result"], []),  # the call past the limit is not made; no reply
        (2, 2, ["tool_call", "tool_result", "message"], ["done"]),
    ],
)
async def test_a_run_stops_at_its_model_call_limit(
    team: Team, limit: int, calls: int, events: list[str], said: list[str]
) -> None:
    """``max_model_calls``: a run completes with the calls it made; past its limit it says
    nothing more (its tool calls and their results are on record)."""
    await team.script(
        "engineer",
        [{"match": ".", "tool_calls": [{"name": "list_bots", "args": {}}], "reply": "done"}],
        max_model_calls=limit,
    )
    thread = await team.thread()
    await team.post(thread, "@engineer who is here?")
    await team.idle()
    (run,) = await team.runs(thread)
    view = await team.rt.runs.get(run.id)
    assert view["status"] == "completed"
    assert view["usage"]["model_calls"] == calls
    assert [e["type"] for e in view["events"]] == events
    assert [m["content"] for m in await team.messages(thread) if m["sender"]["handle"] == "engineer"] == said
