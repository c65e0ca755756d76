"""The runner's context editing: old tool results are blanked once the context passes the trigger,
and below it the model call goes straight through (no copy of the context)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents.middleware import ClearToolUsesEdit
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from openbot.runtime.runner.agent import _ContextEditing, _RunScoped
from openbot.runtime.runner.scripted import ScriptedChatModel
from openbot.runtime.tools.context import ModelCalls

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


async def test_the_run_scoped_middleware_edits_the_context_it_hands_the_model() -> None:
    """Context editing runs inside the run-scoped middleware (one middleware layer less): past
    the trigger the model gets the edited context, with the run's own system prompt, and the call
    is counted; below it, the context as it is."""
    calls = ModelCalls()
    model = ScriptedChatModel(handle="engineer")
    runtime = SimpleNamespace(context=SimpleNamespace(calls=calls, model=model, system_prompt="the run's"))
    middleware = _RunScoped(5, ClearToolUsesEdit(trigger=1_000, keep=1))
    seen: list[Any] = []

    async def handler(request: ModelRequest[Any]) -> AIMessage:
        seen.append(request)
        return AIMessage("done")

    for size, cleared in ((4_000, ["[cleared]", "[cleared]"]), (40, [])):
        seen.clear()
        messages = _context(tool_results=3, size=size)
        request = ModelRequest(model=model, messages=messages, runtime=runtime)  # type: ignore[arg-type]
        await middleware.awrap_model_call(request, handler)
        (sent,) = seen
        results = [m.content for m in sent.messages if isinstance(m, ToolMessage)]
        assert [r for r in results if r == "[cleared]"] == cleared
        assert sent.system_message.content == "the run's" and sent.model is model
    assert calls.made == 2
