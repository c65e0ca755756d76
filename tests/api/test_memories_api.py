"""/api/v1/bots/{handle}/memories: list, search, filter, add, edit, delete; bad input writes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from conftest import Team
from openbot.config import Settings
from openbot.runtime.memory.service import index_status

BASE = "/api/v1/bots/engineer/memories"


async def _add(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post(BASE, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _activity(client: httpx.AsyncClient) -> list[str]:
    items = (await client.get("/api/v1/activity", params={"event": "memory."})).json()["items"]
    return [i["event"] for i in items]


async def test_add_list_search_edit_delete(client: httpx.AsyncClient) -> None:
    first = await _add(
        client, content="Alice prefers short status reports", segment="preference", tier="permanent"
    )
    second = await _add(
        client,
        content="The billing service deploys from the release branch",
        importance=0.9,
        created_at="2026-01-01T00:00:00+00:00",
        last_accessed_at="2026-01-02T00:00:00+00:00",
    )
    assert first["bot"] == "engineer" and first["source"] == "human" and first["lifecycle"] == "active"
    assert (first["segment"], first["tier"], first["importance"]) == ("preference", "permanent", 0.5)
    assert second["segment"] == "knowledge" and second["tier"] == "long"
    assert second["last_accessed_at"].startswith("2026-01-02") and second["created_at"].startswith(
        "2026-01-01"
    )

    listed = (await client.get(BASE)).json()["items"]
    assert [m["id"] for m in listed] == [second["id"], first["id"]]
    found = (await client.get(BASE, params={"q": "which branch does billing deploy from?"})).json()["items"]
    assert [m["id"] for m in found] == [second["id"]] and found[0]["score"] > 0
    only = (await client.get(BASE, params={"segment": "preference"})).json()["items"]
    assert [m["id"] for m in only] == [first["id"]]

    edited = await client.patch(f"{BASE}/{second['id']}", json={"lifecycle": "archived", "tier": "short"})
    assert edited.status_code == 200 and edited.json()["lifecycle"] == "archived"
    assert [m["id"] for m in (await client.get(BASE)).json()["items"]] == [first["id"]]
    archived = (await client.get(BASE, params={"lifecycle": "archived"})).json()["items"]
    assert [(m["id"], m["tier"]) for m in archived] == [(second["id"], "short")]
    assert len((await client.get(BASE, params={"lifecycle": "all"})).json()["items"]) == 2

    assert (await client.delete(f"{BASE}/{first['id']}")).status_code == 204
    assert (await client.delete(f"{BASE}/{first['id']}")).status_code == 404
    assert (await client.get(f"/api/v1/bots/reviewer/memories/{second['id']}")).status_code in (404, 405)
    assert (await client.patch(f"/api/v1/bots/reviewer/memories/{second['id']}", json={})).status_code == 404
    assert await _activity(client) == ["memory.created", "memory.created", "memory.updated", "memory.deleted"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "x", "segment": "gossip"}, "segment"),
        ({"content": "x", "tier": "forever"}, "tier"),
        ({"content": "x", "importance": 1.01}, "importance"),
        ({"content": "x", "importance": -1}, "importance"),
        ({"content": "x", "created_at": "yesterday"}, "created_at"),
    ],
)
async def test_bad_input_is_422_and_writes_nothing(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await client.post(BASE, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_argument"
    assert field in response.text
    assert (await client.get(BASE, params={"lifecycle": "all"})).json()["items"] == []
    assert await _activity(client) == []


async def test_unknown_bot_and_bad_edits_are_422(client: httpx.AsyncClient) -> None:
    for response in (
        await client.post("/api/v1/bots/nobody/memories", json={"content": "x"}),
        await client.get("/api/v1/bots/nobody/memories"),
        await client.post("/api/v1/bots/you/memories", json={"content": "x"}),  # a human, not a bot
    ):
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_argument"
    kept = await _add(client, content="keep me as I am")
    for patch in ({"importance": 2}, {"segment": "gossip"}, {"content": ""}, {"lifecycle": "gone"}):
        response = await client.patch(f"{BASE}/{kept['id']}", json=patch)
        assert response.status_code == 422, (patch, response.text)
    (after,) = (await client.get(BASE)).json()["items"]
    assert after == kept
    assert (await client.get(BASE, params={"segment": "gossip"})).status_code == 422
    assert await _activity(client) == ["memory.created"]


async def test_a_run_context_is_404_until_recorded(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/runs/run_missing/context")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_status_says_which_index_ranks_memories(tmp_path: Any) -> None:
    assert index_status(Settings(data_dir=tmp_path)) == {"index": "lexical"}
    asked = index_status(Settings(data_dir=tmp_path, embeddings="openai:text-embedding-3-small"))
    assert asked == {"index": "embeddings", "model": "openai:text-embedding-3-small"}


async def test_import_times_with_an_offset_are_kept_as_the_same_instant(client: httpx.AsyncClient) -> None:
    added = await _add(
        client,
        content="The on-call rota changes on Mondays",
        created_at="2024-06-01T12:00:00+05:00",
        last_accessed_at="2024-06-01T18:30:00-02:00",
    )
    (listed,) = (await client.get(BASE)).json()["items"]
    assert (listed["created_at"], listed["last_accessed_at"]) == (
        "2024-06-01T07:00:00+00:00",
        "2024-06-01T20:30:00+00:00",
    )
    times = ("created_at", "last_accessed_at")
    assert [added[t] for t in times] == [listed[t] for t in times]


async def test_a_null_field_in_an_edit_is_refused_and_writes_nothing(client: httpx.AsyncClient) -> None:
    kept = await _add(client, content="keep me as I am")
    for field in ("content", "segment", "tier", "importance", "lifecycle"):
        refused = await client.patch(f"{BASE}/{kept['id']}", json={field: None})
        assert refused.status_code == 422, (field, refused.text)
        assert refused.json()["error"]["details"] == {"field": field}
    assert (await client.get(BASE)).json()["items"] == [kept]
    assert await _activity(client) == ["memory.created"]


async def test_the_list_is_newest_first_by_when_a_memory_was_made(client: httpx.AsyncClient) -> None:
    made_now = await _add(client, content="The release train leaves on Mondays")
    imported = await _add(client, content="The office moved in 2020", created_at="2020-01-01T00:00:00+00:00")
    later = await _add(client, content="Lunch moved to one", created_at="2030-01-01T00:00:00+00:00")
    listed = [m["id"] for m in (await client.get(BASE)).json()["items"]]
    assert listed == [later["id"], made_now["id"], imported["id"]]


async def test_a_run_context_is_there_while_it_runs_and_after_a_cancel(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.slow_run_started("@engineer a slow one", delay_ms=20_000)  # cancelled long before
    (run,) = await team.runs(thread)
    running = await client.get(f"/api/v1/runs/{run.id}/context")
    assert running.status_code == 200, running.text
    assert running.json()["run_id"] == run.id and "a slow one" in running.json()["messages"][-1]["content"]
    assert (await client.post(f"/api/v1/runs/{run.id}/cancel")).status_code == 202
    await team.idle()
    assert [r.status for r in await team.runs(thread)] == ["cancelled"]
    kept = await client.get(f"/api/v1/runs/{run.id}/context")
    assert kept.status_code == 200 and kept.json() == running.json()
