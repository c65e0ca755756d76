"""Drafts (DESIGN §9, boop's draft-before-send): a bot stages an outgoing message, a person sends it.

``save_draft`` writes a pending draft and nothing else: the bot never sends alone. A person
approves it (optionally edited), which posts it as the bot to its target — a thread, and an actor
there when one is named (an external actor's webhook then carries it out) — or rejects it, which
posts a notice with the reason in the thread the draft came from: a system message wakes nobody
(invariant 9), and the bot reads it there in its next run. A decision is taken once: the status
moves from ``pending`` by a conditional update, so a second decision (or a concurrent one) is 409.
"""

from __future__ import annotations

from typing import NotRequired

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.errors import Conflict, Forbidden, InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.runtime import notices
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.scope import member_threads
from openbot.runtime.views import iso
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, Draft, Thread

STATUSES = ("pending", "sent", "rejected")
TITLE_MAX = 200
CONTENT_MAX = 200_000


class DraftTargetView(TypedDict):
    thread_id: NotRequired[str]
    actor: NotRequired[str]


class DraftView(TypedDict):
    id: str
    bot: str
    thread_id: str
    run_id: str | None
    title: str
    content: str
    target: DraftTargetView
    status: str
    created_at: str | None
    decided_at: str | None
    decided_by: str | None
    reason: str | None  # extension: why it was rejected
    message_id: str | None  # extension: the message approving it posted


_TARGET = aliased(Actor)
_DECIDER = aliased(Actor)
_VIEW = (
    select(Draft, Actor.handle, _TARGET.handle, _DECIDER.handle)
    .join(Actor, Actor.id == Draft.bot_id)
    .outerjoin(_TARGET, _TARGET.id == Draft.target_actor_id)
    .outerjoin(_DECIDER, _DECIDER.id == Draft.decided_by_id)
)


def draft_view(draft: Draft, bot: str, target_actor: str | None, decided_by: str | None) -> DraftView:
    target: DraftTargetView = {}
    if draft.target_thread_id:
        target["thread_id"] = draft.target_thread_id
    if target_actor:
        target["actor"] = target_actor
    return {
        "id": draft.id,
        "bot": bot,
        "thread_id": draft.thread_id,
        "run_id": draft.run_id,
        "title": draft.title,
        "content": draft.content,
        "target": target,
        "status": draft.status,
        "created_at": iso(draft.created_at),
        "decided_at": iso(draft.decided_at),
        "decided_by": decided_by,
        "reason": draft.reason,
        "message_id": draft.message_id,
    }


async def view_of(session: AsyncSession, draft_id: str, *, member: str | None = None) -> DraftView:
    """The draft; 404 when there is none (or, with ``member``, none in that actor's threads)."""
    stmt = _VIEW.where(Draft.id == draft_id)
    if member is not None:
        stmt = stmt.where(Draft.thread_id.in_(member_threads(member)))
    row = (await session.execute(stmt)).first()
    if row is None:
        raise NotFound(f"draft {draft_id} not found", {"draft_id": draft_id})
    return draft_view(*row)


async def list_drafts(
    session: AsyncSession,
    *,
    status: str | None,
    bot_id: str | None,
    limit: int,
    member: str | None = None,
) -> list[DraftView]:
    """Drafts oldest first; with ``member``, only those saved in that actor's threads."""
    stmt = _VIEW
    if member is not None:
        stmt = stmt.where(Draft.thread_id.in_(member_threads(member)))
    if status is not None:
        stmt = stmt.where(Draft.status == status)
    if bot_id is not None:
        stmt = stmt.where(Draft.bot_id == bot_id)
    rows = (await session.execute(stmt.order_by(Draft.id.desc()).limit(limit))).all()
    return [draft_view(*row) for row in reversed(rows)]


async def save(
    session: AsyncSession,
    bot: Actor,
    *,
    thread_id: str,
    run_id: str | None,
    title: str,
    content: str,
    target_thread_id: str | None,
    target_actor: str | None,
) -> Draft:
    """Stage a draft; InvalidArgument says what is wrong with it (the tool shows the model)."""
    title, content = title.strip(), content.strip()
    if not title or len(title) > TITLE_MAX:
        raise InvalidArgument(f"a draft needs a title of 1 to {TITLE_MAX} characters", {"field": "title"})
    if not content or len(content) > CONTENT_MAX:
        raise InvalidArgument(f"a draft needs content of 1 to {CONTENT_MAX} characters", {"field": "content"})
    if target_thread_id is not None and await session.get(Thread, target_thread_id) is None:
        raise InvalidArgument(f"no thread {target_thread_id}", {"field": "target.thread_id"})
    actor_id = None
    if target_actor is not None:
        handle = target_actor.removeprefix("@")
        actor = await session.scalar(select(Actor).where(Actor.handle == handle, Actor.deleted.is_(False)))
        if actor is None or actor.id == bot.id:
            raise InvalidArgument(f"@{handle} is not an actor a draft can go to", {"field": "target.actor"})
        actor_id = actor.id
    draft = Draft(
        id=new_id("dft"),
        bot_id=bot.id,
        thread_id=thread_id,
        run_id=run_id,
        title=title,
        content=content,
        target_thread_id=target_thread_id,
        target_actor_id=actor_id,
        status="pending",
        created_at=now(session),
    )
    session.add(draft)
    await session.flush()
    view = await view_of(session, draft.id)
    append_event(session, "draft.updated", dict(view), thread_id)
    log_activity(
        session,
        "draft.saved",
        f"@{bot.handle} saved the draft {title!r} for a person to send",
        thread_id=thread_id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run_id,
        detail={"draft_id": draft.id},
    )
    return draft


async def _decide(session: AsyncSession, draft_id: str, decider: Actor, status: str) -> Draft:
    """Move a pending draft to ``status`` once; 404 when there is none, 409 when decided already."""
    if decider.kind != "human":
        raise Forbidden("only a person sends or rejects a draft", {"actor": decider.handle})
    # Its threads first (PostgreSQL), in id order, as a thread's deletion takes the thread before
    # the drafts it cascades to: a decision racing the deletion waits for it (then 404) instead of
    # deadlocking with it.
    found = (
        await session.execute(select(Draft.thread_id, Draft.target_thread_id).where(Draft.id == draft_id))
    ).first()
    if found is not None:
        threads = sorted({t for t in found if t})
        await session.execute(
            select(Thread.id)
            .where(Thread.id.in_(threads))
            .order_by(Thread.id)
            .with_for_update(key_share=True)
        )
    result = await session.execute(
        update(Draft)
        .where(Draft.id == draft_id, Draft.status == "pending")
        .values(status=status, decided_by_id=decider.id, decided_at=now(session))
        .execution_options(synchronize_session=False)
    )
    draft = await session.get(Draft, draft_id, populate_existing=True)
    if draft is None:
        raise NotFound(f"draft {draft_id} not found", {"draft_id": draft_id})
    if not getattr(result, "rowcount", 0):
        raise Conflict(f"draft {draft_id} is {draft.status}, not pending", {"status": draft.status})
    return draft


async def approve(
    session: AsyncSession, delivery: Delivery, draft_id: str, decider: Actor, content: str | None
) -> Draft:
    """Send the draft (with ``content`` instead, when given) as its bot, to its target."""
    draft = await _decide(session, draft_id, decider, "sent")
    if content is not None:
        if not content.strip() or len(content) > CONTENT_MAX:
            raise InvalidArgument(f"content must be 1 to {CONTENT_MAX} characters", {"field": "content"})
        draft.content = content
    bot = await session.get(Actor, draft.bot_id)
    thread = await session.get(Thread, draft.target_thread_id or draft.thread_id)
    if bot is None or bot.deleted:
        raise Conflict("the draft's bot was deleted; it cannot be sent", {"draft_id": draft_id})
    if thread is None:
        raise Conflict("the draft's target thread was deleted", {"draft_id": draft_id})
    target = await session.get(Actor, draft.target_actor_id) if draft.target_actor_id else None
    posted = await delivery.post(
        session,
        thread,
        draft.content,
        sender=bot,
        to=[target.handle] if target else [],
        run_id=draft.run_id,
        metadata={"kind": "draft", "draft_id": draft.id, "approved_by": decider.handle},
    )
    draft.message_id = posted.message.id
    summary = f"@{decider.handle} sent @{bot.handle}'s draft {draft.title!r}"
    await _decided(session, draft, bot, decider, summary)
    return draft


async def reject(
    session: AsyncSession, delivery: Delivery, draft_id: str, decider: Actor, reason: str | None
) -> Draft:
    """Reject the draft; a notice in its thread tells the bot why (it reads it in its next run)."""
    draft = await _decide(session, draft_id, decider, "rejected")
    draft.reason = (reason or "").strip() or None
    bot = await session.get(Actor, draft.bot_id)
    thread = await session.get(Thread, draft.thread_id)
    handle = bot.handle if bot else "?"
    text = f"@{decider.handle} rejected @{handle}'s draft {draft.title!r}" + (
        f": {draft.reason}" if draft.reason else " (no reason given)."
    )
    if thread is not None:
        metadata = {"kind": "draft_rejected", "draft_id": draft.id, "bot": handle, "reason": draft.reason}
        await delivery.post_notice(session, thread, notices.Notice(text, metadata))
    if bot is not None:
        await _decided(session, draft, bot, decider, text)
    return draft


async def _decided(session: AsyncSession, draft: Draft, bot: Actor, decider: Actor, summary: str) -> None:
    await session.flush()
    append_event(session, "draft.updated", dict(await view_of(session, draft.id)), draft.thread_id)
    log_activity(
        session,
        f"draft.{draft.status}",
        summary,
        thread_id=draft.thread_id,
        actor_id=decider.id,
        actor_handle=decider.handle,
        run_id=draft.run_id,
        detail={"draft_id": draft.id, "bot": bot.handle},
    )
