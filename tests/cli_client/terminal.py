"""Drive a program through a pseudo-terminal and wait for what appears on screen.

Only the standard library: ``pty.openpty`` + ``subprocess`` + ``select`` with a deadline.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?|\r")


def plain(data: str) -> str:
    return ANSI.sub("", data)


class Terminal:
    def __init__(self, argv: Sequence[str], env: dict[str, str], *, cols: int = 160, rows: int = 48) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)},
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.fd = master
        self.raw = b""
        self.mark = 0  # expect() searches after this offset of the plain text

    @property
    def text(self) -> str:
        return plain(self.raw.decode("utf-8", errors="replace"))

    def _pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """Wait until ``pattern`` (a regex) appears after the last match; move the mark past it."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            found = regex.search(self.text, self.mark)
            if found:
                self.mark = found.end()
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"{pattern!r} did not appear; screen after mark:\n{self.text[self.mark :][-3000:]}"
                )
            if not self._pump(min(remaining, 0.5)) and self.proc.poll() is not None:
                self._pump(0)
                found = regex.search(self.text, self.mark)
                if found:
                    self.mark = found.end()
                    return found
                raise AssertionError(
                    f"process exited ({self.proc.returncode}) before {pattern!r}:\n{self.text[-3000:]}"
                )

    def send(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def eof(self) -> None:
        os.write(self.fd, b"\x04")

    def wait_exit(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(0.2)
        if self.proc.poll() is None:
            raise AssertionError("the program did not exit")
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        os.close(self.fd)
