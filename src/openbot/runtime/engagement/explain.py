"""Explanations: who saw a message, and one answer to "why didn't @x answer this?" (invariant 13).

``why`` reads, in order, what happened to the message for that bot: a run it triggered (answered,
running, queued, waiting for a person, failed, cancelled), a disposal (admitted, then dropped), mail
still queued, the bot being disabled, and finally the disposition written when the message was
posted (observed, ignored, held, hop-limited) — or that the bot was not in the thread at all.
"""

from __future__ import annotations

from typing import NotRequired

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.errors import NotFound
from openbot.core.scheduling import ItemKind
from openbot.core.states import HoldStatus, ItemStatus
from openbot.runtime.governor.disposals import DisposalView, Reason, disposal_of, disposal_view
from openbot.runtime.views import RunView, iso, run_view
from openbot.store.models import Actor, Disposition, HeldHandoff, InboxItem, Message, Run, ThreadParticipant


class DispositionView(TypedDict):
    bot: str
    disposition: str
    tier: int
    signal: str
    reason: str
    pending: bool  # tier 2's model call is still owed (the bot observes until it answers)
    created_at: str | None


class WhyView(TypedDict):
    answer: str
    summary: str
    disposition: NotRequired[DispositionView]
    run: NotRequired[RunView]
    disposal: NotRequired[DisposalView]
    reply_message_id: NotRequired[str]


def disposition_view(row: Disposition, handle: str) -> DispositionView:
    return {
        "bot": handle,
        "disposition": row.disposition,
        "tier": row.tier,
        "signal": row.signal,
        "reason": row.reason,
        "pending": row.pending,
        "created_at": iso(row.created_at),
    }


async def dispositions(session: AsyncSession, message_id: str) -> list[DispositionView]:
    """One per bot that saw the message, in the order they were written."""
    await _message(session, message_id)
    rows = await session.execute(
        select(Disposition, Actor.handle)
        .join(Actor, Actor.id == Disposition.bot_id)
        .where(Disposition.message_id == message_id)
        .order_by(Disposition.id)
    )
    return [disposition_view(row, handle) for row, handle in rows]


async def _message(session: AsyncSession, message_id: str) -> Message:
    message = await session.get(Message, message_id)
    if message is None:
        raise NotFound(f"message {message_id} not found", {"message_id": message_id})
    return message


_RUN_ANSWERS = {
    "completed": ("answered", "@{bot} answered it"),
    "running": ("running", "@{bot} is answering it now"),
    "queued": ("queued", "@{bot} has a run for it waiting to start"),
    "waiting_human": ("waiting_human", "@{bot} is waiting for a person to answer its question"),
    "failed": ("failed", "@{bot}'s run for it failed"),
    "cancelled": ("cancelled", "@{bot}'s run for it was cancelled"),
}
_DISPOSITION_ANSWERS = {
    "held": (
        "held",
        "@{bot} was handed this, but the hand-off is held until the sender's queued mail is handled",
    ),
    "hop_limit": (
        "hop_limited",
        "the bot-to-bot hop limit was reached, so the hand-off to @{bot} was dropped",
    ),
}


async def why(session: AsyncSession, message_id: str, handle: str) -> WhyView:
    message = await _message(session, message_id)
    bot = await session.scalar(select(Actor).where(Actor.handle == handle, Actor.kind == "bot"))
    if bot is None:
        raise NotFound(f"no bot @{handle}", {"handle": handle})
    row = await session.scalar(
        select(Disposition).where(Disposition.message_id == message_id, Disposition.bot_id == bot.id)
    )
    out = await _from_run(session, message, bot)
    if out is None:
        out = await _from_mail(session, message, bot)
    if out is None:
        out = await _from_disposition(session, message, bot, row)
    if row is not None:
        out["disposition"] = disposition_view(row, handle)
    return out


async def _from_run(session: AsyncSession, message: Message, bot: Actor) -> WhyView | None:
    runs = await session.scalars(
        select(Run).where(Run.bot_id == bot.id, Run.thread_id == message.thread_id).order_by(Run.id.desc())
    )
    run = next((r for r in runs if message.id in (r.trigger_message_ids or [])), None)
    if run is None:
        return None
    answer, summary = _RUN_ANSWERS[run.status]
    out = WhyView(answer=answer, summary=summary.format(bot=bot.handle), run=run_view(run, bot.handle))
    if run.status == "completed":
        reply = await session.scalar(
            select(Message.id)
            .where(Message.run_id == run.id, Message.sender_id == bot.id)
            .order_by(Message.id)
        )
        if reply is not None:
            out["reply_message_id"] = reply
        else:
            out["summary"] = f"@{bot.handle} handled it without posting a reply"
    if run.status == "failed" and run.error:
        out["summary"] += f": {run.error.get('message', run.error.get('code', ''))}"
        # Its last attempt: the message was given up on rather than queued again.
        dropped = await disposal_of(session, bot.id, message.thread_id, message.id)
        if dropped is not None and dropped.reason == Reason.ATTEMPTS_EXHAUSTED and dropped.run_id == run.id:
            out["answer"] = "disposed"
            out["summary"] += f"; it will not be answered ({dropped.reason})"
            out["disposal"] = disposal_view(dropped, bot.handle)
    return out


async def _from_mail(session: AsyncSession, message: Message, bot: Actor) -> WhyView | None:
    dropped = await disposal_of(session, bot.id, message.thread_id, message.id)
    if dropped is not None:
        view = disposal_view(dropped, bot.handle)
        return WhyView(
            answer="disposed",
            summary=f"@{bot.handle} was asked, but the trigger was dropped ({dropped.reason})",
            disposal=view,
        )
    status = await session.scalar(
        select(InboxItem.status).where(
            InboxItem.actor_id == bot.id,
            InboxItem.message_id == message.id,
            InboxItem.kind == ItemKind.MESSAGE,
            InboxItem.status.in_((ItemStatus.QUEUED, ItemStatus.PROCESSING)),
        )
    )
    if status == ItemStatus.QUEUED and not bot.enabled:  # its mail waits for it to be enabled
        return WhyView(answer="disabled", summary=f"@{bot.handle} is disabled: this waits in its mailbox")
    if status is not None:
        return WhyView(answer="queued", summary=f"@{bot.handle} has it in its mailbox and will get to it")
    if not bot.enabled:
        return WhyView(answer="disabled", summary=f"@{bot.handle} is disabled")
    return None


async def _from_disposition(
    session: AsyncSession, message: Message, bot: Actor, row: Disposition | None
) -> WhyView:
    if row is None:
        member = await session.scalar(
            select(ThreadParticipant.actor_id).where(
                ThreadParticipant.thread_id == message.thread_id, ThreadParticipant.actor_id == bot.id
            )
        )
        if member is None:
            return WhyView(answer="not_in_thread", summary=f"@{bot.handle} is not in this thread")
        return WhyView(answer="observed", summary=f"@{bot.handle} joined the thread after this message")
    if row.signal == "held" and await _superseded(session, message, bot):
        return WhyView(
            answer="held",
            summary=f"@{bot.handle} was handed this, but the hand-off was held and then superseded"
            " by a later hand-off from the same sender",
        )
    if row.signal in _DISPOSITION_ANSWERS:
        answer, summary = _DISPOSITION_ANSWERS[row.signal]
        return WhyView(answer=answer, summary=summary.format(bot=bot.handle))
    if row.disposition == "ignore":
        return WhyView(answer="ignored", summary=f"@{bot.handle} ignored it: {row.reason}")
    tier = f"tier {row.tier}, {row.signal}"
    if row.pending:
        return WhyView(
            answer="observed",
            summary=f"@{bot.handle} is still deciding whether it was addressed ({row.reason})",
        )
    if row.disposition == "engage":
        return WhyView(answer="observed", summary=f"@{bot.handle} engaged ({tier}) but no run took it")
    return WhyView(
        answer="observed", summary=f"@{bot.handle} read it without answering: {row.reason} ({tier})"
    )


async def _superseded(session: AsyncSession, message: Message, bot: Actor) -> bool:
    status = await session.scalar(
        select(HeldHandoff.status).where(
            HeldHandoff.message_id == message.id, HeldHandoff.target_id == bot.id
        )
    )
    return status == HoldStatus.SUPERSEDED
