"""Actor tokens see and post only in the threads their actor takes part in (API.md, actor tokens):
404 outside them for threads, messages, posts and runs; lists, activity and the event stream carry
their threads only. The admin keeps full access."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from test_events import collect
from typer.testing import CliRunner

from conftest import Team
from openbot.cli import app
from openbot.runtime.engine import Runtime

pytestmark = pytest.mark.asyncio


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _actor_with_token(client: httpx.AsyncClient, handle: str, kind: str = "human") -> dict[str, str]:
    assert (await client.post("/api/v1/actors", json={"handle": handle, "kind": kind})).status_code == 201
    issued = await client.post(f"/api/v1/actors/{handle}/tokens")
    return _bearer(issued.json()["token"])


def _not_found(response: httpx.Response) -> None:
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "not_found"


async def _two_threads(team: Team) -> tuple[str, str]:
    """Alice's thread (she posted there) and another one she never joined, each with a run."""
    mine = await team.thread("alice's")
    await team.post(mine, "@engineer hi from alice", sender="alice")
    other = await team.thread("secret")
    await team.post(other, "@engineer the secret plan")
    await team.idle()
    return mine, other


async def test_an_actor_token_reads_only_its_threads(client: httpx.AsyncClient, team: Team) -> None:
    alice = await _actor_with_token(client, "alice")
    mine, other = await _two_threads(team)
    listed = (await client.get("/api/v1/threads", headers=alice)).json()["items"]
    assert [t["id"] for t in listed] == [mine]
    assert (await client.get(f"/api/v1/threads/{mine}", headers=alice)).status_code == 200
    messages = await client.get(f"/api/v1/threads/{mine}/messages", headers=alice)
    assert messages.json()["items"][0]["content"] == "@engineer hi from alice"
    _not_found(await client.get(f"/api/v1/threads/{other}", headers=alice))
    _not_found(await client.get(f"/api/v1/threads/{other}/messages", headers=alice))
    _not_found(await client.get("/api/v1/runs", params={"thread_id": other}, headers=alice))
    runs = (await client.get("/api/v1/runs", headers=alice)).json()["items"]
    assert {r["thread_id"] for r in runs} == {mine}
    admin_runs = (await client.get("/api/v1/runs")).json()["items"]
    (secret_run,) = [r for r in admin_runs if r["thread_id"] == other]
    _not_found(await client.get(f"/api/v1/runs/{secret_run['id']}", headers=alice))
    _not_found(await client.post(f"/api/v1/runs/{secret_run['id']}/cancel", headers=alice))
    activity = (await client.get("/api/v1/activity", headers=alice)).json()["items"]
    assert activity and {a["thread_id"] for a in activity} == {mine}
    assert {t["id"] for t in (await client.get("/api/v1/threads")).json()["items"]} == {mine, other}


async def test_an_actor_token_cannot_post_outside_its_threads(client: httpx.AsyncClient, team: Team) -> None:
    alice = await _actor_with_token(client, "alice")
    mine, other = await _two_threads(team)
    before = await team.message_count()
    _not_found(await client.post(f"/api/v1/threads/{other}/messages", json={"content": "hi"}, headers=alice))
    assert await team.message_count() == before
    posted = await client.post(f"/api/v1/threads/{mine}/messages", json={"content": "again"}, headers=alice)
    assert posted.status_code == 201
    created = await client.post("/api/v1/threads", json={"title": "alice made it"}, headers=alice)
    assert created.status_code == 201
    assert "alice" in [p["handle"] for p in created.json()["participants"]]
    assert (await client.get(f"/api/v1/threads/{created.json()['id']}", headers=alice)).status_code == 200


async def test_an_actor_token_cannot_resume_a_question_in_another_thread(
    client: httpx.AsyncClient, team: Team
) -> None:
    alice = await _actor_with_token(client, "alice")
    await team.asks("engineer", "Ship it?")
    other = await team.thread("not alice's")
    await team.post(other, "@engineer ship?")
    await team.idle()
    (run,) = [r for r in await team.runs(other) if r.status == "waiting_human"]
    _not_found(await client.post(f"/api/v1/runs/{run.id}/resume", json={"answer": "yes"}, headers=alice))
    assert [r.status for r in await team.runs(other)] == ["waiting_human"]
    resumed = await client.post(f"/api/v1/runs/{run.id}/resume", json={"answer": "yes"})
    assert resumed.status_code == 202  # the admin may


def _threads_of(events: list[dict[str, Any]]) -> set[str]:
    return {json.loads(e["data"]).get("thread_id") for e in events if e.get("event") == "message.created"}


async def test_an_actor_tokens_event_stream_carries_its_threads_only(
    server: str, client: httpx.AsyncClient, team: Team, rt: Runtime
) -> None:
    alice = await _actor_with_token(client, "alice")
    mine, other = await _two_threads(team)
    later = await team.thread("alice joins later")

    async def post_more() -> None:
        await team.post(other, "more secrets")
        await team.post(later, "@alice please look")  # mentioned: she joins, the stream follows
        await team.post(later, "and this too")

    got = await collect(
        f"{server}/api/v1/events",
        {"since": "0"},
        alice,
        lambda got: sum(e.get("event") == "message.created" and later in e["data"] for e in got) >= 2,
        on_connect=post_more,
    )
    assert _threads_of(got) == {mine, later}
    carried = [json.loads(e["data"]) for e in got if "data" in e and e.get("event") != "comment"]
    assert all(other not in json.dumps(d) for d in carried)
    _not_found(await client.get("/api/v1/events", params={"thread_id": other}, headers=alice))
    everything = await collect(
        f"{server}/api/v1/events",
        {"since": "0"},
        {},
        lambda got: _threads_of(got) >= {mine, other, later},
    )
    assert _threads_of(everything) == {mine, other, later}


async def test_the_terminal_client_works_with_an_actor_token(
    server: str, client: httpx.AsyncClient, team: Team
) -> None:
    async def invoke(*args: str) -> Any:
        argv = [*args, "--server", server]
        return await asyncio.to_thread(CliRunner().invoke, app, argv, env={"COLUMNS": "100"})

    alice = await _actor_with_token(client, "alice")
    token = alice["Authorization"].removeprefix("Bearer ")
    mine, other = await _two_threads(team)
    listed = await invoke("threads", "--token", token)
    assert listed.exit_code == 0, listed.output
    assert "alice's" in listed.stdout and "secret" not in listed.stdout
    posted = await invoke("post", "alice's", "from the terminal", "--token", token)
    assert posted.exit_code == 0, posted.output
    elsewhere = await invoke("post", "secret", "sneaking in", "--token", token)
    assert elsewhere.exit_code == 1  # no thread of hers is called that
    assert "from the terminal" in [m["content"] for m in await team.messages(mine)]
    assert "sneaking in" not in [m["content"] for m in await team.messages(other)]
    admin = await invoke("threads")
    assert "alice's" in admin.stdout and "secret" in admin.stdout


async def test_an_actor_tokens_stream_follows_the_bots_but_not_others_automations(
    server: str, client: httpx.AsyncClient, team: Team
) -> None:
    """The Bots page stays live for a token holder; someone else's automation never reaches it."""
    alice = await _actor_with_token(client, "alice")

    async def change_things() -> None:
        automation = {"bot": "engineer", "content": "standup", "cron": "0 9 * * *"}
        assert (await client.post("/api/v1/automations", json=automation)).status_code == 201
        patched = await client.patch("/api/v1/bots/qa", json={"description": "tests everything"})
        assert patched.status_code == 200

    got = await collect(
        f"{server}/api/v1/events",
        {},
        alice,
        lambda got: any(e.get("event") == "bot.updated" for e in got),
        on_connect=change_things,
    )
    assert [json.loads(e["data"])["handle"] for e in got if e.get("event") == "bot.updated"] == ["qa"]
    assert not [e for e in got if e.get("event") == "automation.updated"]


@pytest.mark.parametrize("follows_a_thread", [False, True], ids=["all", "one_thread"])
async def test_revoking_an_actors_tokens_ends_its_open_event_streams(
    server: str, client: httpx.AsyncClient, team: Team, follows_a_thread: bool
) -> None:
    """A stream opened with a token does not outlive it: it ends with ``unauthorized``, and a
    reconnect is 401; the admin's stream carries on."""
    alice = await _actor_with_token(client, "alice")
    mine, _ = await _two_threads(team)
    params = {"thread_id": mine} if follows_a_thread else {}

    async def revoke() -> None:
        assert (await client.delete("/api/v1/actors/alice/tokens")).status_code == 204
        await team.post(mine, "after the revocation")

    got = await collect(f"{server}/api/v1/events", params, alice, lambda got: False, on_connect=revoke)
    assert got[-1]["event"] == "unauthorized", got  # the stream ended: `collect` saw its end
    assert json.loads(got[-1]["data"])["actor"] == "alice"
    assert "after the revocation" not in json.dumps(got)
    assert (await client.get("/api/v1/events", params=params, headers=alice)).status_code == 401
    admin = await collect(
        f"{server}/api/v1/events",
        {"since": "0", "thread_id": mine},
        {},
        lambda got: any("after the revocation" in e.get("data", "") for e in got),
    )
    assert any(e.get("event") == "message.created" for e in admin)


@pytest.mark.parametrize("follows_a_thread", [False, True], ids=["all", "one_thread"])
async def test_a_token_issued_after_a_revocation_replays_past_it(
    server: str, client: httpx.AsyncClient, team: Team, follows_a_thread: bool
) -> None:
    """A revocation ends the streams of the tokens it revoked, not of one issued after it (whose
    stream replays the journal across the revocation's row)."""
    await _actor_with_token(client, "alice")
    mine, _ = await _two_threads(team)
    assert (await client.delete("/api/v1/actors/alice/tokens")).status_code == 204
    fresh = _bearer((await client.post("/api/v1/actors/alice/tokens")).json()["token"])
    await team.post(mine, "after the new token")
    params = {"since": "0", **({"thread_id": mine} if follows_a_thread else {})}
    got = await collect(
        f"{server}/api/v1/events",
        params,
        fresh,
        lambda got: (
            any("after the new token" in e.get("data", "") for e in got)
            or got[-1].get("event") == "unauthorized"
        ),
    )
    assert got[-1].get("event") != "unauthorized", [e.get("event") for e in got]
