"""Requests racing for one row: exactly one wins and the others get the contract's answer (409 or
404), on both backends. On SQLite writers are serialised anyway; on PostgreSQL these are the row
locks (``docs/decisions.md``, "Requests racing for one row")."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Team

pytestmark = pytest.mark.asyncio

RACERS = 10


async def _all(requests: list[Any]) -> Counter[int]:
    return Counter(r.status_code for r in await asyncio.gather(*requests))


async def _waiting(team: Team, approval: bool = False) -> tuple[str, str]:
    """A run of @engineer waiting for a human: a question, or an approval of todo_write."""
    if approval:
        todo = {"name": "todo_write", "args": {"todos": [{"content": "a", "status": "pending"}]}}
        await team.script(
            "engineer",
            [{"match": ".", "reply": "done: {tool_result}", "tool_calls": [todo]}],
            approval_tools=["todo_write"],
        )
    else:
        await team.asks("engineer")
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    (run,) = [r for r in await team.runs(thread) if r.status == "waiting_human"]
    return thread, run.id


async def test_racing_resumes_record_one_answer(client: httpx.AsyncClient, team: Team) -> None:
    _thread, run_id = await _waiting(team)
    answers = [
        client.post(f"/api/v1/runs/{run_id}/resume", json={"answer": f"yes {i}"}) for i in range(RACERS)
    ]
    assert await _all(answers) == {202: 1, 409: RACERS - 1}
    await team.idle()
    run = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert [e["type"] for e in run["events"]].count("resumed") == 1
    assert run["status"] == "completed"


async def test_racing_cancels_cancel_once(client: httpx.AsyncClient, team: Team) -> None:
    thread, run_id = await _waiting(team)
    assert await _all([client.post(f"/api/v1/runs/{run_id}/cancel") for _ in range(RACERS)]) == {
        202: 1,
        409: RACERS - 1,
    }
    notices = [m for m in await team.messages(thread) if m["metadata"].get("kind") == "run_cancelled"]
    assert len(notices) == 1


@pytest.mark.parametrize("approval", [False, True], ids=["question", "approval"])
async def test_a_cancel_racing_a_resume_stays_cancelled(
    client: httpx.AsyncClient, team: Team, approval: bool
) -> None:
    """Whichever comes first, a cancelled run never comes back to wait for a human again."""
    for _ in range(5):
        _thread, run_id = await _waiting(team, approval)
        body = {"decisions": [{"type": "approve"}]} if approval else {"answer": "yes"}
        resumed, cancelled = await asyncio.gather(
            client.post(f"/api/v1/runs/{run_id}/resume", json=body),
            client.post(f"/api/v1/runs/{run_id}/cancel"),
        )
        assert resumed.status_code in (202, 409) and cancelled.status_code in (202, 409)
        await team.idle()
        run = (await client.get(f"/api/v1/runs/{run_id}")).json()
        if cancelled.status_code == 202:
            assert run["status"] == "cancelled", run["events"]
        else:  # the resume won and the run finished before the cancel looked
            assert run["status"] == "completed"
    status = (await client.get("/api/v1/status")).json()
    assert status["runs"]["waiting_human"] == 0 and status["mailboxes"]["queued"] == 0


async def test_racing_deletes_delete_once(client: httpx.AsyncClient, team: Team) -> None:
    created = await client.post("/api/v1/bots", json={"handle": "tmpbot"})
    assert created.status_code == 201, created.text
    assert await _all([client.delete("/api/v1/bots/tmpbot") for _ in range(RACERS)]) == {
        204: 1,
        404: RACERS - 1,
    }
    thread = await team.thread()
    assert await _all([client.delete(f"/api/v1/threads/{thread}") for _ in range(RACERS)]) == {
        204: 1,
        404: RACERS - 1,
    }
    deleted = (await client.get("/api/v1/activity", params={"event": "bot.deleted"})).json()["items"]
    assert len(deleted) == 1


@pytest.mark.parametrize("kind", ["bots", "actors"])
async def test_racing_creations_of_one_handle_are_one_201_and_409s(
    client: httpx.AsyncClient, kind: str
) -> None:
    body = {"handle": "twin"} if kind == "bots" else {"handle": "twin", "kind": "human"}
    assert await _all([client.post(f"/api/v1/{kind}", json=body) for _ in range(RACERS)]) == {
        201: 1,
        409: RACERS - 1,
    }


async def test_an_edit_racing_a_deletion_of_a_memory_is_200_or_404(client: httpx.AsyncClient) -> None:
    made = await client.post("/api/v1/bots/engineer/memories", json={"content": "the deploy key is rotated"})
    assert made.status_code == 201, made.text
    url = f"/api/v1/bots/engineer/memories/{made.json()['id']}"
    racing = [client.patch(url, json={"importance": 0.9}) for _ in range(5)] + [
        client.delete(url) for _ in range(5)
    ]
    got = await _all(racing)
    assert got[204] == 1 and set(got) <= {200, 204, 404}, got


async def test_mail_a_post_racing_a_bots_deletion_queued_is_disposed_of(
    client: httpx.AsyncClient, team: Team
) -> None:
    """A post that read the bot alive can queue its mail after the deletion disposed of the bot's
    mail (PostgreSQL); the bot's next wake-up disposes of it, so the system goes idle again."""
    from openbot.core.scheduling import ItemKind
    from openbot.runtime.delivery.inbox import enqueue
    from openbot.store.models import Actor

    assert (await client.post("/api/v1/bots", json={"handle": "tmpbot"})).status_code == 201
    async with team.rt.db.read() as s:
        bot_id = (await s.execute(select(Actor.id).where(Actor.handle == "tmpbot"))).scalar_one()
    assert (await client.delete("/api/v1/bots/tmpbot")).status_code == 204
    thread = await team.thread()
    posted = await team.post(thread, "for tmpbot")
    async with team.rt.db.transaction() as s:  # what the racing post wrote, after the deletion
        bot = await s.get(Actor, bot_id)
        assert bot is not None and bot.deleted
        await enqueue(s, bot, thread, kind=ItemKind.MESSAGE, message_id=posted.message.id)
    team.rt.system.notify([bot_id])
    await team.idle()
    status = (await client.get("/api/v1/status")).json()
    assert status["mailboxes"]["queued"] == 0
    disposals = (await client.get("/api/v1/disposals", params={"reason": "bot_disabled"})).json()["items"]
    assert [d["thread_id"] for d in disposals] == [thread]


async def test_racing_changes_and_deletions_of_automations_and_threads(
    client: httpx.AsyncClient, team: Team
) -> None:
    made = await client.post(
        "/api/v1/automations", json={"bot": "qa", "content": "@qa hi", "cron": "0 9 * * *"}
    )
    assert made.status_code == 201, made.text
    url = f"/api/v1/automations/{made.json()['id']}"
    racing = [client.patch(url, json={"enabled": False}) for _ in range(3)] + [
        client.delete(url) for _ in range(5)
    ]
    got = await _all(racing)
    assert got[204] == 1 and set(got) <= {200, 204, 404}, got
    thread = await team.thread()
    racing = [client.patch(f"/api/v1/threads/{thread}", json={"title": f"t{i}"}) for i in range(3)]
    racing += [client.delete(f"/api/v1/threads/{thread}") for _ in range(3)]
    got = await _all(racing)
    assert got[204] == 1 and set(got) <= {200, 204, 404}, got


async def test_racing_decay_passes_prune_each_memory_once(client: httpx.AsyncClient) -> None:
    old = {"created_at": "2020-01-01T00:00:00+00:00", "last_accessed_at": "2020-01-01T00:00:00+00:00"}
    made = [
        await client.post(
            "/api/v1/bots/qa/memories", json={"content": f"stale fact {i}", "tier": "short", **old}
        )
        for i in range(4)
    ]
    assert all(m.status_code == 201 for m in made)
    answers = await asyncio.gather(*(client.post("/api/v1/bots/qa/memories/maintain") for _ in range(4)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    pruned = [m for a in answers for m in a.json()["pruned"]]
    assert sorted(pruned) == sorted(m.json()["id"] for m in made)  # each once, by one pass
    rows = (await client.get("/api/v1/activity", params={"event": "memory.pruned"})).json()["items"]
    assert len(rows) == 4


async def test_a_thread_deletion_chosen_as_a_deadlocks_victim_is_run_again(
    client: httpx.AsyncClient, team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL aborts one side of a deadlock (SQLSTATE 40P01); a deletion that lost is retried,
    not answered with a 500. The victim is simulated: real deadlocks need a run finishing into the
    thread at the wrong microsecond."""
    from sqlalchemy.exc import OperationalError

    from openbot.runtime import threads

    class Deadlock(Exception):
        sqlstate = "40P01"

    real, calls = threads.delete_thread, []

    async def first_is_a_victim(session: Any, thread_id: str) -> None:
        calls.append(thread_id)
        if len(calls) == 1:
            raise OperationalError("DELETE FROM threads …", {}, Deadlock())
        await real(session, thread_id)

    monkeypatch.setattr(threads, "delete_thread", first_is_a_victim)
    thread = await team.thread()
    assert (await client.delete(f"/api/v1/threads/{thread}")).status_code == 204
    assert calls == [thread, thread]
    assert (await client.get(f"/api/v1/threads/{thread}")).status_code == 404
