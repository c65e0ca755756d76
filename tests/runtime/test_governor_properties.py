"""Invariant 13 under random traffic on the real runtime: every bot trigger that never became part
of a run has a disposal, and every disposal is one the governor's rules allow (DESIGN §7).

Hypothesis draws small mailbox bounds, task and channel threads, and a sequence of posts, pauses
(mail piles up while no run starts), clock jumps (channel mail goes stale) and settles. One runtime
serves every example of the test; each example makes fresh threads and checks only their rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.commands import ActorCreate
from openbot.runtime.team import create_actor
from openbot.store.models import Actor, Disposal, InboxItem, Message, Run, Thread

BOTS = ("engineer", "reviewer", "qa")


@dataclass(frozen=True)
class Post:
    thread: int
    sender: str
    mentions: tuple[str, ...]


@dataclass(frozen=True)
class Pause:
    pass


@dataclass(frozen=True)
class Settle:
    pass


@dataclass(frozen=True)
class Wait:
    seconds: float


Step = Post | Pause | Settle | Wait


@dataclass(frozen=True)
class Traffic:
    bounds: tuple[int, ...]  # max_queued per bot of BOTS
    channels: tuple[bool, ...]  # per thread: a channel (else a task thread)
    steps: tuple[Step, ...]


@st.composite
def traffic(draw: st.DrawFn) -> Traffic:
    channels = tuple(draw(st.lists(st.booleans(), min_size=1, max_size=3)))
    post = st.builds(
        Post,
        thread=st.integers(0, len(channels) - 1),
        sender=st.sampled_from(("you", "pat")),
        mentions=st.one_of(
            st.just(()), st.lists(st.sampled_from(BOTS), min_size=1, max_size=2, unique=True).map(tuple)
        ),
    )
    step = st.one_of(
        post,
        post,
        post,
        post,
        st.just(Pause()),
        st.just(Settle()),
        st.builds(Wait, st.sampled_from((30.0, 400.0, 700.0))),
    )
    bounds = tuple(draw(st.integers(1, 4)) for _ in BOTS)
    paused = (Pause(),) if draw(st.booleans()) else ()  # mail piles up from the start
    return Traffic(bounds, channels, paused + tuple(draw(st.lists(step, min_size=5, max_size=20))))


@pytest.fixture
async def crowd(team: Team) -> AsyncIterator[Team]:
    """The team with a second person, @pat."""
    async with team.rt.db.transaction() as s:
        await create_actor(s, ActorCreate(kind="human", handle="pat", name="Pat"))
    yield team


async def _play(team: Team, clock: FakeClock, plan: Traffic) -> list[str]:
    for handle, bound in zip(BOTS, plan.bounds, strict=True):
        await team.script(handle, [], max_queued=bound)
    participants = [*BOTS, "pat"]
    thread_ids = [
        await team.thread("prop", kind="channel" if channel else "task", participants=participants)
        for channel in plan.channels
    ]
    system = team.rt.system
    try:
        for step in plan.steps:
            if isinstance(step, Post):
                text = " ".join(f"@{m}" for m in step.mentions) + " please"
                await team.post(thread_ids[step.thread], text, sender=step.sender)
            elif isinstance(step, Pause):
                system.pause()
            elif isinstance(step, Wait):
                clock.advance(step.seconds)
            else:
                system.unpause()
                await team.idle()
    finally:
        system.unpause()
    await team.idle()
    return thread_ids


async def _check(team: Team, thread_ids: list[str]) -> None:
    async with team.rt.db.read() as s:
        bots = {a.id: a.handle for a in await s.scalars(select(Actor).where(Actor.kind == "bot"))}
        kinds = dict((await s.execute(select(Thread.id, Thread.kind).where(Thread.id.in_(thread_ids)))).all())
        messages = {
            m.id: m for m in await s.scalars(select(Message).where(Message.thread_id.in_(thread_ids)))
        }
        items = [
            i
            for i in await s.scalars(select(InboxItem).where(InboxItem.thread_id.in_(thread_ids)))
            if i.actor_id in bots and i.kind == "message"
        ]
        runs = {r.id: r for r in await s.scalars(select(Run).where(Run.thread_id.in_(thread_ids)))}
        disposals = list(await s.scalars(select(Disposal).where(Disposal.thread_id.in_(thread_ids))))
    disposed = {item_id: d for d in disposals for item_id in d.item_ids}
    assert len(disposed) == sum(len(d.item_ids) for d in disposals), "an item was disposed of twice"
    for item in items:
        assert item.status not in ("queued", "processing"), f"item {item.id} left {item.status}"
        run = runs.get(item.claimed_by_run or "")
        served = run is not None and item.message_id in run.trigger_message_ids
        assert served != (item.id in disposed), (
            f"item {item.id}: served={served}, disposal={disposed.get(item.id)}"
        )
    for d in disposals:
        handle = bots[d.bot_id]
        assert d.reason in ("shed", "stale"), d.reason
        for message_id in d.message_ids:
            assert messages[message_id].thread_id == d.thread_id
        if d.reason == "stale":
            assert kinds[d.thread_id] == "channel" and (d.trigger_age_s or 0) > (d.bound or 0)
        else:
            assert (d.queue_depth or 0) > (d.bound or 0)
            if kinds[d.thread_id] == "task":  # task mail addressed by mention is never shed
                assert all(handle not in messages[m].mentions for m in d.message_ids)
        event(f"disposal: {d.reason} in a {kinds[d.thread_id]}")
    event(f"bot triggers: {'none' if not items else 'all served' if not disposed else 'some disposed'}")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=traffic())
async def test_every_trigger_is_served_by_a_run_or_has_a_disposal(
    crowd: Team, clock: FakeClock, plan: Traffic
) -> None:
    thread_ids = await _play(crowd, clock, plan)
    await _check(crowd, thread_ids)
