"""``Idempotency-Key`` on ``POST /threads/{id}/messages``: a retry answers the first post (200)
instead of posting twice; the key is written with the message; keys live at least 24 hours."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.commands import MessageCreate
from openbot.runtime.engine import Runtime
from openbot.store.models import Message


async def _human_posts(team: Team) -> int:
    """Messages posted through the API (bot replies, which may come at any time, have a run)."""
    async with team.rt.db.read() as s:
        return len(
            list(
                await s.scalars(
                    select(Message.id).where(Message.run_id.is_(None), Message.sender_id.is_not(None))
                )
            )
        )


def _url(thread: str) -> str:
    return f"/api/v1/threads/{thread}/messages"


async def _post(client: httpx.AsyncClient, thread: str, key: str | bytes, **body: Any) -> httpx.Response:
    return await client.post(
        _url(thread), json={"content": "ship it", **body}, headers={"Idempotency-Key": key}
    )


async def test_a_retry_answers_the_first_post_with_200_and_posts_nothing(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread(default_bot="engineer")
    first = await _post(client, thread, "k-1")
    assert first.status_code == 201, first.text
    again = await _post(client, thread, "k-1")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert first.json()["addressed"] == ["engineer"] and first.json()["unknown_mentions"] == []
    assert await _human_posts(team) == 1
    assert len(await team.items("engineer")) == 1  # the retry woke nobody


async def test_a_retry_after_the_answer_was_lost_finds_the_committed_post(
    rt: Runtime, client: httpx.AsyncClient, team: Team
) -> None:
    """The first request committed and its connection dropped: the client never saw the answer."""
    thread = await team.thread()
    lost = await rt.threads.post(thread, MessageCreate(content="ship it"), idempotency_key="k-lost")
    retry = await _post(client, thread, "k-lost")
    assert retry.status_code == 200
    assert retry.json()["message"]["id"] == lost.view["message"]["id"]
    assert await _human_posts(team) == 1


async def test_a_reused_key_with_another_body_is_a_conflict_and_writes_nothing(
    client: httpx.AsyncClient, team: Team
) -> None:
    thread = await team.thread()
    assert (await _post(client, thread, "k-2")).status_code == 201
    for body in ({"content": "something else"}, {"to": ["qa"]}):
        refused = await _post(client, thread, "k-2", **body)
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert (error["code"], error["details"]["header"]) == ("conflict", "Idempotency-Key")
    assert await _human_posts(team) == 1


async def test_a_key_names_one_post_per_thread_and_sender(client: httpx.AsyncClient, team: Team) -> None:
    one, two = await team.thread(), await team.thread()
    assert (await _post(client, one, "same")).status_code == 201
    assert (await _post(client, two, "same")).status_code == 201
    assert (await _post(client, one, "same", **{"from": "engineer"})).status_code == 201
    assert (await _post(client, two, "same")).status_code == 200
    assert await _human_posts(team) == 3


async def test_a_refused_post_leaves_no_key_behind(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    refused = await _post(client, thread, "k-3", to=["ghost"])
    assert refused.status_code == 422
    fixed = await _post(client, thread, "k-3", to=["qa"])
    assert fixed.status_code == 201, fixed.text  # not a replay, not a conflict
    assert (await _post(client, thread, "k-3", to=["qa"])).status_code == 200
    assert await _human_posts(team) == 1


@pytest.mark.parametrize(
    "key",
    ["", "x" * 256, "tab\there", "caf\u00e9".encode(), "nul\x7f"],
    ids=["empty", "long", "tab", "utf8", "del"],
)
async def test_a_malformed_key_is_a_422_and_writes_nothing(
    client: httpx.AsyncClient, team: Team, key: str | bytes
) -> None:
    thread = await team.thread()
    refused = await _post(client, thread, key)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["details"]["header"]) == ("invalid_argument", "Idempotency-Key")
    assert await _human_posts(team) == 0


async def test_the_longest_printable_key_is_accepted(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread()
    key = "".join(chr(c) for c in range(0x21, 0x7F)) * 3  # 282 characters: too long by 27
    assert (await _post(client, thread, key[:255])).status_code == 201
    assert (await _post(client, thread, key[:255])).status_code == 200


async def test_concurrent_first_attempts_post_once(client: httpx.AsyncClient, team: Team) -> None:
    thread = await team.thread(default_bot="engineer")
    answers = await asyncio.gather(*(_post(client, thread, "k-race") for _ in range(4)))
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 201], [a.text for a in answers]
    assert len({a.json()["message"]["id"] for a in answers}) == 1
    assert await _human_posts(team) == 1
    assert len(await team.items("engineer")) == 1


async def test_keys_are_kept_a_day_then_pruned_by_maintenance(
    rt: Runtime, client: httpx.AsyncClient, team: Team, clock: FakeClock
) -> None:
    thread = await team.thread()
    assert (await _post(client, thread, "k-day")).status_code == 201
    clock.advance(23 * 3600)
    await rt.system.maintain()
    assert (await _post(client, thread, "k-day")).status_code == 200
    clock.advance(2 * 3600)
    await rt.system.maintain()
    assert (await _post(client, thread, "k-day")).status_code == 201  # forgotten: a new post
    assert await _human_posts(team) == 2
