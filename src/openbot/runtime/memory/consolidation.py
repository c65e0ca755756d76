"""Consolidation, run: proposer → adversary → judge over a bot's clusters of similar memories
(DESIGN §8).

1. Read the bot's active memories and cluster them (``core.consolidation.clusters``). No cluster:
   nothing to do, no model call.
2. Three calls with the bot's own model (``memory.jobs``): the proposer is shown the clusters and
   proposes merge / supersede / prune; the adversary is shown the usable proposals and objects; the
   judge is shown both and gives a verdict per proposal. The scripted model proposes what
   ``model_settings.consolidation`` says, objects to nothing and accepts everything.
3. ``core.consolidation.decide`` turns that into decisions, each with its reason, and one
   transaction carries them out through ``memory.store``: a merge creates the merged memory
   (``supersedes`` the newest of the old ones; all of them archived), a supersede keeps the newest
   (``supersedes`` the next newest) and archives the others, a prune deletes. A memory that changed
   since it was read (archived, deleted) turns its decision into ``keep``. One
   ``memory.consolidated`` activity row lists every decision.
"""

from __future__ import annotations

from typing import Any, NotRequired

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.consolidation import (
    Decision,
    Proposal,
    Remembered,
    clusters,
    decide,
    objections_from,
    proposals_from,
    verdicts_from,
)
from openbot.runtime.memory import jobs, store
from openbot.store.journal import log_activity
from openbot.store.models import BotProfile, Memory

_TIERS = ("short", "long", "permanent")  # weakest first: a merge keeps the strongest


class DecisionView(TypedDict):
    action: str
    memory_ids: list[str]
    result_id: NotRequired[str]
    reason: str


async def active(session: AsyncSession, bot_id: str) -> list[Remembered]:
    """The bot's active bot-level memories, most recently updated first."""
    rows = await session.execute(
        select(Memory.id, Memory.content, Memory.created_at)
        .where(Memory.bot_id == bot_id, Memory.lifecycle == "active", Memory.thread_id.is_(None))
        .order_by(Memory.updated_at.desc(), Memory.id.desc())
    )
    return [Remembered(*row) for row in rows]


async def deliberate(bot: store.BotRef, profile: BotProfile, memories: list[Remembered]) -> list[Decision]:
    """Cluster, then ask the proposer, the adversary and the judge (no transaction is held)."""
    groups = clusters(memories)
    if not groups:
        return []
    in_clusters = {i for group in groups for i in group}
    shown = [m for m in memories if m.id in in_clusters]
    by_id = {m.id: m for m in shown}
    settings = dict(profile.model_settings or {})

    async def ask(job: str, payload: dict[str, Any]) -> Any:
        model = jobs.job_model(profile.model, settings, handle=bot.handle, job=job)
        return await jobs.ask(model, job, bot.handle, payload)

    view = [[_shown(by_id[i]) for i in group] for group in groups]
    proposals = proposals_from(await ask("proposer", {"clusters": view}), shown)
    usable = [
        {"proposal": index, "action": p.action, "memory_ids": list(p.memory_ids), "content": p.content}
        for index, p in enumerate(proposals)
        if isinstance(p, Proposal)
    ]
    objections: dict[int, str] = {}
    verdicts: dict[int, tuple[bool, str]] = {}
    if usable:
        objections = objections_from(await ask("adversary", {"proposals": usable, "clusters": view}))
        shown_objections = [{"proposal": i, "reason": r} for i, r in objections.items()]
        verdicts = verdicts_from(await ask("judge", {"proposals": usable, "objections": shown_objections}))
    created = {m.id: m.created_at for m in shown}
    return decide(groups, proposals, objections, verdicts, created)


async def carry_out(
    session: AsyncSession, bot: store.BotRef, decisions: list[Decision]
) -> list[DecisionView]:
    """Apply the decisions in one transaction and log them; return them as the API shows them."""
    views: list[DecisionView] = []
    origin = store.Origin(source="consolidation")
    # Every memory a decision changes, locked at once in id order (PostgreSQL) and read fresh: a
    # consolidation, decay or edit racing this one has either finished (and is seen) or waits.
    touched = sorted({m for d in decisions if d.action != "keep" for m in d.memory_ids})
    locked = {
        m.id: m
        for m in await session.scalars(
            select(Memory)
            .where(Memory.id.in_(touched))
            .order_by(Memory.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    }
    for decision in decisions:
        view: DecisionView = {
            "action": decision.action,
            "memory_ids": list(decision.memory_ids),
            "reason": decision.reason,
        }
        if decision.action != "keep":
            found = [locked[m] for m in decision.memory_ids if m in locked]
            if len(found) != len(decision.memory_ids) or any(m.lifecycle != "active" for m in found):
                view = {**view, "action": "keep", "reason": "the memories changed meanwhile; nothing done"}
            else:
                result = await _apply(session, bot, decision, found, origin)
                if result is not None:
                    view["result_id"] = result
        views.append(view)
    if views:
        changed = sum(1 for v in views if v["action"] != "keep")
        log_activity(
            session,
            "memory.consolidated",
            f"@{bot.handle} consolidated memory: {changed} change(s), {len(views) - changed} kept",
            actor_id=bot.id,
            actor_handle=bot.handle,
            detail={"decisions": [dict(v) for v in views]},
        )
    return views


def _shown(memory: Remembered) -> dict[str, Any]:
    return {"id": memory.id, "content": memory.content, "created_at": memory.created_at.isoformat()}


async def _apply(
    session: AsyncSession, bot: store.BotRef, decision: Decision, found: list[Memory], origin: store.Origin
) -> str | None:
    newest_first = sorted(found, key=lambda m: (m.created_at, m.id), reverse=True)
    reason = f"consolidation ({decision.action}): {decision.reason}"
    if decision.action == "prune":
        for memory in found:
            await store.delete(session, bot, memory, origin=origin, reason=reason, event="memory.pruned")
        return None
    if decision.action == "merge":
        merged = await store.create(
            session,
            bot,
            decision.content or newest_first[0].content,
            segment=newest_first[0].segment,
            tier=max((m.tier for m in found), key=_TIERS.index),
            importance=max(m.importance for m in found),
            origin=origin,
            supersedes=newest_first[0].id,
            last_accessed_at=max(m.last_accessed_at for m in found),
            reason=reason,
        )
        merged.access_count = sum(m.access_count for m in found)
        await _archive(session, bot, found, origin, f"merged into {merged.id}")
        return merged.id
    keeper = next(m for m in found if m.id == decision.keeper)
    older = [m for m in newest_first if m.id != keeper.id]
    keeper.supersedes = older[0].id
    await store.update(session, bot, keeper, content=decision.content, origin=origin, reason=reason)
    await _archive(session, bot, older, origin, f"superseded by {keeper.id}")
    return keeper.id


async def _archive(
    session: AsyncSession, bot: store.BotRef, memories: list[Memory], origin: store.Origin, reason: str
) -> None:
    for memory in memories:
        await store.archive(session, bot, memory, origin=origin, reason=reason)
