"""SSE: journal replay from Last-Event-ID / since, live tail, live-only deltas; auth; the shared
journal reader (one read per signal for every stream, per-thread filters, slow clients)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from sqlalchemy import select

from conftest import Team, watch_statements
from openbot.api.app import create_app
from openbot.core.clock import FakeClock
from openbot.runtime.engine import Runtime
from openbot.store.journal import journal_floor, journal_head
from openbot.store.models import Event


async def read_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    event: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if "event" in event or "data" in event:
                yield event
            event = {}
        elif line.startswith(":"):
            yield {"comment": line}
        else:
            key, _, value = line.partition(":")
            event[key] = value.lstrip(" ")


async def collect(
    url: str, params: dict[str, str], headers: dict[str, str], until: Any, on_connect: Any = None
) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=10) as c, c.stream("GET", url, params=params, headers=headers) as r:
        assert r.status_code == 200
        async for event in read_events(r):
            if event.get("comment") == ": connected" and on_connect is not None:
                await on_connect()
            got.append(event)
            if until(got):
                return got
    return got


async def test_replay_from_last_event_id_then_live_tail(server: str, team: Team) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    await team.idle()
    url = f"{server}/api/v1/events"
    first = await collect(
        url,
        {"thread_id": thread, "since": "0"},
        {},
        lambda got: sum(e.get("event") == "message.created" for e in got) >= 2,
    )
    created = [e for e in first if e.get("event") == "message.created"]
    assert [json.loads(e["data"])["sender"]["handle"] for e in created] == ["you", "engineer"]
    ids = [int(e["id"]) for e in first if "id" in e]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)

    # Reconnect with Last-Event-ID after the first message: exactly the later events come back,
    # then the stream tails live events posted after the connection opened.
    resume_from = created[0]["id"]

    async def post_now() -> None:
        await team.post(thread, "@qa two")

    second = await collect(
        url,
        {"thread_id": thread},
        {"Last-Event-ID": resume_from},
        lambda got: sum(e.get("event") == "message.created" for e in got) >= 3,
        on_connect=post_now,
    )
    replayed = [json.loads(e["data"]) for e in second if e.get("event") == "message.created"]
    assert replayed[0]["sender"]["handle"] == "engineer"
    assert all(int(e["id"]) > int(resume_from) for e in second if "id" in e)
    assert any(m["content"] == "@qa two" for m in replayed)


async def test_token_deltas_are_live_only(server: str, team: Team) -> None:
    thread = await team.thread()
    url = f"{server}/api/v1/events"

    async def post_now() -> None:
        await team.post(thread, "@engineer talk")

    live = await collect(
        url,
        {"thread_id": thread},
        {},
        lambda got: any(
            e.get("event") == "message.created" and "engineer received" in e["data"] for e in got
        ),
        on_connect=post_now,
    )
    deltas = [e for e in live if e.get("event") == "text.delta"]
    assert deltas and all("id" not in e for e in deltas)
    text = "".join(json.loads(e["data"])["delta"] for e in deltas)
    assert text.strip() == "(scripted) engineer received 1 message(s)."
    await team.idle()
    replay = await collect(
        url,
        {"thread_id": thread, "since": "0"},
        {},
        lambda got: any("engineer received" in e.get("data", "") for e in got),
    )
    assert not [e for e in replay if e.get("event") == "text.delta"]


async def test_bad_since_is_invalid_argument(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/events", params={"since": "abc"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_argument"


async def test_bearer_token_is_required_when_configured(client: httpx.AsyncClient, rt: Runtime) -> None:
    rt.settings.api_token = "s3cret"
    response = await client.get("/api/v1/bots")
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
    wrong = await client.get("/api/v1/bots", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = await client.get("/api/v1/bots", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200
    assert (await client.get("/api/v1/health", params={"token": "s3cret"})).status_code == 200
    assert (await client.get("/")).status_code == 200  # the page itself loads and asks for the token


async def test_replay_from_before_the_pruned_journal_sends_reset(
    server: str, team: Team, clock: FakeClock
) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    await team.idle()
    assert await team.rt.system.maintenance.prune() == 0  # nothing is past its retention yet
    clock.advance(team.rt.settings.journal_retention_days * 86400 + 1)
    await team.rt.system.maintain()  # the hourly pass prunes what the retention period let go
    async with team.rt.db.read() as s:
        assert await journal_floor(s) > 0
    events = await collect(
        f"{server}/api/v1/events", {"since": "1"}, {}, lambda got: any("event" in e for e in got)
    )
    reset = next(e for e in events if "event" in e)
    assert reset["event"] == "reset" and json.loads(reset["data"])["reason"] == "journal pruned"


async def test_ids_keep_rising_after_the_whole_journal_is_past_its_retention(
    server: str, team: Team, clock: FakeClock
) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    await team.idle()
    async with team.rt.db.read() as s:
        head = await journal_head(s)
    clock.advance(team.rt.settings.journal_retention_days * 86400 + 1)
    await team.rt.system.maintain()  # the hourly pass prunes what the retention period let go
    async with team.rt.db.read() as s:
        assert 0 < await journal_floor(s) < head  # pruned up to the newest row
        assert list(await s.scalars(select(Event.id))) == [head]  # which stays: ids go on from it

    async def post_now() -> None:
        await team.post(thread, "@engineer two")

    events = await collect(
        f"{server}/api/v1/events",
        {"thread_id": thread},
        {"Last-Event-ID": str(head)},
        lambda got: any(e.get("event") == "message.created" for e in got),
        on_connect=post_now,
    )
    durable = [e for e in events if "id" in e]
    assert durable and all(int(e["id"]) > head for e in durable)
    assert not any(e.get("event") == "reset" for e in events)


async def test_heartbeats_are_sent_as_comments(server: str, rt: Runtime) -> None:
    rt.settings.heartbeat_seconds = 1
    got = await collect(
        f"{server}/api/v1/events",
        {},
        {},
        lambda got: any(e.get("comment", "").startswith(": ping") for e in got),
    )
    assert any(e.get("comment", "").startswith(": ping") for e in got)


# -- the shared journal reader ----------------------------------------------------------------------

Check = Callable[[list[dict[str, Any]]], bool]


class Tail:
    """One event stream read in the background; ``until`` waits for arrivals, not for time."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.connected = asyncio.Event()
        self._arrived = asyncio.Event()

    async def read(self, client: httpx.AsyncClient, url: str, params: dict[str, str]) -> None:
        async with client.stream("GET", url, params=params) as response:
            assert response.status_code == 200
            async for event in read_events(response):
                self.connected.set()
                self.events.append(event)
                self._arrived.set()

    async def until(self, check: Check) -> None:
        async with asyncio.timeout(10):
            while not check(self.events):
                self._arrived.clear()
                await self._arrived.wait()

    def sequence(self) -> list[str]:
        return sequence(self.events)


def sequence(events: list[dict[str, Any]]) -> list[str]:
    """Message contents and live deltas, in the order a stream got them."""
    data = [json.loads(e["data"]) for e in events if e.get("event") in ("message.created", "text.delta")]
    return [d.get("content") or d.get("delta") for d in data]


@asynccontextmanager
async def tails(server: str, *params: dict[str, str]) -> AsyncIterator[list[Tail]]:
    """Open one stream per ``params`` and yield once the server has subscribed them all."""
    streams = [Tail() for _ in params]
    async with httpx.AsyncClient(timeout=10) as client, asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(t.read(client, f"{server}/api/v1/events", p))
            for t, p in zip(streams, params, strict=True)
        ]
        try:
            async with asyncio.timeout(10):
                for stream in streams:
                    await stream.connected.wait()
            yield streams
        finally:
            for task in tasks:
                task.cancel()


def has(text: str) -> Check:
    return lambda got: any(e.get("event") == "message.created" and text in e["data"] for e in got)


@contextmanager
def journal_reads(rt: Runtime) -> Iterator[list[str]]:
    """The SELECTs on the journal the runtime runs while the block does."""
    seen: list[str] = []

    def sent(statement: str, _parameters: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM events" in statement:
            seen.append(statement)

    with watch_statements(rt.db, sent):
        yield seen


async def commit_quietly(rt: Runtime, thread_id: str, content: str) -> int:
    """A journal row committed without any signal (as another process's would be, NOTIFY aside)."""
    async with rt.db.transaction() as s:
        row = Event(
            type="message.created", thread_id=thread_id, data={"content": content}, created_at=rt.clock.now()
        )
        s.add(row)
        await s.flush()
        return row.id


async def test_many_streams_share_one_journal_read_per_signal(server: str, team: Team, rt: Runtime) -> None:
    rt.settings.poll_seconds = 60  # only the post's signal wakes the reader here
    rt.system.pause()  # and no bot answers: one post, one transaction, one signal
    thread = await team.thread()
    async with tails(server, *({"thread_id": thread} if i % 2 else {} for i in range(20))) as streams:
        await team.post(thread, "warm up")
        for stream in streams:
            await stream.until(has("warm up"))
        with journal_reads(rt) as reads:
            await team.post(thread, "counted")
            for stream in streams:
                await stream.until(has("counted"))
    assert len(reads) == 1, reads  # not one per stream


async def test_streams_get_only_their_thread_s_rows_and_live_events(
    server: str, team: Team, rt: Runtime
) -> None:
    rt.system.pause()  # no bot answers: the streams carry only what the test posts
    a, b = await team.thread("a"), await team.thread("b")
    async with tails(server, {"thread_id": a}, {"thread_id": b}, {}) as (on_a, on_b, on_all):
        await team.post(a, "in a")
        rt.bus.live("text.delta", {"thread_id": a, "delta": "delta in a"}, a)
        await team.post(b, "in b")
        rt.bus.live("text.delta", {"delta": "in no thread"}, None)  # like a journal row of no thread
        await team.post(a, "a again")
        await team.post(b, "b again")
        for stream, last in ((on_a, "a again"), (on_b, "b again"), (on_all, "b again")):
            await stream.until(has(last))
    assert on_a.sequence() == ["in a", "delta in a", "a again"]
    assert on_b.sequence() == ["in b", "b again"]
    assert on_all.sequence() == ["in a", "delta in a", "in b", "in no thread", "a again", "b again"]


async def test_live_events_keep_their_place_between_journal_rows(
    server: str, team: Team, rt: Runtime
) -> None:
    """Both rows are committed before any signal: the reader must stop at each signal's ``upto``."""
    rt.settings.poll_seconds = 60
    thread = await team.thread()
    async with tails(server, {"thread_id": thread}) as (stream,):
        first = await commit_quietly(rt, thread, "first")
        second = await commit_quietly(rt, thread, "second")
        rt.bus.journal_changed(thread, first)
        rt.bus.live("text.delta", {"delta": "between"}, thread)
        rt.bus.journal_changed(thread, second)
        await stream.until(has("second"))
    assert stream.sequence() == ["first", "between", "second"]


async def test_a_commit_announced_from_elsewhere_reaches_every_stream(
    server: str, team: Team, rt: Runtime
) -> None:
    rt.settings.poll_seconds = 60
    thread = await team.thread()
    async with tails(server, {"thread_id": thread}, {}) as streams:
        await commit_quietly(rt, thread, "from another process")
        rt.db.journal_committed({None: 0})  # what the LISTEN task does on PostgreSQL: no ``upto``
        for stream in streams:
            await stream.until(has("from another process"))


async def test_a_reconnect_replays_then_joins_the_shared_reader_without_gaps(server: str, team: Team) -> None:
    team.rt.system.pause()
    thread = await team.thread()
    async with tails(server, {}) as (watcher,):
        for i in range(3):
            await team.post(thread, f"before {i}")
        await watcher.until(has("before 2"))
        resume = next(int(e["id"]) for e in watcher.events if has("before 0")([e]))

        async def post_now() -> None:
            await team.post(thread, "after")

        url = f"{server}/api/v1/events"
        got = await collect(url, {}, {"Last-Event-ID": str(resume)}, has("after"), on_connect=post_now)
        await watcher.until(has("after"))
    ids = [int(e["id"]) for e in got if "id" in e]
    assert ids == [int(e["id"]) for e in watcher.events if "id" in e and resume < int(e["id"]) <= ids[-1]]
    assert sequence(got) == ["before 1", "before 2", "after"]


async def test_a_slow_client_is_disconnected_with_a_reason_and_the_others_keep_up(
    server: str, team: Team, rt: Runtime
) -> None:
    rt.system.pause()
    thread = await team.thread()
    async with rt.db.read() as s:
        before = await journal_head(s)
    sent: list[bytes] = []
    stalled, release, gone = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:  # a client that stops reading after ": connected"
        if message["type"] == "http.response.body":
            sent.append(message["body"])
            if not release.is_set():
                stalled.set()
                await release.wait()

    path = "/api/v1/events"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": f"thread_id={thread}".encode(),
        "headers": [(b"host", b"test")],
        "client": ("127.0.0.1", 50000),
        "server": ("test", 80),
    }
    async with tails(server, {"thread_id": thread}) as (fast,):
        rt.observer.fanout.buffer = 3  # for the streams that attach from now on: the slow one
        slow = asyncio.create_task(create_app(runtime=rt)(scope, receive, send))
        await stalled.wait()
        for i in range(5):
            await team.post(thread, f"note {i}")
        await fast.until(has("note 4"))
        assert rt.observer.fanout.streams == 1  # the slow stream was let go when it overflowed
        release.set()
        await asyncio.wait_for(slow, 10)  # its response ends by itself
    body = b"".join(sent).decode()
    assert "event: overflow" in body and "client too slow" in body and "message.created" not in body
    assert fast.sequence() == [f"note {i}" for i in range(5)]
    again = await collect(f"{server}{path}", {"thread_id": thread, "since": str(before)}, {}, has("note 4"))
    assert sequence(again) == [f"note {i}" for i in range(5)]  # the reconnect replays it all
