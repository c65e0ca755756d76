"""recall_messages searches the thread through the database's lexical index (FTS5 / tsvector):
the best matches of this thread only, each with its position for read_history."""

from __future__ import annotations

from sqlalchemy import insert, select

from conftest import Team, watch_statements
from openbot.core.ids import new_id
from openbot.runtime.team import get_actor
from openbot.store.db import now
from openbot.store.models import Message


async def _recall(team: Team, thread: str, query: str) -> str:
    call = {"name": "recall_messages", "args": {"query": query}}
    await team.script("engineer", [{"match": "recall", "reply": "{tool_result}", "tool_calls": [call]}])
    await team.post(thread, "@engineer recall please")
    await team.idle()
    async with team.rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
        newest = select(Message.content).where(Message.thread_id == thread, Message.sender_id == engineer.id)
        return str(await s.scalar(newest.order_by(Message.id.desc()).limit(1)))


async def test_the_best_matches_of_this_thread_only_with_their_positions(team: Team) -> None:
    thread, other = await team.thread(), await team.thread()
    # Unaddressed posts go to @chief_of_staff: no reply may land between them and move the positions.
    team.rt.system.pause()
    for text in ("the deploy failed on staging", "lunch at noon", "deploy deploy again", "nothing here"):
        await team.post(thread, text)
    await team.post(other, "deploy in the other thread")
    team.rt.system.unpause()
    found = (await _recall(team, thread, "deploy")).splitlines()
    assert found == ["#2 [@you]: deploy deploy again", "#0 [@you]: the deploy failed on staging"]


async def test_a_query_without_words_or_without_matches_says_so(team: Team) -> None:
    thread = await team.thread()
    await team.post(thread, "the build is green")
    assert await _recall(team, thread, "the and of") == "No message matches 'the and of'."
    assert (await _recall(team, thread, "banana")).startswith("No message matches")


async def test_a_long_thread_is_searched_through_the_index(team: Team) -> None:
    """10,000 messages written straight into the thread: the one that matches is found, at its place."""
    thread = await team.thread()
    async with team.rt.db.transaction() as s:
        you = await get_actor(s, "you")
        rows = [
            {
                "id": new_id("msg"),
                "thread_id": thread,
                "sender_id": you.id,
                "content": "needle in the haystack" if i == 7_321 else f"filler message number {i}",
                "mentions": [],
                "hop": 0,
                "metadata_": {},
                "created_at": now(s),
            }
            for i in range(10_000)
        ]
        await s.execute(insert(Message), rows)
    assert await _recall(team, thread, "needle") == "#7321 [@you]: needle in the haystack"


async def test_the_search_runs_in_the_database_index(team: Team) -> None:
    """One statement through the index (FTS5's MATCH or the tsvector's @@), not the thread read whole."""

    thread = await team.thread()
    await team.post(thread, "the flaky test again")
    seen: list[str] = []

    def record(statement: str, _parameters: object) -> None:
        if "messages" in statement:
            seen.append(statement)

    with watch_statements(team.rt.db, record):
        assert await _recall(team, thread, "flaky") == "#0 [@you]: the flaky test again"
    searches = [s for s in seen if "messages_fts MATCH" in s or "messages.search @@" in s]
    assert len(searches) == 1, seen
