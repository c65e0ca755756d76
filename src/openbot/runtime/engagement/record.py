"""Recording what each bot decided about a post, in the post's transaction (DESIGN §7, invariant 13).

One multi-row INSERT per post, whatever the number of bots (``Dialect.append``). A task thread
needs no read at all: the routing plan already knows everything. A channel reads two more things,
only there: the bots' aliases, and who wrote the thread's previous message (the small-group reply
signal). A person's mention of a bot that has just observed their earlier messages folds those
messages into the run it starts (the escape hatch, ``hatch.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.engagement import channel_decisions, channel_message, seen_by, task_decisions
from openbot.core.gate import Decision, GateBot, Signal, Verdict, matcher, shape_of
from openbot.core.routing import ActorKind, RouteInput, RoutePlan
from openbot.runtime.delivery.recipients import Recipients
from openbot.runtime.engagement.hatch import observed_before
from openbot.store import inserts
from openbot.store.db import Database, after_commit, database_of, now
from openbot.store.models import Actor, BotProfile, Disposition, Message, Thread

_DISPOSITIONS = inserts.table_of(Disposition)
SMALL_GROUP_SIZE = 4  # the runtime's Settings.small_group_size overrides it (Delivery)

_ALIASES = select(BotProfile.actor_id, BotProfile.aliases).where(
    BotProfile.actor_id.in_(bindparam("ids", expanding=True))
)
_LAST_SENDER = (
    select(Message.sender_id)
    .where(
        Message.thread_id == bindparam("thread_id"),
        Message.id != bindparam("message_id"),
        Message.sender_id.is_not(None),
    )
    .order_by(Message.id.desc())
    .limit(1)
)


@dataclass
class Engagement:
    """What the post's dispositions add to its routing: more bots to wake, and earlier messages
    to fold into the runs of bots a person has just addressed."""

    decisions: dict[str, Decision]
    wake: list[str] = field(default_factory=list)  # engaged by the gate beyond the routing plan
    folded: dict[str, list[str]] = field(default_factory=dict)  # bot handle → earlier message ids


async def record(
    session: AsyncSession,
    thread: Thread,
    data: RouteInput,
    plan: RoutePlan,
    found: Recipients,
    message: Message,
    sender: Actor | None,
    *,
    small_group_size: int = SMALL_GROUP_SIZE,
) -> Engagement:
    bots = seen_by(data, plan)
    if not bots:
        return Engagement({})
    if thread.kind == "channel":
        outcome = await _channel(session, thread, data, plan, found, message, sender, bots, small_group_size)
    else:
        outcome = Engagement(task_decisions(data, plan, bots))
    await write(session, message, outcome.decisions, found.actors)
    return outcome


async def write(
    session: AsyncSession, message: Message, decisions: Mapping[str, Decision], actors: Mapping[str, Actor]
) -> None:
    stamp = now(session)
    rows = [
        {
            "message_id": message.id,
            "thread_id": message.thread_id,
            "bot_id": actors[handle].id,
            "disposition": str(d.verdict),
            "tier": d.tier,
            "signal": str(d.signal),
            "reason": d.reason,
            "pending": d.candidate,
            "created_at": stamp,
        }
        for handle, d in decisions.items()
    ]
    await inserts.insert_rows(session, _DISPOSITIONS, rows)
    if any(d.candidate for d in decisions.values()):
        after_commit(session, _waker(database_of(session)))


def _waker(database: Database) -> Callable[[], None]:
    def wake() -> None:
        for listener in database.gate_listeners:
            listener()

    return wake


async def _channel(
    session: AsyncSession,
    thread: Thread,
    data: RouteInput,
    plan: RoutePlan,
    found: Recipients,
    message: Message,
    sender: Actor | None,
    bots: list[str],
    small_group_size: int,
) -> Engagement:
    members = dict.fromkeys((*data.participants, *plan.new_participants))
    if data.sender is not None:
        members.setdefault(data.sender.handle, None)
    kinds = [data.actors[h].kind for h in members if h in data.actors]
    robots = sum(1 for k in kinds if k is ActorKind.BOT)
    shape = shape_of(len(kinds) - robots, robots, small_group_size)
    ids = {found.actors[h].id: h for h in bots}
    aliases = {row[0]: row[1] for row in await session.execute(_ALIASES, {"ids": list(ids)})}
    last = await session.scalar(_LAST_SENDER, {"thread_id": thread.id, "message_id": message.id})
    gate_bots = {
        h: GateBot(
            h,
            matcher((found.actors[h].name, h, *aliases.get(found.actors[h].id, ()))),
            ids.get(last or "") == h,
        )
        for h in bots
    }
    facts = channel_message(data, plan, shape, thread.require_mention, message.content)
    decisions = channel_decisions(data, facts, gate_bots)
    outcome = Engagement(decisions)
    outcome.wake = [
        h
        for h, d in decisions.items()
        if d.verdict is Verdict.ENGAGE and h not in plan.wake and _actionable(data, h)
    ]
    if sender is not None and sender.kind != ActorKind.BOT:
        for handle, decision in decisions.items():
            if decision.verdict is Verdict.ENGAGE and decision.signal is Signal.MENTION:
                earlier = await observed_before(
                    session, thread.id, found.actors[handle].id, sender.id, message.id
                )
                if earlier:
                    outcome.folded[handle] = earlier
    return outcome


def _actionable(data: RouteInput, handle: str) -> bool:
    actor = data.actors.get(handle)
    return actor is not None and actor.enabled and actor.kind is ActorKind.BOT
