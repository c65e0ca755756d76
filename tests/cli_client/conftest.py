"""A real ``openbot serve`` and a way to start ``openbot chat`` (or the tables) in a pty."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from live_server import LiveServer
from openbot.client import Client

from .terminal import Terminal

OPENBOT = Path(sys.executable).with_name("openbot")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    live = LiveServer(tmp_path_factory.mktemp("openbot-cli"))
    live.start()
    yield live
    live.stop()


@pytest.fixture
def api(server) -> Iterator[Client]:  # type: ignore[no-untyped-def]
    with Client(server.url) as client:
        yield client


@pytest.fixture(scope="session")
def chat_argv() -> list[str]:
    """The ``openbot chat`` command, as a user starts it."""
    return [str(OPENBOT), "chat"]


@pytest.fixture
def terminal(chat_argv: list[str], server) -> Iterator[Callable[..., Terminal]]:  # type: ignore[no-untyped-def]
    opened: list[Terminal] = []
    env = {k: v for k, v in os.environ.items() if k != "OPENBOT_API_TOKEN"}

    def start(*args: str) -> Terminal:
        term = Terminal([*chat_argv, "--server", server.url, *args], env)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()
