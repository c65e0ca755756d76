"""The built-in tools every bot has (DESIGN §9, the spine's subset).

Each call reads the run it serves from the injected ``ToolRuntime.context`` (a
:class:`~openbot.runtime.tools.context.RunContext`), so a tool only ever sees its own thread.
``ask_human`` interrupts the run; the others read or write through the store.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from langgraph.types import interrupt
from pydantic import BaseModel, Field
from sqlalchemy import Select, select

from openbot.core.memory import query_terms
from openbot.runtime.tools.context import RunContext
from openbot.store.db import now
from openbot.store.message_index import MessageIndex
from openbot.store.models import Actor, BotProfile, Message, TodoList


class Todo(BaseModel):
    content: str = Field(description="what to do")
    status: Literal["pending", "in_progress", "completed"] = "pending"


@tool
async def list_bots(runtime: ToolRuntime[RunContext]) -> str:
    """List the bots of the team with their handles and what they do."""
    env = runtime.context.env
    async with env.db.read() as s:
        rows = await s.execute(
            select(Actor.handle, Actor.name, BotProfile.description)
            .join(BotProfile, BotProfile.actor_id == Actor.id)
            .where(Actor.kind == "bot", Actor.enabled.is_(True), Actor.deleted.is_(False))
            .order_by(Actor.handle)
        )
        return "\n".join(f"@{h} ({n}): {d}" for h, n, d in rows) or "No bots."


@tool
def ask_human(question: str) -> str:
    """Ask the humans in this thread a question and wait for the answer. The run pauses."""
    answer = interrupt({"kind": "question", "question": question})
    return str(answer)


def _thread_messages(thread_id: str) -> Select[str, str | None, str]:
    """The thread's messages, oldest first: id, sender handle (None for the system), content."""
    return (
        select(Message.id, Actor.handle, Message.content)
        .outerjoin(Actor, Actor.id == Message.sender_id)
        .where(Message.thread_id == thread_id)
        .order_by(Message.id)
    )


@tool
async def read_history(runtime: ToolRuntime[RunContext], offset: int = 0, limit: int = 20) -> str:
    """Read this thread's messages in chronological order, `limit` at a time from `offset` (0 = first)."""
    env = runtime.context.env
    limit = max(1, min(limit, 100))
    async with env.db.read() as s:
        rows = (await s.execute(_thread_messages(env.thread_id).offset(max(0, offset)).limit(limit))).all()
    if not rows:
        return f"No messages at offset {offset}."
    lines = [f"#{offset + i} [{'@' + h if h else 'system'}]: {c}" for i, (_id, h, c) in enumerate(rows)]
    return "\n".join(lines) + f"\n(next offset: {offset + len(rows)})"


@tool
async def recall_messages(query: str, runtime: ToolRuntime[RunContext], limit: int = 8) -> str:
    """Search this thread's messages for `query` (lexical match) and return the best matches."""
    env = runtime.context.env
    index = env.db.dialect.message_index
    terms = query_terms(query)
    if not terms:
        return f"No message matches {query!r}."
    params = {"thread_id": env.thread_id, "query": index.query(terms), "limit": max(1, min(limit, 50))}
    async with env.db.read() as s:
        rows = (await s.execute(_search(index), params)).all()
    if not rows:
        return f"No message matches {query!r}."
    return "\n".join(f"#{r.position} [{'@' + r.handle if r.handle else 'system'}]: {r.content}" for r in rows)


_SEARCHES: dict[int, Any] = {}


def _search(index: MessageIndex) -> Any:
    """The index's search statement, built once per index."""
    stmt = _SEARCHES.get(id(index))
    if stmt is None:
        stmt = _SEARCHES[id(index)] = index.search()
    return stmt


@tool
async def todo_write(todos: list[Todo], runtime: ToolRuntime[RunContext]) -> str:
    """Replace your todo list for this thread. It is shown to you at the start of every run here."""
    env = runtime.context.env
    items: list[dict[str, Any]] = [t.model_dump() if isinstance(t, Todo) else dict(t) for t in todos]
    async with env.db.transaction() as s:
        row = await s.get(TodoList, (env.thread_id, env.bot_id))
        if row is None:
            s.add(TodoList(thread_id=env.thread_id, bot_id=env.bot_id, todos=items, updated_at=now(s)))
        else:
            row.todos = items
            row.updated_at = now(s)
    done = sum(1 for t in items if t.get("status") == "completed")
    return f"Saved {len(items)} todo(s), {done} completed."
