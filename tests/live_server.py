"""Run a real ``openbot serve`` in a subprocess for browser, terminal-client and screenshot runs.

Used by ``tests/web``, ``tests/cli_client``, ``scripts/screenshots.py`` and
``benchmarks/ui_render.py`` (the latter load this file by path).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

OPENBOT = Path(sys.executable).with_name("openbot")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """``openbot serve`` on a free port over a private data dir; restartable on the same port."""

    def __init__(
        self, data_dir: Path, *, token: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        self.env = {**os.environ, **(env or {})}
        self.env.pop("OPENBOT_MODEL", None)  # always the scripted model
        self.env.pop("OPENBOT_API_TOKEN", None)
        if token:
            self.env["OPENBOT_API_TOKEN"] = token
        self.log_path = self.data_dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> LiveServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                str(OPENBOT),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--data-dir",
                str(self.data_dir),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        log.close()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"openbot serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", headers=headers, timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # process start-up: polling with a deadline
        raise RuntimeError(f"openbot serve did not become healthy in {timeout} s:\n{self.log()}")

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def restart(self, *, kill: bool = True) -> None:
        self.stop(kill=kill)
        self.start()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until(predicate, message: str = "condition", timeout: float = 15.0, interval: float = 0.05):  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it returns something truthy (for state owned by another process)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(interval)
