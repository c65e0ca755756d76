"""LangSmith's per-hook bookkeeping stays on the event loop while nobody traces."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
from langsmith import run_helpers
from langsmith._internal import _aiter

from conftest import Team
from openbot.runtime.runner import tracing


async def test_a_run_hands_nothing_to_langsmiths_threads_while_tracing_is_off(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed_off: list[str] = []
    threaded = _aiter._default_aio_to_thread

    async def counted(ctx: contextvars.Context, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed_off.append(getattr(func, "__name__", repr(func)))
        return await threaded(ctx, func, *args, **kwargs)

    monkeypatch.setattr(_aiter, "_default_aio_to_thread", counted)
    thread = await team.thread()
    await team.post(thread, "@engineer hello")
    await team.idle()
    assert [m["sender"]["handle"] for m in await team.messages(thread)] == ["you", "engineer"]
    assert handed_off == []

    # the override is what keeps them inline: without it they go to LangSmith's threads
    monkeypatch.setattr("langsmith._runtime_overrides._runtime_overrides.aio_to_thread", None)
    await team.post(thread, "@engineer again")
    await team.idle()
    assert handed_off  # LangChain's middleware hooks did reach LangSmith's threaded path


async def test_while_tracing_is_on_langsmiths_own_threaded_path_runs() -> None:
    calls: list[str] = []

    async def default(ctx: contextvars.Context, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        calls.append("threaded")
        return ctx.run(func, *args, **kwargs)

    ctx = contextvars.copy_context()
    assert await tracing.inline_unless_tracing(default, ctx, lambda x: x + 1, 1) == 2
    assert calls == []
    with run_helpers.tracing_context(enabled=True):
        assert await tracing.inline_unless_tracing(default, ctx, lambda x: x * 3, 2) == 6
    assert calls == ["threaded"]
