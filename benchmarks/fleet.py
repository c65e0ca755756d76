"""Scenario ``fleet`` (PostgreSQL): worker processes sharing one database with an API process.

- ``throughput``: 200 runs over 20 bots × 10 threads, preloaded by this process (one transaction,
  its own runtime paused), then drained by 1, 2 and 4 ``openbot worker`` processes. Runs per second
  are measured from the database's own timestamps: first run started → last run finished, so the
  workers' start-up is not counted. The scaling factor is each count's rate over one worker's.
- ``diagnosis``: one more drain per worker count with a :class:`~benchmarks.probe.Probe`
  sampling it: CPU of every process and of the database's backends, what the backends wait on,
  and statements and transactions per run counted inside the workers
  (``benchmarks.counted_worker``). Kept apart from the rates, which are measured unprobed.
- ``cross_process_hop``: the hop scenario against an API-only ``openbot serve``
  (``OPENBOT_RUN_WORKERS=0``) with one ``openbot worker`` beside it: the post is answered by
  another process, woken by NOTIFY.
- ``single_process_hop``: the same hops against one ``openbot serve`` on the same database that
  runs its own bots, so ``cross_over_single`` compares like with like (the ``hop`` scenario runs
  on SQLite).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, make_url, select

from benchmarks import hop, throughput
from benchmarks.probe import Probe, cpu_seconds
from benchmarks.server import running_server, server_env
from benchmarks.stats import summarize
from openbot.config import Settings
from openbot.runtime.engine import Runtime
from openbot.store.db import Database
from openbot.store.models import Message, Run

log = logging.getLogger(__name__)

WORKER_COUNTS = (1, 2, 4)
DIAGNOSED = (1, 2)  # worker counts drained once more with a probe
DRAIN_TIMEOUT = 300.0


@asynccontextmanager
async def workers(
    url: str, count: int, data_dir: Path, counts: list[dict[str, int]] | None = None
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """``count`` ``openbot worker`` processes; with ``counts``, their SQL counts are appended to it
    when they have exited (``benchmarks.counted_worker``)."""
    env = {**server_env(), "OPENBOT_DATABASE_URL": url, "OPENBOT_DATA_DIR": str(data_dir)}
    with tempfile.TemporaryDirectory(prefix="openbot-fleet-counts-") as tmp:
        reports = [Path(tmp) / f"worker-{i}.json" for i in range(count)]
        command = ("-m", "openbot.cli", "worker")
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                *(("-m", "benchmarks.counted_worker", str(report)) if counts is not None else command),
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
            )
            for report in reports
        ]
        try:
            yield procs
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.terminate()
            for proc in procs:
                await proc.wait()
            if counts is not None:
                counts.extend(json.loads(report.read_text()) for report in reports if report.exists())


async def drain(url: str, count: int, load: throughput.Load, probed: bool = False) -> dict[str, Any]:
    """Preload the runs, drain them with ``count`` workers; with ``probed``, sample the drain."""
    await throughput.reset_postgres(url)
    counts: list[dict[str, int]] | None = [] if probed else None
    probe: Probe | None = None
    with tempfile.TemporaryDirectory(prefix="openbot-fleet-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", database_url=url, run_workers=False)
        async with Runtime(settings) as rt:
            handles, thread_ids = await throughput.setup_load(rt, load)
            async with rt.db.transaction() as s:
                for thread_id in thread_ids:
                    for handle in handles:
                        await throughput.post_mention(rt, s, thread_id, handle)
            sub = rt.bus.subscribe()  # the workers' commits arrive here through NOTIFY
            async with workers(url, count, Path(tmp) / "data", counts) as procs:
                processes = {f"worker_{i + 1}": proc.pid for i, proc in enumerate(procs)}
                probe = Probe(url, {**processes, "api_process": os.getpid()}) if probed else None
                async with contextlib.AsyncExitStack() as stack:
                    if probe is not None:
                        await _started(url, count)
                        await stack.enter_async_context(probe)
                    async with asyncio.timeout(DRAIN_TIMEOUT):
                        while await _completed(rt) < load.runs:
                            await sub.next(timeout=1.0)
                            # Count at most a few times a second: this process stands in for the
                            # API, and a count per announcement would take CPU from the workers.
                            await asyncio.sleep(0.2)
                sub.close()
            async with rt.db.read() as s:
                first, last, done = (
                    await s.execute(
                        select(func.min(Run.started_at), func.max(Run.finished_at), func.count()).where(
                            Run.status == "completed"
                        )
                    )
                ).one()
    seconds = (last - first).total_seconds() if first and last else float("nan")
    rate = round(done / seconds, 1) if seconds else None
    row: dict[str, Any] = {
        "workers": count,
        "runs_completed": int(done),
        "seconds": round(seconds, 3),
        "runs_per_second": rate,
    }
    if probe is not None and counts is not None:
        row["probe"] = probe.report
        row["per_run"] = _per_run(probe.report, counts, int(done))
    return row


def _per_run(report: dict[str, Any], counts: list[dict[str, int]], runs: int) -> dict[str, Any]:
    """CPU milliseconds and SQL per completed run, summed over the workers (their start-up included)."""
    total: dict[str, int] = {}
    for one in counts:
        for key, value in one.items():
            total[key] = total.get(key, 0) + value
    cpu = report["cpu_seconds"]
    worker_cpu = sum(v for k, v in cpu.items() if k.startswith("worker_"))
    statements = {k[5:]: round(v / runs, 2) for k, v in total.items() if k.startswith("sql: ")}
    return {
        "worker_cpu_ms": round(worker_cpu * 1000 / runs, 2),
        "postgres_cpu_ms": round(cpu["postgres_backends"] * 1000 / runs, 2),
        "api_process_cpu_ms": round(cpu.get("api_process", 0) * 1000 / runs, 2),
        "worker_statements": round(total.get("statements", 0) / runs, 2),
        "worker_round_trips": round(total.get("round_trips", 0) / runs, 2),
        "worker_transactions": round(total.get("transactions", 0) / runs, 2),
        "database_commits": round(report["transactions_committed"] / runs, 2),
        "statements_by_kind": dict(sorted(statements.items(), key=lambda kv: -kv[1])[:15]),
    }


async def _started(url: str, count: int) -> None:
    """Until ``count`` workers hold their node names (they are up and listening)."""
    import psycopg

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(plain, autocommit=True) as conn:
        async with asyncio.timeout(60):
            while True:
                cursor = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND application_name LIKE 'openbot node %'"
                )
                row = await cursor.fetchone()
                if row is not None and row[0] >= count:
                    return
                await asyncio.sleep(0.1)  # another process: asking is the only way to know


async def _completed(rt: Runtime) -> int:
    async with rt.db.read() as s:
        done = select(func.count()).select_from(Run).where(Run.status == "completed")
        return int(await s.scalar(done) or 0)


async def cross_process_hop(url: str, measured: int) -> dict[str, Any]:
    await throughput.reset_postgres(url)
    env = {"OPENBOT_DATABASE_URL": url, "OPENBOT_RUN_WORKERS": "0"}
    async with running_server(env=env) as server:
        async with workers(url, 1, Path(tempfile.gettempdir())) as procs:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                variant, note = hop.VARIANTS[f"fresh_thread_per_{hop.BLOCK}"]
                await variant(client, hop.WARM_UP)
                pids = (server.pid, procs[0].pid)
                before = _cpu(*pids)
                hops = await variant(client, measured)
                cpu = [after - first for first, after in zip(before, _cpu(*pids), strict=True)]
    out = hop.summary(hops, note + "; answered by a separate worker process")
    out["server_phases_p50_ms"] = await server_phases(url, hops)
    out["cpu_ms_per_hop"] = {
        "api_process": round(cpu[0] * 1000 / measured, 2),
        "worker": round(cpu[1] * 1000 / measured, 2),
    }
    return out


async def single_process_hop(url: str, measured: int) -> dict[str, Any]:
    """The same hops against one ``openbot serve`` on the same database, running its own bots."""
    await throughput.reset_postgres(url)
    async with running_server(env={"OPENBOT_DATABASE_URL": url}) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            variant, note = hop.VARIANTS[f"fresh_thread_per_{hop.BLOCK}"]
            await variant(client, hop.WARM_UP)
            before = server.cpu_seconds() or 0.0
            hops = await variant(client, measured)
            after = server.cpu_seconds() or 0.0
    out = hop.summary(hops, note + "; one process on PostgreSQL serves and runs the bot")
    out["server_phases_p50_ms"] = await server_phases(url, hops)
    out["cpu_ms_per_hop"] = {"server": round((after - before) * 1000 / measured, 2)}
    return out


async def server_phases(url: str, hops: list[hop.Hop]) -> dict[str, float]:
    """Where each hop's time went, from the stamps the processes wrote (one machine, one clock):
    the post's ``created_at``, its run's ``started_at`` (the claim) and ``finished_at``, against
    the client's wall clock when it sent the POST and when the reply reached it."""
    db = Database(url)
    try:
        async with db.read() as s:
            posts = dict((await s.execute(select(Message.id, Message.created_at))).all())
            runs = {
                triggers[0]: (started, finished)
                for triggers, started, finished in await s.execute(
                    select(Run.trigger_message_ids, Run.started_at, Run.finished_at)
                )
                if triggers
            }
    finally:
        await db.dispose()
    phases: dict[str, list[float]] = {
        "sent_to_post_stamped": [],
        "post_stamped_to_claimed": [],
        "claimed_to_finish_stamped": [],
        "finish_stamped_to_reply_seen": [],
    }
    for one in hops:
        posted, (claimed, finished) = posts.get(one.message_id), runs.get(one.message_id, (None, None))
        if posted is None or claimed is None or finished is None:
            continue
        stamps = [one.sent_at, posted.timestamp(), claimed.timestamp(), finished.timestamp()]
        stamps.append(one.sent_at + one.replied / 1000)
        for name, begin, end in zip(phases, stamps, stamps[1:], strict=False):
            phases[name].append((end - begin) * 1000)
    return {name: summarize(values)["p50"] for name, values in phases.items() if values}


def _cpu(*pids: int) -> list[float]:
    return [cpu_seconds(pid) or 0.0 for pid in pids]


async def run(url: str | None, load: throughput.Load, hops: int) -> dict[str, Any]:
    if not url:
        return {"skipped": "set OPENBOT_BENCH_DATABASE_URL to measure PostgreSQL"}
    os.environ.setdefault("OPENBOT_FORBID_REAL_MODELS", "1")
    rows = []
    for count in WORKER_COUNTS:
        rows.append(await drain(url, count, load))
        log.info("fleet: %d worker(s): %.1f runs/s", count, rows[-1]["runs_per_second"] or 0)
    base = rows[0]["runs_per_second"] or 0
    for row in rows:
        row["scaling"] = round(row["runs_per_second"] / base, 2) if base and row["runs_per_second"] else None
    report: dict[str, Any] = {"throughput": rows}
    report["diagnosis"] = []
    for count in DIAGNOSED:
        report["diagnosis"].append(await drain(url, count, load, probed=True))
        log.info("fleet: %d worker(s), probed: %s", count, report["diagnosis"][-1]["per_run"])
    report["cross_process_hop"] = await cross_process_hop(url, hops)
    log.info("fleet: cross-process hop p50 %.1f ms", report["cross_process_hop"]["latency_ms"]["p50"])
    report["single_process_hop"] = await single_process_hop(url, hops)
    log.info("fleet: single-process hop p50 %.1f ms", report["single_process_hop"]["latency_ms"]["p50"])
    single = report["single_process_hop"]["latency_ms"]["p50"]
    report["cross_over_single"] = round(report["cross_process_hop"]["latency_ms"]["p50"] / single, 2)
    return report
