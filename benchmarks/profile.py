"""Where the time goes: per-phase timers over a run, and pyinstrument reports of the scenarios.

    python -m benchmarks.profile phases [--bots 10] [--threads 10] [--slots 1] [--one-by-one]
    python -m benchmarks.profile statement               # one SELECT through the ORM vs sqlite3
    python -m benchmarks.profile throughput [--out DIR]   # needs pyinstrument
    python -m benchmarks.profile server [--out DIR]       # needs pyinstrument

Reports go to ``$TMPDIR/openbot-profiles`` unless ``--out`` says otherwise; open a ``.pyisession``
with ``pyinstrument --load FILE -r html``.

``phases`` preloads one mention per (bot, thread) pair, then times the runtime's steps while the
workers drain it: wall and main-thread CPU per call, and SQL statements per call (from a
statement counter, so the numbers are exact only with ``--slots 1``, when steps do not overlap).
It wraps methods by name and restores them afterwards; a step the runtime no longer has is skipped.

pyinstrument samples the main thread. SQLAlchemy's asyncio layer runs ORM code in greenlets, and a
sampler sees a greenlet's stack without the coroutine that awaits it: ORM time shows up as
top-level ``Session.*`` frames rather than under the step that issued it — read the phase table
for attribution and the pyinstrument report for what happens inside a step.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, event, make_url, select, text
from sqlalchemy.orm import Session

from benchmarks import hop, throughput
from benchmarks.server import running_server
from benchmarks.stats import summarize
from openbot.config import Settings
from openbot.runtime.engine import Runtime
from openbot.runtime.runner import runner
from openbot.runtime.runs import outcome
from openbot.runtime.scheduler import execution, system
from openbot.store import driver
from openbot.store.db import sync_url
from openbot.store.models import Actor

# (label, where the callable lives, attribute): nested steps are indented under their caller.
Target = Callable[[Runtime], Any]
STEPS: list[tuple[str, Target, str]] = [
    ("Delivery.post", lambda rt: rt.delivery, "post"),
    ("ActorSystem.claim", lambda rt: rt.system, "claim"),
    ("  runs.claim_next", lambda rt: system, "claim_next"),
    ("Runner.execute", lambda rt: rt.runner, "execute"),
    ("  runner.prepare", lambda rt: runner, "prepare"),
    ("  runner.build_chat_model", lambda rt: runner, "build_chat_model"),
    ("  AgentCache.agent_for", lambda rt: rt.runner.agents, "agent_for"),
    ("runs.finish", lambda rt: execution, "finish"),
    ("  runs.add_run_event", lambda rt: outcome, "add_run_event"),
    ("  runs.release_holds", lambda rt: outcome, "release_holds"),
    ("Runner.forget", lambda rt: rt.runner, "forget"),
]


@dataclass
class Step:
    calls: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    statements: int = 0


class PhaseTimers:
    """Wall time, main-thread CPU and SQL statements of each step in ``STEPS``, while installed."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.steps: dict[str, Step] = {}
        self.statements = 0
        self.skipped: list[str] = []

    @contextmanager
    def installed(self) -> Iterator[PhaseTimers]:
        restore: list[tuple[Any, str, Any, bool]] = []
        watched = [engine.sync_engine for engine in throughput.engines(self.rt.db)]
        for engine in watched:
            event.listen(engine, "before_cursor_execute", self._count)
        driver.statement_listeners.append(self._count)
        try:
            for label, where, name in STEPS:
                owner = where(self.rt)
                original = getattr(owner, name, None)
                if original is None:
                    self.skipped.append(label.strip())
                    continue
                restore.append((owner, name, original, name in vars(owner)))
                setattr(owner, name, self._timed(label, original))
            yield self
        finally:
            driver.statement_listeners.remove(self._count)
            for engine in watched:
                event.remove(engine, "before_cursor_execute", self._count)
            for owner, name, original, own in reversed(restore):
                if own:  # a module function or an instance attribute: put it back
                    setattr(owner, name, original)
                else:  # our wrapper shadowed a method of the class: remove it
                    delattr(owner, name)

    def _count(self, *_args: Any) -> None:
        self.statements += 1

    def _timed(self, label: str, original: Callable[..., Any]) -> Callable[..., Any]:
        step = self.steps.setdefault(label, Step())

        def record(wall: float, cpu: float, statements: int) -> None:
            step.calls += 1
            step.wall += time.perf_counter() - wall
            step.cpu += time.thread_time() - cpu
            step.statements += self.statements - statements

        if inspect.iscoroutinefunction(original):

            @wraps(original)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                marks = time.perf_counter(), time.thread_time(), self.statements
                try:
                    return await original(*args, **kwargs)
                finally:
                    record(*marks)

            return timed_async

        @wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            marks = time.perf_counter(), time.thread_time(), self.statements
            try:
                return original(*args, **kwargs)
            finally:
                record(*marks)

        return timed

    def reset(self) -> None:
        for step in self.steps.values():
            step.calls, step.wall, step.cpu, step.statements = 0, 0.0, 0.0, 0

    def table(self, runs_done: int) -> list[dict[str, Any]]:
        rows = []
        for label, _where, _name in STEPS:
            step = self.steps.get(label)
            if step is None or not step.calls:
                continue
            rows.append(
                {
                    "step": label,
                    "calls_per_run": round(step.calls / runs_done, 2),
                    "wall_ms_per_call": round(step.wall * 1000 / step.calls, 2),
                    "cpu_ms_per_call": round(step.cpu * 1000 / step.calls, 2),
                    "statements_per_call": round(step.statements / step.calls, 1),
                }
            )
        return rows


async def phases(
    load: throughput.Load, slots: int, one_by_one: bool, database_url: str | None = None
) -> dict[str, Any]:
    """Time the runtime's steps while the workers drain ``load``.

    By default every post is committed at once and only the workers' steps are timed. With
    ``one_by_one`` each post is its own transaction and waits for its run before the next: an
    in-process hop (no HTTP, no SSE), posts included in the table. With ``database_url`` the
    runtime runs on that PostgreSQL database (emptied first).
    """
    hops: list[float] = []
    if database_url:
        await throughput.reset_postgres(database_url)
    with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", database_url=database_url, max_concurrent_runs=slots)
        async with Runtime(settings) as rt:
            handles, thread_ids = await throughput.setup_load(rt, load)
            pairs = [(t, h) for t in thread_ids for h in handles]
            timers = PhaseTimers(rt)
            with timers.installed():
                statements = timers.statements
                cpu, thread_cpu, wall = time.process_time(), time.thread_time(), time.perf_counter()
                if one_by_one:
                    for thread_id, handle in pairs:
                        start = time.perf_counter()
                        async with rt.db.transaction() as s:
                            await throughput.post_mention(rt, s, thread_id, handle)
                        await rt.system.run_until_idle(timeout=throughput.IDLE_TIMEOUT)
                        hops.append((time.perf_counter() - start) * 1000)
                else:
                    async with rt.db.transaction() as s:
                        for thread_id, handle in pairs:
                            await throughput.post_mention(rt, s, thread_id, handle)
                        timers.reset()  # from here on only what the workers do is timed
                        statements = timers.statements
                        cpu, thread_cpu, wall = time.process_time(), time.thread_time(), time.perf_counter()
                    await rt.system.run_until_idle(timeout=throughput.IDLE_TIMEOUT)
                wall = time.perf_counter() - wall
                cpu, thread_cpu = time.process_time() - cpu, time.thread_time() - thread_cpu
                statements = timers.statements - statements
    report: dict[str, Any] = {
        "runs": load.runs,
        "max_concurrent_runs": slots,
        "posts": "one by one, each waiting for its run" if one_by_one else "all committed at once, untimed",
        "runs_per_second": round(load.runs / wall, 1),
        "per_run": {
            "wall_ms": round(wall * 1000 / load.runs, 2),
            "process_cpu_ms": round(cpu * 1000 / load.runs, 2),
            "main_thread_cpu_ms": round(thread_cpu * 1000 / load.runs, 2),
            "sql_statements": round(statements / load.runs, 1),
        },
        "steps": timers.table(load.runs),
        "skipped_steps": timers.skipped,
    }
    if hops:
        report["in_process_hop_ms"] = summarize(hops)
    return report


async def statement_cost(count: int = 2000) -> dict[str, Any]:
    """What one small SELECT costs through the runtime's async session, a sync one, and ``sqlite3``."""
    with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        async with Runtime(settings) as rt:
            async with rt.db.read() as s:
                ids = list(await s.scalars(select(Actor.id)))
            out: dict[str, Any] = {}

            async def orm_get(s: Any, actor_id: str) -> None:
                s.expunge_all()  # a fresh session's get, not an identity-map hit
                await s.get(Actor, actor_id)

            async def orm_select(s: Any, actor_id: str) -> None:
                await s.scalar(select(Actor).where(Actor.id == actor_id))

            async def core_text(s: Any, actor_id: str) -> None:
                await s.execute(text("SELECT id, handle FROM actors WHERE id = :id"), {"id": actor_id})

            for name, query in (("orm_get", orm_get), ("orm_select", orm_select), ("core_text", core_text)):
                async with rt.db.read() as s:
                    out[name] = await _cost(count, lambda i, s=s, query=query: query(s, ids[i % len(ids)]))

            async def session_round_trip(_i: int) -> None:
                async with rt.db.read() as s:
                    await s.execute(text("SELECT 1"))

            out["session_open_select_close"] = await _cost(count, session_round_trip)
            url = rt.db.url
        out.update(await asyncio.to_thread(_sync_costs, url, ids, count))
    return out


def _sync_costs(url: str, ids: list[str], count: int) -> dict[str, Any]:
    """The same SELECTs through a synchronous SQLAlchemy session, and through ``sqlite3``."""
    out: dict[str, Any] = {}
    engine = create_engine(sync_url(url))
    with Session(engine) as s:
        queries: dict[str, Callable[[str], Any]] = {
            "sync_orm_select": lambda actor_id: s.scalar(select(Actor).where(Actor.id == actor_id)),
            "sync_core_text": lambda actor_id: s.execute(
                text("SELECT id, handle FROM actors WHERE id = :id"), {"id": actor_id}
            ).all(),
        }
        for name, query in queries.items():
            start = time.perf_counter()
            for i in range(count):
                query(ids[i % len(ids)])
            out[name] = {"wall_us": round((time.perf_counter() - start) / count * 1e6, 1)}
    engine.dispose()
    database = make_url(url).database
    assert database is not None
    with closing(sqlite3.connect(database)) as conn:
        start = time.perf_counter()
        for i in range(count):
            conn.execute("SELECT * FROM actors WHERE id = ?", (ids[i % len(ids)],)).fetchall()
        out["raw_sqlite3"] = {"wall_us": round((time.perf_counter() - start) / count * 1e6, 1)}
    return out


async def _cost(count: int, call: Callable[[int], Awaitable[None]]) -> dict[str, float]:
    cpu, wall = time.thread_time(), time.perf_counter()
    for i in range(count):
        await call(i)
    return {
        "wall_us": round((time.perf_counter() - wall) / count * 1e6, 1),
        "main_thread_cpu_us": round((time.thread_time() - cpu) / count * 1e6, 1),
    }


def _profiler() -> Any:
    try:
        from pyinstrument import Profiler
    except ImportError:
        sys.exit("pyinstrument is not installed: .venv/bin/pip install pyinstrument")
    return Profiler(interval=0.0005, async_mode="disabled")


async def profile_throughput(out: Path, load: throughput.Load, slots: int) -> list[Path]:
    profiler = _profiler()
    with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", max_concurrent_runs=slots)
        profiler.start()
        result = await throughput.measure(settings, load, preloaded=True)
        profiler.stop()
    print(f"{result['runs_per_second']} runs/s under the profiler", file=sys.stderr)
    html, text = out / "throughput.html", out / "throughput.txt"
    html.write_text(profiler.output_html())
    text.write_text(profiler.output_text(show_all=False))
    return [html, text]


async def profile_server(out: Path, hops: int) -> list[Path]:
    _profiler()  # fail early when pyinstrument is missing
    from pyinstrument.renderers import ConsoleRenderer
    from pyinstrument.session import Session

    session_file = out / "server.pyisession"
    wrapper = ("-m", "pyinstrument", "-i", "0.0005", "-r", "pyisession", "-o", str(session_file))
    async with (
        running_server(wrapper) as server,
        httpx.AsyncClient(base_url=server.url, timeout=30) as client,
    ):
        await hop.fresh_thread_per_block(client, hops)
    text = out / "server.txt"
    text.write_text(ConsoleRenderer(time="percent_of_total").render(Session.load(session_file)))
    return [session_file, text]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["phases", "statement", "throughput", "server"])
    parser.add_argument("--bots", type=int, default=10)
    parser.add_argument("--threads", type=int, default=10)
    parser.add_argument("--slots", type=int, default=1, help="MAX_CONCURRENT_RUNS")
    parser.add_argument("--one-by-one", action="store_true", help="phases: post and wait, run by run")
    parser.add_argument("--hops", type=int, default=200, help="hops for the server profile")
    parser.add_argument(
        "--postgres", action="store_true", help="phases on OPENBOT_BENCH_DATABASE_URL (emptied first)"
    )
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "openbot-profiles")
    args = parser.parse_args()
    load = throughput.Load(bots=args.bots, threads=args.threads)
    if args.what == "phases":
        url = os.environ["OPENBOT_BENCH_DATABASE_URL"] if args.postgres else None
        print(json.dumps(asyncio.run(phases(load, args.slots, args.one_by_one, url)), indent=2))
        return
    if args.what == "statement":
        print(json.dumps(asyncio.run(statement_cost()), indent=2))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if args.what == "throughput":
        written = asyncio.run(profile_throughput(args.out, load, args.slots))
    else:
        written = asyncio.run(profile_server(args.out, args.hops))
    print("\n".join(str(path) for path in written))


if __name__ == "__main__":
    main()
