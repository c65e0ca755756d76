"""Long threads: a run reads only what its history window can use, yet builds the context that
reading the whole thread would give (DESIGN §6)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import select

import openbot.runtime.runner.prepare as preparing
from conftest import Team, watch_statements
from openbot.core.history import HistoryMessage, Role, unroll, window_rows
from openbot.core.ids import new_id
from openbot.runtime.runner.prepare import Prepared, prepare
from openbot.runtime.runs.claim import Claim
from openbot.store.models import Actor, Message

SENDERS = ("you", "chief_of_staff", "engineer", "qa", None)  # @qa is not in the thread; None: the system
LONG = 3_000


async def _thread(team: Team) -> str:
    return await team.thread(participants=["chief_of_staff", "engineer"], default_bot="chief_of_staff")


async def _fill(team: Team, thread_id: str, count: int) -> list[str]:
    """``count`` messages straight into the table, oldest first; return their ids.

    Senders take turns; some messages mention the engineer, some a near miss of it; lengths vary
    so that the token budget, and not only the message cap, can close the window.
    """
    async with team.rt.db.read() as s:
        ids = {a.handle: a.id for a in await s.scalars(select(Actor))}
    stamp = team.rt.clock.now()
    rows = [
        Message(
            id=new_id("msg"),
            thread_id=thread_id,
            sender_id=ids[sender] if (sender := SENDERS[i % len(SENDERS)]) else None,
            content=f"message {i} " + "lorem ipsum " * (i % 37),
            mentions=["engineer"] if i % 7 == 0 else ["engineers", "qa"] if i % 11 == 0 else [],
            hop=0,
            metadata_={},
            created_at=stamp,
        )
        for i in range(count)
    ]
    async with team.rt.db.transaction() as s:
        s.add_all(rows)
    return [r.id for r in rows]


async def _whole_thread(team: Team, thread_id: str) -> list[HistoryMessage]:
    """Every message of the thread, read the unbounded way."""
    async with team.rt.db.read() as s:
        handles = {a.id: a.handle for a in await s.scalars(select(Actor))}
        rows = list(
            await s.scalars(select(Message).where(Message.thread_id == thread_id).order_by(Message.id))
        )
    return [
        HistoryMessage(
            id=r.id,
            sender=handles[r.sender_id] if r.sender_id else None,
            sender_name=f"@{handles[r.sender_id]}" if r.sender_id else "system",
            content=r.content,
            mentions=tuple(r.mentions),
        )
        for r in rows
    ]


def _assert_whole_thread_context(
    team: Team, prepared: Prepared, whole: list[HistoryMessage], triggers: frozenset[str]
) -> None:
    """``prepared`` is what unrolling the whole thread gives; the note counts up to the cap."""
    settings = team.rt.settings
    expected = unroll(
        whole,
        bot=prepared.bot.handle,
        triggers=triggers,
        scoped=prepared.bot.handle == "engineer",
        token_budget=settings.history_token_budget,
        max_messages=settings.history_max_messages,
    )
    cap = max(
        preparing._COUNT_CAP, window_rows(triggers=triggers, max_messages=settings.history_max_messages)
    )
    if len(whole) > cap:
        expected = replace(expected, left_out=cap + 1 - expected.shown, at_least=True)
    kinds = {Role.AI: AIMessage, Role.HUMAN: HumanMessage}
    assert [(type(m), m.content) for m in prepared.messages] == [
        (kinds[t.role], t.text) for t in expected.turns
    ]
    note = expected.note()
    assert note is not None and note in prepared.system_prompt
    answered = [m.content for m in whole if m.id in triggers]
    assert (prepared.trigger_text, prepared.trigger_count) == ("\n".join(answered), len(answered))


def _claim(thread_id: str, bot: Actor, triggers: tuple[str, ...]) -> Claim:
    return Claim(new_id("run"), bot.id, bot.handle, thread_id, 1, False, (), triggers, 0)


async def _bots(team: Team) -> dict[str, Actor]:
    async with team.rt.db.read() as s:
        return {a.handle: a for a in await s.scalars(select(Actor).where(Actor.kind == "bot"))}


@contextmanager
def _statements(team: Team, thread_id: str) -> Iterator[list[tuple[str, Any]]]:
    """The statements on the messages of ``thread_id`` that readers run while the block runs."""
    seen: list[tuple[str, Any]] = []

    def sent(statement: str, parameters: Any) -> None:
        if " messages" in statement and thread_id in str(parameters):
            seen.append((statement, parameters))

    with watch_statements(team.rt.db, sent):
        yield seen


def _numbers(parameters: Any) -> list[int]:
    values = parameters.values() if isinstance(parameters, dict) else parameters
    return [v for v in values if isinstance(v, int)]


@pytest.mark.parametrize("budget", [24_000, 1_500])
async def test_a_mention_in_a_long_thread_sees_what_the_whole_thread_would_show(
    team: Team, budget: int
) -> None:
    team.rt.settings.history_token_budget = budget  # 1,500: the budget closes the window, not the cap
    thread = await _thread(team)
    await _fill(team, thread, LONG)
    seen: list[tuple[Claim, Prepared, list[HistoryMessage]]] = []

    async def record(claim: Claim, prepared: Prepared) -> None:
        seen.append((claim, prepared, await _whole_thread(team, thread)))

    team.on_prepared(record)
    await team.post(thread, "@engineer review the last part")  # a delegate: a scoped view
    await team.idle()
    await team.post(thread, "@chief_of_staff sum it all up")  # the default bot: the whole thread
    await team.idle()
    assert {p.bot.handle for _, p, _ in seen} >= {"engineer", "chief_of_staff"}
    for claim, prepared, whole in seen:
        _assert_whole_thread_context(team, prepared, whole, frozenset(claim.trigger_ids))


async def test_an_old_trigger_is_answered_though_the_window_has_moved_on(team: Team) -> None:
    thread = await _thread(team)
    ids = await _fill(team, thread, LONG)
    triggers = (ids[30], ids[-2], ids[-1])  # mail that waited while the thread went on
    whole = await _whole_thread(team, thread)
    for bot in (await _bots(team)).values():
        if bot.handle in ("engineer", "chief_of_staff"):
            prepared = await prepare(team.rt.db, team.rt.settings, _claim(thread, bot, triggers))
            _assert_whole_thread_context(team, prepared, whole, frozenset(triggers))
            assert prepared.trigger_count == 3 and prepared.trigger_text.startswith("message 30 ")


async def test_reads_are_bounded_by_the_window_not_the_thread(team: Team) -> None:
    """The same statements, with the same limits, on a thread of 500 and of 3,000 messages."""
    bots = await _bots(team)
    shapes = []
    for count in (500, LONG):
        thread = await _thread(team)
        last = (await _fill(team, thread, count))[-1]
        shape = []
        for handle in ("engineer", "chief_of_staff"):
            with _statements(team, thread) as statements:
                await prepare(team.rt.db, team.rt.settings, _claim(thread, bots[handle], (last,)))
            assert all("LIMIT" in sql.upper() for sql, _ in statements)
            shape.append([(sql, _numbers(parameters)) for sql, parameters in statements])
        shapes.append(shape)
    short, long = shapes
    assert short == long
    cap = max(preparing._COUNT_CAP, window_rows(triggers=frozenset({last}), max_messages=80))
    assert [len(statements) for statements in long] == [1, 1]  # the newest page, with the count
    assert max(n for statements in long for _, numbers in statements for n in numbers) <= cap + 1
