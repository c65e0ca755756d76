"""The escape hatch (DESIGN §7): a gate this conservative is sometimes wrong, and the natural
repair — "@lyra, this one" — must not make the person repeat themselves. When a person mentions a
bot that observed their messages just before, those messages join the run the mention starts as
trigger context (they are queued for the bot with the mention, so they coalesce into one run and
show as triggers in ``/runs/{id}/context``).
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.store.models import Disposition, Message

LOOK_BACK = 10  # the thread's latest messages whose dispositions for the bot are searched

# A bot taking part in a thread gets a disposition for every message posted there (invariant 13),
# so its latest dispositions in the thread are those on the thread's latest messages: found by
# message (``uq_dispositions_message_bot``), never by scanning the thread, and bounded even for a
# bot that has none there yet.
_LATEST = (
    select(Message.id, Message.sender_id)
    .where(Message.thread_id == bindparam("thread_id"), Message.id != bindparam("message_id"))
    .order_by(Message.id.desc())
    .limit(LOOK_BACK)
    .subquery()
)
_RECENT = (
    select(Disposition.message_id, Disposition.disposition, Disposition.pending, _LATEST.c.sender_id)
    .select_from(_LATEST)
    .join(
        Disposition, and_(Disposition.message_id == _LATEST.c.id, Disposition.bot_id == bindparam("bot_id"))
    )
    .order_by(_LATEST.c.id.desc())
)


async def observed_before(
    session: AsyncSession, thread_id: str, bot_id: str, sender_id: str, message_id: str
) -> list[str]:
    """The sender's messages the bot observed since it last engaged or spoke, oldest first."""
    params = {"thread_id": thread_id, "bot_id": bot_id, "message_id": message_id}
    folded: list[str] = []
    for earlier, disposition, pending, author in await session.execute(_RECENT, params):
        if disposition != "observe":
            break  # the bot engaged (or spoke) here: what came before was handled then
        if author == sender_id and not pending:
            folded.append(earlier)
    folded.reverse()
    return folded
