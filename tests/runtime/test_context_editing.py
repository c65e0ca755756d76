"""The runner's context editing: old tool results are blanked once the context passes the trigger,
and below it the model call goes straight through (no copy of the context)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import ClearToolUsesEdit
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from openbot.runtime.runner.agent import _ContextEditing
from openbot.runtime.runner.scripted import ScriptedChatModel

pytestmark = pytest.mark.asyncio


def _context(tool_results: int, size: int) -> list[Any]:
    messages: list[Any] = [HumanMessage("start")]
    for i in range(tool_results):
        call = {"name": "read_history", "args": {}, "id": f"call_{i}"}
        messages += [AIMessage("", tool_calls=[call]), ToolMessage("x" * size, tool_call_id=f"call_{i}")]
    return messages


async def _seen(messages: list[Any], trigger: int) -> list[Any]:
    middleware = _ContextEditing(edits=[ClearToolUsesEdit(trigger=trigger, keep=1)])
    seen: list[Any] = []

    async def handler(request: ModelRequest[Any]) -> AIMessage:
        seen.extend(request.messages)
        return AIMessage("done")

    request = ModelRequest(model=ScriptedChatModel(handle="engineer"), messages=messages)
    await middleware.awrap_model_call(request, handler)
    return seen


async def test_below_the_trigger_the_context_is_passed_as_it_is() -> None:
    messages = _context(tool_results=3, size=40)
    seen = await _seen(messages, trigger=10_000)
    assert len(seen) == len(messages) and all(a is b for a, b in zip(seen, messages, strict=True))


async def test_past_the_trigger_old_tool_results_are_cleared_and_the_newest_kept() -> None:
    messages = _context(tool_results=3, size=4_000)
    seen = await _seen(messages, trigger=1_000)
    results = [m.content for m in seen if isinstance(m, ToolMessage)]
    assert results[:2] == ["[cleared]", "[cleared]"] and results[2] == "x" * 4_000
    originals = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert originals == ["x" * 4_000] * 3  # the run's own messages are not edited in place
