"""A real ``openbot serve`` in a child process, on a free loopback port and a throw-away data dir."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

_START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env() -> dict[str, str]:
    """The caller's environment minus anything that would point the server elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBOT_")}
    env["OPENBOT_FORBID_REAL_MODELS"] = "1"
    return env


@dataclass(frozen=True)
class Server:
    url: str
    pid: int

    def cpu_seconds(self) -> float | None:
        """User + system CPU the server process has used so far (Linux ``/proc``; else None)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def running_server(
    wrapper: Sequence[str] = (), env: dict[str, str] | None = None, data_dir: Path | None = None
) -> AsyncIterator[Server]:
    """Start ``openbot serve`` and yield it once ``/api/v1/health`` answers.

    ``wrapper`` runs the server under another Python entry point, e.g. a profiler:
    ``("-m", "pyinstrument", "-o", "out.html", "-r", "html")``; ``env`` adds ``OPENBOT_*`` settings;
    ``data_dir`` starts it on existing data.
    On exit the server gets SIGINT, so uvicorn shuts down cleanly (and a wrapping profiler writes
    its report).
    """
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
        log_path = Path(tmp) / "server.log"
        with log_path.open("wb") as log_file:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                *wrapper,
                "-m",
                "openbot.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir or Path(tmp) / "data"),
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                env={**server_env(), **(env or {})},
            )
            base_url = f"http://127.0.0.1:{port}"
            try:
                await _wait_healthy(base_url, process, log_path)
                yield Server(base_url, process.pid)
            finally:
                await _stop(process)


async def _wait_healthy(base_url: str, process: asyncio.subprocess.Process, log_path: Path) -> None:
    # The server is another process: asking it is the only way to know it listens.
    deadline = time.monotonic() + _START_TIMEOUT
    async with httpx.AsyncClient(base_url=base_url, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"openbot serve exited with {process.returncode}:\n{_read(log_path)}")
            try:
                if (await client.get("/api/v1/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"openbot serve did not answer within {_START_TIMEOUT:.0f}s:\n{_read(log_path)}")


def _read(log_path: Path) -> str:
    return log_path.read_text(errors="replace")


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(process.wait(), 60)
    except TimeoutError:
        process.kill()
        await process.wait()
