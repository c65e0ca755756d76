"""GET /api/v1/messages/{id}/dispositions and GET /api/v1/why: one answer per case (invariant 13)."""

from __future__ import annotations

from typing import Any

import httpx

from openbot.runtime.governor.disposals import Reason, record_disposal
from openbot.runtime.team import get_actor
from openbot.store.models import InboxItem


async def _thread(client: httpx.AsyncClient, **body: Any) -> str:
    response = await client.post("/api/v1/threads", json={"title": "t", **body})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def _post(client: httpx.AsyncClient, thread: str, content: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/api/v1/threads/{thread}/messages", json={"content": content, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _why(client: httpx.AsyncClient, message_id: str, bot: str) -> dict[str, Any]:
    response = await client.get("/api/v1/why", params={"message_id": message_id, "bot": bot})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_dispositions_list_one_per_bot_that_saw_the_message(client: httpx.AsyncClient) -> None:
    thread = await _thread(client, participants=["engineer", "qa"])
    posted = await _post(client, thread, "@qa run the suite")
    response = await client.get(f"/api/v1/messages/{posted['message']['id']}/dispositions")
    assert response.status_code == 200
    items = {i["bot"]: i for i in response.json()["items"]}
    assert set(items) == {"engineer", "qa"}
    assert (items["qa"]["disposition"], items["qa"]["tier"], items["qa"]["signal"]) == (
        "engage",
        0,
        "mention",
    )
    assert items["engineer"]["disposition"] == "observe" and items["engineer"]["reason"]
    assert set(items["qa"]) >= {"bot", "disposition", "tier", "signal", "reason", "created_at"}
    missing = await client.get("/api/v1/messages/msg_nope/dispositions")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_why_answered_observed_queued_and_not_in_thread(client: httpx.AsyncClient, rt: Any) -> None:
    thread = await _thread(client, participants=["engineer", "qa"])
    posted = await _post(client, thread, "@qa run the suite")
    message_id = posted["message"]["id"]
    rt.system.pause()
    queued = await _post(client, thread, "@qa and again")
    assert (await _why(client, queued["message"]["id"], "qa"))["answer"] in ("queued", "running")
    rt.system.unpause()
    await rt.system.run_until_idle()
    answered = await _why(client, message_id, "qa")
    assert answered["answer"] == "answered" and answered["reply_message_id"]
    assert answered["run"]["bot"] == "qa" and answered["disposition"]["signal"] == "mention"
    observed = await _why(client, message_id, "engineer")
    assert observed["answer"] == "observed" and "@engineer" in observed["summary"]
    assert observed["disposition"]["disposition"] == "observe"
    assert (await _why(client, message_id, "reviewer"))["answer"] == "not_in_thread"
    unknown = await client.get("/api/v1/why", params={"message_id": message_id, "bot": "nobody"})
    assert unknown.status_code == 404


async def test_why_says_disabled_for_mail_queued_before_the_bot_was_disabled(
    client: httpx.AsyncClient, rt: Any
) -> None:
    thread = await _thread(client, participants=["qa"])
    rt.system.pause()
    message_id = (await _post(client, thread, "@qa check the build"))["message"]["id"]
    assert (await _why(client, message_id, "qa"))["answer"] == "queued"
    assert (await client.patch("/api/v1/bots/qa", json={"enabled": False})).status_code == 200
    rt.system.unpause()
    await rt.system.run_until_idle()
    why = await _why(client, message_id, "qa")
    assert why["answer"] == "disabled" and "waits" in why["summary"]
    assert (await client.patch("/api/v1/bots/qa", json={"enabled": True})).status_code == 200
    await rt.system.run_until_idle()
    assert (await _why(client, message_id, "qa"))["answer"] == "answered"


async def test_why_disabled_ignored_and_disposed(client: httpx.AsyncClient, rt: Any) -> None:
    thread = await _thread(client, participants=["engineer", "qa"])
    assert (await client.patch("/api/v1/bots/qa", json={"enabled": False})).status_code == 200
    posted = await _post(client, thread, "@engineer hi @qa")
    message_id = posted["message"]["id"]
    assert (await _why(client, message_id, "qa"))["answer"] == "disabled"
    rt.system.pause()
    second = await _post(client, thread, "@engineer once more")
    async with rt.db.transaction() as s:
        engineer = await get_actor(s, "engineer")
        item = await s.get(InboxItem, (await _item_id(rt, engineer.id, second["message"]["id"])))
        assert item is not None
        item.status = "cancelled"
        record_disposal(
            s,
            bot=engineer,
            thread_id=thread,
            reason=Reason.SHED,
            message_ids=[second["message"]["id"]],
            queue_depth=200,
            bound=200,
        )
    rt.system.unpause()
    disposed = await _why(client, second["message"]["id"], "engineer")
    assert disposed["answer"] == "disposed" and disposed["disposal"]["reason"] == "shed"
    await rt.system.run_until_idle()
    reply = next(
        m
        for m in (await client.get(f"/api/v1/threads/{thread}/messages")).json()["items"]
        if m["sender"] and m["sender"]["handle"] == "engineer"
    )
    ignored = await _why(client, reply["id"], "engineer")
    assert ignored["answer"] == "ignored" and ignored["disposition"]["signal"] == "own_message"


async def test_why_held_and_hop_limited(client: httpx.AsyncClient, rt: Any) -> None:
    rt.delivery.max_hops = 1
    script = {"model": "scripted", "model_settings": {"script": [{"match": ".", "reply": "@qa over to you"}]}}
    assert (await client.patch("/api/v1/bots/engineer", json=script)).status_code == 200
    thread = await _thread(client, participants=["engineer", "qa"])
    await _post(client, thread, "@engineer start")
    await rt.system.run_until_idle()
    await _post(client, thread, "@engineer again")
    await rt.system.run_until_idle()
    items = (await client.get(f"/api/v1/threads/{thread}/messages")).json()["items"]
    limited = next(m for m in items if m["metadata"].get("hop_limited"))
    answer = await _why(client, limited["id"], "qa")
    assert answer["answer"] == "hop_limited" and "hop limit" in answer["summary"]


async def test_thread_require_mention_and_bot_aliases_round_trip(client: httpx.AsyncClient) -> None:
    thread = await _thread(client, kind="channel", participants=["engineer"])
    assert (await client.get(f"/api/v1/threads/{thread}")).json()["require_mention"] is False
    patched = await client.patch(f"/api/v1/threads/{thread}", json={"require_mention": True})
    assert patched.status_code == 200 and patched.json()["require_mention"] is True
    bot = await client.patch("/api/v1/bots/engineer", json={"aliases": ["eng", "the builder"]})
    assert bot.status_code == 200 and bot.json()["aliases"] == ["eng", "the builder"]
    bad = await client.patch("/api/v1/bots/engineer", json={"aliases": [""]})
    assert bad.status_code == 422
    assert (await client.get("/api/v1/bots/engineer")).json()["aliases"] == ["eng", "the builder"]


async def _item_id(rt: Any, bot_id: str, message_id: str) -> str:
    from sqlalchemy import select

    async with rt.db.read() as s:
        found = await s.scalar(
            select(InboxItem.id).where(InboxItem.actor_id == bot_id, InboxItem.message_id == message_id)
        )
    assert found is not None
    return str(found)


async def test_an_actor_token_explains_only_messages_of_its_threads(client: httpx.AsyncClient) -> None:
    assert (await client.post("/api/v1/actors", json={"handle": "alice", "kind": "human"})).status_code == 201
    token = (await client.post("/api/v1/actors/alice/tokens")).json()["token"]
    alice = {"Authorization": f"Bearer {token}"}
    hers = await _thread(client, participants=["alice", "qa"])
    other = await _thread(client, participants=["qa"])
    mine = await _post(client, hers, "@qa hello")
    secret = await _post(client, other, "@qa hello")
    ok = await client.get(f"/api/v1/messages/{mine['message']['id']}/dispositions", headers=alice)
    assert ok.status_code == 200 and ok.json()["items"]
    for path, params in (
        (f"/api/v1/messages/{secret['message']['id']}/dispositions", {}),
        ("/api/v1/why", {"message_id": secret["message"]["id"], "bot": "qa"}),
    ):
        refused = await client.get(path, params=params, headers=alice)
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
