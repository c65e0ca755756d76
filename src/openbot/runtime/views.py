"""The JSON shapes of the HTTP contract, built from rows. REST responses and journal payloads
use the same functions, so a client sees one shape whether it reads or listens."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from openbot.core.states import RunStatus
from openbot.store.models import (
    ActivityLog,
    Actor,
    BotProfile,
    ExternalProfile,
    InboxItem,
    Message,
    Run,
    RunEvent,
    Thread,
)


class ActorRef(TypedDict):
    handle: str
    kind: str


class ActorView(TypedDict):
    id: str
    handle: str
    kind: str
    name: str
    enabled: bool
    created_at: str | None
    webhook_url: NotRequired[str | None]


class BotState(TypedDict):
    status: str  # idle | running | waiting_human
    running_threads: list[str]
    waiting_threads: list[str]
    queue_depth: int


class BotView(TypedDict):
    id: str
    handle: str
    name: str
    description: str
    instructions: str
    model: str
    model_settings: dict[str, Any]
    tools: list[str]
    approval_tools: list[str]
    memory_enabled: bool
    enabled: bool
    max_parallel_threads: int
    max_queued: int
    workspace_access: str
    aliases: list[str]
    created_at: str | None
    state: NotRequired[BotState]
    deleted: NotRequired[bool]


class MessageView(TypedDict):
    id: str
    thread_id: str
    sender: ActorRef | None
    content: str
    mentions: list[str]
    hop: int
    run_id: str | None
    metadata: dict[str, Any]
    created_at: str | None


class UnknownMention(TypedDict):
    """An ``@handle`` in a post that names no actor, and the handle it probably meant."""

    handle: str
    suggestion: NotRequired[str]


class PostView(TypedDict):
    """The answer to ``POST /threads/{id}/messages`` (and what an idempotent retry replays)."""

    message: MessageView
    addressed: list[str]
    held: list[str]
    unknown_mentions: list[UnknownMention]


class ThreadView(TypedDict):
    id: str
    title: str
    kind: str
    default_bot: str | None
    require_mention: bool
    working_directory: str | None
    participants: list[ActorRef]
    created_at: str | None
    last_message_at: str | None
    unread: NotRequired[int]
    needs_action: NotRequired[int]


class Usage(TypedDict):
    input_tokens: int
    output_tokens: int
    model_calls: int


class RunView(TypedDict):
    id: str
    bot: str
    thread_id: str
    status: str
    trigger_message_ids: list[str]
    interrupt: dict[str, Any] | None
    error: dict[str, Any] | None
    usage: Usage
    hop: int
    created_at: str | None
    started_at: str | None
    finished_at: str | None


class RunEventView(TypedDict):
    run_id: str
    thread_id: str
    seq: int
    type: str
    payload: dict[str, Any]
    created_at: str | None


class RunDetail(RunView):
    events: list[RunEventView]


class ItemView(TypedDict):
    id: str
    kind: str
    thread_id: str
    message_id: str | None
    run_id: str | None
    status: str
    attempts: int
    created_at: str | None


class ActivityView(TypedDict):
    id: int | None
    event: str
    level: str
    summary: str
    thread_id: str | None
    actor: str | None
    run_id: str | None
    created_at: str | None
    detail: dict[str, Any]


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def actor_ref(actor: Actor | None) -> ActorRef | None:
    return {"handle": actor.handle, "kind": actor.kind} if actor else None


def actor_view(actor: Actor, external: ExternalProfile | None = None) -> ActorView:
    view: ActorView = {
        "id": actor.id,
        "handle": actor.handle,
        "kind": actor.kind,
        "name": actor.name,
        "enabled": actor.enabled,
        "created_at": iso(actor.created_at),
    }
    if external is not None:
        view["webhook_url"] = external.webhook_url
    return view


def bot_view(actor: Actor, profile: BotProfile) -> BotView:
    return {
        "id": actor.id,
        "handle": actor.handle,
        "name": actor.name,
        "description": profile.description,
        "instructions": profile.instructions,
        "model": profile.model,
        "model_settings": profile.model_settings,
        "tools": profile.tools,
        "approval_tools": profile.approval_tools,
        "memory_enabled": profile.memory_enabled,
        "enabled": actor.enabled,
        "max_parallel_threads": profile.max_parallel_threads,
        "max_queued": profile.max_queued if profile.max_queued is not None else 200,
        "workspace_access": profile.workspace_access or "read",
        "aliases": list(profile.aliases or []),
        "created_at": iso(actor.created_at),
    }


def message_view(message: Message, sender: Actor | None) -> MessageView:
    return {
        "id": message.id,
        "thread_id": message.thread_id,
        "sender": actor_ref(sender),
        "content": message.content,
        "mentions": message.mentions,
        "hop": message.hop,
        "run_id": message.run_id,
        "metadata": message.metadata_,
        "created_at": iso(message.created_at),
    }


def thread_view(thread: Thread, participants: list[Actor], default_bot: Actor | None) -> ThreadView:
    return {
        "id": thread.id,
        "title": thread.title,
        "kind": thread.kind,
        "default_bot": default_bot.handle if default_bot else None,
        "require_mention": bool(thread.require_mention),
        "working_directory": thread.working_directory,
        "participants": [{"handle": a.handle, "kind": a.kind} for a in participants],
        "created_at": iso(thread.created_at),
        "last_message_at": iso(thread.last_message_at),
    }


def run_view(run: Run, bot_handle: str) -> RunView:
    return {
        "id": run.id,
        "bot": bot_handle,
        "thread_id": run.thread_id,
        "status": run.status,
        "trigger_message_ids": run.trigger_message_ids,
        # Only a waiting run has an interrupt; what was asked stays in the run's events.
        "interrupt": _public_interrupt(run.interrupt) if run.status == RunStatus.WAITING_HUMAN else None,
        "error": run.error,
        "usage": {
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "model_calls": run.model_calls,
        },
        "hop": run.hop,
        "created_at": iso(run.created_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
    }


def run_event_view(event: RunEvent, thread_id: str) -> RunEventView:
    return {
        "run_id": event.run_id,
        "thread_id": thread_id,
        "seq": event.seq,
        "type": event.type,
        "payload": event.payload,
        "created_at": iso(event.created_at),
    }


def item_view(item: InboxItem) -> ItemView:
    return {
        "id": item.id,
        "kind": item.kind,
        "thread_id": item.thread_id,
        "message_id": item.message_id,
        "run_id": item.run_id,
        "status": item.status,
        "attempts": item.attempts,
        "created_at": iso(item.created_at),
    }


def activity_view(row: ActivityLog) -> ActivityView:
    return {
        "id": row.id,
        "event": row.event,
        "level": row.level,
        "summary": row.summary,
        "thread_id": row.thread_id,
        "actor": row.actor_handle,
        "run_id": row.run_id,
        "created_at": iso(row.created_at),
        "detail": row.detail,
    }


def _public_interrupt(interrupt: dict[str, Any] | None) -> dict[str, Any] | None:
    """The interrupt as the API shows it (LangGraph's interrupt ids stay internal)."""
    if interrupt is None:
        return None
    return {k: v for k, v in interrupt.items() if k != "interrupt_ids"}


class TokenIssued(TypedDict):
    """A new actor token: the only time the token itself is shown."""

    token: str
    actor: str


class WhoAmI(TypedDict):
    """Who a request acts as: an actor token's actor, or the admin (``actor`` null)."""

    actor: str | None
    admin: bool
