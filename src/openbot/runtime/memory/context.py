"""What a run's first model call saw (``GET /runs/{id}/context``): "why did the bot say that?"

The runner takes the snapshot when the run is prepared (fresh runs only: a resumed run continues
the conversation its first call began) and the run's finish transaction writes it, together with
the access bump of the memories it injected (one statement), so recording costs no transaction
of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict

from openbot.runtime.memory.store import touch
from openbot.store import inserts
from openbot.store.models import PreparedContext


class InjectedView(TypedDict):
    id: str
    content: str
    score: float


class ContextMessage(TypedDict):
    role: str
    content: str


class ContextView(TypedDict):
    run_id: str
    system: str
    messages: list[ContextMessage]
    memories: list[InjectedView]
    scoped: bool
    omitted: int


def snapshot(
    run_id: str,
    *,
    system: str,
    messages: list[BaseMessage],
    memories: list[InjectedView],
    scoped: bool,
    omitted: int,
    at: datetime,
) -> PreparedContext:
    return PreparedContext(
        run_id=run_id,
        system=system,
        messages=[{"role": _role(m), "content": m.text} for m in messages],
        memories=list(memories),
        scoped=scoped,
        omitted=omitted,
        created_at=at,
    )


async def record(session: AsyncSession, context: PreparedContext) -> None:
    """Write the snapshot and count one use of each memory it injected."""
    await inserts.insert(session, context)
    await touch(session, [m["id"] for m in context.memories])


def context_view(context: PreparedContext) -> ContextView:
    return {
        "run_id": context.run_id,
        "system": context.system,
        "messages": [_message(m) for m in context.messages],
        "memories": [_injected(m) for m in context.memories],
        "scoped": context.scoped,
        "omitted": context.omitted,
    }


def _role(message: BaseMessage) -> str:
    if isinstance(message, AIMessage):
        return "assistant"
    return "tool" if isinstance(message, ToolMessage) else "user"


def _message(raw: Any) -> ContextMessage:
    return {"role": str(raw["role"]), "content": str(raw["content"])}


def _injected(raw: Any) -> InjectedView:
    return {"id": str(raw["id"]), "content": str(raw["content"]), "score": float(raw["score"])}
