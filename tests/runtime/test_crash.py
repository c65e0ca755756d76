"""The crash test (DESIGN §2 invariant 12, §6 "Restart"): SIGKILL a real ``openbot serve`` mid-run.

Before the kill: @engineer is inside a slow model call in thread A (its run is ``running``), @qa
asked a human and waits (``waiting_human``) in thread Q, and more mail for @engineer waits in
thread B (its ceiling is one thread, so it stays queued). After a restart on the same data:

- the interrupted run is ``failed`` and says so in its thread (a system notice, ``run_failed``);
- its trigger message is queued again and answered, once;
- the queued mail of thread B is answered (nothing lost);
- the unanswered question survives, and answering it resumes @qa's run, which completes with the
  answer in its reply.

On PostgreSQL (when OPENBOT_TEST_DATABASE_URL is set) the same scenario runs with a 2 s lease:
there recovery takes over only runs whose lease expired (``ActorSystem.recover``).

The server is another process, so the test polls its HTTP API with deadlines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import PG_URL, reset_postgres
from live_server import LiveServer, clean_env
from live_server import wait_until as _wait_until

pytestmark = pytest.mark.slow

T = TypeVar("T")

ENGINEER_SCRIPT = [{"match": ".", "reply": "engineer finished"}]
QA_SCRIPT = [
    {
        "match": ".",
        "reply": "ok {tool_result}",
        "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it?"}}],
    }
]


def wait_until(predicate: Callable[[], T | None], what: str) -> T:
    """Wait on the server's state (another process) with a restart-sized deadline."""
    return _wait_until(predicate, what, timeout=30.0)  # type: ignore[no-any-return]


class Server(LiveServer):
    """``openbot serve`` in a subprocess (see ``live_server``), with the one query this test adds."""

    def run_in(self, thread_id: str, bot: str, status: str) -> dict[str, Any] | None:
        runs = self.runs(thread_id=thread_id)
        return next((r for r in runs if r["bot"] == bot and r["status"] == status), None)


@pytest.fixture
def server_env(backend: str) -> dict[str, str]:
    env = clean_env()
    if backend == "postgresql":
        assert PG_URL is not None
        asyncio.run(reset_postgres(PG_URL))
        env.update(
            OPENBOT_DATABASE_URL=PG_URL,
            OPENBOT_LEASE_SECONDS="2",  # a killed owner's runs are taken over 2 s after its last beat
            OPENBOT_POLL_SECONDS="0.5",
        )
    return env


@pytest.fixture
def server(tmp_path: Path, server_env: dict[str, str]) -> Iterator[Server]:
    live = Server(tmp_path / "data", env=server_env)
    live.start()
    try:
        yield live
    finally:
        live.stop()


def test_a_crash_mid_run_fails_the_run_loses_nothing_and_keeps_the_question(server: Server) -> None:
    # ── before the crash ─────────────────────────────────────────────────────────────────────
    slow = {"script": ENGINEER_SCRIPT, "delay_ms": 20_000}
    server.call("PATCH", "/bots/engineer", {"model_settings": slow, "max_parallel_threads": 1})
    server.call("PATCH", "/bots/qa", {"model_settings": {"script": QA_SCRIPT}})

    thread_a = server.thread("interrupted", "engineer")
    trigger = server.post(thread_a, "@engineer build the thing")
    interrupted = wait_until(lambda: server.run_in(thread_a, "engineer", "running"), "the engineer's run")
    assert interrupted["trigger_message_ids"] == [trigger["id"]]

    thread_q = server.thread("question", "qa")
    server.post(thread_q, "@qa is it ready?")
    waiting = wait_until(lambda: server.run_in(thread_q, "qa", "waiting_human"), "qa to ask a human")
    assert waiting["interrupt"] == {"kind": "question", "question": "Ship it?"}

    thread_b = server.thread("queued", "engineer")
    queued = server.post(thread_b, "@engineer and this one too")
    assert [i["message_id"] for i in server.inbox("engineer", thread_id=thread_b, status="queued")] == [
        queued["id"]
    ]
    assert server.runs(thread_id=thread_b) == []  # one thread at a time: the mail waits
    # The in-flight run already built its (slow) model; the runs after the restart will be quick.
    server.call("PATCH", "/bots/engineer", {"model_settings": {"script": ENGINEER_SCRIPT, "delay_ms": 0}})
    assert server.run_in(thread_a, "engineer", "running") is not None, "the run must still be in flight"

    # ── crash and restart ────────────────────────────────────────────────────────────────────
    server.restart(kill=True)  # SIGKILL: no shutdown hook, no lifespan exit, nothing flushed

    # The interrupted run failed, and the thread says so.
    failed = wait_until(
        lambda: (run := server.call("GET", f"/runs/{interrupted['id']}"))["status"] == "failed" and run,
        "the interrupted run to be failed",
    )
    restarted = "the server restarted while this run was in flight"
    assert failed["error"] == {"code": "interrupted", "message": restarted}
    notices = [
        m
        for m in server.messages(thread_a)
        if m["sender"] is None and m["metadata"].get("kind") == "run_failed"
    ]
    assert len(notices) == 1, notices
    assert notices[0]["metadata"]["run_id"] == interrupted["id"]
    assert notices[0]["metadata"]["requeued"] == 1

    # Its trigger was queued again and is answered once; thread B's mail is answered too.
    def answered(thread_id: str, message_id: str) -> dict[str, Any] | None:
        runs = [r for r in server.runs(thread_id=thread_id) if message_id in r["trigger_message_ids"]]
        return next((r for r in runs if r["status"] == "completed"), None)

    rerun = wait_until(lambda: answered(thread_a, trigger["id"]), "the interrupted trigger to be answered")
    assert rerun["id"] != interrupted["id"]
    later = wait_until(lambda: answered(thread_b, queued["id"]), "thread B's queued mail to be answered")
    assert later["trigger_message_ids"] == [queued["id"]]
    for thread_id, run in ((thread_a, rerun), (thread_b, later)):
        replies = [m for m in server.messages(thread_id) if (m["sender"] or {}).get("handle") == "engineer"]
        assert [(m["content"], m["run_id"]) for m in replies] == [("engineer finished", run["id"])]
    assert server.inbox("engineer", status="queued") == []
    assert server.inbox("engineer", status="processing") == []

    # The question survived: still waiting, still in the human's inbox; answering resumes the run.
    assert server.call("GET", f"/runs/{waiting['id']}")["status"] == "waiting_human"
    questions = server.inbox("you", kind="question", status="queued", thread_id=thread_q)
    assert [q["run_id"] for q in questions] == [waiting["id"]]
    server.call("POST", f"/runs/{waiting['id']}/resume", {"answer": "yes"}, expect=202)
    resumed = wait_until(
        lambda: (run := server.call("GET", f"/runs/{waiting['id']}"))["status"] == "completed" and run,
        "qa's run to complete after the answer",
    )
    reply = next(m for m in server.messages(thread_q) if m["run_id"] == resumed["id"])
    assert reply["sender"]["handle"] == "qa"
    assert "yes" in reply["content"]
