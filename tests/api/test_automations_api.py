"""The automations routes: create, read, change, run now, occurrences, delete; refusals are 422
with a stable ``details.reason`` and write nothing."""

from __future__ import annotations

import httpx
import pytest

from conftest import Team
from openbot.core.clock import FakeClock


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"cron": "61 * * * *"}, "bad_cron"),
        ({"cron": "* * * * * *"}, "bad_cron"),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "bad_timezone"),
        ({"cron": "0 9 * * *", "bot": "nobody"}, "unknown_bot"),
        ({"cron": "0 9 * * *", "bot": "you"}, "unknown_bot"),
        ({"cron": "0 9 * * *", "thread_id": "thr_missing"}, "unknown_thread"),
        ({"at": "2025-12-31T23:59:00Z"}, "at_in_past"),
        ({"at": "2025-12-31T23:59:00Z", "enabled": False}, "at_in_past"),  # it could never fire
        ({"at": "next tuesday"}, "bad_at"),
        ({"cron": "0 0 31 2 *"}, "bad_cron"),  # valid, but February has no 31st: it never fires
        ({"at": "9999-12-31T23:59:59-14:00"}, "bad_at"),  # past the last datetime once in UTC
        ({"at": "9999-12-31T23:59:59", "timezone": "Etc/GMT+12"}, "bad_at"),
        ({}, "schedule"),
        ({"cron": "0 9 * * *", "at": "2026-02-01T00:00:00Z"}, "schedule"),
        ({"cron": "0 9 * * *", "content": "  "}, "empty_content"),
        ({"cron": "0 9 * * *", "owner": "engineer"}, "owner_is_bot"),  # its own post wakes nobody
    ],
)
async def test_a_bad_automation_is_refused_and_nothing_is_written(
    client: httpx.AsyncClient, body: dict[str, str], reason: str
) -> None:
    sent = {"bot": "engineer", "content": "hi", **body}
    answer = await client.post("/api/v1/automations", json=sent)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_argument" and error["details"]["reason"] == reason
    assert (await client.get("/api/v1/automations")).json() == {"items": []}


async def test_automation_routes_round_trip(client: httpx.AsyncClient, team: Team, clock: FakeClock) -> None:
    thread = await team.thread("ops")
    body = {"bot": "reviewer", "content": "@reviewer weekly review", "cron": "0 9 * * 1", "thread_id": thread}
    made = (await client.post("/api/v1/automations", json=body)).json()
    assert made["owner"] == "you" and made["bot"] == "reviewer" and made["catch_up"] == "once"
    assert made["next_run_at"] == "2026-01-05T09:00:00+00:00" and made["last_run_at"] is None
    assert (await client.get(f"/api/v1/automations/{made['id']}")).json() == made
    assert [a["id"] for a in (await client.get("/api/v1/automations?bot=reviewer")).json()["items"]] == [
        made["id"]
    ]
    assert (await client.get("/api/v1/automations?bot=qa")).json()["items"] == []

    off = (await client.patch(f"/api/v1/automations/{made['id']}", json={"enabled": False})).json()
    assert off["enabled"] is False and off["next_run_at"] is None
    on = await client.patch(f"/api/v1/automations/{made['id']}", json={"enabled": True, "cron": "30 8 * * *"})
    assert on.json()["next_run_at"] == "2026-01-01T08:30:00+00:00"
    off_again = await client.patch(f"/api/v1/automations/{made['id']}", json={"enabled": False})
    assert off_again.status_code == 200
    past = await client.patch(f"/api/v1/automations/{made['id']}", json={"at": "2025-12-31T23:59:00Z"})
    assert past.status_code == 422 and past.json()["error"]["details"]["reason"] == "at_in_past"
    assert (await client.get(f"/api/v1/automations/{made['id']}")).json()["cron"] == "30 8 * * *"
    on = await client.patch(f"/api/v1/automations/{made['id']}", json={"enabled": True})
    assert on.json()["next_run_at"] == "2026-01-01T08:30:00+00:00"
    bad = await client.patch(f"/api/v1/automations/{made['id']}", json={"timezone": "Nowhere/City"})
    assert bad.status_code == 422 and bad.json()["error"]["details"]["reason"] == "bad_timezone"
    assert (await client.get(f"/api/v1/automations/{made['id']}")).json()["timezone"] == "UTC"

    ran = await client.post(f"/api/v1/automations/{made['id']}/run")
    assert ran.status_code == 201, ran.text
    occurrence = ran.json()
    assert occurrence["status"] == "fired" and occurrence["thread_id"] == thread
    again = await client.post(f"/api/v1/automations/{made['id']}/run")  # the same instant: once
    assert again.status_code == 409
    listed = (await client.get(f"/api/v1/automations/{made['id']}/occurrences")).json()["items"]
    assert listed == [occurrence]
    [message] = [m for m in await team.messages(thread) if m["metadata"].get("kind") == "automation"]
    assert message["id"] == occurrence["message_id"] and message["sender"]["handle"] == "you"
    assert message["metadata"]["automation_id"] == made["id"]

    assert (await client.delete(f"/api/v1/automations/{made['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/automations/{made['id']}")).status_code == 404
    assert (await client.post(f"/api/v1/automations/{made['id']}/run")).status_code == 404


async def test_an_actor_token_sees_and_changes_only_its_own_automations(
    client: httpx.AsyncClient, team: Team
) -> None:
    assert (await client.post("/api/v1/actors", json={"kind": "human", "handle": "alice"})).status_code == 201
    token = (await client.post("/api/v1/actors/alice/tokens")).json()["token"]
    alice = {"Authorization": f"Bearer {token}"}
    hers = await team.thread("alice's", participants=["alice", "engineer"])
    not_hers = await team.thread("not alice's")
    ours = (
        await client.post("/api/v1/automations", json={"bot": "qa", "content": "x", "cron": "0 9 * * *"})
    ).json()

    body = {"bot": "engineer", "content": "ping", "cron": "0 10 * * *", "thread_id": not_hers}
    refused = await client.post("/api/v1/automations", json=body, headers=alice)
    assert refused.status_code == 422 and refused.json()["error"]["details"]["reason"] == "unknown_thread"
    as_you = await client.post("/api/v1/automations", json={**body, "owner": "you"}, headers=alice)
    assert as_you.status_code == 403
    made = await client.post("/api/v1/automations", json={**body, "thread_id": hers}, headers=alice)
    assert made.status_code == 201 and made.json()["owner"] == "alice"
    mine = made.json()["id"]

    listed = (await client.get("/api/v1/automations", headers=alice)).json()["items"]
    assert [a["id"] for a in listed] == [mine]
    assert {a["id"] for a in (await client.get("/api/v1/automations")).json()["items"]} == {ours["id"], mine}
    path = f"/api/v1/automations/{ours['id']}"
    assert (await client.get(path, headers=alice)).status_code == 404
    assert (await client.patch(path, json={"enabled": False}, headers=alice)).status_code == 404
    assert (await client.post(f"{path}/run", headers=alice)).status_code == 404
    assert (await client.get(f"{path}/occurrences", headers=alice)).status_code == 404
    assert (await client.delete(path, headers=alice)).status_code == 404
    moved = await client.patch(f"/api/v1/automations/{mine}", json={"thread_id": not_hers}, headers=alice)
    assert moved.status_code == 422
    ran = await client.post(f"/api/v1/automations/{mine}/run", headers=alice)
    assert ran.status_code == 201 and ran.json()["thread_id"] == hers
    assert (await client.get(path)).json()["enabled"] is True


async def test_a_null_that_cannot_mean_anything_is_refused_and_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    made = (
        await client.post(
            "/api/v1/automations", json={"bot": "engineer", "content": "hi", "cron": "0 9 * * *"}
        )
    ).json()
    for field in ("content", "cron", "at", "timezone", "enabled", "catch_up"):
        refused = await client.patch(f"/api/v1/automations/{made['id']}", json={field: None})
        assert refused.status_code == 422, (field, refused.text)
        assert refused.json()["error"]["details"] == {"field": field, "reason": "null"}
    assert (await client.get(f"/api/v1/automations/{made['id']}")).json() == made
    titled = await client.patch(f"/api/v1/automations/{made['id']}", json={"title": "daily"})
    assert titled.json()["title"] == "daily"
    cleared = await client.patch(f"/api/v1/automations/{made['id']}", json={"title": None})
    assert cleared.status_code == 200 and cleared.json()["title"] == ""
