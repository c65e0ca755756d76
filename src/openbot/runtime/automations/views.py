"""The JSON shapes of automations and their occurrences (REST and journal use the same)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from typing_extensions import TypedDict

from openbot.store.models import Automation, AutomationOccurrence


class AutomationView(TypedDict):
    id: str
    bot: str
    owner: str
    kind: str
    title: str
    content: str
    cron: str | None
    at: str | None
    timezone: str
    thread_id: str | None
    enabled: bool
    catch_up: str
    next_run_at: str | None
    last_run_at: str | None
    created_at: str | None
    updated_at: str | None


class OccurrenceView(TypedDict):
    id: str
    automation_id: str
    scheduled_for: str | None
    status: str
    message_id: str | None
    thread_id: str | None
    error: dict[str, Any] | None
    fired_at: str | None


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def automation_view(row: Automation, bot: str, owner: str) -> AutomationView:
    return {
        "id": row.id,
        "bot": bot,
        "owner": owner,
        "kind": row.kind,
        "title": row.title,
        "content": row.content,
        "cron": row.cron,
        "at": iso(row.at),
        "timezone": row.timezone,
        "thread_id": row.thread_id,
        "enabled": row.enabled,
        "catch_up": row.catch_up,
        "next_run_at": iso(row.next_run_at),
        "last_run_at": iso(row.last_run_at),
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


def occurrence_view(row: AutomationOccurrence) -> OccurrenceView:
    return {
        "id": row.id,
        "automation_id": row.automation_id,
        "scheduled_for": iso(row.scheduled_for),
        "status": row.status,
        "message_id": row.message_id,
        "thread_id": row.thread_id,
        "error": row.error,
        "fired_at": iso(row.fired_at),
    }
