"""The deliveries API (GET /webhooks/deliveries, POST …/{id}/retry), the SSRF rule on POST /actors,
and an external actor answering a question over the API with its token (the run resumes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from conftest import Team
from openbot.config import Settings
from openbot.runtime.engine import Runtime
from webhook_receiver import Receiver, receiving

pytestmark = pytest.mark.asyncio
DELIVERIES = "/api/v1/webhooks/deliveries"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True, "webhook_retries": []})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving(Receiver()) as r:
        yield r


def _code(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


async def _external(client: httpx.AsyncClient, handle: str, url: str) -> dict[str, str]:
    body = {"kind": "external", "handle": handle, "webhook_url": url, "webhook_secret": "s"}
    assert (await client.post("/api/v1/actors", json=body)).status_code == 201
    token = (await client.post(f"/api/v1/actors/{handle}/tokens")).json()["token"]
    return {"Authorization": f"Bearer {token}"}


async def test_deliveries_are_listed_filtered_and_retried(
    client: httpx.AsyncClient, team: Team, rt: Runtime, receiver: Receiver
) -> None:
    receiver.default = 500
    hook = await _external(client, "hook", receiver.url)
    other = await _external(client, "other", receiver.url)
    thread_id = await team.thread(participants=["hook", "other"])
    await team.post(thread_id, "@hook @other news")  # humans and externals only: no bot wakes
    await rt.webhooks.deliver_due()
    listed = (await client.get(DELIVERIES)).json()["items"]
    assert sorted(d["actor"] for d in listed) == ["hook", "other"]
    assert {d["status"] for d in listed} == {"failed"}  # no retries configured
    assert all(d["attempts"] == 1 and d["last_error"] == "HTTP 500: answered 500" for d in listed)
    mine = (await client.get(DELIVERIES, params={"actor": "hook"})).json()["items"]
    assert [d["actor"] for d in mine] == ["hook"]
    assert (await client.get(DELIVERIES, params={"status": "delivered"})).json()["items"] == []
    _code(await client.get(DELIVERIES, params={"status": "lost"}), 422, "invalid_argument")
    # An actor token sees its own deliveries only, and retrying is the admin's.
    as_hook = (await client.get(DELIVERIES, headers=hook)).json()["items"]
    assert [d["actor"] for d in as_hook] == ["hook"]
    _code(
        await client.get(DELIVERIES, params={"actor": "other"}, headers=hook),
        403,
        "forbidden",
    )
    delivery_id = mine[0]["id"]
    _code(await client.post(f"{DELIVERIES}/{delivery_id}/retry", headers=other), 403, "forbidden")
    _code(await client.post(f"{DELIVERIES}/whd_nope/retry"), 404, "not_found")
    receiver.default = 200
    retried = await client.post(f"{DELIVERIES}/{delivery_id}/retry")
    assert retried.status_code == 202 and retried.json()["status"] == "pending"
    await rt.webhooks.deliver_due()
    (done,) = (await client.get(DELIVERIES, params={"actor": "hook"})).json()["items"]
    assert (done["status"], done["attempts"], done["last_error"]) == ("delivered", 2, None)
    _code(await client.post(f"{DELIVERIES}/{delivery_id}/retry"), 409, "conflict")


async def test_actor_creation_refuses_urls_the_rule_forbids(client: httpx.AsyncClient, rt: Runtime) -> None:
    body = {"kind": "external", "handle": "meta", "webhook_url": "http://169.254.169.254/latest"}
    refused = await client.post("/api/v1/actors", json=body)
    _code(refused, 422, "invalid_argument")
    assert refused.json()["error"]["details"]["field"] == "webhook_url"
    rt.team.settings.webhook_allow_private = False
    private = {"kind": "external", "handle": "lan", "webhook_url": "http://10.0.0.8/hook"}
    _code(await client.post("/api/v1/actors", json=private), 422, "invalid_argument")
    assert all(
        a["handle"] not in ("meta", "lan") for a in (await client.get("/api/v1/actors")).json()["items"]
    )


async def test_an_external_actor_answers_a_question_with_its_token(
    client: httpx.AsyncClient, team: Team, rt: Runtime, receiver: Receiver
) -> None:
    hook = await _external(client, "hook", receiver.url)
    await team.asks("engineer", "Ship it?", reply="shipping: {tool_result}")
    thread_id = await team.thread(participants=["hook"])
    await team.post(thread_id, "@engineer ship the release?")
    await team.idle()
    await rt.webhooks.deliver_due()
    (question,) = [r.json for r in receiver.requests if r.json["type"] == "question.created"]
    run_id = question["run"]["id"]
    # The receiver reads the thread and answers with its token, as a person would.
    seen = await client.get(f"/api/v1/threads/{thread_id}/messages", headers=hook)
    assert seen.status_code == 200
    answered = await client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": "yes"}, headers=hook)
    assert answered.status_code == 202, answered.text
    await team.idle()
    run = (await client.get(f"/api/v1/runs/{run_id}", headers=hook)).json()
    assert run["status"] == "completed"
    assert [e["payload"]["answered_by"] for e in run["events"] if e["type"] == "resumed"] == ["hook"]
    assert (await team.messages(thread_id))[-1]["content"] == "shipping: yes"
    posted = await client.post(
        f"/api/v1/threads/{thread_id}/messages", json={"content": "thanks"}, headers=hook
    )
    assert posted.status_code == 201 and posted.json()["message"]["sender"]["handle"] == "hook"


async def test_an_external_actor_changes_its_webhook_under_the_same_rule(
    client: httpx.AsyncClient, team: Team, rt: Runtime, receiver: Receiver
) -> None:
    hook = await _external(client, "hook", "http://127.0.0.1:9/nobody-listens")
    await _external(client, "other", receiver.url)
    link_local = {"webhook_url": "http://169.254.169.254/latest"}
    refused = await client.patch("/api/v1/actors/hook", json=link_local, headers=hook)
    _code(refused, 422, "invalid_argument")
    assert refused.json()["error"]["details"]["field"] == "webhook_url"
    _code(await client.patch("/api/v1/actors/other", json={"name": "x"}, headers=hook), 403, "forbidden")
    a_person = await client.patch("/api/v1/actors/you", json={"webhook_url": receiver.url})
    _code(a_person, 422, "invalid_argument")  # only external actors have a webhook
    _code(await client.patch("/api/v1/actors/engineer", json={"name": "E"}), 422, "invalid_argument")
    _code(await client.patch("/api/v1/actors/nobody", json={"name": "N"}), 404, "not_found")
    _code(await client.patch("/api/v1/actors/you", json={"name": "   "}), 422, "invalid_argument")  # blank
    moved = await client.patch("/api/v1/actors/hook", json={"webhook_url": receiver.url}, headers=hook)
    assert moved.status_code == 200 and moved.json()["webhook_url"] == receiver.url
    thread_id = await team.thread(participants=["hook"])
    await team.post(thread_id, "@hook after the move")
    await rt.webhooks.deliver_due()
    assert [r.json["message"]["content"] for r in receiver.requests] == ["@hook after the move"]
