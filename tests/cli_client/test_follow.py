"""Followers subscribe to the event stream before they say they follow: ``activity.created`` is
live-only, so a row written between the two would be lost (issue #8)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from rich.console import Console

from openbot.client import Client
from openbot.tables import ActivityFollower


class Log:
    """What happened, in order: requests the server saw and text the terminal got."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def write(self, text: str) -> int:
        if text.strip():
            self.entries.append("printed " + text.strip())
        return len(text)

    def flush(self) -> None:
        pass

    def index(self, prefix: str) -> int:
        return next(i for i, entry in enumerate(self.entries) if entry.startswith(prefix))


def row(id_: int, summary: str) -> dict[str, object]:
    return {
        "id": id_,
        "created_at": "2026-01-01T00:00:00Z",
        "level": "info",
        "event": "x",
        "summary": summary,
    }


def test_activity_follow_subscribes_before_it_prints_following() -> None:
    log = Log()

    def stream() -> Iterator[bytes]:
        yield b": connected\n\n"
        live = json.dumps(row(2, "written while starting"))
        yield f"event: activity.created\ndata: {live}\n\n".encode()
        raise KeyboardInterrupt  # the user stops following

    def answer(request: httpx.Request) -> httpx.Response:
        log.entries.append(f"server {request.url.path}")
        if request.url.path.endswith("/events"):
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())
        return httpx.Response(200, json={"items": [row(1, "already there")]})

    client = Client("http://openbot.test", transport=httpx.MockTransport(answer))
    ActivityFollower(client, Console(file=log, width=80, highlight=False)).run()  # type: ignore[arg-type]

    assert log.index("server /api/v1/events") < log.index("server /api/v1/activity")
    assert log.index("server /api/v1/activity") < log.index("printed Following")
    printed = [entry for entry in log.entries if entry.startswith("printed")]
    following = next(i for i, entry in enumerate(printed) if "Following" in entry)
    assert any("already there" in entry for entry in printed[:following])
    assert any("written while starting" in entry for entry in printed[following:])


def test_activity_follow_says_once_that_it_lost_the_stream_and_once_that_it_is_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = Log()
    attempts: list[int] = []
    monkeypatch.setattr("openbot.tables.time.sleep", lambda _seconds: None)  # the back-off

    def stream(last: bool) -> Iterator[bytes]:
        yield b": connected\n\n"
        if last:
            raise KeyboardInterrupt  # the user stops following

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            attempts.append(1)
            if 2 <= len(attempts) <= 4:  # the server is down for three attempts
                raise httpx.ConnectError("refused", request=request)
            content = stream(last=len(attempts) == 5)
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content)
        return httpx.Response(200, json={"items": []})

    client = Client("http://openbot.test", transport=httpx.MockTransport(answer))
    ActivityFollower(client, Console(file=log, width=80, highlight=False)).run()  # type: ignore[arg-type]

    printed = [entry for entry in log.entries if entry.startswith("printed")]
    assert sum("connection lost" in entry for entry in printed) == 1, printed
    assert sum("reconnected" in entry for entry in printed) == 1, printed
    assert len(attempts) == 5
