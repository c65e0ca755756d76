"""Automations as records: create, change, delete, read — each inside the caller's transaction.

Every refusal is a 422 ``invalid_argument`` whose ``details.reason`` is stable (``bad_cron``,
``bad_timezone``, ``bad_at``, ``at_in_past``, ``schedule``, ``unknown_bot``, ``unknown_owner``,
``owner_is_bot``, ``unknown_thread``, ``empty_content``), raised before anything is written.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from openbot.core import cron
from openbot.core.errors import InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.runtime.automations.commands import AutomationCreate, AutomationUpdate
from openbot.runtime.automations.views import AutomationView, automation_view
from openbot.runtime.team import get_actor
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, Automation, Thread, ThreadParticipant

HEARTBEAT_PROMPT = (
    "Heartbeat: review this thread. Continue any unfinished item of your todo list, "
    "or close it if it is done or no longer needed."
)
_Bot = aliased(Actor)
_Owner = aliased(Actor)


def _refuse(message: str, field: str, reason: str) -> InvalidArgument:
    return InvalidArgument(message, {"field": field, "reason": reason})


def schedule_of(row: Automation) -> cron.Schedule:
    return cron.Schedule(cron=row.cron, at=row.at, timezone=row.timezone)


def parse_at(text: str, timezone: str) -> datetime:
    """An ISO 8601 instant; one without an offset is read in ``timezone``. Returned in UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise _refuse(f"'at' is not an ISO 8601 time: {text!r}", "at", "bad_at") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=cron.zone(timezone))
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # 9999-12-31T23:59-14:00 is past the last datetime in UTC
        raise _refuse(f"'at' is out of range in UTC: {text!r}", "at", "bad_at") from exc


async def _actor(session: AsyncSession, handle: str, field: str, kind: str | None = None) -> Actor:
    try:
        return await get_actor(session, handle, kind=kind)
    except NotFound as exc:
        raise _refuse(f"no {kind or 'actor'} @{handle}", field, f"unknown_{field}") from exc


async def _check_thread(session: AsyncSession, thread_id: str | None, member: str | None) -> None:
    """The thread exists (and, for an actor token's ``member``, that actor takes part in it)."""
    if thread_id is None:
        return
    stmt = select(Thread.id).where(Thread.id == thread_id)
    if member is not None:
        stmt = stmt.join(ThreadParticipant, ThreadParticipant.thread_id == Thread.id).join(
            Actor, Actor.id == ThreadParticipant.actor_id
        )
        stmt = stmt.where(Actor.handle == member)
    if await session.scalar(stmt) is None:
        raise _refuse(f"thread {thread_id} not found", "thread_id", "unknown_thread")


def _arm(session: AsyncSession, row: Automation, *, at_given: bool = False) -> None:
    """Set ``next_run_at`` from now (None while disabled). A one-shot whose time passed is refused
    when it is enabled, and whenever its ``at`` is given (a disabled automation too: a time that
    can never fire is bad input, not a state to find out about when it is enabled)."""
    upcoming = cron.next_after(schedule_of(row), now(session))
    if upcoming is None and (row.enabled or (at_given and row.at is not None)):
        raise _refuse("'at' is in the past", "at", "at_in_past")
    row.next_run_at = upcoming if row.enabled else None


async def create(
    session: AsyncSession, command: AutomationCreate, owner: str, *, scoped: bool = False
) -> Automation:
    """``scoped``: the owner is an actor token's actor, so ``thread_id`` must be one of its threads."""
    bot = await _actor(session, command.bot, "bot", kind="bot")
    author = await _actor(session, owner, "owner")
    if author.id == bot.id:  # its post would mention its own sender, which wakes nobody
        raise _refuse(
            f"@{bot.handle} cannot own an automation that wakes @{bot.handle}", "owner", "owner_is_bot"
        )
    await _check_thread(session, command.thread_id, owner if scoped else None)
    content = command.content.strip() or (HEARTBEAT_PROMPT if command.kind == "heartbeat" else "")
    if not content:
        raise _refuse("content must not be empty", "content", "empty_content")
    cron.zone(command.timezone)
    if (command.cron is None) == (command.at is None):
        raise _refuse("give exactly one of 'cron' and 'at'", "cron", "schedule")
    stamp = now(session)
    row = Automation(
        id=new_id("aut"),
        bot_id=bot.id,
        owner_id=author.id,
        kind=command.kind,
        title=command.title or "",
        content=content,
        cron=cron.check_cron(command.cron) if command.cron is not None else None,
        at=parse_at(command.at, command.timezone) if command.at is not None else None,
        timezone=command.timezone,
        thread_id=command.thread_id,
        enabled=command.enabled,
        catch_up=command.catch_up,
        created_at=stamp,
        updated_at=stamp,
    )
    _arm(session, row, at_given=command.at is not None)
    session.add(row)
    await session.flush()
    await _changed(session, row, "automation.created", f"automation for @{bot.handle} created")
    return row


async def update(
    session: AsyncSession, automation_id: str, command: AutomationUpdate, *, owner: str | None = None
) -> Automation:
    """``owner``: an actor token's actor, who may change only its own automations."""
    row = await get(session, automation_id, owner=owner, for_update=True)
    given = command.model_fields_set
    for field in ("content", "cron", "at", "timezone", "enabled", "catch_up"):  # thread_id: null clears
        if field in given and getattr(command, field) is None:
            raise _refuse(f"{field} cannot be null", field, "null")
    if "timezone" in given and command.timezone is not None:
        cron.zone(command.timezone)
        row.timezone = command.timezone
    if "cron" in given and command.cron is not None:
        row.cron, row.at = cron.check_cron(command.cron), None
    if "at" in given and command.at is not None:
        if "cron" in given and command.cron is not None:
            raise _refuse("give exactly one of 'cron' and 'at'", "cron", "schedule")
        row.at, row.cron = parse_at(command.at, row.timezone), None
    if "thread_id" in given:
        await _check_thread(session, command.thread_id, owner)
        row.thread_id = command.thread_id
    if command.content is not None:
        if not command.content.strip():
            raise _refuse("content must not be empty", "content", "empty_content")
        row.content = command.content
    if "title" in given:
        row.title = command.title or ""  # null clears it
    if command.catch_up is not None:
        row.catch_up = command.catch_up
    if command.enabled is not None:
        row.enabled = command.enabled
    _arm(session, row, at_given="at" in given)
    row.updated_at = now(session)
    await _changed(session, row, "automation.updated", f"automation {row.id} changed")
    return row


async def delete(session: AsyncSession, automation_id: str, *, owner: str | None = None) -> None:
    row = await get(session, automation_id, owner=owner, for_update=True)
    await session.delete(row)
    append_event(session, "automation.updated", {"id": automation_id, "deleted": True}, None)
    log_activity(session, "automation.deleted", f"automation {automation_id} deleted")


async def get(
    session: AsyncSession, automation_id: str, *, owner: str | None = None, for_update: bool = False
) -> Automation:
    """The automation; with ``owner`` (an actor token's actor) only one it owns, else 404.
    ``for_update``: locked (PostgreSQL), so a change and a deletion racing it take turns and the
    second finds it gone."""
    row = await session.get(Automation, automation_id, with_for_update=for_update or None)
    if row is not None and owner is not None:
        owner_id = await session.scalar(select(Actor.id).where(Actor.handle == owner))
        row = row if row.owner_id == owner_id else None
    if row is None:
        raise NotFound(f"automation {automation_id} not found", {"automation_id": automation_id})
    return row


def _with_handles() -> Select[Automation, str, str]:
    return (
        select(Automation, _Bot.handle, _Owner.handle)
        .join(_Bot, _Bot.id == Automation.bot_id)
        .join(_Owner, _Owner.id == Automation.owner_id)
    )


async def view(session: AsyncSession, automation_id: str) -> AutomationView:
    found = (await session.execute(_with_handles().where(Automation.id == automation_id))).first()
    if found is None:
        raise NotFound(f"automation {automation_id} not found", {"automation_id": automation_id})
    row, bot, owner = found
    return automation_view(row, bot, owner)


async def list_views(
    session: AsyncSession, *, bot: str | None = None, owner: str | None = None
) -> list[AutomationView]:
    stmt = _with_handles().order_by(Automation.created_at, Automation.id)
    if bot is not None:
        stmt = stmt.where(_Bot.handle == bot)
    if owner is not None:
        stmt = stmt.where(_Owner.handle == owner)
    return [automation_view(row, bot, owner) for row, bot, owner in await session.execute(stmt)]


async def _changed(session: AsyncSession, row: Automation, event: str, summary: str) -> None:
    await session.flush()
    shown = await view(session, row.id)
    append_event(session, "automation.updated", dict(shown), None)
    log_activity(session, event, summary, actor_id=row.bot_id, detail={"automation_id": row.id})
