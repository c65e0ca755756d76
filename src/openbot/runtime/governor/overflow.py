"""The mailbox bound while a bot is busy: shed on the maintenance pass (DESIGN §7).

A claim applies the governor to the queue it reads, but a bot at its ceiling claims nothing until a
run ends, and its mailbox keeps growing meanwhile. So each maintenance pass asks one aggregate
question — which bots hold more queued items than their ``max_queued``? — and retires the overflow
of those (under the bot's lock, as a claim would), with disposals. The answer is almost always
none: then that one read is the whole cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from openbot.core.states import ItemStatus
from openbot.runtime.governor.admission import read_queue, retire
from openbot.store.db import now
from openbot.store.models import Actor, BotProfile, InboxItem

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

# Asked bot by bot (ix_inbox_actor_status: a seek per bot and a count of its queued items), not by
# grouping every item ever queued: the table keeps every handled item.
_QUEUED = (
    select(func.count())
    .where(InboxItem.actor_id == BotProfile.actor_id, InboxItem.status == ItemStatus.QUEUED)
    .scalar_subquery()
)
OVER = select(BotProfile.actor_id).where(_QUEUED > BotProfile.max_queued)


async def shed_overflow(system: ActorSystem) -> list[str]:
    """Shed every over-full mailbox down to its bound; returns the bots whose mail was dropped."""
    async with system.db.read() as s:
        over = list(await s.scalars(OVER))
    shed: list[str] = []
    for bot_id in over:
        async with system.db.transaction() as s:
            await system.db.dialect.lock_bot(s, bot_id)
            bot = await s.get(Actor, bot_id)
            profile = await s.get(BotProfile, bot_id)
            if bot is None or profile is None:
                continue
            queued = await read_queue(s, bot_id)
            kept = await retire(s, bot, profile, queued, system.admission, now(s))
            if len(kept) < len(queued):
                shed.append(bot_id)
    return shed
