"""The memory tools of every bot with ``memory_enabled`` (DESIGN §8): write and search its memory.

Memories are the bot's own, across all its threads: they hold what stays true beyond this thread
(invariant 10). Bad input comes back as the tool's answer, so the model can correct itself.
"""

from __future__ import annotations

from typing import Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import tool

from openbot.core import memory as rules
from openbot.core.errors import InvalidArgument
from openbot.runtime.memory import embeddings, store
from openbot.runtime.memory.store import BotRef, Origin
from openbot.runtime.tools.context import RunContext, ToolEnv

MEMORY_TOOLS = ("manage_memory", "search_memory")

Segment = Literal["identity", "preference", "correction", "relationship", "project", "knowledge", "context"]
Tier = Literal["short", "long", "permanent"]


@tool
async def manage_memory(
    runtime: ToolRuntime[RunContext],
    action: Literal["create", "update", "delete"],
    content: str | None = None,
    memory_id: str | None = None,
    segment: Segment | None = None,
    tier: Tier | None = None,
    importance: float | None = None,
) -> str:
    """Create, update or delete one of your memories: durable facts true beyond this thread
    (who people are, preferences, corrections, project knowledge). Never store facts that only
    matter in this thread. create needs content; update and delete need memory_id (from
    search_memory). tier: short (fades in days), long (months), permanent (never fades)."""
    env = runtime.context.env
    try:
        return await _manage(env, action, content, memory_id, segment, tier, importance)
    except InvalidArgument as exc:
        return f"error: {exc.message}"


async def _manage(
    env: ToolEnv,
    action: str,
    content: str | None,
    memory_id: str | None,
    segment: str | None,
    tier: str | None,
    importance: float | None,
) -> str:
    bot = BotRef(env.bot_id, env.bot_handle)
    origin = Origin(source="tool", thread_id=env.thread_id, run_id=env.run_id)
    vectors = await embeddings.ahead(env.db, [content] if action in ("create", "update") else [])
    async with env.db.transaction() as s:
        embeddings.use(s, vectors)
        if action == "create":
            memory = await store.create(
                s,
                bot,
                content or "",
                segment=segment or rules.DEFAULT_SEGMENT,
                tier=tier or rules.DEFAULT_TIER,
                importance=rules.DEFAULT_IMPORTANCE if importance is None else importance,
                origin=origin,
            )
            return f"remembered {memory.id}"
        if not memory_id:
            raise InvalidArgument(f"{action} needs memory_id", {"field": "memory_id"})
        found = await store.get(s, bot.id, memory_id)
        if found is None:
            return f"error: you have no memory {memory_id}"
        if action == "delete":
            await store.delete(s, bot, found, origin=origin)
            return f"forgot {memory_id}"
        await store.update(
            s, bot, found, content=content, segment=segment, tier=tier, importance=importance, origin=origin
        )
        return f"updated {memory_id}"


@tool
async def search_memory(runtime: ToolRuntime[RunContext], query: str, limit: int = 8) -> str:
    """Search your memories (across all your threads) for a query; best matches first."""
    env = runtime.context.env
    vectors = await embeddings.ahead(env.db, queries=[query])
    async with env.db.transaction() as s:
        embeddings.use(s, vectors)
        found = await store.search(s, env.bot_id, query, limit=max(1, min(limit, 50)))
        await store.touch(s, [memory.id for memory, _score in found])
    if not found:
        return "No memory matches."
    return "\n".join(f"[{m.id}] ({m.segment}, {m.tier}, score {score:.2f}) {m.content}" for m, score in found)
