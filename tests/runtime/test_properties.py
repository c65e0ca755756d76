"""Invariants of the real runtime under random traffic (DESIGN §2: 1, 2, 3, 4, 5, 6, 8, 9, 11).

Hypothesis draws a team configuration (each bot's script: keyword rules that reply with random
mentions, some asking a human first; enabled or not; a per-bot ceiling) and a sequence of steps
(humans and an external system posting with random mentions, settling, answering questions). The
steps run against a real :class:`Runtime` (SQLite, and PostgreSQL when configured) with
``MAX_BOT_HOPS=3``; then the database rows of the example's own threads are checked.

One runtime serves every example of a test (a function-scoped fixture), so each example creates
fresh threads and only looks at rows of those threads; it leaves nothing queued or waiting behind.

On PostgreSQL the property test found three concurrency bugs (two deadlocks around the journal's
advisory lock, a duplicate-participant race), and on both backends an idle hang; each is fixed
and pinned by a deterministic regression test at the end of this file.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, make_url, select, text
from sqlalchemy.exc import DBAPIError, OperationalError

from conftest import PG_URL, Boot, Team, reset_postgres
from openbot.config import Settings
from openbot.core.errors import Conflict
from openbot.core.states import ACTIVE_RUNS
from openbot.runtime import threads
from openbot.runtime.commands import ActorCreate, ResumeBody, ThreadCreate
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.runs.claim import Claim, claim_next
from openbot.runtime.runs.ending import cancel
from openbot.runtime.team import create_actor, get_actor, get_bot, seed_team
from openbot.store.db import Database
from openbot.store.models import (
    Actor,
    BotProfile,
    Event,
    HeldHandoff,
    InboxItem,
    Message,
    Run,
    Thread,
)

MAX_HOPS = 3
BOTS = ("chief_of_staff", "engineer", "reviewer", "qa")
SENDERS = ("you", "pat", "hook")  # two humans and an external system
KEYWORDS = ("kw0", "kw1", "kw2", "ask")
JOURNAL_LOCK_KEY = 0x0B07  # openbot.store.journal._JOURNAL_LOCK (its advisory lock id)


# ── the scenario ─────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class BotSetup:
    handle: str
    enabled: bool
    max_parallel_threads: int
    delay_ms: int
    rules: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Post:
    thread: int
    sender: str
    mentions: tuple[str, ...]
    keyword: str


@dataclass(frozen=True)
class Settle:
    pass


@dataclass(frozen=True)
class Answer:
    pass


Step = Post | Settle | Answer


@dataclass(frozen=True)
class Scenario:
    bots: tuple[BotSetup, ...]
    defaults: tuple[str | None, ...]  # one per thread
    steps: tuple[Step, ...]


def _reply(mentions: list[str], keyword: str | None) -> str:
    words = [f"@{m}" for m in mentions]
    if keyword:
        words.append(f"then {keyword}")
    return " ".join(words) or "done"


@st.composite
def rules(draw: st.DrawFn) -> tuple[dict[str, Any], ...]:
    out = []
    for keyword in KEYWORDS:
        if not draw(st.sampled_from((True, True, True, False))):
            continue  # no rule: the default reply, which mentions nobody and ends the exchange
        mentions = draw(st.lists(st.sampled_from((*BOTS, "you", "ghost")), min_size=1, max_size=3))
        follow = draw(st.one_of(st.none(), st.sampled_from(KEYWORDS)))
        rule: dict[str, Any] = {"match": rf"\b{keyword}\b", "reply": _reply(mentions, follow)}
        if keyword == "ask":
            rule["reply"] = "answer {tool_result}: " + rule["reply"]
            rule["tool_calls"] = [{"name": "ask_human", "args": {"question": "Go ahead?"}}]
        out.append(rule)
    return tuple(out)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    disabled = draw(st.one_of(st.none(), st.none(), st.sampled_from(BOTS)))  # at most one
    bots = tuple(
        BotSetup(
            handle=handle,
            enabled=handle != disabled,
            max_parallel_threads=draw(st.integers(1, 2)),
            delay_ms=draw(st.sampled_from((0, 0, 15))),  # model latency: mail arrives mid-run
            rules=draw(rules()),
        )
        for handle in BOTS
    )
    thread_count = draw(st.integers(1, 3))
    defaults = tuple(draw(st.one_of(st.none(), st.sampled_from(BOTS))) for _ in range(thread_count))
    post = st.builds(
        Post,
        thread=st.integers(0, thread_count - 1),
        sender=st.sampled_from(SENDERS),
        mentions=st.lists(st.sampled_from((*BOTS, "ghost")), max_size=3).map(tuple),
        keyword=st.sampled_from(KEYWORDS),
    )
    steps = draw(
        st.lists(
            st.one_of(post, post, post, post, st.just(Settle()), st.just(Answer())),
            min_size=2,
            max_size=10,
        )
    )
    return Scenario(bots, defaults, tuple(steps))


# ── fixtures ─────────────────────────────────────────────────────────────────────────────────


class HopTeam(Team):
    pass


@pytest.fixture
async def hop_team(settings: Settings, boot: Boot) -> AsyncIterator[HopTeam]:
    """Like ``team``, but with MAX_BOT_HOPS=3, plus a second human and an external actor."""
    settings.max_bot_hops = MAX_HOPS
    async with boot() as runtime:
        async with runtime.db.transaction() as s:
            await create_actor(s, ActorCreate(kind="human", handle="pat", name="Pat"))
            await create_actor(s, ActorCreate(kind="external", handle="hook", name="Hook"))
        yield HopTeam(runtime)


# ── running a scenario ───────────────────────────────────────────────────────────────────────


async def _waiting_runs(team: Team, thread_ids: list[str]) -> list[Run]:
    async with team.rt.db.read() as s:
        return list(
            await s.scalars(
                select(Run)
                .where(Run.thread_id.in_(thread_ids), Run.status == "waiting_human")
                .order_by(Run.id)
            )
        )


async def _answer_all(team: Team, thread_ids: list[str]) -> int:
    """What ``POST /runs/{id}/resume {"answer": "yes"}`` does, for every waiting run."""
    answered = 0
    for run in await _waiting_runs(team, thread_ids):
        try:
            await team.rt.runs.resume(run.id, ResumeBody(answer="yes"))
        except Conflict:
            continue  # 409: already answered (resume on its way) or resumed meanwhile
        answered += 1
    return answered


async def setup(team: Team, scenario: Scenario) -> list[str]:
    for bot in scenario.bots:
        await team.script(
            bot.handle,
            list(bot.rules),
            delay_ms=bot.delay_ms,
            enabled=bot.enabled,
            max_parallel_threads=bot.max_parallel_threads,
        )
    return [
        await team.thread(f"prop {index}", **({"default_bot": default} if default else {}))
        for index, default in enumerate(scenario.defaults)
    ]


async def play(team: Team, scenario: Scenario, thread_ids: list[str]) -> None:
    for step in scenario.steps:
        if isinstance(step, Post):
            content = " ".join([*(f"@{m}" for m in step.mentions), "please", step.keyword])
            await team.post(thread_ids[step.thread], content, sender=step.sender)
        elif isinstance(step, Settle):
            await team.idle()
        else:
            await _answer_all(team, thread_ids)
    await drain(team, thread_ids)


async def drain(team: Team, thread_ids: list[str]) -> None:
    """Settle, answer whatever waits, until nothing waits (the hop limit bounds the chains)."""
    for _ in range(30):
        await team.idle()
        if not await _answer_all(team, thread_ids):
            return
    pytest.fail("runs kept waiting for a human after 30 rounds of answers")


# ── reading the result ───────────────────────────────────────────────────────────────────────


@dataclass
class Rows:
    actors: dict[str, Actor]
    profiles: dict[str, BotProfile]
    threads: dict[str, Thread]
    messages: list[Message]
    items: list[InboxItem]
    runs: list[Run]
    holds: list[HeldHandoff]
    events: list[Event]
    orphan_items: int

    def handle(self, actor_id: str | None) -> str | None:
        return self.actors[actor_id].handle if actor_id else None

    def is_bot(self, actor_id: str | None) -> bool:
        return actor_id is not None and self.actors[actor_id].kind == "bot"


async def load(team: Team, thread_ids: list[str]) -> Rows:
    async with team.rt.db.read() as s:
        actors = {a.id: a for a in await s.scalars(select(Actor))}
        profiles = {p.actor_id: p for p in await s.scalars(select(BotProfile))}
        threads = {t.id: t for t in await s.scalars(select(Thread).where(Thread.id.in_(thread_ids)))}
        messages = list(
            await s.scalars(select(Message).where(Message.thread_id.in_(thread_ids)).order_by(Message.id))
        )
        items = list(
            await s.scalars(
                select(InboxItem).where(InboxItem.thread_id.in_(thread_ids)).order_by(InboxItem.id)
            )
        )
        runs = list(await s.scalars(select(Run).where(Run.thread_id.in_(thread_ids)).order_by(Run.id)))
        holds = list(await s.scalars(select(HeldHandoff).where(HeldHandoff.thread_id.in_(thread_ids))))
        events = list(
            await s.scalars(select(Event).where(Event.thread_id.in_(thread_ids)).order_by(Event.id))
        )
        orphan_items = await s.scalar(
            select(func.count())
            .select_from(InboxItem)
            .outerjoin(Thread, Thread.id == InboxItem.thread_id)
            .where(Thread.id.is_(None))
        )
    return Rows(actors, profiles, threads, messages, items, runs, holds, events, int(orphan_items or 0))


def describe(rows: Rows) -> str:
    """The threads as a transcript, for failure messages."""
    lines = []
    for m in rows.messages:
        who = f"@{rows.handle(m.sender_id)}" if m.sender_id else "system"
        lines.append(
            f"{m.thread_id[-6:]} {m.id[-8:]} hop={m.hop} {who}: {m.content[:90]!r} {m.metadata_ or ''}"
        )
    for r in rows.runs:
        lines.append(
            f"run {r.id[-8:]} @{rows.handle(r.bot_id)} {r.thread_id[-6:]} {r.status} "
            f"triggers={[t[-8:] for t in r.trigger_message_ids]} {r.started_at} → {r.finished_at}"
        )
    return "\n".join(lines)


# ── the invariants ───────────────────────────────────────────────────────────────────────────


def check_settled(rows: Rows) -> None:
    """Nothing is left for a bot: every run ended, every bot item served, every hold delivered."""
    for run in rows.runs:
        assert run.status == "completed", f"run {run.id} is {run.status}: {run.error}"
    for item in rows.items:
        if rows.is_bot(item.actor_id):
            assert item.status == "done", f"bot item {item.id} ({item.kind}) is {item.status}"
    for hold in rows.holds:
        assert hold.status != "pending", f"held hand-off {hold.id} was never delivered"


def check_items_point_into_their_thread(rows: Rows) -> None:
    """Invariants 1 and 2."""
    assert rows.orphan_items == 0
    messages = {m.id: m for m in rows.messages}
    runs = {r.id: r for r in rows.runs}
    for item in rows.items:
        assert item.thread_id in rows.threads
        if item.kind == "message":
            assert item.message_id is not None and item.run_id is None
            assert messages[item.message_id].thread_id == item.thread_id
        else:
            assert item.kind in ("question", "resume")
            assert item.run_id is not None and item.message_id is None
            run = runs[item.run_id]
            assert run.thread_id == item.thread_id
            if item.kind == "question":
                assert not rows.is_bot(item.actor_id), "a question went to a bot"
            else:
                assert item.actor_id == run.bot_id, "a resume went to another actor than the run's bot"


def check_run_shape(rows: Rows) -> None:
    """Invariant 4: one bot, one thread, triggers are messages of that thread."""
    messages = {m.id: m for m in rows.messages}
    for run in rows.runs:
        assert rows.is_bot(run.bot_id)
        assert run.trigger_message_ids, f"run {run.id} has no trigger"
        for mid in run.trigger_message_ids:
            assert mid in messages, f"run {run.id} trigger {mid} is not a message of its thread"
            assert messages[mid].thread_id == run.thread_id


def check_no_overlap(rows: Rows) -> None:
    """Invariant 3 (and 6): per (bot, thread) the runs' lifetimes never overlap, waiting included."""
    per_pair: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in rows.runs:
        per_pair[(run.bot_id, run.thread_id)].append(run)
    for (bot_id, _), pair_runs in per_pair.items():
        pair_runs.sort(key=lambda r: (r.started_at, r.id))
        for earlier, later in itertools.pairwise(pair_runs):
            assert earlier.finished_at is not None and later.started_at is not None
            assert earlier.finished_at <= later.started_at, (
                f"@{rows.handle(bot_id)} ran {earlier.id} and {later.id} at once in one thread"
            )


def check_journal(rows: Rows, *, exact_pick: bool) -> None:
    """Replay the journal (ids are in commit order) and check the state at every step.

    Invariant 3: at most ``max_parallel_threads`` runs of a bot in flight, never two active runs
    (waiting included: invariant 6) of a bot in one thread. Invariant 5: a new run takes all the
    bot's queued message items of its thread. On SQLite every transaction is serialised, so "all
    queued at pick time" is exactly "journaled before the claim"; on PostgreSQL an item committed
    while the claim ran is legitimately left for the next run, so only "nothing else" is checked.
    """
    status: dict[str, str] = {}
    run_bot: dict[str, str] = {}
    run_thread: dict[str, str] = {}
    queued: dict[tuple[str, str], set[str]] = defaultdict(set)
    bots_by_handle = {a.handle: a.id for a in rows.actors.values() if a.kind == "bot"}
    for entry in rows.events:
        data = entry.data
        if entry.type == "inbox.updated" and "item" in data and data["actor"] in bots_by_handle:
            item = data["item"]
            if item["kind"] == "message" and item["status"] == "queued":
                queued[(data["actor"], item["thread_id"])].add(item["message_id"])
        if entry.type != "run.updated":
            continue
        run_id, bot, thread_id = data["id"], data["bot"], data["thread_id"]
        if run_id not in status and data["status"] == "running":  # a new run: the claim
            pending = queued[(bot, thread_id)]
            triggers = set(data["trigger_message_ids"])
            assert triggers <= pending, f"run {run_id} of @{bot} took mail that was not queued"
            if exact_pick:
                assert triggers == pending, f"run {run_id} of @{bot} left queued mail of its thread behind"
            pending -= triggers
        status[run_id] = data["status"]
        run_bot[run_id] = bot
        run_thread[run_id] = thread_id
        in_flight = Counter(run_bot[r] for r, s in status.items() if s in ("queued", "running"))
        ceiling = rows.profiles[bots_by_handle[bot]].max_parallel_threads
        assert in_flight[bot] <= ceiling, f"@{bot} has {in_flight[bot]} runs in flight (max {ceiling})"
        active_here = [
            r
            for r, s in status.items()
            if run_bot[r] == bot and run_thread[r] == thread_id and s in ACTIVE_RUNS
        ]
        assert len(active_here) <= 1, f"@{bot} has two active runs in thread {thread_id}: {active_here}"
    # The replay saw every run, each ending where the table says it ended.
    assert status == {r.id: r.status for r in rows.runs}, "the journal and the runs table disagree"


def check_coalescing(rows: Rows) -> None:
    """Invariant 5: every bot message item is claimed by exactly one run; no trigger twice."""
    runs = {r.id: r for r in rows.runs}
    seen: dict[tuple[str, str, str], str] = {}
    for run in rows.runs:
        for mid in run.trigger_message_ids:
            key = (run.bot_id, run.thread_id, mid)
            assert key not in seen, f"runs {seen[key]} and {run.id} share the trigger {mid}"
            seen[key] = run.id
    for item in rows.items:
        if item.kind != "message" or not rows.is_bot(item.actor_id):
            continue
        assert item.claimed_by_run is not None, f"item {item.id} was never claimed"
        run = runs[item.claimed_by_run]
        assert run.bot_id == item.actor_id and run.thread_id == item.thread_id
        assert item.message_id in run.trigger_message_ids
        assert seen[(item.actor_id, item.thread_id, item.message_id)] == run.id


def _first_actionable(rows: Rows, message: Message) -> str | None:
    for handle in message.mentions or []:
        actor = next((a for a in rows.actors.values() if a.handle == handle), None)
        if actor and actor.kind == "bot" and actor.enabled and actor.id != message.sender_id:
            return actor.id
    return None


def check_routing(rows: Rows) -> None:
    """Invariants 8, 9, 11 and the human fan-out, from the rows."""
    woken: dict[str, list[str]] = defaultdict(list)  # message id → bots that got an item for it
    for item in rows.items:
        if item.kind == "message" and rows.is_bot(item.actor_id):
            woken[item.message_id].append(item.actor_id)  # type: ignore[index]
    for actor_id in {a for ids in woken.values() for a in ids}:
        assert rows.actors[actor_id].enabled, f"disabled @{rows.handle(actor_id)} was woken"
    for message in rows.messages:
        targets = woken.get(message.id, [])
        assert message.sender_id not in targets, "a message woke its own sender"
        if message.sender_id is None:
            assert not targets, f"system message {message.id} woke {targets}"  # invariant 9
        elif rows.is_bot(message.sender_id):
            assert len(targets) <= 1, f"bot message {message.id} woke {len(targets)} bots"  # inv 8
            if targets:
                assert targets == [_first_actionable(rows, message)]
                assert message.hop < MAX_HOPS, f"hop {message.hop} message woke a bot"  # inv 11
            assert message.hop <= MAX_HOPS
        else:
            bots = [
                a.id
                for h in message.mentions or []
                for a in rows.actors.values()
                if a.handle == h and a.kind == "bot" and a.enabled
            ]
            if any(h in {a.handle for a in rows.actors.values()} for h in message.mentions or []):
                assert sorted(targets) == sorted(bots), f"human message {message.id} fan-out"
            assert len(targets) == len(set(targets))


def check_hop_notices(rows: Rows, *, strict_order: bool) -> None:
    """Invariant 11: one hop-limit notice per thread until a human posts (journal order)."""
    by_id = {m.id: m for m in rows.messages}
    order = [e.data["id"] for e in rows.events if e.type == "message.created"]
    assert sorted(order) == sorted(by_id), "every message is journaled once"
    for thread_id in rows.threads:
        notices = 0
        limited = False
        for mid in order:
            message = by_id[mid]
            if message.thread_id != thread_id:
                continue
            sender = rows.actors.get(message.sender_id) if message.sender_id else None
            if sender is not None and sender.kind == "human":
                notices, limited = 0, False
            elif (message.metadata_ or {}).get("kind") == "hop_limit":
                notices += 1
                assert notices == 1, f"two hop-limit notices in thread {thread_id} without a human between"
                if strict_order:
                    assert limited, "a hop-limit notice without a dropped hand-off before it"
            elif (message.metadata_ or {}).get("hop_limited"):
                limited = True
                if strict_order:
                    assert notices or _notice_follows(order, by_id, mid), (
                        "a dropped hand-off without a notice"
                    )


def _notice_follows(order: list[str], by_id: dict[str, Message], mid: str) -> bool:
    """The notice is posted in the same transaction, right after the dropped message."""
    later = order[order.index(mid) + 1 :]
    return any(
        by_id[m].thread_id == by_id[mid].thread_id and (by_id[m].metadata_ or {}).get("kind") == "hop_limit"
        for m in later[:3]
    )


# ── the test ─────────────────────────────────────────────────────────────────────────────────


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@given(scenario=scenarios())
async def test_random_traffic_keeps_the_invariants(hop_team: HopTeam, scenario: Scenario) -> None:
    thread_ids = await setup(hop_team, scenario)
    await play(hop_team, scenario, thread_ids)
    rows = await load(hop_team, thread_ids)
    sqlite = hop_team.rt.db.backend == "sqlite"
    event(f"runs: {min(len(rows.runs), 10)}{'+' if len(rows.runs) >= 10 else ''}")
    if any(len(r.trigger_message_ids) > 1 for r in rows.runs):
        event("coalesced triggers")
    if rows.holds:
        event("held hand-offs")
    if any((m.metadata_ or {}).get("kind") == "hop_limit" for m in rows.messages):
        event("hop limit reached")
    if any(i.kind == "resume" for i in rows.items):
        event("resumed after a question")
    try:
        check_settled(rows)
        check_items_point_into_their_thread(rows)
        check_run_shape(rows)
        check_no_overlap(rows)
        check_journal(rows, exact_pick=sqlite)
        check_coalescing(rows)
        check_routing(rows)
        check_hop_notices(rows, strict_order=sqlite)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{describe(rows)}") from exc


async def test_the_fixture_has_the_small_hop_limit(hop_team: Team) -> None:
    """Sanity: a ping-pong stops at MAX_BOT_HOPS with one notice."""
    await hop_team.script("engineer", [{"match": ".", "reply": "@reviewer again"}], enabled=True)
    await hop_team.script("reviewer", [{"match": ".", "reply": "@engineer again"}], enabled=True)
    thread = await hop_team.thread()
    await hop_team.post(thread, "@engineer start")
    await hop_team.idle()
    messages = await hop_team.messages(thread)
    assert [m["hop"] for m in messages if m["sender"] and m["sender"]["kind"] == "bot"] == [1, 2, 3]
    notices = [m for m in messages if (m["metadata"] or {}).get("kind") == "hop_limit"]
    assert len(notices) == 1
    async with hop_team.rt.db.read() as s:
        assert (await get_actor(s, "pat")).kind == "human"
    assert re.search(r"Hop limit reached \(3 ", notices[0]["content"])


# ── deterministic reproductions of what the property test finds on PostgreSQL ──────────────
#
# No workers run here: each test plays the transactions itself, lines them up with the database
# server's lock table (polled: another process), and expects all of them to succeed.

pg_only = pytest.mark.skipif(not PG_URL, reason="PostgreSQL only: SQLite serialises every transaction")


@asynccontextmanager
async def bare_database() -> AsyncIterator[tuple[Database, Delivery]]:
    """A fresh, seeded PostgreSQL database and a Delivery, without a runtime around them.

    Its connections carry their own application_name, so lock waits are looked up for this test's
    transactions only (other suites may share the server).
    """
    assert PG_URL is not None
    await reset_postgres(PG_URL)
    app = f"openbot-props-{os.getpid()}-{os.urandom(3).hex()}"
    db = Database(str(make_url(PG_URL).update_query_dict({"application_name": app})))
    try:
        async with db.transaction() as s:
            await seed_team(s, "scripted")
        yield db, Delivery(max_hops=20)
    finally:
        await db.dispose()


async def _claim_for(db: Database, handle: str) -> Claim | None:
    """What a bot's worker does: claim its next batch in one transaction."""
    async with db.transaction() as s:
        bot, _profile = await get_bot(s, handle)
        return await claim_next(s, bot.id, "test-worker", 30)


async def _post(db: Database, delivery: Delivery, thread_id: str, content: str) -> None:
    """What ``POST /threads/{id}/messages`` does, as @you."""
    async with db.transaction() as s:
        thread = await threads.get_thread(s, thread_id)
        await delivery.post(s, thread, content, sender=await get_actor(s, "you"))


async def _cancel(db: Database, delivery: Delivery, run_id: str) -> None:
    """What ``POST /runs/{id}/cancel`` does (minus stopping a task: there is none)."""
    async with db.transaction() as s:
        await cancel(s, run_id, delivery, reason="cancelled by a human")


async def _wait_until_blocked(db: Database, where: str, task: asyncio.Task[Any]) -> None:
    """Wait until one of this test's transactions waits for a lock matching ``where`` (or until
    ``task`` is done: then nothing blocks it). Polls the server's lock table: another process."""
    app = make_url(db.url).query["application_name"]
    query = text(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        f" WHERE NOT l.granted AND a.application_name = :app AND {where}"
    )
    async with asyncio.timeout(10), db.engine.connect() as conn:
        while not task.done():
            waiting = await conn.scalar(query, {"app": app})
            await conn.rollback()
            if waiting:
                return
            await asyncio.sleep(0.01)  # polling another process's state, not waiting for our work


JOURNAL_LOCK_WAIT = f"l.locktype = 'advisory' AND l.objid = {JOURNAL_LOCK_KEY}"
ROW_LOCK_WAIT = "l.locktype IN ('transactionid', 'tuple')"
ANY_LOCK_WAIT = "true"


async def _outcomes(*tasks: asyncio.Task[Any]) -> list[BaseException]:
    results = await asyncio.gather(*tasks, return_exceptions=True)
    return [r for r in results if isinstance(r, BaseException)]


@pg_only
async def test_a_claim_and_a_post_to_the_same_bot_do_not_deadlock() -> None:
    """
    Regression (fixed; found by the property test) (PostgreSQL deadlock, journal lock vs. bot
    row): runs.claim_next locks the bot's actors  row FOR UPDATE and then takes the journal
    advisory lock (journal_run → append_event), while  Delivery.post takes the journal lock
    first (append_event 'message.created') and only then  inserts the bot's inbox item, whose
    foreign key check needs FOR KEY SHARE on that actors row,  which FOR UPDATE blocks.
    PostgreSQL aborts one: the claim (the worker retries on its next  wake) or the post (a
    human's POST fails with 500, or a finishing run's reply is lost and the  run fails 'could
    not be finished'). Fix: lock the bot row FOR NO KEY UPDATE
    (with_for_update(key_share=True)), which still serialises claims but not key-share checks.
    """
    async with bare_database() as (db, delivery):
        async with db.transaction() as s:
            first = await threads.create_thread(s, ThreadCreate(title="first"))
            # The engineer already takes part in the second thread (a follow-up message).
            second = await threads.create_thread(s, ThreadCreate(title="second", participants=["engineer"]))
            await delivery.post(s, first, "@engineer one", sender=await get_actor(s, "you"))
        claim_task: asyncio.Task[Claim | None] | None = None
        errors: list[BaseException] = []
        try:
            async with db.transaction() as s:
                # A human posts to the engineer in the second thread: the post holds the journal
                # lock, its inbox item is inserted at commit...
                thread = await threads.get_thread(s, second.id)
                await delivery.post(s, thread, "@engineer two", sender=await get_actor(s, "you"))
                # ...while the engineer's worker claims its mail from the first thread.
                claim_task = asyncio.create_task(_claim_for(db, "engineer"))
                await _wait_until_blocked(db, JOURNAL_LOCK_WAIT, claim_task)
        except OperationalError as exc:
            errors.append(exc)
        assert claim_task is not None
        errors += await _outcomes(claim_task)
        assert not errors, f"deadlock: {errors[0]}"
        assert claim_task.result() is not None


@pg_only
async def test_cancelling_a_run_while_someone_posts_in_its_thread_does_not_deadlock() -> None:
    """
    Regression (fixed; found by the property test) (PostgreSQL deadlock, journal lock vs. thread
    row): the journal advisory lock is taken at  a transaction's first append_event and held to
    commit, and row locks are taken both before  and after it. Delivery.post updates
    threads.last_message_at (flush) and then takes the  journal lock; runs.end_run (cancel,
    recovery) and runs.finish with run events take the  journal lock first (add_run_event) and
    then post into the thread, updating the same thread  row. A cancel (or a finishing run) and
    a post in the same thread deadlock; PostgreSQL aborts  one of them. Fix: take the journal
    lock first in every writing transaction, or write the  journal rows last (e.g. in a before-
    commit hook) so no transaction holds it while waiting  for a row.
    """
    async with bare_database() as (db, delivery):
        async with db.transaction() as s:
            thread = await threads.create_thread(s, ThreadCreate(title="busy"))
            await delivery.post(s, thread, "@engineer go", sender=await get_actor(s, "you"))
        claim = await _claim_for(db, "engineer")
        assert claim is not None
        async with db.engine.connect() as other:
            # Something else holds the run's inbox item for a moment (any writer of that row).
            await other.execute(
                text("SELECT id FROM inbox_items WHERE id = :id FOR UPDATE"), {"id": claim.item_ids[0]}
            )
            # The cancel takes the journal lock, then waits for the item...
            cancel_task = asyncio.create_task(_cancel(db, delivery, claim.run_id))
            await _wait_until_blocked(db, ROW_LOCK_WAIT, cancel_task)
            # ...while a human posts in the thread: the post locks the thread row, then waits for
            # the journal lock.
            post_task = asyncio.create_task(_post(db, delivery, thread.id, "any news?"))
            await _wait_until_blocked(db, JOURNAL_LOCK_WAIT, post_task)
            await other.rollback()  # the cancel goes on to post its notice into the same thread
        errors = await _outcomes(cancel_task, post_task)
        assert not errors, f"deadlock: {errors[0]}"


@pg_only
async def test_two_posts_adding_the_same_participant_both_succeed() -> None:
    """
    Regression (fixed; found by the property test) (PostgreSQL race, duplicate participant):
    Delivery.post reads the thread's participants  without a lock and inserts a
    ThreadParticipant row for every mentioned actor it did not see.  Two concurrent posts in one
    thread that mention the same newcomer (two bots replying  '@chief_of_staff …', or a human
    and a bot) both insert it; the later one fails with a  UniqueViolation on
    thread_participants_pkey: a human's POST fails with 500, or a bot's  reply is lost and its
    run fails 'could not be finished'. Fix: insert participants with ON  CONFLICT DO NOTHING, or
    lock the thread row (SELECT … FOR UPDATE) before reading its  participants (which also
    serialises the hop-limit notice flag).
    """
    async with bare_database() as (db, delivery):
        async with db.transaction() as s:
            thread = await threads.create_thread(s, ThreadCreate(title="newcomer"))
        second: asyncio.Task[None] | None = None
        errors: list[BaseException] = []
        try:
            async with db.transaction() as s:
                row = await threads.get_thread(s, thread.id)
                await delivery.post(s, row, "@chief_of_staff first", sender=await get_actor(s, "you"))
                second = asyncio.create_task(_post(db, delivery, thread.id, "@chief_of_staff second"))
                await _wait_until_blocked(db, ANY_LOCK_WAIT, second)
        except DBAPIError as exc:
            errors.append(exc)
        assert second is not None
        errors += await _outcomes(second)
        assert not errors, f"a post failed: {errors[0]}"
        async with db.read() as s:
            contents = [m["content"] for m in await threads.list_messages(s, thread.id, after=None, limit=10)]
        assert contents == ["@chief_of_staff first", "@chief_of_staff second"]


async def test_a_heartbeat_during_a_runs_clean_up_does_not_leave_it_in_flight(team: Team) -> None:
    """Found by the property test: the heartbeat used to cancel a run's whole task when it saw the
    run 'completed' while the task was still cleaning up, so the run stayed in flight forever and
    the system never became idle. It must stop only the agent, never the bookkeeping."""
    rt = team.rt
    cleaning, release = asyncio.Event(), asyncio.Event()

    async def slow_clean_up(_run_id: str) -> None:  # the clean-up takes a moment
        cleaning.set()
        await release.wait()

    rt.runner.on_forget.append(slow_clean_up)
    thread = await team.thread()
    await team.post(thread, "@engineer hello")
    async with asyncio.timeout(10):
        await cleaning.wait()
    (run,) = await team.runs(thread)
    assert run.status == "completed"  # finished and committed; its task is in its clean-up
    task = rt.system.in_flight[run.id]
    await rt.system.maintain()  # what the maintenance loop does every poll interval
    release.set()
    await asyncio.wait({task}, timeout=10)
    assert task.done()
    assert run.id not in rt.system.in_flight, "a finished run stays in flight forever"
    await team.idle()
