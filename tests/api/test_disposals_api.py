"""GET /api/v1/disposals (API.md, Engagement and explanations): triggers admitted, then dropped."""

from __future__ import annotations

import httpx

from conftest import Team
from openbot.runtime.engine import Runtime


async def _shed_two(rt: Runtime, team: Team, client: httpx.AsyncClient) -> tuple[str, list[str]]:
    """@qa's mailbox holds one; three channel triggers arrive while it is busy: two are shed."""
    assert (await client.patch("/api/v1/bots/qa", json={"max_queued": 1})).json()["max_queued"] == 1
    channel = await team.thread("room", kind="channel", participants=["qa"])
    rt.system.pause()
    ids = [(await team.post(channel, f"@qa {n}")).message.id for n in range(3)]
    rt.system.unpause()
    await team.idle()
    return channel, ids


async def test_disposals_are_listed_with_their_numbers_and_filtered(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    channel, ids = await _shed_two(rt, team, client)
    body = (await client.get("/api/v1/disposals")).json()
    [item] = body["items"]
    assert set(item) == {
        "id", "bot", "thread_id", "message_ids", "reason", "trigger_age_s", "bound", "queue_depth",
        "collapsed_count", "created_at",
    }  # fmt: skip
    assert (item["bot"], item["thread_id"], item["reason"]) == ("qa", channel, "shed")
    assert (item["message_ids"], item["queue_depth"], item["bound"]) == (ids[:2], 3, 1)
    for query in ("bot=qa", f"thread_id={channel}", "reason=shed", "bot=qa&reason=shed"):
        assert [i["id"] for i in (await client.get(f"/api/v1/disposals?{query}")).json()["items"]] == [
            item["id"]
        ]
    for query in ("bot=engineer", "reason=stale"):
        assert (await client.get(f"/api/v1/disposals?{query}")).json()["items"] == []


async def test_bad_filters_are_clear_errors(client: httpx.AsyncClient) -> None:
    missing = await client.get("/api/v1/disposals?bot=nobody")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    bad = await client.get("/api/v1/disposals?reason=lost")
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_argument"
    assert (await client.patch("/api/v1/bots/qa", json={"max_queued": 0})).status_code == 422


async def test_an_actor_token_sees_the_disposals_of_its_threads_only(
    rt: Runtime, team: Team, client: httpx.AsyncClient
) -> None:
    await _shed_two(rt, team, client)
    for handle in ("alice",):
        assert (
            await client.post("/api/v1/actors", json={"handle": handle, "kind": "human"})
        ).status_code == 201
    token = (await client.post("/api/v1/actors/alice/tokens")).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/api/v1/disposals", headers=headers)).json()["items"] == []
    assert len((await client.get("/api/v1/disposals")).json()["items"]) == 1


async def test_a_bot_is_created_with_its_mailbox_bound_and_a_bad_run_timeout_is_refused(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post("/api/v1/bots", json={"handle": "pager", "max_queued": 7})
    assert created.status_code == 201 and created.json()["max_queued"] == 7
    assert (await client.get("/api/v1/bots/qa")).json()["max_queued"] == 200
    for bad in (0, -5, "ten", True, 90_000):
        body = {"model_settings": {"run_timeout_seconds": bad}}
        refused = await client.patch("/api/v1/bots/pager", json=body)
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_argument", bad
    ok = await client.patch("/api/v1/bots/pager", json={"model_settings": {"run_timeout_seconds": 30}})
    assert ok.status_code == 200 and ok.json()["model_settings"]["run_timeout_seconds"] == 30
