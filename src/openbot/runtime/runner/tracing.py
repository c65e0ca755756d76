"""LangSmith's per-call bookkeeping, kept on the event loop while nobody traces.

LangChain wraps every middleware hook of an agent (``awrap_model_call``, ``awrap_tool_call``)
in LangSmith's ``traceable``, and ``traceable`` sets up and closes each span in a worker thread
(``aio_to_thread``) and then runs the hook in a task of its own. With tracing off that
bookkeeping is a few dictionary lookups, but the thread hand-offs are not: two per hook per
model call, about 0.5 ms of a run's latency each on a loaded two-core machine (a bare agent's
``astream`` measured 9.0 → 5.3 ms p50 with them inline).

``install`` puts LangSmith's documented runtime override in place: while tracing is off the
bookkeeping runs inline, in the context LangSmith asks for; while it is on (``LANGSMITH_TRACING``
or a ``tracing_context``), LangSmith's own threaded path runs unchanged, since it may then do
I/O.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import langsmith
from langsmith.utils import tracing_is_enabled


async def inline_unless_tracing(
    default: Callable[..., Awaitable[Any]],
    ctx: contextvars.Context,
    func: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """LangSmith's ``aio_to_thread``, run inline while tracing is off."""
    if tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def install() -> None:
    """Keep LangSmith's bookkeeping on the event loop while tracing is off (idempotent)."""
    langsmith.set_runtime_overrides(aio_to_thread=inline_unless_tracing)
