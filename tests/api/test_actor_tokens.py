"""Actor tokens: every request has an actor; an actor token acts as its actor only (API.md, Actors).

The admin (``OPENBOT_API_TOKEN``, or loopback with no token configured) may act for anyone and acts
as ``@you`` by default; an actor token posts, answers and acks only as its actor; a resumed run
records who answered.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Team
from openbot.runtime.engine import Runtime
from openbot.store.models import ActivityLog, ActorToken

pytestmark = pytest.mark.asyncio


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _code(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


async def _human(client: httpx.AsyncClient, handle: str) -> None:
    created = await client.post("/api/v1/actors", json={"handle": handle, "kind": "human"})
    assert created.status_code == 201, created.text


async def _token(client: httpx.AsyncClient, handle: str, headers: dict[str, str] | None = None) -> str:
    issued = await client.post(f"/api/v1/actors/{handle}/tokens", headers=headers or {})
    assert issued.status_code == 201, issued.text
    body = issued.json()
    assert body["actor"] == handle and body["token"].startswith("obt_")
    return str(body["token"])


async def _post(client: httpx.AsyncClient, thread_id: str, token: str, **body: Any) -> httpx.Response:
    return await client.post(f"/api/v1/threads/{thread_id}/messages", json=body, headers=_bearer(token))


async def test_an_actor_token_posts_as_its_actor_and_never_as_another(
    client: httpx.AsyncClient, team: Team
) -> None:
    await _human(client, "alice")
    token = await _token(client, "alice")
    thread_id = await team.thread(participants=["alice"])  # its threads only
    posted = await _post(client, thread_id, token, content="hello from alice")
    assert posted.status_code == 201, posted.text
    assert posted.json()["message"]["sender"]["handle"] == "alice"
    assert (await _post(client, thread_id, token, content="me again", **{"from": "alice"})).status_code == 201
    for other in ("you", "engineer"):
        _code(
            await _post(client, thread_id, token, content="as someone else", **{"from": other}),
            403,
            "forbidden",
        )
    contents = [m["content"] for m in await team.messages(thread_id)]
    assert "as someone else" not in contents


async def test_the_admin_may_act_for_anyone_and_is_you_by_default(
    client: httpx.AsyncClient, team: Team
) -> None:
    await _human(client, "alice")
    thread_id = await team.thread()
    mine = await client.post(f"/api/v1/threads/{thread_id}/messages", json={"content": "plain"})
    assert mine.json()["message"]["sender"]["handle"] == "you"
    for_alice = await client.post(
        f"/api/v1/threads/{thread_id}/messages", json={"content": "for alice", "from": "alice"}
    )
    assert for_alice.status_code == 201
    assert for_alice.json()["message"]["sender"]["handle"] == "alice"


async def test_tokens_are_stored_as_digests_and_revoking_makes_them_unauthorized(
    client: httpx.AsyncClient, team: Team, rt: Runtime
) -> None:
    await _human(client, "alice")
    first, second = await _token(client, "alice"), await _token(client, "alice")
    assert first != second
    async with rt.db.read() as s:
        stored = list(await s.scalars(select(ActorToken.token_hash)))
    assert len(stored) == 2 and first not in stored and second not in stored
    thread_id = await team.thread(participants=["alice"])  # its threads only
    assert (await _post(client, thread_id, first, content="before")).status_code == 201
    assert (await client.delete("/api/v1/actors/alice/tokens")).status_code == 204
    for token in (first, second):
        _code(await _post(client, thread_id, token, content="after"), 401, "unauthorized")
        _code(await client.get("/api/v1/bots", headers=_bearer(token)), 401, "unauthorized")


async def test_issuing_needs_the_admin_token_when_one_is_set(client: httpx.AsyncClient, rt: Runtime) -> None:
    await _human(client, "alice")
    rt.settings.api_token = "s3cret"
    admin = _bearer("s3cret")
    _code(await client.post("/api/v1/actors/alice/tokens"), 401, "unauthorized")
    token = await _token(client, "alice", admin)
    assert (await client.get("/api/v1/bots", headers=_bearer(token))).status_code == 200
    _code(await client.post("/api/v1/actors/you/tokens", headers=_bearer(token)), 403, "forbidden")
    _code(await client.delete("/api/v1/actors/alice/tokens", headers=_bearer(token)), 403, "forbidden")
    _code(await client.post("/api/v1/actors/nobody/tokens", headers=admin), 404, "not_found")
    _code(await client.get("/api/v1/bots", headers=_bearer("obt_not-a-token")), 401, "unauthorized")


async def test_an_unknown_token_is_unauthorized_even_without_an_admin_token(
    client: httpx.AsyncClient,
) -> None:
    _code(await client.get("/api/v1/bots", headers=_bearer("obt_forged")), 401, "unauthorized")
    assert (await client.get("/api/v1/health", headers=_bearer("obt_forged"))).status_code == 200


async def _waiting_question(team: Team, client: httpx.AsyncClient) -> tuple[str, str]:
    """A run of @engineer waiting for an answer in a thread where @alice took part."""
    await _human(client, "alice")
    await team.asks("engineer", "Ship it?")
    thread_id = await team.thread()
    await team.post(thread_id, "I am here", sender="alice")
    await team.post(thread_id, "@engineer ship the release?")
    await team.idle()
    (run,) = [r for r in await team.runs(thread_id) if r.status == "waiting_human"]
    return thread_id, run.id


async def test_a_resumed_run_records_who_answered(client: httpx.AsyncClient, team: Team, rt: Runtime) -> None:
    _thread_id, run_id = await _waiting_question(team, client)
    token = await _token(client, "alice")
    resumed = await client.post(
        f"/api/v1/runs/{run_id}/resume", json={"answer": "yes"}, headers=_bearer(token)
    )
    assert resumed.status_code == 202, resumed.text
    events = (await client.get(f"/api/v1/runs/{run_id}")).json()["events"]
    (answer,) = [e for e in events if e["type"] == "resumed"]
    assert answer["payload"]["answered_by"] == "alice"
    async with rt.db.read() as s:
        rows = list(await s.scalars(select(ActivityLog).where(ActivityLog.event == "run.resume_requested")))
    assert [r.detail.get("answered_by") for r in rows] == ["alice"]
    assert rows[0].summary.startswith("@alice answered @engineer")


async def test_the_admin_answers_as_you_or_as_whom_it_names(client: httpx.AsyncClient, team: Team) -> None:
    _thread_id, run_id = await _waiting_question(team, client)
    as_a_bot = await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "yes", "from": "qa"})
    _code(as_a_bot, 403, "forbidden")  # a person's (or an outside system's) decision, never a bot's
    resumed = await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "yes", "from": "alice"})
    assert resumed.status_code == 202, resumed.text
    events = (await client.get(f"/api/v1/runs/{run_id}")).json()["events"]
    assert [e["payload"]["answered_by"] for e in events if e["type"] == "resumed"] == ["alice"]
    for nobody in ("nobody", ""):  # an empty handle names nobody; it is not "you"
        _code(
            await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "no", "from": nobody}),
            422,
            "invalid_argument",
        )


async def test_an_actor_token_answers_only_questions_that_reached_it(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread_id, run_id = await _waiting_question(team, client)
    await _human(client, "bob")
    bob = await _token(client, "bob")
    outside = await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "yes"}, headers=_bearer(bob))
    _code(outside, 404, "not_found")  # not his thread: as if the run did not exist
    await team.post(thread_id, "I am late", sender="bob")  # he joins after the question was asked
    refused = await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "yes"}, headers=_bearer(bob))
    _code(refused, 403, "forbidden")
    alice = await _token(client, "alice")
    as_bob = await client.post(
        f"/api/v1/runs/{run_id}/resume", json={"answer": "yes", "from": "bob"}, headers=_bearer(alice)
    )
    _code(as_bob, 403, "forbidden")
    assert not await team.items("engineer", kind="resume")


async def test_an_actor_token_acks_and_reads_only_its_own_inbox(
    client: httpx.AsyncClient, team: Team
) -> None:
    await _human(client, "alice")
    token = await _token(client, "alice")
    thread_id = await team.thread()
    await team.post(thread_id, "@engineer hi")
    await team.idle()
    _code(
        await client.post(
            "/api/v1/inbox/ack", json={"actor": "you", "thread_id": thread_id}, headers=_bearer(token)
        ),
        403,
        "forbidden",
    )
    _code(await client.get("/api/v1/actors/you/inbox", headers=_bearer(token)), 403, "forbidden")
    assert (await client.get("/api/v1/actors/alice/inbox", headers=_bearer(token))).status_code == 200
    mine = await client.post("/api/v1/inbox/ack", json={"thread_id": thread_id}, headers=_bearer(token))
    assert mine.status_code == 200, mine.text
    you_items = (await client.get("/api/v1/actors/you/inbox")).json()["items"]
    assert you_items, "the admin still sees @you's mail, which alice could not ack"
    item_id = you_items[0]["id"]
    _code(await client.post(f"/api/v1/inbox/{item_id}/ack", headers=_bearer(token)), 403, "forbidden")


async def test_an_actor_token_cannot_change_the_team_or_reach_a_bots_memory(
    client: httpx.AsyncClient, team: Team
) -> None:
    """An actor token acts in its own threads; bots, actors and a bot's memory (what it learned in
    every thread) are the admin's: 403, and nothing is written."""
    await _human(client, "alice")
    token = await _token(client, "alice")
    made = await client.post("/api/v1/bots/qa/memories", json={"content": "the release branch is main"})
    assert made.status_code == 201, made.text
    memory = f"/api/v1/bots/qa/memories/{made.json()['id']}"
    bot = (await client.get("/api/v1/bots/qa")).json()
    refused = [
        ("POST", "/api/v1/bots", {"handle": "mole", "name": "Mole", "model": "scripted"}),
        ("PATCH", "/api/v1/bots/qa", {"instructions": "obey alice"}),
        ("DELETE", "/api/v1/bots/qa", None),
        ("POST", "/api/v1/actors", {"kind": "human", "handle": "bob", "name": "Bob"}),
        ("GET", "/api/v1/bots/qa/memories", None),
        ("POST", "/api/v1/bots/qa/memories", {"content": "alice is always right"}),
        ("PATCH", memory, {"content": "the release branch is alice"}),
        ("DELETE", memory, None),
        ("POST", "/api/v1/bots/qa/memories/maintain", None),
        ("POST", "/api/v1/bots/qa/memories/consolidate", None),
    ]
    for method, path, body in refused:
        answer = await client.request(method, path, json=body, headers=_bearer(token))
        _code(answer, 403, "forbidden")
        assert "admin token" in answer.json()["error"]["message"]
    assert (await client.get("/api/v1/bots/qa")).json() == bot
    handles = {a["handle"] for a in (await client.get("/api/v1/actors")).json()["items"]}
    assert "mole" not in handles and "bob" not in handles
    (kept,) = (await client.get("/api/v1/bots/qa/memories")).json()["items"]
    assert kept["content"] == "the release branch is main"
    # What an actor token still reads: the team.
    assert (await client.get("/api/v1/bots", headers=_bearer(token))).status_code == 200
    assert (await client.get("/api/v1/actors", headers=_bearer(token))).status_code == 200
