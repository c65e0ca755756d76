"""Two ``openbot serve`` processes on one PostgreSQL database, both running the automation
scheduler with a 50 ms poll: every scheduled time fires exactly once.

The processes run on the wall clock, so the automations are due a few seconds ahead and the test
waits on their state over HTTP with a deadline.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import PG_URL, reset_postgres
from live_server import LiveServer, clean_env, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PG_URL, reason="two processes need PostgreSQL (OPENBOT_TEST_DATABASE_URL)"),
]

AUTOMATIONS = 12


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[LiveServer, LiveServer]]:
    assert PG_URL is not None
    asyncio.run(reset_postgres(PG_URL))
    env = clean_env(OPENBOT_DATABASE_URL=PG_URL, OPENBOT_SCHEDULER_POLL_SECONDS="0.05")
    with LiveServer(tmp_path / "a", env=env) as first, LiveServer(tmp_path / "b", env=env) as second:
        yield first, second


def test_two_processes_fire_each_scheduled_time_once(servers: tuple[LiveServer, LiveServer]) -> None:
    first, second = servers
    thread = first.thread("fleet of schedules", "you", "engineer")
    # Far enough ahead that twelve POSTs finish before it even on a loaded 2-core machine (at 4 s
    # the last ones were refused as "in the past" under a load average of 8).
    due = (datetime.now(UTC) + timedelta(seconds=10)).isoformat()
    made = [
        first.call(
            "POST",
            "/automations",
            {"bot": "engineer", "content": f"job {i}", "at": due, "thread_id": thread},
            expect=201,
        )["id"]
        for i in range(AUTOMATIONS)
    ]
    assert {a["id"] for a in second.call("GET", "/automations")["items"]} == set(made)

    def fired() -> list[dict[str, object]]:
        return [o for a in made for o in second.call("GET", f"/automations/{a}/occurrences")["items"]]

    wait_until(lambda: len(fired()) >= AUTOMATIONS, "every automation fired", timeout=60)
    occurrences = fired()
    assert Counter(str(o["automation_id"]) for o in occurrences) == Counter(made)
    assert {o["status"] for o in occurrences} == {"fired"}
    posted = [m for m in first.messages(thread) if m["metadata"].get("kind") == "automation"]
    assert sorted(m["id"] for m in posted) == sorted(str(o["message_id"]) for o in occurrences)
    assert all(not a["enabled"] for a in first.call("GET", "/automations")["items"])
