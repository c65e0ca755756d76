"""The crash harness: N cycles of load, SIGKILL and restart of a real ``openbot serve``, on SQLite
and on PostgreSQL, then every restart guarantee checked against what the clients were told.

Each cycle, client threads post to a few threads, @-mentioning bots whose scripted model answers
after a short delay, and record every 201 (acknowledged). After a random number of acknowledged
posts the server is SIGKILLed mid-load and restarted on the same data dir (and database); the
clients wait for it and go on. At the end the harness waits until ``GET /api/v1/status`` says the
server is idle and checks (docs/reliability.md):

- every acknowledged message is in its thread exactly once, and no message is there twice;
- every message a bot was given (each inbox item: every mention, and more) was answered exactly
  once — one completed run, one reply — or else every run it was in failed with a notice;
- never two runs of one bot in one thread at once, and every failed run has exactly one notice;
- every run failed by a restart was failed while the server came back up: on PostgreSQL too, where
  only the node identity lets a restarted server know the runs as its own (the lease is 30 s).

``OPENBOT_CRASH_SEED`` replays the harness's choices (process timing still varies);
``OPENBOT_CRASH_CYCLES`` sets N. The seed and the figures are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import PG_URL, reset_postgres
from live_server import LiveServer, clean_env, max_overlap, wait_until

pytestmark = pytest.mark.slow

CYCLES = int(os.environ.get("OPENBOT_CRASH_CYCLES", "5"))
BOTS = {"engineer": 40, "reviewer": 120, "qa": 300}  # handle → model delay (ms)
THREADS = 4
CLIENTS = 3
RESTARTED = "the server restarted while this run was in flight"
SLACK = timedelta(seconds=1)  # between the server's clock and ours (one machine)

Row = dict[str, Any]
Threads = dict[str, list[Row]]  # thread id → its messages


@dataclass(frozen=True)
class Acked:
    thread_id: str
    content: str
    mentions: tuple[str, ...]
    addressed: tuple[str, ...]


@dataclass
class Load:
    """Client threads posting until stopped; while the server is down they wait for ``up``."""

    server: LiveServer
    threads: list[str]
    seed: int
    acked: dict[str, Acked] = field(default_factory=dict)  # message id → what its client was told
    lost: int = 0  # posts that got no answer: the server died under them
    unexpected: list[str] = field(default_factory=list)
    up: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def start(self) -> list[threading.Thread]:
        self.up.set()
        clients = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(CLIENTS)]
        for client in clients:
            client.start()
        return clients

    def wait_for(self, count: int) -> None:
        """Until ``count`` posts have been acknowledged (the kill lands mid-load)."""
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.acked) >= count, timeout=60), self.server.log()

    def _client(self, index: int) -> None:
        rng = random.Random(f"{self.seed}-{index}")
        with httpx.Client(timeout=10) as http:
            while self.up.wait() and not self.stop.is_set():
                thread_id = rng.choice(self.threads)
                mentions = tuple(rng.sample(sorted(BOTS), rng.choice([0, 1, 1, 2])))
                content = " ".join([*(f"@{h}" for h in mentions), f"task {rng.getrandbits(48):012x}"])
                url = f"{self.server.url}/api/v1/threads/{thread_id}/messages"
                try:
                    response = http.post(url, json={"content": content})
                except httpx.TransportError:
                    with self.changed:
                        self.lost += 1
                    continue
                with self.changed:
                    if response.status_code != 201:
                        self.unexpected.append(f"{response.status_code} {response.text}")
                        continue
                    body = response.json()
                    posted = Acked(thread_id, content, mentions, tuple(body["addressed"]))
                    self.acked[body["message"]["id"]] = posted
                    self.changed.notify_all()


@dataclass
class Restart:
    killed_at: datetime
    ready_at: datetime


def _now() -> datetime:
    return datetime.now(UTC)


def _at(stamp: str | None) -> datetime:
    assert stamp is not None
    parsed = datetime.fromisoformat(stamp)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _idle(server: LiveServer) -> bool:
    status = server.call("GET", "/status")
    runs, mail = status["runs"], status["mailboxes"]
    return runs["queued"] == runs["running"] == mail["queued"] == mail["processing"] == 0


@pytest.fixture
def live(tmp_path: Path, backend: str) -> LiveServer:
    env = clean_env()
    if backend == "postgresql":
        assert PG_URL is not None
        asyncio.run(reset_postgres(PG_URL))
        env["OPENBOT_DATABASE_URL"] = PG_URL  # the lease stays at its default, 30 s
    return LiveServer(tmp_path / "data", env=env)


def test_acknowledged_mail_survives_repeated_sigkills(live: LiveServer, backend: str) -> None:
    seed = int(os.environ.get("OPENBOT_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\ncrash harness on {backend}: seed {seed} (OPENBOT_CRASH_SEED={seed} replays it), N={CYCLES}")
    rng = random.Random(seed)
    began = time.monotonic()
    with live:
        for handle, delay in BOTS.items():
            settings = {"script": [{"match": ".", "reply": "done"}], "delay_ms": delay}
            live.call("PATCH", f"/bots/{handle}", {"model_settings": settings})
        threads = [live.thread(f"load {i}", *BOTS) for i in range(THREADS)]
        load = Load(live, threads, seed)
        clients = load.start()
        restarts: list[Restart] = []
        try:
            for _ in range(CYCLES):
                load.wait_for(len(load.acked) + rng.randint(20, 60))
                load.up.clear()
                killed_at = _now()
                live.stop(kill=True)  # SIGKILL, mid-load
                live.start()
                restarts.append(Restart(killed_at, _now()))
                load.up.set()
            load.wait_for(len(load.acked) + rng.randint(20, 60))
        finally:
            load.stop.set()
            load.up.set()
            for client in clients:
                client.join(timeout=30)
        wait_until(lambda: _idle(live), "the server to be idle", timeout=25)  # under one lease
        figures = _check(live, load, restarts)
    figures["seconds"] = round(time.monotonic() - began, 1)
    print(f"crash harness on {backend}: {figures}")


def _check(server: LiveServer, load: Load, restarts: list[Restart]) -> dict[str, Any]:
    messages = {t: server.messages(t) for t in load.threads}
    runs = [run for t in load.threads for run in server.runs(thread_id=t)]
    items = {bot: [i for i in server.inbox(bot) if i["kind"] == "message"] for bot in BOTS}
    assert load.unexpected == []
    stored = _check_messages(load, messages)
    _check_answers(messages, runs, items)
    _check_runs(messages, runs, restarts)
    by_restart = [r for r in runs if (r["error"] or {}).get("message") == RESTARTED]
    return {
        "cycles": len(restarts),
        "kills": len(restarts),
        "acknowledged": len(load.acked),
        "unanswered_posts": load.lost,  # the server died under them: no 201
        "stored_unacknowledged": stored - len(load.acked),  # committed, then killed before the 201
        "bot_items": sum(len(i) for i in items.values()),
        "runs": len(runs),
        "runs_failed_by_restarts": len(by_restart),
        "items_failed": sum(1 for i in items.values() for item in i if item["status"] == "failed"),
    }


def _check_messages(load: Load, messages: Threads) -> int:
    """Every acknowledged message is in its thread once; no message is anywhere twice. Returns how
    many posts are stored."""
    human = [m for thread in messages.values() for m in thread if (m["sender"] or {}).get("handle") == "you"]
    twice = [c for c, n in Counter(m["content"] for m in human).items() if n > 1]
    assert twice == [], f"duplicated messages: {twice[:5]}"
    assert len({m["id"] for m in human}) == len(human)
    for message_id, posted in load.acked.items():
        found = [m for m in messages[posted.thread_id] if m["id"] == message_id]
        assert [m["content"] for m in found] == [posted.content], f"acknowledged {message_id} not found once"
        assert set(posted.mentions) <= set(posted.addressed), posted
    return len(human)


def _check_answers(messages: Threads, runs: list[Row], items: dict[str, list[Row]]) -> None:
    """Each bot's mail was answered once (one completed run, one reply) or failed with its runs."""
    replies = Counter(
        m["run_id"] for thread in messages.values() for m in thread if m["run_id"] and m["sender"]
    )
    completed = {r["id"] for r in runs if r["status"] == "completed"}
    assert set(replies) <= completed, "a reply from a run that did not complete"
    assert all(replies[run_id] == 1 for run_id in completed), "a completed run without exactly one reply"
    runs_of: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for run in runs:
        for message_id in run["trigger_message_ids"]:
            runs_of[(run["bot"], message_id)].append(run)
    for bot, bot_items in items.items():
        for item in bot_items:
            tried = runs_of[(bot, item["message_id"])]
            answered = [r for r in tried if r["status"] == "completed"]
            assert len(answered) <= 1, f"@{bot} answered {item['message_id']} {len(answered)} times"
            if answered:
                assert item["status"] == "done", item
            else:
                assert item["status"] in ("failed", "cancelled") and tried, f"@{bot} never answered {item}"
                assert all(r["status"] in ("failed", "cancelled") for r in tried), tried


def _check_runs(messages: Threads, runs: list[Row], restarts: list[Restart]) -> None:
    """One run per bot and thread at a time; every failed run has one notice; restarts fail runs
    while the server comes up (no run waits out its lease)."""
    spans: dict[tuple[str, str], list[tuple[datetime, datetime]]] = defaultdict(list)
    for run in runs:
        span = (_at(run["started_at"] or run["created_at"]), _at(run["finished_at"]))
        spans[(run["bot"], run["thread_id"])].append(span)
    assert all(max_overlap(s) == 1 for s in spans.values()), "two runs of one bot in one thread at once"
    notices = Counter(
        m["metadata"]["run_id"]
        for thread in messages.values()
        for m in thread
        if m["sender"] is None and m["metadata"].get("kind") in ("run_failed", "run_cancelled")
    )
    ended = [r for r in runs if r["status"] in ("failed", "cancelled")]
    assert {r["id"]: notices[r["id"]] for r in ended} == {r["id"]: 1 for r in ended}
    for run in ended:
        if (run["error"] or {}).get("message") != RESTARTED:
            continue
        finished = _at(run["finished_at"])
        assert any(r.killed_at - SLACK <= finished <= r.ready_at + SLACK for r in restarts), (
            f"run {run['id']} was failed at {finished}, not while the server restarted: {restarts}"
        )
