"""Cron maths for automations: when a schedule fires next, and what a late pass owes (pure).

A schedule is a standard 5-field cron expression read in an IANA time zone (so "0 9 * * *" in
``Europe/Paris`` is nine o'clock there, across daylight-saving changes), or one instant ``at``.

:func:`plan_due` decides what one pass of the scheduler does with an automation whose
``next_run_at`` has come: fire it on time, or — when the pass is late by more than a grace period,
or several scheduled times passed (the server was down) — treat it as *missed*: the runtime then
fires it once (``catch_up: "once"``, recorded ``caught_up``) or records it ``skipped``. Either way
a backlog collapses into one occurrence, at the latest time that was due.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter  # type: ignore[import-untyped]

from openbot.core.errors import InvalidArgument

#: A pass this late (or later) after a scheduled time counts as a missed firing.
GRACE = timedelta(seconds=60)
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class Schedule:
    cron: str | None = None
    at: datetime | None = None
    timezone: str = "UTC"


@dataclass(frozen=True)
class Due:
    """What a pass owes an automation: one occurrence at ``scheduled_for``; ``next_run_at`` after it
    (None: a one-shot is done)."""

    scheduled_for: datetime
    missed: bool
    next_run_at: datetime | None


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``, or a 422 (``details.reason = "bad_timezone"``)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidArgument(
            f"unknown time zone {name!r} (an IANA name such as 'Europe/Paris')",
            {"field": "timezone", "reason": "bad_timezone"},
        ) from exc


def check_cron(expression: str) -> str:
    """A valid 5-field cron expression (minute hour day month weekday), stripped; else a 422."""
    text = " ".join(expression.split())
    if len(text.split(" ")) != 5 or not croniter.is_valid(text):
        raise InvalidArgument(
            f"{expression!r} is not a 5-field cron expression (minute hour day month weekday)",
            {"field": "cron", "reason": "bad_cron"},
        )
    try:  # valid, yet never due ("0 0 31 2 *": February has no 31st)
        croniter(text, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterBadDateError as exc:
        raise InvalidArgument(
            f"{expression!r} never fires (no such date)", {"field": "cron", "reason": "bad_cron"}
        ) from exc
    return text


def next_after(schedule: Schedule, after: datetime) -> datetime | None:
    """The first scheduled time strictly after ``after`` (UTC), or None when there is none."""
    if schedule.cron is None:
        return schedule.at if schedule.at is not None and schedule.at > after else None
    local = after.astimezone(zone(schedule.timezone))
    found: datetime = croniter(schedule.cron, local).get_next(datetime)
    return found.astimezone(UTC)


def latest_at_or_before(schedule: Schedule, moment: datetime) -> datetime | None:
    """The last scheduled time at or before ``moment`` (UTC)."""
    if schedule.cron is None:
        return schedule.at if schedule.at is not None and schedule.at <= moment else None
    local = (moment + _TICK).astimezone(zone(schedule.timezone))
    found: datetime = croniter(schedule.cron, local).get_prev(datetime)
    return found.astimezone(UTC)


def plan_due(
    schedule: Schedule, next_run_at: datetime, now: datetime, grace: timedelta = GRACE
) -> Due | None:
    """What a pass at ``now`` owes an automation due at ``next_run_at`` (None: nothing yet)."""
    if next_run_at > now:
        return None
    latest = latest_at_or_before(schedule, now) or next_run_at
    latest = max(latest, next_run_at)
    missed = latest > next_run_at or now - latest >= grace
    return Due(scheduled_for=latest, missed=missed, next_run_at=next_after(schedule, now))
