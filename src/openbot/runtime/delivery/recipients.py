"""The reads routing a post needs, in one statement (DESIGN §5), and the report of the mentions
that name nobody."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.mentions import suggest_handle
from openbot.core.routing import ActorKind, ActorRef
from openbot.runtime import notices
from openbot.runtime.delivery.inbox import queued_mail_count
from openbot.runtime.views import UnknownMention
from openbot.store import fast
from openbot.store.journal import log_activity
from openbot.store.models import Actor, BotProfile, Message, Thread, ThreadParticipant


@dataclass(frozen=True)
class Recipients:
    actors: dict[str, Actor]  # live actors a plan can name, by handle
    participant_ids: list[str]  # every participant (deleted ones too), in joining order
    sender_mail: int | None  # the bot sender's queued mail in the thread (None: not asked)

    def participants(self) -> tuple[str, ...]:
        by_id = {a.id: a for a in self.actors.values()}
        return tuple(by_id[i].handle for i in self.participant_ids if i in by_id)

    def refs(self) -> dict[str, ActorRef]:
        return {h: ref(a) for h, a in self.actors.items()}

    def handle_of(self, actor_id: str | None) -> str | None:
        return next((a.handle for a in self.actors.values() if a.id == actor_id), None)


def ref(actor: Actor) -> ActorRef:
    return ActorRef(handle=actor.handle, kind=ActorKind(actor.kind), enabled=actor.enabled)


#: What routing reads of an actor (records of these stand in for Actor objects, read only).
ACTOR_COLUMNS = (Actor.id, Actor.kind, Actor.handle, Actor.name, Actor.enabled, Actor.deleted)

# Built once (building costs more than SQLite takes to run it); a post binds its thread and names.
_TP = ThreadParticipant
# Read with the rest (not bound from the caller's thread row): the read can then travel with the
# post's UPDATE of the thread, and sees the thread as that UPDATE left it.
_DEFAULT_BOT = select(Thread.default_bot_id).where(Thread.id == bindparam("thread_id")).scalar_subquery()
_RECIPIENTS = (
    select(*ACTOR_COLUMNS, _TP.actor_id.label("participant"))
    .outerjoin(_TP, (_TP.actor_id == Actor.id) & (_TP.thread_id == bindparam("thread_id")))
    .where(
        or_(
            _TP.actor_id.is_not(None),
            and_(
                Actor.deleted.is_(False),
                or_(Actor.handle.in_(bindparam("named", expanding=True)), Actor.id == _DEFAULT_BOT),
            ),
        )
    )
    .order_by(_TP.joined_at, _TP.actor_id)
)
_WITH_MAIL = fast.Sql(
    _RECIPIENTS.add_columns(
        queued_mail_count(bindparam("mail_of"), bindparam("thread_id")).scalar_subquery().label("mail")
    )
)
_JUST_RECIPIENTS = fast.Sql(_RECIPIENTS)


def recipients_read(
    thread_id: str, handles: Iterable[str], *, mail_of: str | None = None
) -> tuple[fast.Sql, dict[str, Any]]:
    """The read of the actors named by ``handles``, the thread's participants and default bot, and
    with ``mail_of`` that actor's queued mail in the thread (its rows: :func:`recipients_of`)."""
    params: dict[str, Any] = {"thread_id": thread_id, "named": list(dict.fromkeys(handles))}
    if mail_of is None:
        return _JUST_RECIPIENTS, params
    return _WITH_MAIL, {**params, "mail_of": mail_of}


def recipients_of(rows: Sequence[Any], *, mail_of: str | None = None) -> Recipients:
    """What :func:`recipients_read` read."""
    # The rows stand in for Actor objects (same attributes, read only; the session does not track them).
    actors = {row.handle: row for row in rows if not row.deleted}
    participant_ids = [row.id for row in rows if row.participant is not None]
    mail = int(rows[0].mail or 0) if rows and mail_of is not None else None
    return Recipients(actors, participant_ids, mail)


async def report_unknown(
    session: AsyncSession, thread: Thread, message: Message, handles: Sequence[str], sender: Actor | None
) -> list[UnknownMention]:
    """Each mention that names no live actor, with the handle it probably meant, recorded in the
    activity log (``message.unknown_mentions``) so "why didn't @enginer answer?" has an answer.
    System notices are not reported: the names in them were written by the runtime."""
    if not handles or sender is None:
        return []
    rows = await session.execute(
        select(Actor.handle, BotProfile.aliases)
        .outerjoin(BotProfile, BotProfile.actor_id == Actor.id)
        .where(Actor.deleted.is_(False))
    )
    known: list[str] = []
    by_alias: dict[str, str] = {}  # a bot's alias names that bot (an alias is no handle to @-mention)
    for known_handle, aliases in rows:
        known.append(known_handle)
        by_alias.update((alias.lower(), known_handle) for alias in aliases or ())
    found: list[UnknownMention] = []
    for handle in handles:
        entry = UnknownMention(handle=handle)
        suggestion = by_alias.get(handle.lower()) or suggest_handle(handle, known)
        if suggestion is not None:
            entry["suggestion"] = suggestion
        found.append(entry)
    pairs = [(u["handle"], u.get("suggestion")) for u in found]
    log_activity(
        session,
        "message.unknown_mentions",
        f"@{sender.handle} mentioned an unknown handle: {notices.unknown_mentions(pairs)}",
        level="warning",
        thread_id=thread.id,
        actor_id=sender.id,
        actor_handle=sender.handle,
        message_id=message.id,
        detail={"handles": list(handles), "unknown_mentions": [dict(u) for u in found]},
    )
    return found
