"""The HTTP contract (shared/API.md): shapes, bad input with stable codes and nothing written."""

from __future__ import annotations

import json
from typing import Any

import httpx

from conftest import Team
from openbot.core.clock import FakeClock


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]
    return dict(body["error"])


async def _saves_todos_once_approved(
    team: Team, handle: str, todos: list[dict[str, str]], reply: str
) -> None:
    """Script ``handle`` to call ``todo_write`` with ``todos`` on any message, a call a human approves."""
    call = {"name": "todo_write", "args": {"todos": todos}}
    await team.script(
        handle, [{"match": ".", "reply": reply, "tool_calls": [call]}], approval_tools=["todo_write"]
    )


async def test_info_health_and_openapi(client: httpx.AsyncClient) -> None:
    info = (await client.get("/api/v1")).json()
    assert info["name"] == "openbot" and info["protocol_version"] == 1 and info["version"]
    assert (await client.get("/api/v1/health")).json() == {"ok": True}
    schema = (await client.get("/openapi.json")).json()
    assert "/api/v1/threads/{thread_id}/messages" in schema["paths"]


async def test_seeded_team_and_bot_shape(client: httpx.AsyncClient) -> None:
    bots = (await client.get("/api/v1/bots")).json()["items"]
    assert [b["handle"] for b in bots] == ["chief_of_staff", "engineer", "reviewer", "qa"]
    keys = {
        "id",
        "handle",
        "name",
        "description",
        "instructions",
        "model",
        "model_settings",
        "tools",
        "approval_tools",
        "memory_enabled",
        "enabled",
        "max_parallel_threads",
    }
    assert keys <= set(bots[0]) and bots[0]["model"] == "scripted"
    actors = (await client.get("/api/v1/actors")).json()["items"]
    assert {"handle": "you", "kind": "human"}.items() <= actors[0].items()


async def test_post_and_read_messages_over_http(client: httpx.AsyncClient, team: Team) -> None:
    created = await client.post("/api/v1/threads", json={"title": "Ship", "participants": ["engineer"]})
    assert created.status_code == 201
    thread = created.json()
    assert {"id", "title", "kind", "default_bot", "participants", "created_at", "last_message_at"} <= set(
        thread
    )
    posted = await client.post(f"/api/v1/threads/{thread['id']}/messages", json={"content": "@engineer go"})
    assert posted.status_code == 201
    assert posted.json()["addressed"] == ["engineer"] and posted.json()["held"] == []
    await team.idle()
    messages = (await client.get(f"/api/v1/threads/{thread['id']}/messages")).json()["items"]
    assert [m["sender"]["handle"] for m in messages] == ["you", "engineer"]
    after = (
        await client.get(f"/api/v1/threads/{thread['id']}/messages", params={"after": messages[0]["id"]})
    ).json()
    assert [m["id"] for m in after["items"]] == [messages[1]["id"]]
    runs = (await client.get("/api/v1/runs", params={"thread_id": thread["id"]})).json()["items"]
    assert runs[0]["status"] == "completed" and runs[0]["bot"] == "engineer"
    run = (await client.get(f"/api/v1/runs/{runs[0]['id']}")).json()
    assert run["trigger_message_ids"] == [messages[0]["id"]] and run["events"][-1]["type"] == "message"


async def test_malformed_json_is_refused_and_nothing_written(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    before = await team.message_count()
    response = await client.post(
        f"/api/v1/threads/{thread}/messages",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    _error(response, 422, "invalid_argument")
    assert await team.message_count() == before


async def test_a_thread_is_created_without_a_body(client: httpx.AsyncClient) -> None:
    created = await client.post("/api/v1/threads")  # every field is optional, the body too
    assert created.status_code == 201, created.text
    body = created.json()
    empty = (await client.post("/api/v1/threads", json={})).json()
    different = ("id", "created_at")
    assert {k: v for k, v in body.items() if k not in different} == {
        k: v for k, v in empty.items() if k not in different
    }
    assert (body["kind"], body["default_bot"], body["require_mention"]) == ("task", None, False)
    read = (await client.get(f"/api/v1/threads/{body['id']}")).json()
    assert {k: read[k] for k in body} == body


async def test_unknown_thread_is_not_found(client: httpx.AsyncClient) -> None:
    _error(await client.get("/api/v1/threads/thr_nope"), 404, "not_found")
    _error(await client.post("/api/v1/threads/thr_nope/messages", json={"content": "hi"}), 404, "not_found")


async def test_bad_and_duplicate_handles(client: httpx.AsyncClient, team: Team) -> None:
    _error(await client.post("/api/v1/bots", json={"handle": "Bad Handle!"}), 422, "invalid_argument")
    _error(await client.post("/api/v1/bots", json={"handle": "x"}), 422, "invalid_argument")
    _error(await client.post("/api/v1/bots", json={"handle": "engineer"}), 409, "conflict")
    _error(await client.post("/api/v1/actors", json={"kind": "human", "handle": "you"}), 409, "conflict")
    person = {"kind": "human", "handle": "hum1", "webhook_url": "http://127.0.0.1:9/hook"}
    _error(await client.post("/api/v1/actors", json=person), 422, "invalid_argument")  # not dropped silently
    assert "hum1" not in [a["handle"] for a in (await client.get("/api/v1/actors")).json()["items"]]
    thread = await team.thread()
    before = await team.message_count()
    unknown_to = _error(
        await client.post(f"/api/v1/threads/{thread}/messages", json={"content": "hi", "to": ["ghost"]}),
        422,
        "invalid_argument",
    )
    assert unknown_to["details"] == {"field": "to", "handle": "ghost"}  # names the field, as `from` does
    unknown_from = _error(
        await client.post(f"/api/v1/threads/{thread}/messages", json={"content": "hi", "from": "ghost"}),
        422,
        "invalid_argument",
    )
    assert unknown_from["details"]["field"] == "from"
    assert await team.message_count() == before
    bots = (await client.get("/api/v1/bots")).json()["items"]
    assert len(bots) == 4


async def test_oversized_body_is_refused_before_parsing(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    big = json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode()
    response = await client.post(
        f"/api/v1/threads/{thread}/messages", content=big, headers={"content-type": "application/json"}
    )
    _error(response, 413, "payload_too_large")
    assert await team.message_count() == 0


async def test_resume_of_a_run_that_is_not_waiting_is_a_conflict(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer hi")
    await team.idle()
    run = (await team.runs(thread))[0]
    _error(await client.post(f"/api/v1/runs/{run.id}/resume", json={"answer": "x"}), 409, "conflict")
    _error(await client.post(f"/api/v1/runs/{run.id}/cancel"), 409, "conflict")
    _error(await client.post("/api/v1/runs/run_nope/resume", json={"answer": "x"}), 404, "not_found")


async def test_resume_body_that_does_not_fit_the_interrupt(client: httpx.AsyncClient, team: Team) -> None:
    await team.asks("engineer", "Ship?", reply="ok")
    await _saves_todos_once_approved(
        team, "qa", [{"content": "retest", "status": "pending"}], "saved: {tool_result}"
    )
    thread = await team.thread()
    await team.post(thread, "@engineer @qa go")
    await team.idle()
    runs = {r.bot_id: r for r in await team.runs(thread)}
    assert all(r.status == "waiting_human" for r in runs.values())
    question = next(r for r in runs.values() if r.interrupt and r.interrupt["kind"] == "question")
    approval = next(r for r in runs.values() if r.interrupt and r.interrupt["kind"] == "approval")
    shown = (await client.get(f"/api/v1/runs/{approval.id}")).json()["interrupt"]
    assert shown == {
        "kind": "approval",
        "actions": [{"name": "todo_write", "args": {"todos": [{"content": "retest", "status": "pending"}]}}],
    }
    for body in (
        {"decisions": [{"type": "approve"}]},
        {},
        {"answer": ""},
        {"answer": 3},
        {"answer": "y" * 200_001},
    ):
        _error(await client.post(f"/api/v1/runs/{question.id}/resume", json=body), 422, "invalid_argument")
    both = {"answer": "yes", "decisions": [{"type": "approve"}]}
    error = _error(
        await client.post(f"/api/v1/runs/{question.id}/resume", json=both), 422, "invalid_argument"
    )
    assert "no decisions" in error["message"] and error["details"] == {"field": "decisions"}
    for body in (
        {"answer": "yes"},
        {"decisions": []},
        {"decisions": [{"type": "maybe"}]},
        {"decisions": [{"type": "edit"}]},
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        # A field its kind does not take: refused, not dropped (an approve "with args" is no edit).
        {"decisions": [{"type": "approve", "args": {"todos": []}}]},
        {"decisions": [{"type": "reject", "bogus": 1}]},
        {"decisions": [{"type": "edit", "args": {}, "message": "x"}]},
        # Args the tool would refuse: heard now, not as a tool error after the run resumed.
        {"decisions": [{"type": "edit", "args": {}}]},
        {"decisions": [{"type": "edit", "args": {"todos": "retest"}}]},
        {"decisions": [{"type": "edit", "args": {"todos": [{"content": "x", "status": "someday"}]}}]},
    ):
        _error(await client.post(f"/api/v1/runs/{approval.id}/resume", json=body), 422, "invalid_argument")
    misfit = {"decisions": [{"type": "edit", "args": {"todos": [{"content": "x", "status": "someday"}]}}]}
    error = _error(
        await client.post(f"/api/v1/runs/{approval.id}/resume", json=misfit), 422, "invalid_argument"
    )
    assert error["details"]["tool"] == "todo_write" and error["details"]["index"] == 0
    assert error["details"]["errors"][0]["path"] == "todos/0/status"
    assert (await client.get(f"/api/v1/runs/{question.id}")).json()["status"] == "waiting_human"
    assert not await team.items("engineer", kind="resume")


async def test_approve_edit_and_reject_decisions(client: httpx.AsyncClient, team: Team) -> None:
    await _saves_todos_once_approved(
        team, "qa", [{"content": "a", "status": "pending"}], "result: {tool_result}"
    )
    outcomes = {}
    for decision in (
        {"type": "approve"},
        {"type": "edit", "args": {"todos": [{"content": "b", "status": "completed"}]}},
        {"type": "reject", "message": "not now"},
    ):
        thread = await team.thread()
        await team.post(thread, "@qa save")
        await team.idle()
        run = (await team.runs(thread))[0]
        response = await client.post(f"/api/v1/runs/{run.id}/resume", json={"decisions": [decision]})
        assert response.status_code == 202
        await team.idle()
        done = (await client.get(f"/api/v1/runs/{run.id}")).json()
        assert done["status"] == "completed" and done["interrupt"] is None  # only a waiting run has one
        outcomes[decision["type"]] = (await team.messages(thread))[-1]["content"]
    assert "Saved 1 todo(s), 0 completed." in outcomes["approve"]
    assert "1 completed" in outcomes["edit"]
    assert "not now" in outcomes["reject"] and "Saved" not in outcomes["reject"]


async def test_cancel_a_waiting_run_unparks_the_thread(client: httpx.AsyncClient, team: Team) -> None:
    await team.asks("engineer", "Ship?", match="ask", reply="ok")
    thread = await team.thread()
    await team.post(thread, "@engineer ask")
    await team.idle()
    await team.post(thread, "@engineer more")
    await team.idle()
    run = (await team.runs(thread))[0]
    assert (await client.get(f"/api/v1/runs/{run.id}")).json()["interrupt"]["question"] == "Ship?"
    response = await client.post(f"/api/v1/runs/{run.id}/cancel")
    assert response.status_code == 202 and response.json()["status"] == "cancelled"
    assert response.json()["interrupt"] is None
    events = (await client.get(f"/api/v1/runs/{run.id}")).json()["events"]
    assert any(e["payload"].get("question") == "Ship?" for e in events if e["type"] == "interrupt")
    await team.idle()
    statuses = [r.status for r in await team.runs(thread)]
    assert statuses == ["cancelled", "completed"]
    kinds = [m["metadata"].get("kind") for m in await team.messages(thread)]
    assert "run_cancelled" in kinds
    assert [i.status for i in await team.items("you", kind="question")] == ["cancelled"]


async def test_delete_bot_refuses_while_it_has_open_runs(client: httpx.AsyncClient, team: Team) -> None:
    await team.asks("engineer", "?", reply="ok")
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    _error(await client.delete("/api/v1/bots/engineer"), 409, "conflict")
    assert (await client.delete("/api/v1/bots/reviewer")).status_code == 204
    _error(await client.get("/api/v1/bots/reviewer"), 404, "not_found")
    created = await client.post("/api/v1/bots", json={"handle": "reviewer"})  # the handle is free again
    assert created.status_code == 201


async def test_patch_is_partial_and_validates_the_script(client: httpx.AsyncClient) -> None:
    response = await client.patch("/api/v1/bots/qa", json={"description": "tests things"})
    assert response.status_code == 200
    bot = response.json()
    assert bot["description"] == "tests things" and bot["instructions"].startswith("You verify")
    bad = await client.patch(
        "/api/v1/bots/qa", json={"model_settings": {"script": [{"match": "(", "reply": "x"}]}}
    )
    _error(bad, 422, "invalid_argument")
    _error(await client.patch("/api/v1/bots/qa", json={"max_parallel_threads": 0}), 422, "invalid_argument")
    _error(await client.patch("/api/v1/bots/qa", json={"nope": 1}), 422, "invalid_argument")
    _error(await client.patch("/api/v1/bots/qa", json={"name": "  "}), 422, "invalid_argument")
    for model in ("anthropic:", ":claude", "scripted ", "nonsense"):
        named = await client.patch("/api/v1/bots/qa", json={"model": model})
        assert _error(named, 422, "invalid_argument")["details"] == {"field": "model"}
    for delay in (-5, 1.5, "10", True):
        slow = await client.patch(
            "/api/v1/bots/qa", json={"model_settings": {"script": [], "delay_ms": delay}}
        )
        assert _error(slow, 422, "invalid_argument")["details"]["field"] == "model_settings.delay_ms"
    assert (await client.get("/api/v1/bots/qa")).json()["name"] == bot["name"]


async def test_status_counts(client: httpx.AsyncClient, team: Team) -> None:
    status = (await client.get("/api/v1/status")).json()
    assert status["runs"] == {"queued": 0, "running": 0, "waiting_human": 0}
    assert status["mailboxes"] == {"queued": 0, "processing": 0, "parked": 0}
    assert status["workers"] == 0  # a bot's worker starts when the bot is first woken
    thread = await team.thread()

    async def workers_after(content: str) -> int:
        await team.post(thread, content)
        await team.idle()
        return int((await client.get("/api/v1/status")).json()["workers"])

    assert await workers_after("@engineer @qa go") == 2
    assert await workers_after("@engineer again") == 2  # one worker per bot, kept
    assert await workers_after("anyone?") == 3  # to the chief of staff: a third bot woken


async def test_inbox_lists_and_acks(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer hi")
    await team.idle()
    items = (await client.get("/api/v1/actors/you/inbox", params={"status": "queued"})).json()["items"]
    assert len(items) == 1 and items[0]["kind"] == "message" and items[0]["thread_id"] == thread
    assert {"id", "kind", "thread_id", "message_id", "run_id", "status", "created_at"} <= set(items[0])
    acked = await client.post(f"/api/v1/inbox/{items[0]['id']}/ack")
    assert acked.status_code == 200 and acked.json()["status"] == "done"
    assert not (await client.get("/api/v1/actors/you/inbox", params={"status": "queued"})).json()["items"]


async def test_delete_thread_cancels_its_open_runs_and_removes_it(
    client: httpx.AsyncClient, team: Team
) -> None:
    await team.asks("engineer", "?", reply="ok")
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    assert (await client.delete(f"/api/v1/threads/{thread}")).status_code == 204
    _error(await client.get(f"/api/v1/threads/{thread}"), 404, "not_found")
    assert not await team.runs(thread) and not await team.items("you")
    status = (await client.get("/api/v1/status")).json()
    assert status["runs"]["waiting_human"] == 0


async def test_messages_page_backwards_from_the_newest(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    team.rt.system.pause()
    for i in range(5):
        await team.post(thread, f"note {i}", to=[])
    url = f"/api/v1/threads/{thread}/messages"
    newest = (await client.get(url, params={"latest": "true", "limit": 2})).json()
    assert [m["content"] for m in newest["items"]] == ["note 3", "note 4"]
    older = (await client.get(url, params={"before": newest["previous"], "limit": 2})).json()
    assert [m["content"] for m in older["items"]] == ["note 1", "note 2"]
    assert (await client.get("/api/v1/")).json()["name"] == "openbot"


async def test_an_empty_handle_names_nobody(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    posted = await client.post(f"/api/v1/threads/{thread}/messages", json={"content": "hi", "from": ""})
    assert posted.status_code == 422 and posted.json()["error"]["code"] == "invalid_argument"
    assert await team.messages(thread) == []
    acked = await client.post("/api/v1/inbox/ack", json={"thread_id": thread, "actor": ""})
    assert acked.status_code == 404 and acked.json()["error"]["code"] == "not_found"
    unknown = await client.post("/api/v1/inbox/ack", json={"thread_id": "thr_nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


async def test_a_filter_value_outside_its_choices_is_refused(client: httpx.AsyncClient) -> None:
    """A misspelt filter is 422 naming the parameter, never an empty list that looks like an answer."""
    for path, name in (
        ("/api/v1/runs?status=done", "status"),
        ("/api/v1/actors/you/inbox?status=open", "status"),
        ("/api/v1/actors/you/inbox?kind=mail", "kind"),
        ("/api/v1/activity?level=debug", "level"),
        ("/api/v1/webhooks/deliveries?status=sent", "status"),
        ("/api/v1/drafts?status=open", "status"),
    ):
        error = _error(await client.get(path), 422, "invalid_argument")
        assert name in json.dumps(error.get("details")), (path, error)
    for path in (
        "/api/v1/runs?status=waiting_human",
        "/api/v1/actors/you/inbox?status=queued&kind=question",
        "/api/v1/activity?level=warning",
        "/api/v1/webhooks/deliveries?status=failed",
    ):
        assert (await client.get(path)).status_code == 200, path


async def test_threads_list_most_recently_active_first_counting_creation(
    client: httpx.AsyncClient, team: Team, clock: FakeClock
) -> None:
    """A thread is active when created and when posted to: a new empty thread comes first, above
    one posted to before it was made, and below one posted to after."""
    team.rt.system.pause()
    talked = await team.thread(title="talked")
    await team.post(talked, "note", to=[])
    clock.advance(5)
    empty = await team.thread(title="empty")
    clock.advance(5)
    later = await team.thread(title="later")
    clock.advance(5)
    await team.post(later, "note", to=[])
    order = [t["id"] for t in (await client.get("/api/v1/threads")).json()["items"]]
    assert [i for i in order if i in (talked, empty, later)] == [later, empty, talked]
    first_two = (await client.get("/api/v1/threads", params={"limit": 2})).json()["items"]
    assert [t["id"] for t in first_two] == [later, empty]  # the empty one is not cut off


async def test_thread_title_search_takes_percent_and_underscore_literally(
    client: httpx.AsyncClient, team: Team
) -> None:
    for title in ("100% done", "Plain", "a_b", "axb"):
        await team.thread(title=title)

    async def titles(q: str) -> list[str]:
        answer = await client.get("/api/v1/threads", params={"q": q})
        return sorted(t["title"] for t in answer.json()["items"])

    assert await titles("%") == ["100% done"]
    assert await titles("a_b") == ["a_b"]
    assert await titles("PLAIN") == ["Plain"]  # still case-insensitive


async def test_a_question_closed_by_an_answer_or_a_cancel_is_announced(
    client: httpx.AsyncClient, team: Team
) -> None:
    """The asked person's inbox item changes state in the journal (``inbox.updated``), so a client
    showing the inbox sees an answered or cancelled question leave it without polling."""
    from sqlalchemy import select

    from openbot.store.models import Event

    await team.asks("engineer", "Ship?", match="ask", reply="ok")
    answered, cancelled = await team.thread(), await team.thread()
    for thread in (answered, cancelled):
        await team.post(thread, "@engineer ask")
    await team.idle()
    (to_answer,) = await team.runs(answered)
    (to_cancel,) = await team.runs(cancelled)
    assert (
        await client.post(f"/api/v1/runs/{to_answer.id}/resume", json={"answer": "yes"})
    ).status_code == 202
    assert (await client.post(f"/api/v1/runs/{to_cancel.id}/cancel")).status_code == 202
    await team.idle()
    async with team.rt.db.read() as s:
        rows = await s.scalars(select(Event).where(Event.type == "inbox.updated").order_by(Event.id))
        closed = [
            (e.data["item"]["run_id"], e.data["item"]["status"], e.data["actor"])
            for e in rows
            if e.data.get("item", {}).get("kind") == "question" and e.data["item"]["status"] != "queued"
        ]
    assert closed == [(to_answer.id, "done", "you"), (to_cancel.id, "cancelled", "you")]
