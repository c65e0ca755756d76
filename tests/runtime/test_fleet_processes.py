"""A fleet on PostgreSQL: one API-only ``openbot serve`` and two ``openbot worker`` processes.

200 messages over 20 bots and 10 threads are answered exactly once, never by two runs of one bot
in one thread at a time, and never past a bot's ceiling; then one worker is SIGKILLed mid-run:
its lease lapses, the run is failed with a notice, and its message is answered by the survivor.
The workers are started as `openbot worker` over one data dir: their node names (the runs' lease
owners) differ all the same.

The processes are real, so the test waits on their state (HTTP and SQL) with deadlines. The lease
lapse is written into the database instead of waited for: the processes run on the wall clock.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from conftest import PG_URL, reset_postgres
from live_server import LiveServer, clean_env, held_node_names, max_overlap, wait_until
from openbot.config import Settings
from openbot.runtime.scheduler import node
from openbot.store.db import sync_url

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PG_URL, reason="a fleet needs PostgreSQL (OPENBOT_TEST_DATABASE_URL)"),
]

BOTS = [f"f{i:02d}" for i in range(20)]
THREADS = 10
OPENBOT = Path(sys.executable).with_name("openbot")


@pytest.fixture
def fleet_env() -> dict[str, str]:
    assert PG_URL is not None
    asyncio.run(reset_postgres(PG_URL))
    return clean_env(OPENBOT_DATABASE_URL=PG_URL, OPENBOT_POLL_SECONDS="0.2")


@pytest.fixture
def api(tmp_path: Path, fleet_env: dict[str, str]) -> Iterator[LiveServer]:
    with LiveServer(tmp_path / "api", env={**fleet_env, "OPENBOT_RUN_WORKERS": "0"}) as server:
        yield server


@pytest.fixture
def workers(
    tmp_path: Path, fleet_env: dict[str, str], api: LiveServer
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two `openbot worker`s over one data dir, started one after the other: the first takes the
    default node name, the second the next free one (``<default>-2``)."""
    path = tmp_path / "workers.log"
    log = path.open("ab")
    command = [str(OPENBOT), "worker", "--data-dir", str(tmp_path / "workers")]
    base = node.default_name(Settings(data_dir=tmp_path / "workers"))
    procs: list[subprocess.Popen[bytes]] = []
    url = fleet_env["OPENBOT_DATABASE_URL"]
    try:
        for name in (base, f"{base}-2"):
            procs.append(subprocess.Popen(command, env=fleet_env, stdout=log, stderr=subprocess.STDOUT))
            try:
                wait_until(lambda name=name: name in held_node_names(url), f"{name} held", timeout=60)
            except AssertionError as exc:
                raise AssertionError(f"{exc}:\n{path.read_text()}") from None
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        log.close()


def _interval(run: dict[str, Any]) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(run["started_at"]), datetime.fromisoformat(run["finished_at"])


def test_two_workers_share_the_mail_and_one_takes_over_when_the_other_dies(
    api: LiveServer, workers: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    ceilings = {handle: 1 + i % 2 for i, handle in enumerate(BOTS)}
    for handle, ceiling in ceilings.items():
        body = {"handle": handle, "model": "scripted", "max_parallel_threads": ceiling}
        api.call("POST", "/bots", {**body, "model_settings": {"script": [], "delay_ms": 5}}, expect=201)
    threads = [
        api.call("POST", "/threads", {"title": f"fleet {i}"}, expect=201)["id"] for i in range(THREADS)
    ]
    posted = {
        api.call("POST", f"/threads/{t}/messages", {"content": f"@{h} task"}, expect=201)["message"]["id"]
        for t in threads
        for h in BOTS
    }
    assert len(posted) == 200

    def all_answered() -> list[dict[str, Any]] | None:
        runs = api.runs(status="completed")
        done = {m for r in runs for m in r["trigger_message_ids"]}
        return runs if posted <= done else None

    runs = wait_until(all_answered, "every message to be answered", timeout=120)
    triggers = [m for r in runs for m in r["trigger_message_ids"]]
    assert sorted(triggers) == sorted(posted)  # each message in exactly one run
    assert all(r["status"] == "completed" for r in api.runs())
    by_pair: dict[tuple[str, str], list[tuple[datetime, datetime]]] = defaultdict(list)
    by_bot: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for run in runs:
        by_pair[(run["bot"], run["thread_id"])].append(_interval(run))
        by_bot[run["bot"]].append(_interval(run))
    assert all(max_overlap(spans) == 1 for spans in by_pair.values())  # one run per bot and thread
    assert all(max_overlap(by_bot[bot]) <= ceilings[bot] for bot in by_bot)
    for thread_id in threads:
        messages = api.call("GET", f"/threads/{thread_id}/messages?limit=1000")["items"]
        replies = [m for m in messages if m["sender"] and m["sender"]["kind"] == "bot"]
        assert sorted(m["run_id"] for m in replies) == sorted(
            r["id"] for r in runs if r["thread_id"] == thread_id
        )

    base = node.default_name(Settings(data_dir=tmp_path / "workers"))
    names = [base, f"{base}-2"]  # workers[0], workers[1]
    assert {r["id"] for r in runs} and _lease_owners() <= set(names)  # the API process runs no bots
    _kill_a_worker_mid_run(api, workers, threads[0], names)


def _sql(query: str) -> set[str]:
    assert PG_URL is not None
    engine = create_engine(sync_url(PG_URL))
    try:
        with engine.begin() as conn:
            return set(conn.execute(text(query)).scalars())
    finally:
        engine.dispose()


def _lease_owners() -> set[str]:
    return _sql("SELECT DISTINCT lease_owner FROM runs")


def _kill_a_worker_mid_run(
    api: LiveServer, workers: list[subprocess.Popen[bytes]], thread_id: str, names: list[str]
) -> None:
    api.call("PATCH", "/bots/f00", {"model_settings": {"script": [], "delay_ms": 600_000}})
    slow = api.call("POST", f"/threads/{thread_id}/messages", {"content": "@f00 slow"}, expect=201)["message"]
    running = wait_until(lambda: api.runs(thread_id=thread_id, status="running"), "the slow run to start")
    (victim_run,) = running
    assert PG_URL is not None
    engine = create_engine(sync_url(PG_URL))
    try:
        with engine.begin() as conn:
            owner = conn.execute(
                text("SELECT lease_owner FROM runs WHERE id = :id"), {"id": victim_run["id"]}
            )
            index = names.index(owner.scalar_one())  # a worker ran it: the API runs no bots
            victim, survivor = workers[index], workers[1 - index]
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=30)
            api.call("PATCH", "/bots/f00", {"model_settings": {"script": [], "delay_ms": 5}})
            conn.execute(  # the dead worker's lease lapses (it can no longer renew it)
                text("UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id"),
                {"id": victim_run["id"]},
            )
    finally:
        engine.dispose()

    failed = wait_until(
        lambda: (run := api.call("GET", f"/runs/{victim_run['id']}"))["status"] == "failed" and run,
        "the dead worker's run to be failed",
    )
    assert failed["error"]["code"] == "interrupted"
    assert "its lease expired: the process running it (node " in failed["error"]["message"]

    def rerun() -> dict[str, Any] | None:
        done = api.runs(thread_id=thread_id, status="completed")
        return next((r for r in done if slow["id"] in r["trigger_message_ids"]), None)

    answer = wait_until(rerun, "the survivor to answer the message again")
    messages = api.call("GET", f"/threads/{thread_id}/messages?limit=1000")["items"]
    notices = [m for m in messages if m["metadata"].get("kind") == "run_failed"]
    assert [n["metadata"]["run_id"] for n in notices] == [victim_run["id"]]
    assert [m["run_id"] for m in messages if m["run_id"] == answer["id"] and m["sender"]] == [answer["id"]]
    assert survivor.poll() is None
