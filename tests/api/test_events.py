"""SSE: journal replay from Last-Event-ID / since, live tail, live-only deltas; auth."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.engine import Runtime
from openbot.store.journal import journal_floor


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
    assert text.strip() == "(scripted) engineer received 1 message."
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


async def test_heartbeats_are_sent_as_comments(server: str, rt: Runtime) -> None:
    rt.settings.heartbeat_seconds = 1
    got = await collect(
        f"{server}/api/v1/events",
        {},
        {},
        lambda got: any(e.get("comment", "").startswith(": ping") for e in got),
    )
    assert any(e.get("comment", "").startswith(": ping") for e in got)
