"""The automation tools (DESIGN §9): a bot schedules posts to itself.

``schedule_message`` (every bot) is a one-shot reminder in the run's own thread; the optional
``create_automation``, ``list_automations``, ``toggle_automation`` and ``delete_automation``
manage the bot's recurring automations, and see only the bot's own ones. A firing is posted as
the person who asked (the run's first human or external trigger sender, else ``@you``), addressed
to the bot, so it wakes the bot like that person's message would. Refusals come back to the model
as text (the same reasons the API gives), never as exceptions.
"""

from __future__ import annotations

from datetime import timedelta

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from sqlalchemy import select

from openbot.core.errors import OpenBotError
from openbot.runtime.access import DEFAULT_SPEAKER
from openbot.runtime.automations import definitions
from openbot.runtime.automations.commands import AutomationCreate, AutomationUpdate
from openbot.runtime.automations.views import AutomationView
from openbot.runtime.tools.context import RunContext, ToolEnv
from openbot.store.models import Actor, Automation, Message, Run

AUTOMATION_TOOLS = ("create_automation", "list_automations", "toggle_automation", "delete_automation")


async def _requester(env: ToolEnv) -> str:
    """Who the run is working for: its first trigger sent by a person (or ``@you``)."""
    async with env.db.read() as s:
        run = await s.get(Run, env.run_id)
        ids = list(run.trigger_message_ids or []) if run is not None else []
        handle = await s.scalar(
            select(Actor.handle)
            .join(Message, Message.sender_id == Actor.id)
            .where(Message.id.in_(ids), Actor.kind != "bot", Actor.deleted.is_(False))
            .order_by(Message.id)
            .limit(1)
        )
    return handle or DEFAULT_SPEAKER


def _line(view: AutomationView) -> str:
    when = f"cron '{view['cron']}' {view['timezone']}" if view["cron"] else f"at {view['at']}"
    state = "enabled" if view["enabled"] else "disabled"
    return f"{view['id']}: {when}, {state}, next {view['next_run_at'] or '-'}: {view['content'][:80]!r}"


async def _create(env: ToolEnv, command: AutomationCreate) -> str:
    try:
        async with env.db.transaction() as s:
            row = await definitions.create(s, command, await _requester(env))
            view = await definitions.view(s, row.id)
    except OpenBotError as exc:
        return f"Refused: {exc.message}"
    return f"Scheduled {_line(view)}"


@tool
async def schedule_message(
    content: str,
    runtime: ToolRuntime[RunContext],
    at: str | None = None,
    in_seconds: float | None = None,
    timezone: str = "UTC",
) -> str:
    """Post `content` to yourself in this thread once, later: at `at` (ISO 8601 time, read in
    `timezone` when it has no offset) or in `in_seconds` seconds. Use it for reminders and
    follow-ups; you will be woken with that message."""
    env: ToolEnv = runtime.context.env
    if (at is None) == (in_seconds is None):
        return "Refused: give exactly one of 'at' and 'in_seconds'."
    if in_seconds is not None:
        at = (env.db.clock.now() + timedelta(seconds=max(1.0, float(in_seconds)))).isoformat()
    command = AutomationCreate(
        bot=env.bot_handle, content=content, at=at, timezone=timezone, thread_id=env.thread_id
    )
    return await _create(env, command)


@tool
async def create_automation(
    content: str,
    cron: str,
    runtime: ToolRuntime[RunContext],
    timezone: str = "UTC",
    title: str = "",
    new_thread: bool = False,
) -> str:
    """Post `content` to yourself on a schedule: `cron` is a 5-field cron expression (minute hour
    day month weekday) read in the IANA `timezone`. Posts go to this thread, or to a new thread at
    each firing with `new_thread`."""
    env: ToolEnv = runtime.context.env
    command = AutomationCreate(
        bot=env.bot_handle,
        content=content,
        cron=cron,
        timezone=timezone,
        title=title or None,
        thread_id=None if new_thread else env.thread_id,
    )
    return await _create(env, command)


@tool
async def list_automations(runtime: ToolRuntime[RunContext], enabled_only: bool = False) -> str:
    """List your automations: id, schedule, whether enabled, next run, content."""
    env: ToolEnv = runtime.context.env
    async with env.db.read() as s:
        views = await definitions.list_views(s, bot=env.bot_handle)
    shown = [v for v in views if v["enabled"] or not enabled_only]
    return "\n".join(_line(v) for v in shown) or "You have no automations."


async def _own(env: ToolEnv, automation_id: str) -> str | None:
    """None when the automation is this bot's; else the refusal to return."""
    async with env.db.read() as s:
        row = await s.get(Automation, automation_id)
    if row is None or row.bot_id != env.bot_id:
        return f"Refused: you have no automation {automation_id}."
    return None


@tool
async def toggle_automation(automation_id: str, enabled: bool, runtime: ToolRuntime[RunContext]) -> str:
    """Enable or disable one of your automations."""
    env: ToolEnv = runtime.context.env
    refused = await _own(env, automation_id)
    if refused:
        return refused
    try:
        async with env.db.transaction() as s:
            await definitions.update(s, automation_id, AutomationUpdate(enabled=enabled))
            view = await definitions.view(s, automation_id)
    except OpenBotError as exc:
        return f"Refused: {exc.message}"
    return _line(view)


@tool
async def delete_automation(automation_id: str, runtime: ToolRuntime[RunContext]) -> str:
    """Delete one of your automations."""
    env: ToolEnv = runtime.context.env
    refused = await _own(env, automation_id)
    if refused:
        return refused
    async with env.db.transaction() as s:
        await definitions.delete(s, automation_id)
    return f"Deleted {automation_id}."


__all__ = [
    "AUTOMATION_TOOLS",
    "create_automation",
    "delete_automation",
    "list_automations",
    "schedule_message",
    "toggle_automation",
]
