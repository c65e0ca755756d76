"""Actors and bots: create, update, delete, and the team seeded at first start."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.config import is_model_name
from openbot.core.errors import Conflict, InvalidArgument, NotFound
from openbot.core.governor import check_run_timeout
from openbot.core.ids import new_id
from openbot.core.mentions import is_valid_handle
from openbot.core.states import ACTIVE_RUNS
from openbot.runtime.commands import ActorCreate, ActorUpdate, BotCreate, BotUpdate
from openbot.runtime.engagement.gate_script import validate_gate
from openbot.runtime.governor.disposals import Reason, dispose_queued
from openbot.runtime.runner.scripted import delay_problem, validate_script
from openbot.runtime.runner.scripted_jobs import validate_jobs
from openbot.runtime.views import bot_view
from openbot.store import fast, inserts
from openbot.store.db import now
from openbot.store.journal import append_event, log_activity
from openbot.store.models import Actor, BotProfile, ExternalProfile, Run

_DELEGATE_NOTE = (
    "In a thread you are usually a delegate: you see only the messages that mention you, your own "
    "replies and the new messages. If a hand-off is not self-contained, use read_history or "
    "recall_messages before asking. Report back by mentioning whoever handed you the work."
)

# run_shell waits for a person's approval in every seeded bot; the engineer and QA have it, and
# the engineer may also write the thread's files (the others read them).
_GATED = {"approval_tools": ["run_shell"]}

SEED_TEAM: list[dict[str, Any]] = [
    {
        "handle": "chief_of_staff",
        "name": "Chief of Staff",
        "description": "Coordinates the team: plans the work, delegates, reports back to the humans.",
        "instructions": (
            "You coordinate. Break the request into steps and delegate each step in THIS thread by "
            "mentioning exactly one bot per message (only the first mention wakes a bot). Delegates "
            "see only the message addressed to them, so every hand-off must be self-contained: the "
            "goal, the relevant paths or PR numbers, acceptance criteria and what to report back. "
            "When the work is done, summarise it for the humans without mentioning any bot."
        ),
        **_GATED,
    },
    {
        "handle": "engineer",
        "name": "Engineer",
        "description": "Writes and changes code, explains technical trade-offs.",
        "instructions": "You implement what you are asked, precisely and completely. " + _DELEGATE_NOTE,
        "tools": ["run_shell"],
        "workspace_access": "write",
        **_GATED,
    },
    {
        "handle": "reviewer",
        "name": "Reviewer",
        "description": "Reviews changes for correctness, clarity and risk.",
        "instructions": "You review carefully and say clearly what must change. " + _DELEGATE_NOTE,
        **_GATED,
    },
    {
        "handle": "qa",
        "name": "QA",
        "description": "Tests behaviour end to end and reports what fails.",
        "instructions": "You verify behaviour against the acceptance criteria. " + _DELEGATE_NOTE,
        "tools": ["run_shell"],
        **_GATED,
    },
]


async def seed_team(session: AsyncSession, model: str) -> bool:
    """First start: the human @you and the four bots. Returns False if actors already exist."""
    if await session.scalar(select(func.count()).select_from(Actor)):
        return False
    await create_actor(session, ActorCreate(kind="human", handle="you", name="You"))
    for bot in SEED_TEAM:
        await create_bot(session, BotCreate(**bot, model=model))
    log_activity(session, "system.seeded", "seeded @you and the default team", detail={"model": model})
    return True


async def get_actor(session: AsyncSession, handle: str, *, kind: str | None = None) -> Actor:
    actor = await session.scalar(select(Actor).where(Actor.handle == handle, Actor.deleted.is_(False)))
    if actor is None or (kind and actor.kind != kind):
        raise NotFound(f"no {kind or 'actor'} @{handle}", {"handle": handle})
    return actor


ACTOR_ROW = fast.Sql(  # a live actor by handle (binds handle)
    select(*inserts.table_of(Actor).columns).where(
        Actor.handle == bindparam("handle"), Actor.deleted.is_(False)
    )
)


async def get_bot(session: AsyncSession, handle: str) -> tuple[Actor, BotProfile]:
    actor = await get_actor(session, handle, kind="bot")
    profile = await session.get(BotProfile, actor.id)
    if profile is None:
        raise NotFound(f"no bot @{handle}", {"handle": handle})
    return actor, profile


def _check_handle(handle: str) -> str:
    if not is_valid_handle(handle):
        raise InvalidArgument("handle must match [a-z0-9_-]{2,32}", {"field": "handle", "value": handle})
    return handle


async def _check_unique(session: AsyncSession, handle: str) -> None:
    if await session.scalar(select(Actor.id).where(Actor.handle == handle)):
        raise Conflict(f"the handle @{handle} is taken", {"handle": handle})


async def create_actor(session: AsyncSession, command: ActorCreate) -> Actor:
    handle = _check_handle(command.handle)
    if command.kind != "external":  # as PATCH refuses them: a person has no webhook
        for field in ("webhook_url", "webhook_secret"):
            if getattr(command, field) is not None:
                raise InvalidArgument(f"{field} is for external actors only", {"field": field})
    await _check_unique(session, handle)
    stamp = now(session)
    actor = Actor(
        id=new_id("act"),
        kind=command.kind,
        handle=handle,
        name=command.name or handle,
        enabled=True,
        deleted=False,
        created_at=stamp,
        updated_at=stamp,
    )
    session.add(actor)
    if command.kind == "external":
        session.add(
            ExternalProfile(
                actor_id=actor.id, webhook_url=command.webhook_url, webhook_secret=command.webhook_secret
            )
        )
    await session.flush()
    log_activity(
        session, "actor.created", f"@{handle} ({command.kind}) joined", actor_id=actor.id, actor_handle=handle
    )
    return actor


async def update_actor(
    session: AsyncSession, handle: str, command: ActorUpdate
) -> tuple[Actor, ExternalProfile | None]:
    """Change a human's or external actor's name, or an external actor's webhook (the caller
    checked the URL against the SSRF rule); bots change with :func:`update_bot`."""
    actor = await get_actor(session, handle)
    if actor.kind == "bot":
        raise InvalidArgument(f"@{handle} is a bot: PATCH /bots/{handle}", {"handle": handle})
    changes = command.model_dump(exclude_unset=True)
    external = await session.get(ExternalProfile, actor.id)
    for key in sorted(changes):
        if key.startswith("webhook_") and external is None:
            raise InvalidArgument(f"@{handle} is not an external actor: it has no webhook", {"field": key})
    if "name" in changes:
        if not (changes["name"] or "").strip():  # blank is empty, as for bots (update_bot)
            raise InvalidArgument("name cannot be empty", {"field": "name"})
        actor.name = changes["name"]
    for key in ("webhook_url", "webhook_secret"):
        if key in changes and external is not None:
            setattr(external, key, changes[key])
    actor.updated_at = now(session)
    fields = sorted(changes)
    log_activity(
        session,
        "actor.updated",
        f"@{handle} updated ({', '.join(fields) or 'nothing'})",
        actor_id=actor.id,
        actor_handle=handle,
        detail={"fields": fields},
    )
    return actor, external


def _check_bot(command: BotCreate | BotUpdate) -> None:
    """What the command's types cannot say: the model's form and the script's rules."""
    model = command.model
    if model is not None and not is_model_name(model):
        raise InvalidArgument("model must be 'scripted' or 'provider:model'", {"field": "model"})
    settings = command.model_settings
    check_run_timeout(settings)
    delay = (settings or {}).get("delay_ms", 0)
    if (problem := delay_problem(delay)) is not None:
        raise InvalidArgument(
            f"model_settings.{problem}", {"field": "model_settings.delay_ms", "value": delay}
        )
    for key in ("script", "subagent_script"):  # subagent_script: runtime.tools.subagents
        if settings is not None and key in settings:
            problems = validate_script(settings[key])
            if problems:
                raise InvalidArgument(
                    f"model_settings.{key} is not valid: " + "; ".join(problems), {"problems": problems}
                )
    jobs = validate_jobs(settings or {})  # the scripted model's reflection and consolidation
    jobs += validate_gate(settings or {})  # the channel gate's tier 2
    if jobs:
        raise InvalidArgument("model_settings is not valid: " + "; ".join(jobs), {"problems": jobs})


async def create_bot(session: AsyncSession, command: BotCreate) -> tuple[Actor, BotProfile]:
    handle = _check_handle(command.handle)
    _check_bot(command)
    await _check_unique(session, handle)
    stamp = now(session)
    actor = Actor(
        id=new_id("bot"),
        kind="bot",
        handle=handle,
        name=command.name or handle,
        enabled=command.enabled,
        deleted=False,
        created_at=stamp,
        updated_at=stamp,
    )
    profile = BotProfile(
        actor_id=actor.id,
        description=command.description,
        instructions=command.instructions,
        model=command.model or "scripted",
        model_settings=command.model_settings,
        tools=list(command.tools),
        approval_tools=list(command.approval_tools),
        memory_enabled=command.memory_enabled,
        max_parallel_threads=command.max_parallel_threads,
        max_queued=command.max_queued,
        workspace_access=command.workspace_access,
        aliases=list(command.aliases),
        version=1,
    )
    session.add_all([actor, profile])
    await session.flush()
    append_event(session, "bot.updated", dict(bot_view(actor, profile)), None)
    log_activity(session, "bot.created", f"bot @{handle} created", actor_id=actor.id, actor_handle=handle)
    return actor, profile


async def update_bot(session: AsyncSession, handle: str, command: BotUpdate) -> tuple[Actor, BotProfile]:
    actor, profile = await get_bot(session, handle)
    _check_bot(command)
    changes = command.model_dump(exclude_unset=True)
    for key, value in changes.items():
        if value is None:
            raise InvalidArgument(f"{key} cannot be null", {"field": key})
    if "name" in changes and not changes["name"].strip():  # as for people (update_actor)
        raise InvalidArgument("name cannot be empty", {"field": "name"})
    for key, value in changes.items():
        setattr(actor if key in ("name", "enabled") else profile, key, value)
    profile.version += 1
    actor.updated_at = now(session)
    await session.flush()
    append_event(session, "bot.updated", dict(bot_view(actor, profile)), None)
    log_activity(
        session,
        "bot.updated",
        f"bot @{handle} updated",
        actor_id=actor.id,
        actor_handle=handle,
        detail={"fields": sorted(changes)},
    )
    return actor, profile


async def delete_bot(session: AsyncSession, handle: str) -> None:
    actor, profile = await get_bot(session, handle)
    # Locked and read again (PostgreSQL): of two deletes racing, the second finds it gone (404).
    await session.refresh(actor, with_for_update=True)
    if actor.deleted:
        raise NotFound(f"no bot @{handle}", {"handle": handle})
    open_runs = await session.scalar(
        select(func.count()).select_from(Run).where(Run.bot_id == actor.id, Run.status.in_(ACTIVE_RUNS))
    )
    if open_runs:
        raise Conflict(f"@{handle} has {open_runs} open run(s); cancel them first", {"open_runs": open_runs})
    await dispose_queued(session, Reason.BOT_DISABLED, bot_id=actor.id)  # its mail will never be served
    actor.deleted = True
    actor.enabled = False
    # Frees the handle; the row stays for history, and its messages name it ``~<handle>-<id tail>``
    # (32 characters at most; the id's tail, its clock's last digits and random ones, keeps it unique).
    actor.handle = f"~{handle[:18]}-{actor.id[-12:]}"
    actor.updated_at = now(session)
    append_event(
        session, "bot.updated", {**bot_view(actor, profile), "handle": handle, "deleted": True}, None
    )
    log_activity(session, "bot.deleted", f"bot @{handle} deleted", actor_id=actor.id, actor_handle=handle)
