"""Actors and bots: create, update, delete, and the team seeded at first start."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Conflict, InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.core.mentions import is_valid_handle
from openbot.runtime.scripted import validate_script
from openbot.store.journal import append_event, log_activity, now
from openbot.store.models import ACTIVE_RUN_STATUSES, Actor, BotProfile, ExternalProfile, Run
from openbot.store.views import bot_view

BOT_FIELDS = (
    "name",
    "description",
    "instructions",
    "model",
    "model_settings",
    "tools",
    "approval_tools",
    "memory_enabled",
    "enabled",
    "max_parallel_threads",
)

_DELEGATE_NOTE = (
    "In a thread you are usually a delegate: you see only the messages that mention you, your own "
    "replies and the new messages. If a hand-off is not self-contained, use read_history or "
    "recall_messages before asking. Report back by mentioning whoever handed you the work."
)

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
    },
    {
        "handle": "engineer",
        "name": "Engineer",
        "description": "Writes and changes code, explains technical trade-offs.",
        "instructions": "You implement what you are asked, precisely and completely. " + _DELEGATE_NOTE,
    },
    {
        "handle": "reviewer",
        "name": "Reviewer",
        "description": "Reviews changes for correctness, clarity and risk.",
        "instructions": "You review carefully and say clearly what must change. " + _DELEGATE_NOTE,
    },
    {
        "handle": "qa",
        "name": "QA",
        "description": "Tests behaviour end to end and reports what fails.",
        "instructions": "You verify behaviour against the acceptance criteria. " + _DELEGATE_NOTE,
    },
]


async def seed_team(session: AsyncSession, model: str) -> bool:
    """First start: the human @you and the four bots. Returns False if actors already exist."""
    if await session.scalar(select(func.count()).select_from(Actor)):
        return False
    await create_actor(session, {"kind": "human", "handle": "you", "name": "You"})
    for bot in SEED_TEAM:
        await create_bot(session, {**bot, "model": model})
    log_activity(session, "system.seeded", "seeded @you and the default team", detail={"model": model})
    return True


async def get_actor(session: AsyncSession, handle: str, *, kind: str | None = None) -> Actor:
    actor = await session.scalar(select(Actor).where(Actor.handle == handle, Actor.deleted.is_(False)))
    if actor is None or (kind and actor.kind != kind):
        raise NotFound(f"no {kind or 'actor'} @{handle}", {"handle": handle})
    return actor


async def get_bot(session: AsyncSession, handle: str) -> tuple[Actor, BotProfile]:
    actor = await get_actor(session, handle, kind="bot")
    profile = await session.get(BotProfile, actor.id)
    assert profile is not None
    return actor, profile


def _check_handle(handle: Any) -> str:
    if not isinstance(handle, str) or not is_valid_handle(handle):
        raise InvalidArgument("handle must match [a-z0-9_-]{2,32}", {"field": "handle", "value": handle})
    return handle


async def _check_unique(session: AsyncSession, handle: str) -> None:
    if await session.scalar(select(Actor.id).where(Actor.handle == handle)):
        raise Conflict(f"the handle @{handle} is taken", {"handle": handle})


async def create_actor(session: AsyncSession, body: dict[str, Any]) -> Actor:
    kind = body.get("kind")
    if kind not in ("human", "external"):
        raise InvalidArgument("kind must be 'human' or 'external'", {"field": "kind"})
    handle = _check_handle(body.get("handle"))
    await _check_unique(session, handle)
    stamp = now()
    actor = Actor(
        id=new_id("act"),
        kind=kind,
        handle=handle,
        name=str(body.get("name") or handle),
        enabled=True,
        deleted=False,
        created_at=stamp,
        updated_at=stamp,
    )
    session.add(actor)
    if kind == "external":
        session.add(
            ExternalProfile(
                actor_id=actor.id,
                webhook_url=body.get("webhook_url"),
                webhook_secret=body.get("webhook_secret"),
            )
        )
    await session.flush()
    log_activity(
        session, "actor.created", f"@{handle} ({kind}) joined", actor_id=actor.id, actor_handle=handle
    )
    return actor


def _validate_bot_fields(body: dict[str, Any]) -> None:
    unknown = set(body) - set(BOT_FIELDS) - {"handle"}
    if unknown:
        raise InvalidArgument(f"unknown field(s): {', '.join(sorted(unknown))}", {"fields": sorted(unknown)})
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "name": (str, "a string"),
        "description": (str, "a string"),
        "instructions": (str, "a string"),
        "model": (str, "a string like 'scripted' or 'provider:model'"),
        "model_settings": (dict, "an object"),
        "tools": (list, "a list of tool names"),
        "approval_tools": (list, "a list of tool names"),
        "memory_enabled": (bool, "a boolean"),
        "enabled": (bool, "a boolean"),
        "max_parallel_threads": (int, "an integer from 1 to 64"),
    }
    for key, value in body.items():
        if key in checks:
            kind, what = checks[key]
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
                raise InvalidArgument(f"{key} must be {what}", {"field": key})
    if "max_parallel_threads" in body and not 1 <= body["max_parallel_threads"] <= 64:
        raise InvalidArgument(
            "max_parallel_threads must be an integer from 1 to 64", {"field": "max_parallel_threads"}
        )
    for key in ("tools", "approval_tools"):
        if key in body and not all(isinstance(t, str) for t in body[key]):
            raise InvalidArgument(f"{key} must be a list of tool names", {"field": key})
    model = body.get("model")
    if model is not None and model != "scripted" and ":" not in model:
        raise InvalidArgument("model must be 'scripted' or 'provider:model'", {"field": "model"})
    settings = body.get("model_settings")
    if isinstance(settings, dict) and "script" in settings:
        problems = validate_script(settings["script"])
        if problems:
            raise InvalidArgument(
                "model_settings.script is not valid: " + "; ".join(problems), {"problems": problems}
            )


async def create_bot(session: AsyncSession, body: dict[str, Any]) -> tuple[Actor, BotProfile]:
    handle = _check_handle(body.get("handle"))
    _validate_bot_fields(body)
    await _check_unique(session, handle)
    stamp = now()
    actor = Actor(
        id=new_id("bot"),
        kind="bot",
        handle=handle,
        name=str(body.get("name") or handle),
        enabled=bool(body.get("enabled", True)),
        deleted=False,
        created_at=stamp,
        updated_at=stamp,
    )
    profile = BotProfile(
        actor_id=actor.id,
        description=body.get("description", ""),
        instructions=body.get("instructions", ""),
        model=body.get("model") or "scripted",
        model_settings=body.get("model_settings") or {},
        tools=list(body.get("tools") or []),
        approval_tools=list(body.get("approval_tools") or []),
        memory_enabled=bool(body.get("memory_enabled", True)),
        max_parallel_threads=int(body.get("max_parallel_threads", 1)),
        version=1,
    )
    session.add_all([actor, profile])
    await session.flush()
    await append_event(session, "bot.updated", bot_view(actor, profile), None)
    log_activity(session, "bot.created", f"bot @{handle} created", actor_id=actor.id, actor_handle=handle)
    return actor, profile


async def update_bot(session: AsyncSession, handle: str, body: dict[str, Any]) -> tuple[Actor, BotProfile]:
    actor, profile = await get_bot(session, handle)
    if "handle" in body and body["handle"] != handle:
        raise InvalidArgument("a bot's handle cannot change", {"field": "handle"})
    _validate_bot_fields(body)
    for key, value in body.items():
        if key in ("name", "enabled"):
            setattr(actor, key, value)
        elif key != "handle":
            setattr(profile, key, value)
    profile.version += 1
    actor.updated_at = now()
    await session.flush()
    await append_event(session, "bot.updated", bot_view(actor, profile), None)
    log_activity(
        session,
        "bot.updated",
        f"bot @{handle} updated",
        actor_id=actor.id,
        actor_handle=handle,
        detail={"fields": sorted(body)},
    )
    return actor, profile


async def delete_bot(session: AsyncSession, handle: str) -> None:
    actor, profile = await get_bot(session, handle)
    open_runs = await session.scalar(
        select(func.count())
        .select_from(Run)
        .where(Run.bot_id == actor.id, Run.status.in_(ACTIVE_RUN_STATUSES))
    )
    if open_runs:
        raise Conflict(f"@{handle} has {open_runs} open run(s); cancel them first", {"open_runs": open_runs})
    actor.deleted = True
    actor.enabled = False
    actor.handle = "~" + actor.id[-31:]  # frees the handle; the row stays for history
    actor.updated_at = now()
    await append_event(
        session, "bot.updated", {**bot_view(actor, profile), "handle": handle, "deleted": True}, None
    )
    log_activity(session, "bot.deleted", f"bot @{handle} deleted", actor_id=actor.id, actor_handle=handle)
