"""Scenario ``sse_fanout``: post latency and event delivery with many SSE clients connected.

For each pace (a post every 250 ms, then every 100 ms) a real ``openbot serve`` (SQLite, a fresh
data dir) and one thread: the same paced series of ``POST /threads/{id}/messages`` runs twice on
it, first with no event stream open, then with ``clients`` streams open on ``GET /api/v1/events``
(every other one follows the thread with ``?thread_id=…``, the rest the whole journal). The posts
mention nobody, so the thread's default bot answers each one: every post puts its message, a run,
token deltas, the reply and activity on every stream (about 16 events). Posts are paced (not waiting
for delivery), so a server that falls behind shows up as a growing delivery delay rather than as a
slower sender.

The clients are httpx streams in one child process (``python -m benchmarks.sse_fanout URL THREAD N``),
so the POSTs are timed by a process whose event loop is not busy reading 200 streams; both read
``time.monotonic()`` (one clock for every process on Linux). Reported: each POST's latency in both
phases, and for each post's ``message.created`` the delay from just before its POST until the first
and the last client had it; CPU per post of the server and of the clients' process.

The issue's targets: 200 clients add at most 20% to the POST p50, and every event reaches the last
client within 1 s. The clients share the machine (two cores here) with the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from benchmarks import report
from benchmarks.server import Server, running_server
from benchmarks.stats import summarize

log = logging.getLogger(__name__)

CLIENTS = 200
WARM_UP = 10
PACES_MS = (250.0, 100.0)  # a post (and its bot reply) 4 and 10 times a second
NICE = 10  # the clients stand in for remote browsers: the server comes first for the CPU
DELIVERY_TIMEOUT = 120.0
CONNECT_TIMEOUT = 60.0
POST_OVERHEAD_TARGET = 0.20
DELIVERY_TARGET_MS = 1000.0

# The first message id in a ``message.created`` event's data line: the message's own (its view starts
# with it). The clients scan raw chunks with it instead of parsing every event in Python, so that 200
# of them cost the machine (which they share with the server) as little as possible.
_CREATED = re.compile(rb'event: message\.created\r\ndata: [^\r\n]*?"id": "(msg_[0-9a-zA-Z]+)"')


class Arrivals:
    """Per message id: when the first client had its ``message.created``, and when the last did."""

    def __init__(self, clients: int) -> None:
        self.clients = clients
        self.connected = 0
        self._all_connected = asyncio.Event()
        self._count: dict[str, int] = {}
        self._first: dict[str, float] = {}
        self._last: dict[str, asyncio.Future[float]] = {}

    def on_connect(self) -> None:
        self.connected += 1
        if self.connected >= self.clients:
            self._all_connected.set()

    def seen(self, message_id: str, at: float) -> None:
        count = self._count[message_id] = self._count.get(message_id, 0) + 1
        self._first.setdefault(message_id, at)
        if count == self.clients:
            last = self._future(message_id)
            if not last.done():
                last.set_result(at)

    def _future(self, message_id: str) -> asyncio.Future[float]:
        return self._last.setdefault(message_id, asyncio.get_running_loop().create_future())

    async def all_connected(self, timeout: float) -> None:
        await asyncio.wait_for(self._all_connected.wait(), timeout)

    async def every_client(self, message_ids: list[str], timeout: float) -> dict[str, list[float]]:
        """(first, last) arrival per message that reached every client within ``timeout``."""
        futures = [self._future(message_id) for message_id in message_ids]
        await asyncio.wait(futures, timeout=timeout)
        return {
            message_id: [self._first[message_id], future.result()]
            for message_id, future in zip(message_ids, futures, strict=True)
            if future.done()
        }


async def follow(client: httpx.AsyncClient, params: dict[str, str], arrivals: Arrivals) -> None:
    async with client.stream("GET", "/api/v1/events", params=params, timeout=None) as response:
        response.raise_for_status()  # headers are back: the server has subscribed this client
        arrivals.on_connect()
        pending = b""
        async for chunk in response.aiter_raw():
            at = time.monotonic()
            pending += chunk
            end = pending.rfind(b"\r\n\r\n")  # the end of the last complete event
            if end < 0:
                continue
            for match in _CREATED.finditer(pending, 0, end):
                arrivals.seen(match.group(1).decode(), at)
            pending = pending[end + 4 :]


async def clients_main(url: str, thread_id: str, clients: int) -> None:
    """The child process. stdout: ``ready`` once every stream is open, then one JSON line with the
    arrivals of the message ids it was given. stdin: ``start`` (measuring begins), then those ids."""
    arrivals = Arrivals(clients)
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as streams:
        async with asyncio.TaskGroup() as group:
            readers = [
                group.create_task(follow(streams, {"thread_id": thread_id} if i % 2 == 0 else {}, arrivals))
                for i in range(clients)
            ]
            await arrivals.all_connected(CONNECT_TIMEOUT)
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.readline)  # "start"
            cpu_before = time.process_time()
            message_ids = json.loads(await asyncio.to_thread(sys.stdin.readline))
            seen = await arrivals.every_client(message_ids, DELIVERY_TIMEOUT)
            cpu = time.process_time() - cpu_before
            print(json.dumps({"arrivals": seen, "cpu_seconds": cpu}), flush=True)
            for reader in readers:
                reader.cancel()


@asynccontextmanager
async def client_process(url: str, thread_id: str, clients: int) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.sse_fanout",
        url,
        thread_id,
        str(clients),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=report.ROOT,
    )
    assert process.stdout is not None
    try:
        ready = await asyncio.wait_for(process.stdout.readline(), CONNECT_TIMEOUT + 30)
        if ready.strip() != b"ready":
            raise RuntimeError(f"the clients' process did not connect: {ready!r}")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def post_series(
    client: httpx.AsyncClient, thread_id: str, label: str, count: int, interval_ms: float
) -> list[tuple[str, float, float]]:
    """POST ``count`` notes, one every ``interval_ms``: (message id, start, latency ms) each."""
    posts: list[tuple[str, float, float]] = []
    next_at = time.monotonic()
    for index in range(count):
        delay = next_at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)  # pacing, not waiting for a condition
        next_at += interval_ms / 1000
        start = time.monotonic()
        response = await client.post(
            f"/api/v1/threads/{thread_id}/messages", json={"content": f"{label} note {index}"}
        )
        latency = (time.monotonic() - start) * 1000
        response.raise_for_status()
        posts.append((response.json()["message"]["id"], start, latency))
    return posts


async def with_clients(
    server: Server, api: httpx.AsyncClient, thread_id: str, clients: int, posts: int, interval_ms: float
) -> dict[str, Any]:
    async with client_process(server.url, thread_id, clients) as process:
        assert process.stdin is not None and process.stdout is not None
        await post_series(api, thread_id, "warm-up", WARM_UP, interval_ms)
        process.stdin.write(b"start\n")
        cpu_before = server.cpu_seconds()
        sent = await post_series(api, thread_id, "measured", posts, interval_ms)
        process.stdin.write(json.dumps([message_id for message_id, _, _ in sent]).encode() + b"\n")
        await process.stdin.drain()
        result = json.loads(await asyncio.wait_for(process.stdout.readline(), DELIVERY_TIMEOUT + 30))
        cpu_after = server.cpu_seconds()
    arrivals: dict[str, list[float]] = result["arrivals"]
    first = [(arrivals[m][0] - start) * 1000 for m, start, _ in sent if m in arrivals]
    last = [(arrivals[m][1] - start) * 1000 for m, start, _ in sent if m in arrivals]
    out: dict[str, Any] = {
        "post_ms": summarize([latency for _id, _start, latency in sent]),
        "delivered_to_every_client": len(last),
        "delivery_to_first_client_ms": summarize(first) if first else None,
        "delivery_to_last_client_ms": summarize(last) if last else None,
        "clients_cpu_ms_per_post": round(result["cpu_seconds"] * 1000 / posts, 2),
    }
    if cpu_before is not None and cpu_after is not None:
        out["server_cpu_ms_per_post"] = round((cpu_after - cpu_before) * 1000 / posts, 2)
    return out


async def alone(
    server: Server, api: httpx.AsyncClient, thread_id: str, posts: int, interval_ms: float
) -> Any:
    await post_series(api, thread_id, "warm-up", WARM_UP, interval_ms)
    cpu_before = server.cpu_seconds()
    sent = await post_series(api, thread_id, "alone", posts, interval_ms)
    cpu_after = server.cpu_seconds()
    out: dict[str, Any] = {"post_ms": summarize([latency for _id, _start, latency in sent])}
    if cpu_before is not None and cpu_after is not None:
        out["server_cpu_ms_per_post"] = round((cpu_after - cpu_before) * 1000 / posts, 2)
    return out


async def run(posts: int, clients: int = CLIENTS, paces_ms: tuple[float, ...] = PACES_MS) -> dict[str, Any]:
    out: dict[str, Any] = {
        "clients": clients,
        "posts_measured": posts,
        "warm_up_discarded": WARM_UP,
        "load_average_1m_before": report.load_average(),
    }
    for interval_ms in paces_ms:
        out[f"a_post_every_{interval_ms:.0f}_ms"] = await one_pace(posts, clients, interval_ms)
    out["load_average_1m_after"] = report.load_average()
    return out


async def one_pace(posts: int, clients: int, interval_ms: float) -> dict[str, Any]:
    """Both phases on a fresh server, posting every ``interval_ms``."""
    out: dict[str, Any] = {}
    async with running_server() as server, httpx.AsyncClient(base_url=server.url, timeout=30) as api:
        created = await api.post("/api/v1/threads", json={"title": "sse fan-out benchmark"})
        created.raise_for_status()
        thread_id = str(created.json()["id"])
        log.info("sse_fanout: a post every %.0f ms, no client connected", interval_ms)
        out["no_clients"] = await alone(server, api, thread_id, posts, interval_ms)
        log.info("sse_fanout: a post every %.0f ms, %d clients connected", interval_ms, clients)
        out[f"{clients}_clients"] = await with_clients(server, api, thread_id, clients, posts, interval_ms)
    out["targets"] = targets(out, clients, posts)
    log.info("sse_fanout: %s", json.dumps(out["targets"]))
    return out


def targets(out: dict[str, Any], clients: int, posts: int) -> dict[str, Any]:
    loaded = out[f"{clients}_clients"]
    overhead = loaded["post_ms"]["p50"] / out["no_clients"]["post_ms"]["p50"] - 1
    worst = (loaded["delivery_to_last_client_ms"] or {}).get("max")
    every = loaded["delivered_to_every_client"] == posts
    return {
        "post_p50_overhead": {
            "measured": round(overhead, 3),
            "target": f"<= {POST_OVERHEAD_TARGET}",
            "met": overhead <= POST_OVERHEAD_TARGET,
        },
        "delivery_to_last_client_max_ms": {
            "measured": worst,
            "target": f"<= {DELIVERY_TARGET_MS:.0f}, every event delivered",
            "met": every and worst is not None and worst <= DELIVERY_TARGET_MS,
        },
    }


if __name__ == "__main__":
    os.nice(NICE)
    try:
        import uvloop  # the server's loop too (uvicorn picks it when installed)
    except ImportError:
        asyncio.run(clients_main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    else:
        uvloop.run(clients_main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
