"""A post naming someone who is not on the team says so, with the server's suggestion (issue #8):
``openbot post`` and the chat REPL print one line per unknown ``@handle``."""

from __future__ import annotations

import io

import httpx
from rich.console import Console
from typer.testing import CliRunner

from openbot.chat import Chat, ChatState
from openbot.cli import app
from openbot.client import Client

from .fake_server import Answer, fake_server, json_answer

THREAD = {"id": "thr_0006400000000000abcdef", "title": "Release", "participants": []}
POSTED = {
    "message": {"id": "msg_1", "thread_id": THREAD["id"], "content": "@enginer @qa_bot hi", "sender": None},
    "addressed": [],
    "held": [],
    "unknown_mentions": [{"handle": "enginer", "suggestion": "engineer"}, {"handle": "qa_bot"}],
}
LINES = [
    "@enginer is not a member of this team — did you mean @engineer?",
    "@qa_bot is not a member of this team",
]


def server_answer(method: str, path: str) -> Answer:
    if method == "POST" and path.endswith("/messages"):
        return json_answer(201, POSTED)
    if path.startswith("/api/v1/threads/"):
        return json_answer(200, THREAD)
    return json_answer(404, {"error": {"code": "not_found", "message": path}})


def test_post_names_unknown_mentions() -> None:
    with fake_server(server_answer) as server:
        result = CliRunner().invoke(app, ["post", THREAD["id"], "@enginer @qa_bot hi", "--server", server])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("posted msg_1")
    assert result.stderr.splitlines() == LINES


def test_chat_names_unknown_mentions() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        return httpx.Response(201, json=POSTED)

    screen = io.StringIO()
    chat = Chat("http://openbot.test", None, Console(file=screen, width=100, highlight=False))
    chat.api = Client("http://openbot.test", transport=httpx.MockTransport(answer))
    chat.state = ChatState(thread_id=THREAD["id"], title="Release")
    chat.send("@enginer @qa_bot hi")
    assert [line for line in screen.getvalue().splitlines() if "member" in line] == LINES


def test_no_line_without_unknown_mentions() -> None:
    def answer(method: str, path: str) -> Answer:
        if method == "POST":
            return json_answer(201, {**POSTED, "unknown_mentions": []})
        return server_answer(method, path)

    with fake_server(answer) as server:
        result = CliRunner().invoke(app, ["post", THREAD["id"], "hi", "--server", server])
    assert result.exit_code == 0 and result.stderr == ""
