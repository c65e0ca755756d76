"""Every client command ends a foreseeable failure with one line on stderr and a non-zero exit:
no server at the URL, a server that is not OpenBot, an error answer (issue #8)."""

from __future__ import annotations

import subprocess

import pytest
from typer.testing import CliRunner

from live_server import OPENBOT, free_port
from openbot.cli import app

from .fake_server import Answer, fake_server, json_answer

COMMANDS = [["threads"], ["bots"], ["activity"], ["activity", "--follow"], ["chat"], ["post", "1", "hi"]]

HTML = (200, "text/html", b"<html><body>Welcome to nginx!</body></html>")
NOT_FOUND = (404, "text/html", b"<html><body>404 Not Found</body></html>")
UNAUTHORIZED = json_answer(401, {"error": {"code": "unauthorized", "message": "missing or wrong API token"}})
REDIRECT = (301, "text/html", b"")  # a proxy sending http to https, with no body
A_LIST = json_answer(200, [1, 2])  # JSON, but not an object as every OpenBot answer is


def one_line_failure(args: list[str], server: str) -> str:
    result = CliRunner().invoke(app, [*args, "--server", server])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("openbot: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_nothing_listening(args: list[str]) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    line = one_line_failure(args, server)
    assert f"cannot reach an OpenBot server at {server}" in line and "refused" in line


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (HTML, "is this an OpenBot server?"),
        (NOT_FOUND, "404"),
        (UNAUTHORIZED, "401 unauthorized"),
        (REDIRECT, "301 redirected: redirected to another address"),
        (A_LIST, "not OpenBot's JSON (a JSON list)"),
    ],
    ids=["html-200", "html-404", "401", "redirect", "json-list"],
)
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_not_openbot_or_refused(args: list[str], answer: Answer, expected: str) -> None:
    if answer is A_LIST and "--follow" in args:  # it opens the event stream first
        expected = "not OpenBot's JSON (application/json, not an event stream)"
    with fake_server(lambda method, path: answer) as server:
        line = one_line_failure(args, server)
    assert expected in line and server in line


def test_a_bad_server_url() -> None:
    assert "http://" in one_line_failure(["threads"], "127.0.0.1:8000")


def test_the_process_prints_no_traceback() -> None:
    """The same through the installed script, as a user runs it."""
    server = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [str(OPENBOT), "post", "Release", "@qa hi", "--server", server], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"openbot: cannot reach an OpenBot server at {server}")
