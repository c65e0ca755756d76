"""Scenario ``hop``: human → @engineer → reply through a real server, timed on the SSE stream.

Each hop POSTs ``@engineer ping <i>`` and waits for the engineer's ``message.created`` on
``GET /api/v1/events?thread_id=…``. The reply is matched to its post through the run: the
``run.updated`` event that starts the run lists the post among its triggers, and the reply carries
that run's id. Hops run one after another, so each one sees an otherwise idle server.

Two variants, each on a fresh server: ``one_thread`` posts every measured hop into one thread (its
history grows by two messages a hop); ``fresh_thread_per_20`` starts a new thread every 20 hops.
The warm-up hops run first, in a thread of their own, and are not reported. The server's CPU time
over the measured hops comes from ``/proc`` (the client's own work is not in it).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks.server import running_server
from benchmarks.sse import read_events
from benchmarks.stats import summarize
from openbot.config import Settings
from openbot.core.ids import new_id
from openbot.runtime import threads
from openbot.runtime.commands import ThreadCreate
from openbot.runtime.engine import Runtime
from openbot.runtime.team import get_actor
from openbot.store.models import Message

log = logging.getLogger(__name__)

BOT = "engineer"
WARM_UP = 10
BLOCK = 20
HOP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Hop:
    """Milliseconds from just before the POST until each step was seen by the client."""

    acked: float  # the POST answered
    started: float  # run.updated (running) arrived on the stream
    replied: float  # the bot's message.created arrived on the stream
    sent_at: float = 0.0  # wall clock just before the POST (to line up with the server's stamps)
    message_id: str = ""  # the post's id


class ReplyTracker:
    """Follows a thread's event stream and resolves, per posted message, when the bot answered it."""

    def __init__(self, bot: str) -> None:
        self.bot = bot
        self._message_of_run: dict[str, str] = {}
        self._started: dict[str, float] = {}
        self._replied: dict[str, asyncio.Future[float]] = {}

    async def follow(self, response: httpx.Response) -> None:
        async for event in read_events(response):
            at = time.perf_counter()
            if event.type == "run.updated":
                self._on_run(event.json(), at)
            elif event.type == "message.created":
                self._on_message(event.json(), at)

    def _on_run(self, run: dict[str, Any], at: float) -> None:
        if run["bot"] != self.bot or run["status"] != "running":
            return
        for message_id in run["trigger_message_ids"]:
            self._message_of_run[run["id"]] = message_id
            self._started.setdefault(message_id, at)

    def _on_message(self, message: dict[str, Any], at: float) -> None:
        sender = message.get("sender") or {}
        message_id = self._message_of_run.get(message.get("run_id") or "")
        if sender.get("handle") == self.bot and message_id is not None:
            reply = self._future(message_id)
            if not reply.done():
                reply.set_result(at)

    def _future(self, message_id: str) -> asyncio.Future[float]:
        return self._replied.setdefault(message_id, asyncio.get_running_loop().create_future())

    async def wait(self, message_id: str, timeout: float) -> tuple[float, float]:
        """(run seen starting, reply seen) for a posted message, as ``perf_counter`` readings."""
        replied = await asyncio.wait_for(self._future(message_id), timeout)
        return self._started[message_id], replied


async def new_thread(client: httpx.AsyncClient, title: str) -> str:
    response = await client.post("/api/v1/threads", json={"title": title})
    response.raise_for_status()
    return str(response.json()["id"])


async def hop(client: httpx.AsyncClient, tracker: ReplyTracker, thread_id: str, index: int) -> Hop:
    sent_at = time.time()
    start = time.perf_counter()
    response = await client.post(
        f"/api/v1/threads/{thread_id}/messages", json={"content": f"@{BOT} ping {index}"}
    )
    acked = time.perf_counter()
    response.raise_for_status()
    message_id = response.json()["message"]["id"]
    started, replied = await tracker.wait(message_id, HOP_TIMEOUT)
    return Hop(*((t - start) * 1000 for t in (acked, started, replied)), sent_at, message_id)


async def hops_in_thread(client: httpx.AsyncClient, thread_id: str, first: int, count: int) -> list[Hop]:
    """Open the thread's event stream, then run ``count`` hops in it one after another."""
    tracker = ReplyTracker(BOT)
    hops: list[Hop] = []
    params = {"thread_id": thread_id}
    async with client.stream("GET", "/api/v1/events", params=params, timeout=None) as response:
        response.raise_for_status()  # headers are back: the server has subscribed us
        async with asyncio.TaskGroup() as group:
            reader = group.create_task(tracker.follow(response))
            for index in range(first, first + count):
                hops.append(await hop(client, tracker, thread_id, index))
            reader.cancel()
    return hops


async def one_thread(client: httpx.AsyncClient, total: int) -> list[Hop]:
    thread_id = await new_thread(client, "hop benchmark: one thread")
    return await hops_in_thread(client, thread_id, 0, total)


async def fresh_thread_per_block(client: httpx.AsyncClient, total: int) -> list[Hop]:
    hops: list[Hop] = []
    for first in range(0, total, BLOCK):
        thread_id = await new_thread(client, f"hop benchmark: hops {first}+")
        hops += await hops_in_thread(client, thread_id, first, min(BLOCK, total - first))
    return hops


LONG_THREAD = 10_000


async def seed_long_thread(data_dir: Path, count: int = LONG_THREAD) -> str:
    """A thread with ``count`` messages, written straight into a new install's database (posting
    them would take minutes); returns its id. Senders take turns; every 7th mentions the bot."""
    settings = Settings(data_dir=data_dir)
    async with Runtime(settings) as rt:
        async with rt.db.transaction() as s:
            thread = await threads.create_thread(s, ThreadCreate(title="hop benchmark: a long thread"))
            senders = [(await get_actor(s, handle)).id for handle in ("you", "chief_of_staff", BOT)]
            stamp = rt.clock.now()
            s.add_all(
                Message(
                    id=new_id("msg"),
                    thread_id=thread.id,
                    sender_id=senders[i % len(senders)],
                    content=f"@{BOT} note {i}" if i % 7 == 0 else f"message {i} about the release",
                    mentions=[BOT] if i % 7 == 0 else [],
                    hop=0,
                    metadata_={},
                    created_at=stamp,
                )
                for i in range(count)
            )
            return thread.id


async def long_thread(measured: int, warm_up: int) -> list[Hop]:
    """Hops in a thread that already holds 10,000 messages (on a server started on that data)."""
    with tempfile.TemporaryDirectory(prefix="openbot-long-") as tmp:
        data_dir = Path(tmp) / "data"
        thread_id = await seed_long_thread(data_dir)
        async with running_server(data_dir=data_dir) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                await hops_in_thread(client, thread_id, 0, warm_up)
                return await hops_in_thread(client, thread_id, warm_up, measured)


Variant = Callable[[httpx.AsyncClient, int], Awaitable[list[Hop]]]

VARIANTS: dict[str, tuple[Variant, str]] = {
    "one_thread": (
        one_thread,
        "every hop in one thread: its history grows by two messages a hop",
    ),
    f"fresh_thread_per_{BLOCK}": (
        fresh_thread_per_block,
        f"a new thread (and event stream) every {BLOCK} hops: history stays small",
    ),
}


def summary(hops: list[Hop], note: str) -> dict[str, Any]:
    quarter = max(1, len(hops) // 4)
    return {
        "note": note,
        "latency_ms": summarize([h.replied for h in hops]),
        "phases_p50_ms": {
            "post_answered": summarize([h.acked for h in hops])["p50"],
            "post_to_run_started": summarize([h.started for h in hops])["p50"],
            "run_started_to_reply": summarize([h.replied - h.started for h in hops])["p50"],
        },
        "p50_first_quarter_ms": summarize([h.replied for h in hops[:quarter]])["p50"],
        "p50_last_quarter_ms": summarize([h.replied for h in hops[-quarter:]])["p50"],
    }


async def run(measured: int) -> dict[str, Any]:
    report: dict[str, Any] = {
        "bot": BOT,
        "hops_measured": measured,
        "warm_up_discarded": WARM_UP,
        "measured_from": "just before the POST until the bot's message.created arrives on the SSE stream",
    }
    for name, (variant, note) in VARIANTS.items():
        log.info("hop: %s (%d + %d warm-up hops) on a fresh server", name, measured, WARM_UP)
        async with running_server() as server, httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            await variant(client, WARM_UP)
            cpu_before = server.cpu_seconds()
            hops = await variant(client, measured)
            cpu_after = server.cpu_seconds()
        report[name] = summary(hops, note)
        if cpu_before is not None and cpu_after is not None:
            report[name]["server_cpu_ms_per_hop"] = round((cpu_after - cpu_before) * 1000 / measured, 2)
        log.info("hop: %s p50 %.1f ms", name, report[name]["latency_ms"]["p50"])
    log.info("hop: a %d-message thread (%d + %d warm-up hops)", LONG_THREAD, measured, WARM_UP)
    hops = await long_thread(measured, WARM_UP)
    report["long_thread"] = summary(hops, f"every hop in a thread that held {LONG_THREAD} messages")
    short = report[f"fresh_thread_per_{BLOCK}"]["latency_ms"]["p50"]
    report["long_thread"]["p50_over_short_thread_p50"] = round(hops_p50(hops) / short, 2)
    log.info("hop: long thread p50 %.1f ms", report["long_thread"]["latency_ms"]["p50"])
    return report


def hops_p50(hops: list[Hop]) -> float:
    return float(summarize([h.replied for h in hops])["p50"])
