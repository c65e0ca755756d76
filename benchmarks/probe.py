"""What a fleet drain spends: CPU per process (``/proc``) and what PostgreSQL's backends wait on.

While a drain runs, :class:`Probe` samples ``pg_stat_activity`` for the benchmark database every
``interval`` seconds from a connection of its own: each backend's state and wait event (averaged
over the samples, so ``0.8`` means "on average 0.8 backends were in this state") and its CPU from
``/proc/<pid>/stat`` (PostgreSQL runs on this machine). The named processes (workers, this one)
are read from ``/proc`` at the start and the end, and the machine's busy share from ``/proc/stat``.
Sampling costs a little CPU of its own (one small query per interval), so the fleet scenario
measures rates without a probe and samples a separate drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import make_url

_ACTIVITY = """
SELECT pid, state, wait_event_type, wait_event, query FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""
_COMMITS = "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process so far (Linux ``/proc``; None when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs so far."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _statement(query: str | None) -> str:
    from benchmarks.counted_worker import kind

    text = query or ""
    for lock in ("FOR NO KEY UPDATE", "FOR KEY SHARE", "FOR UPDATE"):
        if lock in text:
            return f"{kind(text)} {lock}"
    return kind(text)


def _label(state: str | None, wait_type: str | None, wait: str | None) -> str:
    if state == "active":
        return f"active, waiting on {wait_type}:{wait}" if wait_type else "active, on CPU (or in the OS)"
    if state == "idle in transaction":
        return "idle in transaction (waiting for its client)"
    return str(state)


class Probe:
    def __init__(self, url: str, processes: dict[str, int], interval: float = 0.05) -> None:
        self.plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.processes = processes
        self.interval = interval
        self.samples = 0
        self.states: Counter[str] = Counter()
        self.statements: Counter[str] = Counter()  # what the waiting backends' last statement was
        self._backend_first: dict[int, float] = {}
        self._backend_last: dict[int, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._conn: Any = None
        self._start: dict[str, float | None] = {}
        self._end: dict[str, float | None] = {}
        self._ticks: tuple[int, int] = (0, 0)
        self._commits: tuple[int, int] = (0, 0)
        self.report: dict[str, Any] = {}

    async def __aenter__(self) -> Probe:
        import psycopg

        self._conn = await psycopg.AsyncConnection.connect(self.plain, autocommit=True)
        self._commits = await self._read_commits()
        self._start = {name: cpu_seconds(pid) for name, pid in self.processes.items()}
        self._ticks = machine_ticks()
        self._wall = asyncio.get_running_loop().time()
        self._task = asyncio.create_task(self._sample_forever())
        return self

    async def __aexit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        wall = asyncio.get_running_loop().time() - self._wall
        busy, total = machine_ticks()
        self._end = {name: cpu_seconds(pid) for name, pid in self.processes.items()}
        commits = await self._read_commits()
        await self._conn.close()
        cpu = {
            name: round(end - start, 2)
            for name, start in self._start.items()
            if start is not None and (end := self._end.get(name)) is not None
        }
        backends = sum(
            self._backend_last[pid] - self._backend_first.get(pid, 0.0) for pid in self._backend_last
        )
        self.report = {
            "wall_seconds": round(wall, 2),
            "cpu_seconds": {**cpu, "postgres_backends": round(backends, 2)},
            "machine_busy_share": round((busy - self._ticks[0]) / max(1, total - self._ticks[1]), 2),
            "transactions_committed": commits[0] - self._commits[0],
            "transactions_rolled_back": commits[1] - self._commits[1],
            "samples": self.samples,
            "backends_by_state": {
                label: round(count / max(1, self.samples), 2) for label, count in self.states.most_common()
            },
            "waiting_backends_by_statement": {
                label: round(count / max(1, self.samples), 2)
                for label, count in self.statements.most_common(12)
            },
        }

    async def _read_commits(self) -> tuple[int, int]:
        cursor = await self._conn.execute(_COMMITS)
        row = await cursor.fetchone()
        return int(row[0]), int(row[1])

    async def _sample_forever(self) -> None:
        first = True
        while True:
            cursor = await self._conn.execute(_ACTIVITY)
            self.samples += 1
            for pid, state, wait_type, wait, query in await cursor.fetchall():
                used = cpu_seconds(pid)
                if used is not None:
                    if first:
                        self._backend_first[pid] = used
                    self._backend_last[pid] = used
                if state != "idle":
                    self.states[_label(state, wait_type, wait)] += 1
                if wait_type == "Lock" or state == "idle in transaction":
                    doing = "waits for a lock in" if wait_type == "Lock" else "holds a transaction open after"
                    self.statements[f"{doing}: {_statement(query)}"] += 1
            first = False
            await asyncio.sleep(self.interval)
