"""Running OpenBot as a fleet on PostgreSQL: worker processes, and `serve --workers N`.

A worker is a runtime without HTTP: it claims and runs bots' mail from the shared database. Any
number of workers and API processes can share one PostgreSQL database; leases, fencing and the
bot-row lock keep each bot within its ceiling across them, LISTEN/NOTIFY wakes them within
milliseconds, and the periodic poll stays the truth.

Every process leases runs under its node name (``runtime.scheduler.node``); the workers of
`serve --workers N` are named ``<node>-w1`` … ``<node>-wN`` after the serving process's node, so a
restarted fleet takes its own runs back at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from openbot.config import Settings
from openbot.runtime import heap
from openbot.runtime.engine import Runtime
from openbot.runtime.scheduler import node

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a child gets when its parent dies


class FleetError(Exception):
    """The configuration cannot run as a fleet (SQLite is one process)."""


def require_shared_database(settings: Settings) -> None:
    url = settings.database_url or ""
    if not url.startswith(("postgresql", "postgres")):
        raise FleetError(
            "workers need PostgreSQL (set OPENBOT_DATABASE_URL); SQLite is single-process: "
            "use `openbot serve` alone"
        )


async def run_worker(settings: Settings) -> None:
    """Run bots until SIGTERM or SIGINT; in-flight runs get the drain period to finish."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with Runtime(settings) as rt:
            log.info("worker %s running bots on %s", rt.system.owner, rt.db.backend)
            heap.settle()
            await stop.wait()
    except node.NodeInUse as exc:
        print(f"openbot worker: {exc}", file=sys.stderr)  # one line, no traceback
        raise SystemExit(2) from None


def spawn_workers(count: int, data_dir: str) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` `openbot worker` processes with this process's environment, named
    ``<node>-w1`` … after this process's configured node name. They never outlive this process.

    uvicorn re-raises the SIGTERM it shut down on; SIGTERM then raises ``SystemExit`` here, so
    the caller's clean-up (:func:`stop_workers`) runs instead of the process just vanishing. A
    SIGKILLed parent takes its workers along (Linux), so a restart finds their names free.
    """
    env = {**os.environ, "OPENBOT_DATA_DIR": data_dir, "OPENBOT_RUN_WORKERS": "1"}
    parent = node.configured_name(Settings(data_dir=Path(data_dir)))
    command = [sys.executable, "-m", "openbot.cli", "worker"]
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return [
        subprocess.Popen(
            command,
            env={**env, "OPENBOT_NODE_ID": node.worker_name(parent, i)},
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        for i in range(1, count + 1)
    ]


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_workers(workers: list[subprocess.Popen[bytes]], timeout: float) -> None:
    for process in workers:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
