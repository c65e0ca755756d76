"""core.cron: next times in a time zone, and what a late pass owes (pure; a table and a property)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openbot.core.cron import Schedule, check_cron, latest_at_or_before, next_after, plan_due, zone
from openbot.core.errors import InvalidArgument


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("cron", "timezone", "after", "expected"),
    [
        ("*/5 * * * *", "UTC", utc(2026, 1, 1, 0, 0), utc(2026, 1, 1, 0, 5)),
        ("*/5 * * * *", "UTC", utc(2026, 1, 1, 0, 4, 59), utc(2026, 1, 1, 0, 5)),
        ("0 9 * * *", "Europe/Paris", utc(2026, 1, 1), utc(2026, 1, 1, 8)),  # CET: UTC+1
        ("0 9 * * *", "Europe/Paris", utc(2026, 7, 1), utc(2026, 7, 1, 7)),  # CEST: UTC+2
        ("0 9 * * 1-5", "UTC", utc(2026, 1, 2, 10), utc(2026, 1, 5, 9)),  # Friday after 9 → Monday
        ("30 2 * * *", "America/New_York", utc(2026, 3, 8, 5), utc(2026, 3, 8, 7)),  # 02:30 skipped by DST
    ],
)
def test_next_after(cron: str, timezone: str, after: datetime, expected: datetime) -> None:
    assert next_after(Schedule(cron=cron, timezone=timezone), after) == expected


def test_one_shots_and_bad_input() -> None:
    once = Schedule(at=utc(2026, 1, 1, 0, 0, 2))
    assert next_after(once, utc(2026, 1, 1)) == utc(2026, 1, 1, 0, 0, 2)
    assert next_after(once, utc(2026, 1, 1, 0, 0, 2)) is None
    assert latest_at_or_before(Schedule(cron="0 * * * *"), utc(2026, 1, 1, 3)) == utc(2026, 1, 1, 3)
    assert check_cron("  0  9 * *   * ") == "0 9 * * *"
    assert check_cron("0 0 29 2 *") == "0 0 29 2 *"  # leap years only, but it fires
    for bad in ("0 9 * *", "0 9 * * * *", "61 * * * *", "@daily", "every day", "0 0 31 2 *", "0 0 30 2 *"):
        with pytest.raises(InvalidArgument) as refused:
            check_cron(bad)
        assert refused.value.details["reason"] == "bad_cron"
    with pytest.raises(InvalidArgument) as refused:
        zone("Mars/Olympus")
    assert refused.value.details["reason"] == "bad_timezone"


@pytest.mark.parametrize(
    ("now", "scheduled_for", "missed", "next_run_at"),
    [
        (utc(2026, 1, 1, 0, 59), None, None, None),  # not due yet
        (utc(2026, 1, 1, 1, 0, 0), utc(2026, 1, 1, 1), False, utc(2026, 1, 1, 2)),  # on time
        (utc(2026, 1, 1, 1, 0, 59), utc(2026, 1, 1, 1), False, utc(2026, 1, 1, 2)),  # within grace
        (utc(2026, 1, 1, 1, 1, 0), utc(2026, 1, 1, 1), True, utc(2026, 1, 1, 2)),  # a minute late
        (utc(2026, 1, 1, 5, 30), utc(2026, 1, 1, 5), True, utc(2026, 1, 1, 6)),  # down across five
    ],
)
def test_plan_due(
    now: datetime, scheduled_for: datetime | None, missed: bool | None, next_run_at: datetime | None
) -> None:
    due = plan_due(Schedule(cron="0 * * * *"), utc(2026, 1, 1, 1), now)
    if scheduled_for is None:
        assert due is None
        return
    assert due is not None
    assert (due.scheduled_for, due.missed, due.next_run_at) == (scheduled_for, missed, next_run_at)


@given(
    cron=st.sampled_from(["* * * * *", "*/7 * * * *", "0 9 * * 1-5", "15 3 1 * *"]),
    timezone=st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"]),
    start_minutes=st.integers(0, 60 * 24 * 400),
    late_seconds=st.integers(0, 60 * 60 * 24 * 40),
)
def test_a_pass_owes_one_past_time_and_arms_a_future_one(
    cron: str, timezone: str, start_minutes: int, late_seconds: int
) -> None:
    schedule = Schedule(cron=cron, timezone=timezone)
    created = utc(2026, 1, 1) + timedelta(minutes=start_minutes)
    first = next_after(schedule, created)
    assert first is not None and first > created
    now = first + timedelta(seconds=late_seconds)
    due = plan_due(schedule, first, now)
    assert due is not None and first <= due.scheduled_for <= now
    assert due.next_run_at is not None and due.next_run_at > now
    assert due.missed == (due.scheduled_for > first or late_seconds >= 60)
