"""Mentions of handles that name nobody: reported in the response and the activity log, never
silently rerouted to the thread's default bot (API.md, docs/decisions.md)."""

from __future__ import annotations

from typing import Any

import httpx

from conftest import Team


async def _post(client: httpx.AsyncClient, thread: str, content: str) -> dict[str, Any]:
    response = await client.post(f"/api/v1/threads/{thread}/messages", json={"content": content})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def _activity(client: httpx.AsyncClient, thread: str) -> list[dict[str, Any]]:
    params = {"thread_id": thread, "event": "message.unknown_mentions"}
    items: list[dict[str, Any]] = (await client.get("/api/v1/activity", params=params)).json()["items"]
    return items


async def test_a_mistyped_mention_is_reported_with_a_suggestion_and_wakes_nobody(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread(default_bot="reviewer")
    body = await _post(client, thread, "@enginer please fix the build")
    assert body["unknown_mentions"] == [{"handle": "enginer", "suggestion": "engineer"}]
    assert body["addressed"] == [] and body["held"] == []
    assert body["message"]["mentions"] == []
    for bot in ("reviewer", "chief_of_staff", "engineer"):
        assert await team.items(bot) == [], f"@{bot} got the message"
    [row] = await _activity(client, thread)
    assert row["detail"]["unknown_mentions"] == [{"handle": "enginer", "suggestion": "engineer"}]
    assert row["actor"] == "you" and row["level"] == "warning"
    assert "@enginer is not a member — did you mean @engineer?" in row["summary"]


async def test_a_mention_of_a_bot_s_alias_suggests_that_bot(client: httpx.AsyncClient, team: Team) -> None:
    assert (await client.patch("/api/v1/bots/engineer", json={"aliases": ["Alfie"]})).status_code == 200
    thread = await team.thread()
    body = await _post(client, thread, "@alfie please look")
    assert body["unknown_mentions"] == [{"handle": "alfie", "suggestion": "engineer"}]
    assert body["addressed"] == []


async def test_a_mention_far_from_every_handle_has_no_suggestion_key(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread()
    body = await _post(client, thread, "ask @zzyzx about it")
    assert body["unknown_mentions"] == [{"handle": "zzyzx"}]
    assert body["addressed"] == []


async def test_known_mentions_still_wake_beside_an_unknown_one(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread(default_bot="reviewer")
    body = await _post(client, thread, "@qa and @reviwer, please check")
    assert body["addressed"] == ["qa"]
    assert body["unknown_mentions"] == [{"handle": "reviwer", "suggestion": "reviewer"}]


async def test_every_successful_post_lists_unknown_mentions_even_when_empty(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread(default_bot="reviewer")
    body = await _post(client, thread, "no mention at all")
    assert body["unknown_mentions"] == [] and body["addressed"] == ["reviewer"]
    assert await _activity(client, thread) == []


async def test_a_deleted_bots_handle_is_unknown_and_never_suggested(
    client: httpx.AsyncClient, team: Team
) -> None:
    created = await client.post("/api/v1/bots", json={"handle": "builder", "model": "scripted"})
    assert created.status_code == 201, created.text
    assert (await client.delete("/api/v1/bots/builder")).status_code in (200, 204)
    thread = await team.thread()
    body = await _post(client, thread, "@builder and @buildr")
    assert body["unknown_mentions"] == [{"handle": "builder"}, {"handle": "buildr"}]


async def test_mentions_in_code_are_not_mentions(team: Team) -> None:
    thread = await team.thread(default_bot="reviewer")
    result = await team.post(thread, "why does this fail?\n```python\n@dataclass\nclass X: ...\n```")
    assert result.unknown_mentions == [] and result.addressed == ["reviewer"]
    result = await team.post(thread, "is `@property` right here, @qa?")
    assert result.unknown_mentions == [] and result.addressed == ["qa"]


async def test_a_deleted_bots_messages_still_say_who_sent_them(client: httpx.AsyncClient, team: Team) -> None:
    """The freed handle is taken again by a new bot; the old one's messages name it ``~builder-…``."""
    for _ in range(2):
        created = await client.post("/api/v1/bots", json={"handle": "builder", "model": "scripted"})
        assert created.status_code == 201, created.text
        thread = await team.thread(participants=["you", "builder"])
        await team.post(thread, "@builder hello")
        await team.idle()
        assert (await client.delete("/api/v1/bots/builder")).status_code == 204
    senders = []
    for thread in (await client.get("/api/v1/threads")).json()["items"]:
        page = (await client.get(f"/api/v1/threads/{thread['id']}/messages")).json()["items"]
        senders += [m["sender"]["handle"] for m in page if m["sender"] and m["sender"]["kind"] == "bot"]
    assert len(senders) == 2 and len(set(senders)) == 2, senders
    assert all(h.startswith("~builder-") and len(h) <= 32 for h in senders), senders
