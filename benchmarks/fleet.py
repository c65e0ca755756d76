"""Scenario ``fleet`` (PostgreSQL): worker processes sharing one database with an API process.

- ``throughput``: 200 runs over 20 bots × 10 threads, preloaded by this process (one transaction,
  its own runtime paused), then drained by 1, 2 and 4 ``openbot worker`` processes. Runs per second
  are measured from the database's own timestamps: first run started → last run finished, so the
  workers' start-up is not counted. The scaling factor is each count's rate over one worker's.
- ``cross_process_hop``: the hop scenario against an API-only ``openbot serve``
  (``OPENBOT_RUN_WORKERS=0``) with one ``openbot worker`` beside it: the post is answered by
  another process, woken by NOTIFY.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from benchmarks import hop, throughput
from benchmarks.server import running_server, server_env
from openbot.config import Settings
from openbot.runtime.engine import Runtime
from openbot.store.models import Run

log = logging.getLogger(__name__)

WORKER_COUNTS = (1, 2, 4)
DRAIN_TIMEOUT = 300.0


@asynccontextmanager
async def workers(url: str, count: int, data_dir: Path) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    env = {**server_env(), "OPENBOT_DATABASE_URL": url, "OPENBOT_DATA_DIR": str(data_dir)}
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-m", "openbot.cli", "worker", env=env, stdout=asyncio.subprocess.DEVNULL
        )
        for _ in range(count)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.terminate()
        for proc in procs:
            await proc.wait()


async def drain(url: str, count: int, load: throughput.Load) -> dict[str, Any]:
    await throughput.reset_postgres(url)
    with tempfile.TemporaryDirectory(prefix="openbot-fleet-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", database_url=url, run_workers=False)
        async with Runtime(settings) as rt:
            handles, thread_ids = await throughput.setup_load(rt, load)
            async with rt.db.transaction() as s:
                for thread_id in thread_ids:
                    for handle in handles:
                        await throughput.post_mention(rt, s, thread_id, handle)
            sub = rt.bus.subscribe()  # the workers' commits arrive here through NOTIFY
            async with workers(url, count, Path(tmp) / "data"), asyncio.timeout(DRAIN_TIMEOUT):
                while await _completed(rt) < load.runs:
                    await sub.next(timeout=1.0)
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
    return {
        "workers": count,
        "runs_completed": int(done),
        "seconds": round(seconds, 3),
        "runs_per_second": rate,
    }


async def _completed(rt: Runtime) -> int:
    async with rt.db.read() as s:
        done = select(func.count()).select_from(Run).where(Run.status == "completed")
        return int(await s.scalar(done) or 0)


async def cross_process_hop(url: str, measured: int) -> dict[str, Any]:
    await throughput.reset_postgres(url)
    env = {"OPENBOT_DATABASE_URL": url, "OPENBOT_RUN_WORKERS": "0"}
    async with running_server(env=env) as server:
        async with workers(url, 1, Path(tempfile.gettempdir())):
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                variant, note = hop.VARIANTS[f"fresh_thread_per_{hop.BLOCK}"]
                await variant(client, hop.WARM_UP)
                hops = await variant(client, measured)
    return hop.summary(hops, note + "; answered by a separate worker process")


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
    report["cross_process_hop"] = await cross_process_hop(url, hops)
    log.info("fleet: cross-process hop p50 %.1f ms", report["cross_process_hop"]["latency_ms"]["p50"])
    return report
