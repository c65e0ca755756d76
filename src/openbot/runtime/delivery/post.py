"""Posting a message: one transaction that routes, records and fans out (DESIGN §5).

parse @mentions → resolve targets → insert the message (hop) → add participants → hop-limit check
→ held hand-offs → inbox items → journal and activity → notices. The caller owns the transaction;
bots that got mail are woken when it commits (``delivery.inbox.enqueue``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import bindparam, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from openbot.core.errors import InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.core.mentions import parse_mentions
from openbot.core.routing import ActorKind, RouteInput, RoutePlan, plan_route
from openbot.core.scheduling import ItemKind
from openbot.runtime import notices
from openbot.runtime.delivery.holds import hold, supersede
from openbot.runtime.delivery.inbox import enqueue, queued_mail
from openbot.runtime.delivery.recipients import (
    Recipients,
    recipients_of,
    recipients_read,
    ref,
    report_unknown,
)
from openbot.runtime.engagement import record as engagement
from openbot.runtime.views import MessageView, UnknownMention, message_view
from openbot.store import fast, inserts
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, Message, Thread, ThreadParticipant

_FALLBACK_BOT: str = RouteInput.__dataclass_fields__["fallback_bot"].default  # type: ignore[assignment]


@dataclass
class PostResult:
    message: Message
    view: MessageView
    addressed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    unknown_mentions: list[UnknownMention] = field(default_factory=list)


@dataclass
class Delivery:
    """What posting needs from its surroundings: the hop limit and the small-group size (DESIGN §7)."""

    max_hops: int = 20
    small_group_size: int = engagement.SMALL_GROUP_SIZE

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
        """Post a message and then the notices it calls for (system messages: they call for none)."""
        result, pending = await self._post_one(session, thread, content, sender, to, hop, run_id, metadata)
        for notice in pending:
            await self.post_notice(session, thread, notice)
        return result

    async def post_notice(self, session: AsyncSession, thread: Thread, notice: notices.Notice) -> PostResult:
        """Post a system notice (it wakes nobody, invariant 9)."""
        result, _none = await self._post_one(
            session, thread, notice.text, None, (), notice.hop, notice.run_id, notice.metadata
        )
        return result

    async def _post_one(
        self,
        session: AsyncSession,
        thread: Thread,
        content: str,
        sender: Actor | None,
        to: Sequence[str],
        hop: int,
        run_id: str | None,
        metadata: dict[str, Any] | None,
    ) -> tuple[PostResult, list[notices.Notice]]:
        stamp = now(session)
        is_bot = sender is not None and sender.kind == ActorKind.BOT
        mentions = tuple(parse_mentions(content))
        mail_of = sender.id if sender and is_bot else None
        recipients = recipients_read(thread.id, (*to, *mentions, _FALLBACK_BOT), mail_of=mail_of)
        # The thread is stamped first (see _TOUCH), then its recipients read: one round trip.
        touched, rows = await fast.execute_all(
            session, [(_TOUCH, {"thread_id": thread.id, "stamp": stamp}), recipients]
        )
        if not touched:
            raise NotFound(f"thread {thread.id} not found", {"thread_id": thread.id})
        given, thread = thread, cast(Thread, touched[0])  # a record with the Thread's attributes
        found = recipients_of(rows, mail_of=mail_of)
        for handle in to:
            if handle not in found.actors:
                raise InvalidArgument(f"unknown handle @{handle} in 'to'", {"field": "to", "handle": handle})
        data = await self._route_input(session, thread, found, sender, mentions, to, hop)
        plan = plan_route(data)
        message = await self._insert(
            session, thread, plan, found, content, sender, hop, run_id, metadata, stamp
        )
        view = message_view(message, sender)
        append_event(session, "message.created", view, thread.id)
        self._log_posted(session, thread, message, plan, sender)
        seen = await engagement.record(
            session, thread, data, plan, found, message, sender, small_group_size=self.small_group_size
        )
        woken = [found.actors[h] for h in (*plan.wake, *seen.wake)]
        for bot in woken:
            for earlier in seen.folded.get(bot.handle, ()):  # the escape hatch: they join this run
                await enqueue(session, bot, thread.id, kind=ItemKind.MESSAGE, message_id=earlier)
            await enqueue(session, bot, thread.id, kind=ItemKind.MESSAGE, message_id=message.id)
            if is_bot and sender is not None:
                await supersede(session, thread.id, sender.id, bot.id)
        for handle in plan.notify:
            await enqueue(
                session, found.actors[handle], thread.id, kind=ItemKind.MESSAGE, message_id=message.id
            )
        pending = await self._refusals(session, thread, plan, found, message, sender)
        unknown = await report_unknown(session, thread, message, plan.unknown, sender)
        before = thread.hop_limit_notified
        await _flag(session, given, before, _notified(before, plan), stamp)
        return PostResult(message, view, [b.handle for b in woken], list(plan.held), unknown), pending

    async def _route_input(
        self,
        session: AsyncSession,
        thread: Thread,
        found: Recipients,
        sender: Actor | None,
        mentions: tuple[str, ...],
        to: Sequence[str],
        hop: int,
    ) -> RouteInput:
        has_mail = False
        if sender is not None and sender.kind == ActorKind.BOT:
            mail = found.sender_mail
            has_mail = (mail if mail is not None else await queued_mail(session, sender.id, thread.id)) > 0
        return RouteInput(
            sender=ref(sender) if sender else None,
            mentions=mentions,
            to=tuple(to),
            actors=found.refs(),
            participants=found.participants(),
            default_bot=found.handle_of(thread.default_bot_id),
            sender_has_queued_mail=has_mail,
            hop=hop,
            max_hops=self.max_hops,
            hop_limit_notified=thread.hop_limit_notified,
            gated=thread.kind == "channel",
        )

    async def _insert(
        self,
        session: AsyncSession,
        thread: Thread,
        plan: RoutePlan,
        found: Recipients,
        content: str,
        sender: Actor | None,
        hop: int,
        run_id: str | None,
        metadata: dict[str, Any] | None,
        stamp: datetime,
    ) -> Message:
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
        joining = [found.actors[h].id for h in plan.new_participants]
        if sender is not None and sender.id not in found.participant_ids:
            joining.append(sender.id)  # whoever posts takes part, and so gets questions and replies
        joined = [ThreadParticipant(thread_id=thread.id, actor_id=a, joined_at=stamp) for a in joining]
        await inserts.insert(session, message, *joined)
        return message

    def _log_posted(
        self, session: AsyncSession, thread: Thread, message: Message, plan: RoutePlan, sender: Actor | None
    ) -> None:
        who = f"@{sender.handle}" if sender else "system"
        log_activity(
            session,
            "message.posted",
            f"{who} posted in {thread.title or thread.id}",
            thread_id=thread.id,
            actor_id=sender.id if sender else None,
            actor_handle=sender.handle if sender else None,
            run_id=message.run_id,
            message_id=message.id,
            detail={"mentions": list(plan.mentions), "hop": message.hop, "addressed": list(plan.wake)},
        )
        if plan.recorded_only:
            reason = (
                "system messages wake nobody"
                if sender is None
                else "a bot hands off to its first actionable mention only"
            )
            log_activity(
                session,
                "message.mentions_recorded",
                f"{who} mentioned {notices.handles(plan.recorded_only)} without waking them",
                thread_id=thread.id,
                message_id=message.id,
                detail={"handles": list(plan.recorded_only), "reason": reason},
            )

    async def _refusals(
        self,
        session: AsyncSession,
        thread: Thread,
        plan: RoutePlan,
        found: Recipients,
        message: Message,
        sender: Actor | None,
    ) -> list[notices.Notice]:
        """Record the hand-offs this post did not deliver; return the notices to post about them."""
        pending: list[notices.Notice] = []
        if plan.held and sender is not None:
            pending.append(await hold(session, sender, [found.actors[h] for h in plan.held], message))
        if plan.hop_limited:
            log_activity(
                session,
                "message.hop_limited",
                f"hop {message.hop} reached the limit of {self.max_hops}: "
                f"{notices.handles(plan.hop_limited)} not woken",
                level="warning",
                thread_id=thread.id,
                message_id=message.id,
                detail={"hop": message.hop, "max_hops": self.max_hops, "dropped": list(plan.hop_limited)},
            )
        if plan.post_hop_notice:
            pending.append(notices.hop_limit(self.max_hops, message.hop))
        return pending


# A post stamps its thread first: the UPDATE locks the row (NO KEY UPDATE on PostgreSQL, so
# concurrent inserts that only reference the thread are not blocked; SQLite serialises every
# writer at BEGIN IMMEDIATE) and returns it fresh, so posts to one thread serialise and read
# participants and the hop-limit flag as the previous post left them. One statement.
_TOUCH = fast.Sql(
    update(Thread)
    .where(Thread.id == bindparam("thread_id"))
    .values(last_message_at=bindparam("stamp", type_=Thread.last_message_at.type))
    .returning(*inserts.table_of(Thread).columns)
)
_FLAG = fast.Sql(
    update(Thread).where(Thread.id == bindparam("thread_id")).values(hop_limit_notified=bindparam("notified"))
)


def _notified(before: bool, plan: RoutePlan) -> bool:
    """The thread's hop-limit flag after this post: cleared by a post under the limit, set by the
    notice that the limit was reached."""
    if plan.post_hop_notice:
        return True
    return False if plan.reset_hop_notice else before


async def _flag(session: AsyncSession, given: Thread, before: bool, notified: bool, stamp: datetime) -> None:
    """Write the hop-limit flag if the post changed it; bring the caller's object up to date if the
    session tracks it (as committed values: the row already has them)."""
    if notified != before:
        await fast.execute(session, _FLAG, {"thread_id": given.id, "notified": notified})
    if isinstance(given, Thread):
        set_committed_value(given, "last_message_at", stamp)
        set_committed_value(given, "hop_limit_notified", notified)
