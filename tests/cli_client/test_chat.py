"""``openbot chat`` and the table commands against a real server, read off a pseudo-terminal."""

from __future__ import annotations

import pytest

from live_server import wait_until
from openbot.client import Client

pytestmark = pytest.mark.slow

REPLY = "Hello from the engineer, one word at a time."


def test_chat_sends_and_streams_the_reply(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    api.script_bot("engineer", [{"match": "(?i)hello", "reply": REPLY}], delay_ms=200)
    term = terminal("--new", "Terminal hello")
    term.expect(r"Created thread Terminal hello")
    term.send("@engineer hello there")
    term.expect(r"@you: @engineer hello there")
    term.expect(r"@engineer: " + REPLY.replace(".", r"\."))
    term.send("/quit")
    assert term.wait_exit() == 0


def test_chat_answers_a_question(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    api.script_bot(
        "engineer",
        [
            {
                "match": "(?i)ship",
                "reply": "Shipping because you said {tool_result}",
                "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it to prod?"}}],
            }
        ],
    )
    term = terminal("--new", "Terminal question")
    term.expect("Created thread")
    term.send("@engineer ship it")
    term.expect(r"\? @engineer asks: Ship it to prod\?")
    term.send("/answer yes please")
    term.expect("answered @engineer")
    term.expect(r"@engineer: Shipping because you said yes please")


def test_chat_approves_and_rejects(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    todo = {"name": "todo_write", "args": {"todos": [{"content": "draft notes", "status": "pending"}]}}
    api.script_bot(
        "engineer",
        [{"match": "(?i)plan", "reply": "Plan outcome: {tool_result}", "tool_calls": [todo]}],
        approval_tools=["todo_write"],
    )
    term = terminal("--new", "Terminal approvals")
    created = term.expect(r"Created thread Terminal approvals \((thr_\w+)\)")
    thread = created.group(1)
    term.send("@engineer plan A")
    term.expect(r"@engineer asks for approval")
    term.expect(r"todo_write .*draft notes")
    term.send("/approve")
    term.expect(r"approved 1 action\(s\) of @engineer")
    term.expect(r"@engineer: Plan outcome:")

    term.send("@engineer plan B")
    term.expect(r"@engineer asks for approval")
    term.send("/reject out of scope")
    term.expect(r"rejected 1 action\(s\) of @engineer")
    term.expect(r"@engineer: Plan outcome:.*out of scope")
    wait_until(
        lambda: [r["status"] for r in api.runs(thread_id=thread)] == ["completed", "completed"],
        message="both runs completed",
    )


def test_chat_prints_a_streamed_reply_once_when_it_ends_in_whitespace(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    shell = {"name": "run_shell", "args": {"command": "echo hello"}}
    api.script_bot(
        "engineer",
        [
            {
                "match": "(?i)shell",
                "say": "Running it.",
                "reply": "Shell said: {tool_result}",
                "tool_calls": [shell],
            },
            {"match": "(?i)next", "reply": "Next one done."},
        ],
        approval_tools=["run_shell"],
    )
    api.update_bot("engineer", tools=["run_shell"])
    term = terminal("--new", "Terminal shell")
    term.expect("Created thread")
    term.send("@engineer shell please")
    term.expect(r"@engineer asks for approval")
    term.send("/approve")
    term.expect(r"Shell said:")
    term.send("@engineer next")
    term.expect(r"@engineer: Next one done\.")
    # The stored reply is the streamed one, trimmed: it is not printed a second time.
    assert term.text.count("Shell said:") == 1, term.text[-2000:]


def test_chat_cancels_a_slow_run(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    api.script_bot("qa", [{"match": "(?i)slow", "reply": "too late"}], delay_ms=5000)
    term = terminal("--new", "Terminal cancel")
    created = term.expect(r"Created thread Terminal cancel \((thr_\w+)\)")
    term.send("@qa go slow")
    term.expect(r"@qa is working")
    term.send("/cancel")
    term.expect(r"cancelling @qa's run")
    term.expect(r"@qa's run was cancelled")
    wait_until(
        lambda: [r["status"] for r in api.runs(thread_id=created.group(1))] == ["cancelled"],
        message="run cancelled",
    )
    api.script_bot("qa", [])


def test_chat_lists_and_switches_threads(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    other = api.create_thread(title="Elsewhere thread", participants=["you"])
    api.post_message(other["id"], "note left in the other thread", sender="engineer")
    term = terminal("--new", "Terminal start")
    term.expect("Created thread")
    term.send("/help")
    term.expect(r"/answer TEXT")
    term.send("/threads")
    term.expect(r"Elsewhere thread")
    term.send(f"/switch {other['id']}")
    term.expect(r"Elsewhere thread")
    term.expect(r"@engineer: note left in the other thread")
    term.send("/switch terminal START")  # title words, as `openbot post` takes them
    term.expect(r"Terminal start")
    term.send("/switch no-such-thread-anywhere")
    term.expect(r"no thread matches 'no-such-thread-anywhere'")
    term.expect(r"› ")  # back at the prompt: Ctrl-D typed before readline reads it would be lost
    term.eof()
    assert term.wait_exit() == 0


def test_chat_names_a_mention_of_nobody(terminal) -> None:  # type: ignore[no-untyped-def]
    term = terminal("--new", "Terminal typo")
    term.expect("Created thread")
    term.send("@enginer are you there?")
    term.expect(r"@enginer is not a member of this team — did you mean @engineer\?")


def test_chat_opens_an_existing_thread_with_history(terminal, api: Client) -> None:  # type: ignore[no-untyped-def]
    thread = api.create_thread(title="History thread", participants=["you"])
    api.post_message(thread["id"], "first words", sender="reviewer")
    term = terminal("--thread", thread["id"])
    term.expect(r"History thread")
    term.expect(r"@reviewer: first words")


def test_tables(server, api: Client) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess

    api.create_thread(title="Table thread", participants=["you", "engineer"])
    env = {**os.environ, "COLUMNS": "200"}
    out = "".join(
        subprocess.run(
            [chat_command(), command, "--server", server.url],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
        for command in ("threads", "bots", "activity")
    )
    assert "Table thread" in out
    for handle in ("@chief_of_staff", "@engineer", "@reviewer", "@qa"):
        assert handle in out
    assert "idle" in out
    assert "thread.created" in out


def test_activity_follow_prints_new_rows(chat_argv, server, api: Client) -> None:  # type: ignore[no-untyped-def]
    import os

    from .terminal import Terminal

    term = Terminal([chat_command(), "activity", "--follow", "--server", server.url], dict(os.environ))
    try:
        term.expect("Following")  # printed once the stream is subscribed: nothing after it is lost
        api.create_thread(title="Followed thread", participants=["you"])
        term.expect(r"thread\.created\s+.*Followed thread")
    finally:
        term.close()


def chat_command() -> str:
    """The installed ``openbot`` script beside this interpreter."""
    import sys
    from pathlib import Path

    return str(Path(sys.executable).with_name("openbot"))
