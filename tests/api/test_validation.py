"""Bad input at the edges: free JSON limits, NUL characters, 64-bit integers, SSE resume ids past the
journal head, chunked bodies, 405s, malformed JSON; each refused with a stable code, nothing written,
and the same answer on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from conftest import Team


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]
    return dict(body["error"])


def _nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` levels deep ({} is one level)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


async def _bots(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/bots")
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


# -- 1. free JSON objects: depth, size, NaN/Infinity ----------------------------------------------


async def test_deep_model_settings_are_refused_and_bots_stay_readable(client: httpx.AsyncClient) -> None:
    before = await _bots(client)
    error = _error(
        await client.patch("/api/v1/bots/qa", json={"model_settings": _nested(500)}), 422, "invalid_argument"
    )
    assert "model_settings" in error["message"] and "32" in error["message"]
    _error(
        await client.post("/api/v1/bots", json={"handle": "deep", "model_settings": _nested(33)}),
        422,
        "invalid_argument",
    )
    assert await _bots(client) == before
    ok = await client.patch("/api/v1/bots/qa", json={"model_settings": _nested(32)})
    assert ok.status_code == 200, ok.text
    assert next(b for b in await _bots(client) if b["handle"] == "qa")["model_settings"] == _nested(32)


async def test_large_free_json_is_refused(client: httpx.AsyncClient, team: Team) -> None:
    before = await _bots(client)
    big = {"notes": "x" * (64 * 1024)}
    error = _error(
        await client.patch("/api/v1/bots/qa", json={"model_settings": big}), 422, "invalid_argument"
    )
    assert "65536" in error["message"]
    assert await _bots(client) == before
    await team.asks("engineer", "Ship?", reply="ok")
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    run = (await team.runs(thread))[0]
    decisions = [{"type": "edit", "args": {"blob": "y" * (64 * 1024)}}]
    _error(
        await client.post(f"/api/v1/runs/{run.id}/resume", json={"decisions": decisions}),
        422,
        "invalid_argument",
    )
    assert (await client.get(f"/api/v1/runs/{run.id}")).json()["status"] == "waiting_human"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_nan_and_infinity_are_refused(client: httpx.AsyncClient, literal: str) -> None:
    before = await _bots(client)
    body = '{"model_settings": {"temperature": ' + literal + "}}"
    response = await client.patch(
        "/api/v1/bots/qa", content=body.encode(), headers={"content-type": "application/json"}
    )
    error = _error(response, 422, "invalid_argument")
    assert "model_settings" in error["message"] and "temperature" in error["message"]
    assert await _bots(client) == before


# -- 2. NUL characters, 64-bit integers -----------------------------------------------------------


NUL_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/api/v1/threads", {"title": "a\u0000b"}),
    ("POST", "/api/v1/threads/{thread}/messages", {"content": "hi\u0000"}),
    ("POST", "/api/v1/threads/{thread}/messages", {"content": "hi", "to": ["engineer\u0000"]}),
    ("POST", "/api/v1/bots", {"handle": "newbot", "name": "x\u0000"}),
    ("PATCH", "/api/v1/bots/qa", {"description": "\u0000"}),
    ("PATCH", "/api/v1/bots/qa", {"tools": ["todo_write\u0000"]}),
    ("PATCH", "/api/v1/bots/qa", {"model_settings": {"k\u0000": 1}}),
    ("PATCH", "/api/v1/bots/qa", {"model_settings": {"script": [{"match": "x", "reply": "a\u0000"}]}}),
    ("POST", "/api/v1/actors", {"kind": "human", "handle": "newhuman", "name": "\u0000"}),
    ("POST", "/api/v1/inbox/ack", {"thread_id": "thr\u0000"}),
]


@pytest.mark.parametrize(("method", "path", "body"), NUL_BODIES)
async def test_nul_characters_in_a_body_are_refused(
    client: httpx.AsyncClient, team: Team, method: str, path: str, body: dict[str, Any]
) -> None:
    thread = await team.thread()
    bots_before, messages_before = await _bots(client), await team.message_count()
    threads_before = (await client.get("/api/v1/threads")).json()["items"]
    response = await client.request(method, path.format(thread=thread), json=body)
    error = _error(response, 422, "invalid_argument")
    assert "NUL" in error["message"]
    assert await _bots(client) == bots_before and await team.message_count() == messages_before
    assert (await client.get("/api/v1/threads")).json()["items"] == threads_before


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/threads", {"q": "a\u0000"}),
        ("/api/v1/threads/thr_x%00y", {}),
        ("/api/v1/bots/qa%00", {}),
        ("/api/v1/activity", {"actor": "\u0000"}),
    ],
)
async def test_nul_characters_in_the_url_are_refused(
    client: httpx.AsyncClient, path: str, params: dict[str, str]
) -> None:
    error = _error(await client.get(path, params=params), 422, "invalid_argument")
    assert "NUL" in error["message"]


async def test_lone_surrogates_are_refused(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    before = await _bots(client)
    for path, body in (
        (f"/api/v1/threads/{thread}/messages", b'{"content": "half \\ud800 a pair"}'),
        ("/api/v1/bots/qa", b'{"model_settings": {"note": "half \\udc00 a pair"}}'),
    ):
        method = "PATCH" if path.endswith("qa") else "POST"
        response = await client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        _error(response, 422, "invalid_argument")
    assert await team.message_count() == 0
    assert await _bots(client) == before


@pytest.mark.parametrize(
    "after_id", ["99999999999999999999999", "-99999999999999999999999", "9223372036854775808"]
)
async def test_integers_beyond_64_bits_are_refused(client: httpx.AsyncClient, after_id: str) -> None:
    error = _error(
        await client.get("/api/v1/activity", params={"after_id": after_id}), 422, "invalid_argument"
    )
    assert "after_id" in error["message"]
    ok = await client.get("/api/v1/activity", params={"after_id": "9223372036854775807"})
    assert ok.status_code == 200 and ok.json()["items"] == []


@pytest.mark.parametrize("since", ["99999999999999999999999", "9223372036854775808", "²", "-1", "1.5"])
async def test_bad_sse_resume_ids_are_refused(client: httpx.AsyncClient, since: str) -> None:
    async with asyncio.timeout(10):  # an accepted id opens a stream that never ends
        _error(await client.get("/api/v1/events", params={"since": since}), 422, "invalid_argument")
        headers = {"Last-Event-ID": since.encode()}  # sent as UTF-8 bytes
        _error(await client.get("/api/v1/events", headers=headers), 422, "invalid_argument")


# -- 3. SSE resume ids past the journal head ------------------------------------------------------


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    event: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event
            event = {}
        elif line.startswith(":"):
            yield {"comment": line}
        else:
            key, _, value = line.partition(":")
            event[key] = value.lstrip(" ")


@pytest.mark.parametrize("how", ["since", "Last-Event-ID"])
async def test_resume_id_beyond_the_journal_head_sends_reset_then_tails(
    server: str, team: Team, how: str
) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer one")
    await team.idle()
    head, _floor = await team.rt.observer.journal_bounds()
    ahead = str(head + 1000)
    params = {"thread_id": thread, **({"since": ahead} if how == "since" else {})}
    headers = {"Last-Event-ID": ahead} if how == "Last-Event-ID" else {}
    got: list[dict[str, Any]] = []
    async with (
        asyncio.timeout(15),  # a stream that skips the new events would otherwise wait forever
        httpx.AsyncClient(timeout=10) as c,
        c.stream("GET", f"{server}/api/v1/events", params=params, headers=headers) as r,
    ):
        assert r.status_code == 200
        async for event in _events(r):
            if event.get("comment") == ": connected":
                await team.post(thread, "note two", to=[])
            got.append(event)
            if event.get("event") == "message.created":
                break
    named = [e for e in got if "event" in e]
    assert named[0]["event"] == "reset"
    reset = json.loads(named[0]["data"])
    assert reset["head"] == head and reset["reason"] == "ahead of the journal"
    assert int(named[0]["id"]) == head
    created = [json.loads(e["data"]) for e in named if e["event"] == "message.created"]
    assert [m["content"] for m in created] == ["note two"]
    assert all(int(e["id"]) > head for e in named[1:] if "id" in e)


# -- 4. chunked bodies, 405, malformed JSON -------------------------------------------------------


async def test_oversized_chunked_body_is_payload_too_large(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    limit = team.rt.settings.max_body_bytes

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"content": "'
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536
        yield b'"}'

    response = await client.post(
        f"/api/v1/threads/{thread}/messages", content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    error = _error(response, 413, "payload_too_large")
    assert error["details"] == {"max_bytes": limit}
    assert await team.message_count() == 0


async def test_method_not_allowed_has_its_code_and_allow_header(client: httpx.AsyncClient) -> None:
    response = await client.delete("/api/v1/bots")
    _error(response, 405, "method_not_allowed")
    assert {m.strip() for m in response.headers["allow"].split(",")} == {"GET", "POST"}
    assert len(await _bots(client)) == 4


async def test_malformed_json_says_where(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    response = await client.post(
        f"/api/v1/threads/{thread}/messages",
        content=b'{"content": "hi",\n  oops}',
        headers={"content-type": "application/json"},
    )
    error = _error(response, 422, "invalid_argument")
    assert error["details"] == {"line": 2, "column": 3, "position": 20}
    assert "line 2, column 3" in error["message"] and "not valid JSON" in error["message"]
    assert "field" not in json.dumps(error)
    assert await team.message_count() == 0


# -- 5. the same answer on both backends ----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/bots", {"handle": "longname", "name": "n" * 201}),
        ("PATCH", "/api/v1/bots/qa", {"name": "n" * 201}),
        ("PATCH", "/api/v1/bots/qa", {"model": "openai:" + "m" * 194}),
        ("POST", "/api/v1/actors", {"kind": "human", "handle": "longhuman", "name": "n" * 201}),
    ],
)
async def test_values_longer_than_their_columns_are_refused(
    client: httpx.AsyncClient, method: str, path: str, body: dict[str, Any]
) -> None:
    before = await _bots(client)
    actors = (await client.get("/api/v1/actors")).json()["items"]
    _error(await client.request(method, path, json=body), 422, "invalid_argument")
    assert await _bots(client) == before
    assert (await client.get("/api/v1/actors")).json()["items"] == actors


async def test_values_at_their_column_limits_are_stored_alike(client: httpx.AsyncClient) -> None:
    bot = {"handle": "edge", "name": "é" * 200, "model": "openai:" + "m" * 193}
    settings = {"z": [1, 1.5, -0.0, 10**30, "ü\U0001f600"], "a": {"nested": None}}
    created = await client.post("/api/v1/bots", json={**bot, "model_settings": settings})
    assert created.status_code == 201, created.text
    stored = await client.get("/api/v1/bots/edge")
    assert stored.status_code == 200
    assert {k: stored.json()[k] for k in bot} == bot
    assert json.dumps(stored.json()["model_settings"], sort_keys=True) == json.dumps(settings, sort_keys=True)


# -- 6. scripted-model regexes that could stall the server ----------------------------------------


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(?:\\w+\\s?)*!", "((ab)*c?)+x", "(" * 3000 + ")" * 3000, "a{99999999999}"]
)
async def test_a_script_that_could_stall_the_server_is_refused(
    client: httpx.AsyncClient, pattern: str
) -> None:
    before = await _bots(client)
    script = [{"match": pattern, "reply": "x"}]
    error = _error(
        await client.patch(
            "/api/v1/bots/qa", json={"model": "scripted", "model_settings": {"script": script}}
        ),
        422,
        "invalid_argument",
    )
    assert "script[0].match" in error["message"]
    assert await _bots(client) == before
    assert (await client.get("/api/v1/health")).json() == {"ok": True}


# -- a handle is the whole string: a final newline is not let by --------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/bots", {"handle": "cd\n"}),
        ("/api/v1/actors", {"kind": "human", "handle": "ef\n", "name": "x"}),
        ("/api/v1/actors", {"kind": "human", "handle": "ef\r\n", "name": "x"}),
    ],
)
async def test_a_handle_with_a_trailing_newline_is_refused(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    """``[a-z0-9_-]{2,32}`` is the whole handle: Python's ``$`` also matches before a final ``\\n``,
    which let ``cd\\n`` in beside ``cd``."""
    before = (await client.get("/api/v1/actors")).json()["items"]
    _error(await client.post(path, json=body), 422, "invalid_argument")
    after = (await client.get("/api/v1/actors")).json()["items"]
    assert after == before  # nothing written
