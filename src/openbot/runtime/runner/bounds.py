"""Bounds on one tool call: time and output size (invariant 14, fate isolation).

A tool call gets ``TOOL_TIMEOUT_SECONDS`` (default 120); past that the model reads a tool error
and the run goes on — a hung tool costs its run a tool result, never the run or the process. A
tool's output above ``TOOL_OUTPUT_MAX_CHARS`` keeps its head and tail around a marker saying how
much was cut, so a runaway listing cannot fill the context or the database.

Blocking work never runs on the event loop: a tool without a coroutine is run by LangChain in a
worker thread (``BaseTool._arun`` → ``run_in_executor``), so a ``time.sleep`` or a slow file read
inside it delays only its own run. A thread cannot be killed: a sync tool that times out keeps its
thread until it returns, but its run has moved on. Runs as a whole are bounded by the reaper
(``scheduler.reaper``); model calls by ``max_model_calls``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from openbot.runtime.tools.context import RunContext

ToolResult = ToolMessage | Command[Any]


def cap_text(text: str, limit: int) -> str:
    """``text`` if it fits, else its head and tail around a marker (the whole stays near ``limit``)."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    marker = f"\n… [{cut} characters cut: the tool's output was over {limit}] …\n"
    head = (limit * 2) // 3
    tail = limit - head
    return text[:head] + marker + text[len(text) - tail :]


class ToolBounds(AgentMiddleware[Any, RunContext]):
    """Every tool call under a time limit, every tool result under a size cap."""

    def __init__(self, timeout_seconds: float, max_chars: int) -> None:
        super().__init__()
        self.timeout_seconds = timeout_seconds
        self.max_chars = max_chars

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        return self._capped(handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        bound = asyncio.timeout(self.timeout_seconds)
        try:
            async with bound:
                result = await handler(request)
        except TimeoutError:
            if not bound.expired():
                raise  # the tool's own TimeoutError: its error, not ours
            call = request.tool_call
            return ToolMessage(
                content=f"error: the tool {call['name']} did not finish within {self.timeout_seconds:g} s "
                "and was stopped",
                tool_call_id=call.get("id") or "",
                name=call["name"],
                status="error",
            )
        return self._capped(result)

    def _capped(self, result: ToolResult) -> ToolResult:
        if isinstance(result, ToolMessage) and isinstance(result.content, str):
            capped = cap_text(result.content, self.max_chars)
            if capped is not result.content:
                return result.model_copy(update={"content": capped})
        return result
