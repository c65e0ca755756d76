"""Child processes a bot starts (``run_shell``, ``search_files``): bounded so a turn cannot take down
the process that scheduled it (invariant 14).

A command runs in a new session (its own process group) through a small Python prelude that sets
the rlimits — CPU time, address space, file size, process count, no core files — and, when OpenBot
runs as root, drops to an unprivileged user (root ignores the process-count limit, and a shell
should never be root). The prelude then ``exec``s the command, so nothing of OpenBot stays in the
child. The environment is scrubbed: no ``OPENBOT_*`` variable and nothing named like a key, token,
password or secret. A wall-clock timeout kills the whole process group, and so does the command's
end (a background job does not outlive it). Output is capped, keeping its head and tail.

Everything is awaited on asyncio's subprocess machinery: the event loop never blocks on a child.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import pwd
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OUTPUT_BYTES = 65_536
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|DSN|DATABASE_URL", re.IGNORECASE
)
# Everything it imports is imported before it drops to another user, who may not read them.
_PRELUDE = """
import json, os, resource, sys, warnings
spec = json.loads(sys.argv[1])
for name, value in spec["limits"]:
    resource.setrlimit(getattr(resource, name), (value, value))
if spec["uid"] is not None:
    os.setgroups([])
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])
os.execvp(sys.argv[2], sys.argv[2:])
"""


@dataclass(frozen=True)
class Limits:
    timeout_seconds: float = 30.0
    memory_mb: int = 512
    file_mb: int = 64
    processes: int = 64
    output_bytes: int = OUTPUT_BYTES
    user: str | None = "nobody"  # whom a root OpenBot runs commands as; None: stay root

    def rlimits(self) -> list[tuple[str, int]]:
        return [
            ("RLIMIT_CPU", math.ceil(self.timeout_seconds) + 1),
            ("RLIMIT_AS", self.memory_mb * 1024 * 1024),
            ("RLIMIT_FSIZE", self.file_mb * 1024 * 1024),
            ("RLIMIT_NPROC", self.processes),
            ("RLIMIT_CORE", 0),
        ]

    def account(self) -> tuple[int, int] | None:
        """(uid, gid) to run as: only when this process is root and a user is configured."""
        if os.geteuid() != 0 or not self.user:
            return None
        entry = pwd.getpwnam(self.user)
        return entry.pw_uid, entry.pw_gid


@dataclass(frozen=True)
class Result:
    exit_code: int | None  # None when a signal ended it
    killed: str | None  # why, when it did not end by itself: "timeout", "signal SIGXCPU", ...
    output: str
    omitted: int  # bytes left out of the middle of the output
    seconds: float

    def report(self) -> str:
        if self.killed:
            head = f"killed: {self.killed}; the process group was killed"
        else:
            head = f"exit code: {self.exit_code}"
        out = self.output if self.output else "(no output)"
        return f"{head} ({self.seconds:.1f} s)\n{out}"


def scrubbed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The parent's environment without OpenBot's settings or anything named like a secret."""
    return {k: v for k, v in environ.items() if not k.startswith("OPENBOT_") and not _SECRET_NAME.search(k)}


class _Capture:
    """Head and tail of a stream, at most ``limit`` bytes kept in all."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.half)]

    def text(self) -> tuple[str, int]:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        if not omitted:
            return head + self.tail.decode("utf-8", errors="replace"), 0
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[… {omitted} bytes omitted …]\n{tail}", omitted


class _Protocol(asyncio.SubprocessProtocol):
    """Output into the capture; ``exited`` resolves when the command's own process ends (asyncio's
    ``Process.wait`` also waits for every pipe to close, which a background job can hold open)."""

    def __init__(self, capture: _Capture) -> None:
        self.capture = capture
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.capture.add(data)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def run(argv: list[str], cwd: Path, limits: Limits) -> Result:
    """Run ``argv`` in ``cwd`` under ``limits``; never raises for what the command does."""
    account = limits.account()  # KeyError: no such user
    uid, gid = account if account else (None, None)
    spec = {"limits": limits.rlimits(), "uid": uid, "gid": gid}
    env = scrubbed_environment(os.environ)
    if account:
        env["HOME"] = str(cwd)
    started = time.monotonic()
    capture = _Capture(limits.output_bytes)
    transport, protocol = await asyncio.get_running_loop().subprocess_exec(
        lambda: _Protocol(capture),
        sys.executable, "-I", "-S", "-c", _PRELUDE, json.dumps(spec), *argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    pid = transport.get_pid()
    killed = None
    try:
        async with asyncio.timeout(limits.timeout_seconds):
            await protocol.exited
    except TimeoutError:
        killed = f"timeout after {limits.timeout_seconds:g} s"
    finally:
        _kill_group(pid)  # what is left of it: its background jobs, or all of it on a timeout
        try:
            async with asyncio.timeout(5):  # a child that left the group may still hold the pipe
                await asyncio.shield(protocol.closed)
        except TimeoutError:
            pass
        transport.close()
        await _group_gone(pid)
    code = transport.get_returncode()
    if killed is None and code is not None and code < 0:
        killed = f"signal {signal.Signals(-code).name}"
    output, omitted = capture.text()
    exit_code = code if code is not None and code >= 0 else None
    return Result(exit_code, killed, output, omitted, time.monotonic() - started)


async def _group_gone(pgid: int, wait_seconds: float = 2.0) -> None:
    """Until no live process is left in the killed group, or ``wait_seconds`` passed. (Its zombies
    are reaped by init; this process does not wait for that.)"""
    deadline = time.monotonic() + wait_seconds
    # A poll: nothing signals a reparented process's death to this one.
    while time.monotonic() < deadline and _live_members(pgid):  # noqa: ASYNC110
        await asyncio.sleep(0.01)


def _live_members(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (Linux: /proc; elsewhere: any member)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
