"""Posting a message: one transaction that routes, records and fans out (DESIGN §5).

parse @mentions → resolve targets → insert the message (hop) → add participants → hop-limit check
→ held hand-offs → inbox items → journal and activity → (commit) → wake workers.
The caller owns the transaction; workers are woken only after it commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import InvalidArgument
from openbot.core.ids import new_id
from openbot.core.mentions import parse_mentions
from openbot.core.routing import ActorKind, ActorRef, RouteInput, plan_route
from openbot.store.db import THREADS_LOCKED, after_commit
from openbot.store.journal import append_event, log_activity, now
from openbot.store.models import Actor, HeldHandoff, InboxItem, Message, Thread, ThreadParticipant
from openbot.store.views import item_view, message_view

Wake = Callable[[Iterable[str]], None]
_FALLBACK_BOT: str = RouteInput.__dataclass_fields__["fallback_bot"].default  # type: ignore[assignment]


@dataclass
class PostResult:
    message: Message
    view: dict[str, Any]
    addressed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)


@dataclass
class Delivery:
    """What posting needs from its surroundings: the hop limit and a way to wake bots."""

    max_hops: int = 20
    wake: Wake = lambda _ids: None

    async def post(
        self,
        session: AsyncSession,
        thread: Thread,
        content: str,
        *,
        sender: Actor | None,
        to: Sequence[str] = (),
        hop: int = 0,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> PostResult:
        locked: set[str] = session.sync_session.info.setdefault(THREADS_LOCKED, set())
        if session.bind.dialect.name == "postgresql" and thread.id not in locked:
            # Posts to one thread serialise here: participants and the hop-limit flag are read
            # fresh under the lock (SQLite serialises every writer at BEGIN already).
            await session.flush()
            await session.refresh(thread, with_for_update={"key_share": True})
            locked.add(thread.id)
        is_bot = sender is not None and sender.kind == ActorKind.BOT
        mentions = tuple(parse_mentions(content))
        actors, participant_ids, mail = await load_route_actors(
            session, thread, (*to, *mentions, _FALLBACK_BOT), mail_of=sender.id if is_bot and sender else None
        )
        for handle in to:
            if handle not in actors:
                raise InvalidArgument(f"unknown handle @{handle} in 'to'", {"handle": handle})
        by_id = {a.id: a for a in actors.values()}
        participants = tuple(by_id[i].handle for i in participant_ids if i in by_id)
        default_bot = by_id[thread.default_bot_id].handle if thread.default_bot_id in by_id else None

        has_mail = False
        if is_bot and sender is not None:
            if mail is None:
                mail = await queued_mail(session, sender.id, thread.id)
            has_mail = mail > 0
        plan = plan_route(
            RouteInput(
                sender=_ref(sender) if sender else None,
                mentions=mentions,
                to=tuple(to),
                actors={h: _ref(a) for h, a in actors.items()},
                participants=participants,
                default_bot=default_bot,
                sender_has_queued_mail=has_mail,
                hop=hop,
                max_hops=self.max_hops,
                hop_limit_notified=thread.hop_limit_notified,
            )
        )

        stamp = now()
        meta = dict(metadata or {})
        if plan.held:
            meta["held_handoff"] = list(plan.held)
        if plan.hop_limited:
            meta["hop_limited"] = list(plan.hop_limited)
        message = Message(
            id=new_id("msg"),
            thread_id=thread.id,
            sender_id=sender.id if sender else None,
            content=content,
            mentions=list(plan.mentions),
            hop=hop,
            run_id=run_id,
            metadata_=meta,
            created_at=stamp,
        )
        session.add(message)
        joining = [actors[h].id for h in plan.new_participants]
        if sender is not None and sender.id not in participant_ids:
            joining.append(sender.id)  # whoever posts takes part, and so gets questions and replies
        for actor_id in joining:
            session.add(ThreadParticipant(thread_id=thread.id, actor_id=actor_id, joined_at=stamp))
        thread.last_message_at = stamp
        if plan.reset_hop_notice:
            thread.hop_limit_notified = False
        await session.flush()

        view = message_view(message, sender)
        await append_event(session, "message.created", view, thread.id)
        who = f"@{sender.handle}" if sender else "system"
        log_activity(
            session,
            "message.posted",
            f"{who} posted in {thread.title or thread.id}",
            thread_id=thread.id,
            actor_id=sender.id if sender else None,
            actor_handle=sender.handle if sender else None,
            run_id=run_id,
            message_id=message.id,
            detail={"mentions": list(plan.mentions), "hop": hop, "addressed": list(plan.wake)},
        )

        woken = [actors[h] for h in plan.wake]
        for bot in woken:
            await self._enqueue(session, bot, thread.id, message.id)
            if is_bot and sender is not None:
                await _supersede_holds(session, thread.id, sender.id, bot.id)
        for handle in plan.notify:
            await self._enqueue(session, actors[handle], thread.id, message.id)
        if plan.recorded_only:
            log_activity(
                session,
                "message.mentions_recorded",
                f"{who} mentioned {_handles(plan.recorded_only)} without waking them",
                thread_id=thread.id,
                message_id=message.id,
                detail={"handles": list(plan.recorded_only), "reason": _recorded_reason(sender)},
            )

        if plan.held and sender is not None:
            await self._hold(session, thread, sender, [actors[h] for h in plan.held], message)
        if plan.hop_limited:
            log_activity(
                session,
                "message.hop_limited",
                f"hop {hop} reached the limit of {self.max_hops}: {_handles(plan.hop_limited)} not woken",
                level="warning",
                thread_id=thread.id,
                message_id=message.id,
                detail={"hop": hop, "max_hops": self.max_hops, "dropped": list(plan.hop_limited)},
            )
        if plan.post_hop_notice:
            thread.hop_limit_notified = True
            await self.post(
                session,
                thread,
                f"Hop limit reached ({self.max_hops} bot-to-bot hand-offs since the last human message). "
                "Bots will not wake each other in this thread until a human posts.",
                sender=None,
                hop=hop,
                metadata={"kind": "hop_limit", "max_hops": self.max_hops},
            )

        bot_ids = [b.id for b in woken]
        if bot_ids:
            after_commit(session, lambda: self.wake(bot_ids))
        return PostResult(message, view, [b.handle for b in woken], list(plan.held))

    async def _enqueue(
        self, session: AsyncSession, actor: Actor, thread_id: str, message_id: str
    ) -> InboxItem:
        return await enqueue(session, actor, thread_id, kind="message", message_id=message_id)

    async def _hold(
        self, session: AsyncSession, thread: Thread, sender: Actor, targets: list[Actor], message: Message
    ) -> None:
        for target in targets:
            # Only the latest hold of a target by this sender in this thread counts.
            await session.execute(
                update(HeldHandoff)
                .where(
                    HeldHandoff.thread_id == thread.id,
                    HeldHandoff.sender_id == sender.id,
                    HeldHandoff.target_id == target.id,
                    HeldHandoff.status == "pending",
                )
                .values(status="superseded")
            )
            session.add(
                HeldHandoff(
                    id=new_id("hold"),
                    thread_id=thread.id,
                    sender_id=sender.id,
                    target_id=target.id,
                    message_id=message.id,
                    created_at=now(),
                )
            )
        names = _handles(t.handle for t in targets)
        log_activity(
            session,
            "message.handoff_held",
            f"@{sender.handle} still has mail in this thread: hand-off to {names} held",
            thread_id=thread.id,
            actor_id=sender.id,
            actor_handle=sender.handle,
            message_id=message.id,
            detail={"targets": [t.handle for t in targets]},
        )
        await self.post(
            session,
            thread,
            f"Hand-off from @{sender.handle} to {names} is held until @{sender.handle} has handled "
            "the messages still waiting for it in this thread; it will be delivered automatically.",
            sender=None,
            hop=message.hop,
            metadata={
                "kind": "handoff_held",
                "sender": sender.handle,
                "targets": [t.handle for t in targets],
                "message_id": message.id,
            },
        )


async def enqueue(
    session: AsyncSession,
    actor: Actor,
    thread_id: str,
    *,
    kind: str,
    message_id: str | None = None,
    run_id: str | None = None,
) -> InboxItem:
    stamp = now()
    item = InboxItem(
        id=new_id("item"),
        actor_id=actor.id,
        thread_id=thread_id,
        kind=kind,
        message_id=message_id,
        run_id=run_id,
        status="queued",
        attempts=0,
        created_at=stamp,
        updated_at=stamp,
    )
    session.add(item)
    await append_event(session, "inbox.updated", {"actor": actor.handle, "item": item_view(item)}, thread_id)
    return item


async def load_route_actors(
    session: AsyncSession, thread: Thread, handles: Iterable[str], *, mail_of: str | None = None
) -> tuple[dict[str, Actor], list[str], int | None]:
    """What routing a post needs, in one statement.

    Returns the live actors a plan can name (by handle: ``handles``, the thread's participants and
    default bot), the ids of every participant (deleted ones too) in joining order and, with
    ``mail_of``, that actor's ``queued_mail`` in the thread (None if no row came back to carry it).
    """
    tp = ThreadParticipant
    named = list(dict.fromkeys(handles))
    stmt = select(Actor, tp.actor_id)
    if mail_of is not None:
        stmt = stmt.add_columns(_queued_mail_count(mail_of, thread.id).scalar_subquery())
    rows = (
        await session.execute(
            stmt.outerjoin(tp, (tp.actor_id == Actor.id) & (tp.thread_id == thread.id))
            .where(
                or_(
                    tp.actor_id.is_not(None),
                    and_(
                        Actor.deleted.is_(False),
                        or_(Actor.handle.in_(named), Actor.id == thread.default_bot_id),
                    ),
                )
            )
            .order_by(tp.joined_at, tp.actor_id)
        )
    ).all()
    actors = {row[0].handle: row[0] for row in rows if not row[0].deleted}
    participant_ids = [row[0].id for row in rows if row[1] is not None]
    mail = int(rows[0][2] or 0) if rows and mail_of is not None else None
    return actors, participant_ids, mail


def _queued_mail_count(actor_id: str, thread_id: str) -> Select[tuple[int]]:
    return (
        select(func.count())
        .select_from(InboxItem)
        .where(
            InboxItem.actor_id == actor_id,
            InboxItem.thread_id == thread_id,
            InboxItem.kind == "message",
            InboxItem.status == "queued",
        )
    )


async def queued_mail(session: AsyncSession, actor_id: str, thread_id: str) -> int:
    count = await session.scalar(_queued_mail_count(actor_id, thread_id))
    return int(count or 0)


async def _supersede_holds(session: AsyncSession, thread_id: str, sender_id: str, target_id: str) -> None:
    await session.execute(
        update(HeldHandoff)
        .where(
            HeldHandoff.thread_id == thread_id,
            HeldHandoff.sender_id == sender_id,
            HeldHandoff.target_id == target_id,
            HeldHandoff.status == "pending",
        )
        .values(status="superseded")
    )


async def release_holds(session: AsyncSession, bot: Actor, thread_id: str) -> list[str]:
    """Deliver the sender's pending holds in a thread once its queue there is empty.

    Returns the ids of the bots woken. Called after every run of ``bot`` settles and at recovery.
    """
    holds = list(
        await session.scalars(
            select(HeldHandoff).where(
                HeldHandoff.thread_id == thread_id,
                HeldHandoff.sender_id == bot.id,
                HeldHandoff.status == "pending",
            )
        )
    )
    if not holds or await queued_mail(session, bot.id, thread_id):
        return []
    woken: list[str] = []
    for hold in holds:
        target = await session.get(Actor, hold.target_id)
        hold.status = "released"
        if target is None or target.deleted or not target.enabled:
            continue
        item = await enqueue(session, target, thread_id, kind="message", message_id=hold.message_id)
        woken.append(target.id)
        log_activity(
            session,
            "inbox.hold_released",
            f"held hand-off from @{bot.handle} delivered to @{target.handle}",
            thread_id=thread_id,
            actor_id=target.id,
            actor_handle=target.handle,
            item_id=item.id,
            message_id=hold.message_id,
        )
    return woken


def _ref(actor: Actor) -> ActorRef:
    return ActorRef(handle=actor.handle, kind=ActorKind(actor.kind), enabled=actor.enabled)


def _handles(handles: Iterable[str]) -> str:
    return ", ".join(f"@{h}" for h in handles)


def _recorded_reason(sender: Actor | None) -> str:
    if sender is None:
        return "system messages wake nobody"
    return "a bot hands off to its first actionable mention only"
