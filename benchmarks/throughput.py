"""Scenario ``throughput``: runs per second through the in-process runtime, bots × threads at once.

Each measurement starts a fresh ``Runtime`` (SQLite in a temporary directory, or the PostgreSQL
database named by ``OPENBOT_BENCH_DATABASE_URL``, emptied first) with the garbage collector tuned
as ``openbot serve`` tunes it (``runtime.heap``), creates the bots ``b00…`` and the
threads, then posts one human message per (bot, thread) pair mentioning that bot and waits with
``rt.system.run_until_idle()``. Every post wakes exactly one bot and makes exactly one run, and
the bots' default reply mentions nobody, so ``expected runs = bots × threads``.

Two ways in:

- ``posted_one_by_one``: one transaction per post, as ``POST /threads/{id}/messages`` does, while
  the workers already run; the clock covers the posts and the runs.
- ``preloaded``: every post in one transaction; the clock starts when it commits (pure run
  throughput: the workers have the whole backlog from the first instant).
- ``over_http`` (SQLite): what a user measures from outside. A real ``openbot serve``; the bots
  and threads are made through the API, then ``HTTP_CLIENTS`` clients POST the messages (one per
  pair, as fast as they are answered) and the clock stops when ``GET /api/v1/status`` shows the
  system idle (polled every ``STATUS_POLL`` seconds). The server's own CPU comes from ``/proc``.

While the clock runs, the process's CPU time, SQL statements, transactions and checkpointer calls
are counted (counting costs a few microseconds a statement) and reported per run. ``cpu_ms`` per
run bounds throughput: one event loop runs everything, so runs/s cannot exceed 1000 / cpu_ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event, func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from benchmarks.server import running_server
from openbot.config import Settings
from openbot.runtime import heap, threads
from openbot.runtime.commands import BotCreate, ThreadCreate
from openbot.runtime.engine import Runtime
from openbot.runtime.team import create_bot
from openbot.store import driver
from openbot.store.db import Database
from openbot.store.migrate import upgrade
from openbot.store.models import Actor, Base, Message, Run

log = logging.getLogger(__name__)

SLOTS = (4, 8, 16)
HTTP_CLIENTS = 8
STATUS_POLL = 0.05
SAVER_METHODS = ("aget_tuple", "aput", "aput_writes", "adelete_thread")
IDLE_TIMEOUT = 180.0
_CHECKPOINT_TABLES = (
    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'checkpoint%'"
)


@dataclass(frozen=True)
class Load:
    bots: int
    threads: int

    @property
    def runs(self) -> int:
        return self.bots * self.threads


FULL = Load(bots=20, threads=10)
QUICK = Load(bots=10, threads=5)


def engines(db: Database) -> list[AsyncEngine]:
    """The runtime's engines: SQLite may read through a second pool of its own."""
    read = getattr(db, "read_engine", db.engine)
    return [db.engine] if read is db.engine else [db.engine, read]


class DbCounter:
    """Counts SQL statements and transactions on a database's engines while attached; on
    PostgreSQL also round trips to the server (each ORM statement, each batch the fast path
    sends, each commit not sent with the last writes, each rollback: what a run waits on the
    network for)."""

    def __init__(self, db: Database) -> None:
        self._engines = [engine.sync_engine for engine in engines(db)]
        self.counts: Counter[str] = Counter()
        self._networked = db.dialect.shared
        trips = ["round_trips"] if self._networked else []
        self._hooks: list[tuple[str, Callable[..., None]]] = [
            ("before_cursor_execute", lambda *_args: self.counts.update(["statements", *trips])),
            ("begin", lambda *_args: self.counts.update(["transactions"])),
            # A COMMIT's round trip is counted by the driver: alone, or with the last writes.
            ("commit", lambda *_args: self.counts.update(["commits"])),
            ("rollback", self._rolled_back),
        ]

    def __enter__(self) -> DbCounter:
        for engine in self._engines:
            for name, hook in self._hooks:
                event.listen(engine, name, hook)
        driver.statement_listeners.append(self._sent)
        driver.trip_listeners.append(self._trip)
        return self

    def _rolled_back(self, connection: Any) -> None:
        # A rollback with no transaction open on the server (autocommit reads) sends nothing.
        if self._networked and driver.in_transaction(connection):
            self.counts.update(["round_trips"])

    def _sent(self, *_statement: Any) -> None:
        self.counts.update(["statements"])

    def _trip(self, _statements: int) -> None:
        self.counts.update(["round_trips"])

    def __exit__(self, *_exc: object) -> None:
        driver.trip_listeners.remove(self._trip)
        driver.statement_listeners.remove(self._sent)
        for engine in self._engines:
            for name, hook in self._hooks:
                event.remove(engine, name, hook)


def count_calls(target: Any, names: tuple[str, ...]) -> Counter[str]:
    """Wrap async methods of one object so each call is counted (the object keeps working)."""
    counts: Counter[str] = Counter()

    def wrap(name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return await method(*args, **kwargs)

        return counted

    for name in names:
        setattr(target, name, wrap(name, getattr(target, name)))
    return counts


async def reset_postgres(url: str) -> None:
    """Migrate, then empty every table (ours and the checkpointer's): a fresh install each time."""
    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    try:
        async with db.engine.begin() as conn:
            ours = [t.name for t in Base.metadata.sorted_tables]
            found = await conn.execute(text(_CHECKPOINT_TABLES))
            theirs = [row[0] for row in found if row[0] != "checkpoint_migrations"]
            await conn.execute(text(f"TRUNCATE {', '.join(ours + theirs)} RESTART IDENTITY CASCADE"))
    finally:
        await db.dispose()


async def post_mention(rt: Runtime, session: AsyncSession, thread_id: str, handle: str) -> None:
    """Post as the API does (``ThreadService.post``): the thread and the sender in one read."""
    thread, sender = await threads.thread_and_actor(session, thread_id, "you")
    assert sender is not None
    result = await rt.delivery.post(session, thread, f"@{handle} please take this", sender=sender)
    if result.addressed != [handle]:
        raise RuntimeError(f"a post to @{handle} woke {result.addressed}")


async def setup_load(rt: Runtime, load: Load) -> tuple[list[str], list[str]]:
    handles = [f"b{i:02d}" for i in range(load.bots)]
    async with rt.db.transaction() as s:
        for handle in handles:
            await create_bot(s, BotCreate(handle=handle, model="scripted"))
        thread_ids = [
            (await threads.create_thread(s, ThreadCreate(title=f"load {i}"))).id for i in range(load.threads)
        ]
    return handles, thread_ids


async def _verify(rt: Runtime, handles: list[str], expected: int) -> dict[str, Any]:
    async with rt.db.read() as s:
        statuses = dict((await s.execute(select(Run.status, func.count()).group_by(Run.status))).all())
        replies = await s.scalar(
            select(func.count())
            .select_from(Message)
            .join(Actor, Actor.id == Message.sender_id)
            .where(Actor.handle.in_(handles))
        )
    completed = int(statuses.get("completed", 0))
    return {
        "runs_expected": expected,
        "runs_completed": completed,
        "runs_by_status": {str(k): int(v) for k, v in statuses.items()},
        "bot_replies": int(replies or 0),
        "all_completed": completed == expected and sum(statuses.values()) == expected and replies == expected,
    }


async def measure(settings: Settings, load: Load, preloaded: bool) -> dict[str, Any]:
    if settings.database_url:
        await reset_postgres(settings.database_url)
    async with Runtime(settings) as rt, settled_heap():
        handles, thread_ids = await setup_load(rt, load)
        pairs = [(t, h) for t in thread_ids for h in handles]
        saver = rt.runner.checkpointer
        saver_calls = count_calls(saver, SAVER_METHODS)
        # Since dbd68ba the runner's saver keeps running transcripts in memory in front of the durable
        # one; count what reaches the database separately.
        durable = getattr(saver, "durable", saver)
        durable_calls = count_calls(durable, SAVER_METHODS) if durable is not saver else saver_calls
        with DbCounter(rt.db) as db_counts:
            cpu_start = time.process_time()
            start = time.perf_counter()
            if preloaded:
                async with rt.db.transaction() as s:
                    for thread_id, handle in pairs:
                        await post_mention(rt, s, thread_id, handle)
                start = time.perf_counter()  # committed: the workers start now
            else:
                for thread_id, handle in pairs:
                    async with rt.db.transaction() as s:
                        await post_mention(rt, s, thread_id, handle)
            posted = time.perf_counter()
            await rt.system.run_until_idle(timeout=IDLE_TIMEOUT)
            wall = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
        check = await _verify(rt, handles, load.runs)
    runs = check["runs_completed"]
    return {
        "runs_per_second": round(runs / wall, 1),
        "wall_seconds": round(wall, 3),
        "post_seconds": 0.0 if preloaded else round(posted - start, 3),
        **check,
        "per_run": {
            "cpu_ms": round(cpu * 1000 / load.runs, 1),
            **{f"db_{k}": round(v / load.runs, 1) for k, v in sorted(db_counts.counts.items())},
            "checkpointer_calls": _per_run(saver_calls, load.runs),
            "durable_checkpointer_calls": _per_run(durable_calls, load.runs),
        },
    }


@contextlib.asynccontextmanager
async def settled_heap() -> AsyncIterator[None]:
    """The garbage collector as ``openbot serve`` and ``openbot worker`` tune it once their runtime
    is up (``runtime.heap``), put back afterwards."""
    thresholds = gc.get_threshold()
    heap.settle()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def _per_run(counts: Counter[str], runs: int) -> dict[str, float]:
    return {name: round(counts[name] / runs, 1) for name in SAVER_METHODS}


async def run_backend(database_url: str | None, load: Load) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for slots in SLOTS:
        row: dict[str, Any] = {}
        for preloaded in (False, True):
            name = "preloaded" if preloaded else "posted_one_by_one"
            with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
                settings = Settings(
                    data_dir=Path(tmp) / "data", database_url=database_url, max_concurrent_runs=slots
                )
                row[name] = await measure(settings, load, preloaded)
            log.info(
                "throughput: %s slots=%d %s: %.1f runs/s, all completed: %s",
                "postgresql" if database_url else "sqlite",
                slots,
                name,
                row[name]["runs_per_second"],
                row[name]["all_completed"],
            )
        report[f"max_concurrent_runs_{slots}"] = row
    return report


async def over_http(load: Load) -> dict[str, Any]:
    """The load through a real server's API (SQLite, default settings); see the module docstring."""
    async with running_server() as server, httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        handles = [f"b{i:02d}" for i in range(load.bots)]
        for handle in handles:
            (await client.post("/api/v1/bots", json={"handle": handle, "name": handle})).raise_for_status()
        thread_ids = []
        for i in range(load.threads):
            created = await client.post("/api/v1/threads", json={"title": f"load {i}"})
            thread_ids.append(created.raise_for_status().json()["id"])
        pairs = [(t, h) for t in thread_ids for h in handles]

        async def post_some() -> None:
            while pairs:
                thread_id, handle = pairs.pop()
                url = f"/api/v1/threads/{thread_id}/messages"
                (await client.post(url, json={"content": f"@{handle} please take this"})).raise_for_status()

        cpu = server.cpu_seconds() or 0.0
        start = time.perf_counter()
        await asyncio.gather(*(post_some() for _ in range(HTTP_CLIENTS)))
        posted = time.perf_counter()
        # The server is another process: asking it is the only way to know it is idle.
        while not _idle((await client.get("/api/v1/status")).json()):  # noqa: ASYNC110
            await asyncio.sleep(STATUS_POLL)
        wall = time.perf_counter() - start
        cpu = (server.cpu_seconds() or 0.0) - cpu
        done = await client.get("/api/v1/runs", params={"status": "completed", "limit": load.runs})
    completed = len(done.raise_for_status().json()["items"])
    return {
        "runs_per_second": round(completed / wall, 1),
        "wall_seconds": round(wall, 3),
        "post_seconds": round(posted - start, 3),
        "clients": HTTP_CLIENTS,
        "runs_completed": completed,
        "all_completed": completed == load.runs,
        "server_cpu_ms_per_run": round(cpu * 1000 / load.runs, 2),
    }


def _idle(status: dict[str, Any]) -> bool:
    runs, mail = status["runs"], status["mailboxes"]
    return not (runs["queued"] or runs["running"] or mail["queued"] or mail["processing"])


async def run(load: Load, postgres_url: str | None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "load": {"bots": load.bots, "threads": load.threads, "runs_expected": load.runs},
        "runs_per_second": "completed runs / wall seconds",
        "sqlite": await run_backend(None, load),
    }
    report["sqlite"]["over_http"] = await over_http(load)
    log.info("throughput: sqlite over http: %.1f runs/s", report["sqlite"]["over_http"]["runs_per_second"])
    if postgres_url:
        report["postgresql"] = await run_backend(postgres_url, load)
    else:
        report["postgresql"] = {"skipped": "set OPENBOT_BENCH_DATABASE_URL to measure PostgreSQL"}
    return report
