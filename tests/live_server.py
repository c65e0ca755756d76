"""Run a real ``openbot serve`` in a subprocess for browser, terminal-client and screenshot runs.

Used by ``tests/web``, ``tests/cli_client``, the crash and fleet tests in ``tests/runtime``,
``scripts/screenshots.py`` and ``benchmarks/ui_render.py`` (the latter load this file by path).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

OPENBOT = Path(sys.executable).with_name("openbot")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any OPENBOT_ setting, real models forbidden, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBOT_")}
    return {**env, "OPENBOT_FORBID_REAL_MODELS": "1", **extra}


def max_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals open at one instant (an end sorts before a start at the same instant)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    level = peak = 0
    for _at, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def held_node_names(database_url: str) -> set[str]:
    """Node names held by live processes on this PostgreSQL database (``runtime.scheduler.node``
    names the connection that holds each one's lock)."""
    from sqlalchemy import create_engine, text

    from openbot.store.db import sync_url

    engine = create_engine(sync_url(database_url))
    query = "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'openbot node %'"
    try:
        with engine.begin() as conn:
            return {row.removeprefix("openbot node ") for row in conn.execute(text(query)).scalars()}
    finally:
        engine.dispose()


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

    # ── the API, for tests that drive the server (every call asserts its status) ─────────────
    def call(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = httpx.request(method, f"{self.url}/api/v1{path}", json=body, headers=headers, timeout=30)
        assert response.status_code == expect, (
            f"{method} {path} → {response.status_code}: {response.text}\n{self.log()}"
        )
        return response.json() if response.content else None

    def runs(self, **query: str) -> list[dict[str, Any]]:
        params = "&".join(f"{k}={v}" for k, v in {**query, "limit": "2000"}.items())
        return list(self.call("GET", f"/runs?{params}")["items"])

    def messages(self, thread_id: str) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/threads/{thread_id}/messages?limit=5000")["items"])

    def inbox(self, handle: str, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in {**filters, "limit": "5000"}.items())
        return list(self.call("GET", f"/actors/{handle}/inbox?{query}")["items"])

    def thread(self, title: str, *participants: str) -> str:
        body = {"title": title, "participants": list(participants)}
        return str(self.call("POST", "/threads", body, expect=201)["id"])

    def post(self, thread_id: str, content: str) -> dict[str, Any]:
        body = {"content": content, "from": "you"}
        return dict(self.call("POST", f"/threads/{thread_id}/messages", body, expect=201)["message"])

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
