"""Drafts: the bot stages, only a person sends (approve, maybe edited) or rejects (with a reason)."""

from __future__ import annotations

from typing import Any

import httpx

from conftest import Team
from openbot.runtime.commands import ActorCreate, BotUpdate
from openbot.runtime.team import create_actor

PITCH = "Dear partner, we would like to ship on Friday."


async def _drafting(team: Team, **target: str) -> str:
    """@engineer saves a draft for ``target`` when asked; returns the thread it works in."""
    call = {"name": "save_draft", "args": {"title": "Ship date", "content": PITCH, "target": target}}
    await team.rt.team.update_bot("engineer", BotUpdate(tools=["save_draft"]))
    await team.script("engineer", [{"match": "draft", "reply": "{tool_result}", "tool_calls": [call]}])
    async with team.rt.db.transaction() as s:
        await create_actor(s, ActorCreate(kind="external", handle="partner", name="Partner"))
    thread = await team.thread(title="deal")
    await team.post(thread, "@engineer draft the note")
    await team.idle()
    return thread


def _sent_by_bot(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["metadata"].get("kind") == "draft"]


async def test_the_bot_never_sends_alone(team: Team, client: httpx.AsyncClient) -> None:
    thread = await _drafting(team, actor="partner")
    assert (await team.runs(thread))[0].status == "completed"
    messages = await team.messages(thread)
    assert not _sent_by_bot(messages) and not any(m["content"] == PITCH for m in messages)
    assert await team.items("partner") == []  # nothing reached the external actor
    pending = (await client.get("/api/v1/drafts", params={"status": "pending"})).json()["items"]
    assert [(d["bot"], d["title"], d["content"], d["target"], d["thread_id"]) for d in pending] == [
        ("engineer", "Ship date", PITCH, {"actor": "partner"}, thread)
    ]
    assert pending[0]["run_id"] == (await team.runs(thread))[0].id
    assert pending[0]["decided_at"] is None and pending[0]["decided_by"] is None
    assert "has not been sent" in messages[-1]["content"]


async def test_approving_an_edited_draft_sends_the_edit_once(team: Team, client: httpx.AsyncClient) -> None:
    thread = await _drafting(team, actor="partner")
    draft = (await client.get("/api/v1/drafts")).json()["items"][0]
    edited = "Dear partner, we ship on Monday."
    approved = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={"content": edited})
    assert approved.status_code == 200, approved.text
    body = approved.json()
    assert (body["status"], body["decided_by"], body["content"]) == ("sent", "you", edited)
    assert body["decided_at"] is not None
    sent = _sent_by_bot(await team.messages(thread))
    assert [(m["sender"]["handle"], m["content"], m["metadata"]["draft_id"]) for m in sent] == [
        ("engineer", edited, draft["id"])
    ]
    assert body["message_id"] == sent[0]["id"]
    assert [i.message_id for i in await team.items("partner")] == [sent[0]["id"]]  # it reached them
    again = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={})
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    rejected = await client.post(f"/api/v1/drafts/{draft['id']}/reject", json={"reason": "late"})
    assert rejected.status_code == 409
    assert len(_sent_by_bot(await team.messages(thread))) == 1
    assert (await client.get("/api/v1/drafts", params={"status": "pending"})).json()["items"] == []


async def test_a_rejection_reason_reaches_the_bot_next_run(team: Team, client: httpx.AsyncClient) -> None:
    thread = await _drafting(team)
    draft = (await client.get("/api/v1/drafts")).json()["items"][0]
    assert draft["target"] == {}
    reason = "Too early, wait for legal review"
    rejected = await client.post(f"/api/v1/drafts/{draft['id']}/reject", json={"reason": reason})
    assert rejected.status_code == 200
    assert (rejected.json()["status"], rejected.json()["reason"]) == ("rejected", reason)
    notice = (await team.messages(thread))[-1]
    assert notice["sender"] is None and notice["metadata"]["kind"] == "draft_rejected"
    assert reason in notice["content"]
    assert len(await team.runs(thread)) == 1  # a notice wakes nobody
    prepared = team.prepared()
    await team.post(thread, "@engineer what now?")
    await team.idle()
    seen = "\n".join(str(m.content) for m in prepared[0].messages)
    assert reason in seen
    assert not _sent_by_bot(await team.messages(thread))
    decided = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={})
    assert decided.status_code == 409


async def test_only_a_person_decides_and_bad_input_is_refused(team: Team, client: httpx.AsyncClient) -> None:
    await _drafting(team, actor="partner")
    draft = (await client.get("/api/v1/drafts")).json()["items"][0]
    as_bot = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={"from": "reviewer"})
    assert as_bot.status_code == 403
    empty = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={"content": ""})
    assert empty.status_code == 422
    assert (await client.post("/api/v1/drafts/dft_nope/approve", json={})).status_code == 404
    assert (await client.get("/api/v1/drafts", params={"status": "maybe"})).status_code == 422
    assert (await client.get(f"/api/v1/drafts/{draft['id']}")).json()["status"] == "pending"


async def test_a_draft_to_an_unknown_actor_is_a_tool_error(team: Team) -> None:
    thread = await _drafting(team, actor="nobody_here")
    assert (await team.runs(thread))[0].status == "completed"
    assert "was not saved" in (await team.messages(thread))[-1]["content"]
    async with team.rt.db.read() as s:
        from openbot.runtime import drafts

        assert await drafts.list_drafts(s, status=None, bot_id=None, limit=10) == []


async def test_an_actor_token_sees_and_decides_the_drafts_of_its_threads_only(
    team: Team, client: httpx.AsyncClient
) -> None:
    thread = await _drafting(team, actor="partner")  # alice is not in this thread
    assert (await client.post("/api/v1/actors", json={"handle": "alice", "kind": "human"})).status_code == 201
    token = (await client.post("/api/v1/actors/alice/tokens")).json()["token"]
    alice = {"Authorization": f"Bearer {token}"}
    draft = (await client.get("/api/v1/drafts")).json()["items"][0]
    assert (await client.get("/api/v1/drafts", headers=alice)).json()["items"] == []
    assert (await client.get(f"/api/v1/drafts/{draft['id']}", headers=alice)).status_code == 404
    refused = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={}, headers=alice)
    assert refused.status_code == 404
    assert (await client.get(f"/api/v1/drafts/{draft['id']}")).json()["status"] == "pending"
    await team.post(thread, "alice joins", sender="alice")
    visible = (await client.get("/api/v1/drafts", headers=alice)).json()["items"]
    assert [d["id"] for d in visible] == [draft["id"]]
    sent = await client.post(f"/api/v1/drafts/{draft['id']}/approve", json={}, headers=alice)
    assert sent.status_code == 200 and sent.json()["decided_by"] == "alice"


async def test_approve_and_reject_need_no_body(team: Team, client: httpx.AsyncClient) -> None:
    thread = await _drafting(team)
    await team.post(thread, "@engineer draft the note again")
    await team.idle()
    first, second = (await client.get("/api/v1/drafts", params={"status": "pending"})).json()["items"]
    approved = await client.post(f"/api/v1/drafts/{first['id']}/approve")  # no body: sent as drafted
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["content"]) == ("sent", PITCH)
    rejected = await client.post(f"/api/v1/drafts/{second['id']}/reject")  # no body: no reason
    assert rejected.status_code == 200, rejected.text
    assert (rejected.json()["status"], rejected.json()["reason"]) == ("rejected", None)
    assert [m["content"] for m in _sent_by_bot(await team.messages(thread))] == [PITCH]
