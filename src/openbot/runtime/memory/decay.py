"""Decay, applied: archive and prune a bot's fading memories now (DESIGN §8).

``core.decay`` scores every active memory from its importance, its tier's half-life, the time
since it was last used and how often it was used; this module reads what the score needs (columns
only, so a bot with ten thousand memories loads no contents), loads the few memories the plan
touches, and archives or prunes them through ``memory.store``, which writes ``memory.archived`` /
``memory.pruned`` activity with the score that decided it. One transaction per bot.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.decay import ARCHIVE_BELOW, PRUNE_BELOW, Fading, plan_decay
from openbot.runtime.memory import store
from openbot.store.db import now
from openbot.store.models import Memory

_FADING = select(
    Memory.id, Memory.tier, Memory.importance, Memory.access_count, Memory.last_accessed_at, Memory.created_at
).where(Memory.lifecycle == "active", Memory.tier != "permanent")


class MaintainView(TypedDict):
    archived: list[str]
    pruned: list[str]


async def maintain(session: AsyncSession, bot: store.BotRef) -> MaintainView:
    """Archive the bot's active memories scoring below 0.15 and delete those below 0.05."""
    rows = await session.execute(_FADING.where(Memory.bot_id == bot.id))
    plan = plan_decay((Fading(*row) for row in rows), now(session))
    touched = [*plan.archive, *plan.prune]
    if not touched:
        return {"archived": [], "pruned": []}
    # Locked in id order and read again (PostgreSQL): a memory that a racing pass, edit or deletion
    # archived or removed meanwhile is no longer active and is left alone (reported by that one).
    loaded = {
        m.id: m
        for m in await session.scalars(
            select(Memory)
            .where(Memory.id.in_(touched), Memory.lifecycle == "active")
            .order_by(Memory.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    }
    archived = [m for m in plan.archive if m in loaded]
    pruned = [m for m in plan.prune if m in loaded]
    origin = store.Origin(source="decay")
    for memory_id in archived:
        reason = f"decayed: score {plan.scores[memory_id]:.3f} < {ARCHIVE_BELOW}"
        await store.archive(session, bot, loaded[memory_id], origin=origin, reason=reason)
    for memory_id in pruned:
        reason = f"decayed: score {plan.scores[memory_id]:.3f} < {PRUNE_BELOW}"
        await store.delete(
            session, bot, loaded[memory_id], origin=origin, reason=reason, event="memory.pruned"
        )
    return {"archived": archived, "pruned": pruned}
