"""Leases and fencing, driven by the fake clock: a lease lapses only when time moves."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.core.errors import StaleLease
from openbot.runtime.runs.claim import Claim
from openbot.runtime.runs.outcome import Outcome, finish
from openbot.runtime.team import get_actor


async def _claim_by_hand(team: Team, thread: str) -> Claim:
    """A run claimed by a 'worker' that will never heartbeat (the system itself is paused)."""
    team.rt.system.pause()
    await team.post(thread, "@engineer build")
    async with team.rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    claim = await team.rt.system.claim(engineer.id)
    assert claim is not None
    return claim


async def test_a_stale_worker_cannot_finish_a_run_taken_over(team: Team, clock: FakeClock) -> None:
    rt = team.rt
    thread = await team.thread()
    stale = await _claim_by_hand(team, thread)
    # The owner stops heartbeating; once its lease lapses, recovery takes the run over.
    clock.advance(rt.settings.lease_seconds + 1)
    assert await rt.system.recover(expired_only=True) == 1
    rt.system.unpause()
    await team.idle()
    before = await team.messages(thread)
    # The "dead" worker wakes up and tries to finish: refused, nothing is written.
    with pytest.raises(StaleLease):
        async with rt.db.transaction() as s:
            await finish(s, stale, Outcome(reply="late reply @reviewer"), rt.delivery)
    assert await team.messages(thread) == before
    runs = await team.runs(thread)
    assert [r.status for r in runs] == ["failed", "completed"]
    assert runs[0].error is not None and runs[0].error["code"] == "interrupted"
    assert runs[0].error["message"].startswith("its lease expired: the process running it (node ")
    replies = [m for m in before if m["sender"] and m["sender"]["handle"] == "engineer"]
    assert len(replies) == 1 and not await team.items("reviewer")


async def test_recovery_leaves_runs_with_a_live_lease_alone(team: Team, clock: FakeClock) -> None:
    thread = await team.thread()
    await _claim_by_hand(team, thread)
    clock.advance(team.rt.settings.lease_seconds - 1)  # not yet expired
    assert await team.rt.system.recover(expired_only=True) == 0
    assert [r.status for r in await team.runs(thread)] == ["running"]


async def test_the_heartbeat_keeps_a_long_run_s_lease_alive(team: Team, clock: FakeClock) -> None:
    """A run that outlives its lease is not taken over while its owner heartbeats."""
    rt = team.rt
    # The model is slow; the run stays in flight.
    thread = await team.slow_run_started("@engineer slow", delay_ms=20_000)
    for _ in range(3):  # three lease periods pass, with a maintenance pass in each
        clock.advance(rt.settings.lease_seconds * 0.9)
        await rt.system.maintain()
    assert await rt.system.recover(expired_only=True) == 0
    assert [r.status for r in await team.runs(thread)] == ["running"]
    (run,) = await team.runs(thread)
    await rt.runs.cancel(run.id)
    await team.idle()
    assert [r.status for r in await team.runs(thread)] == ["cancelled"]


async def test_a_run_being_claimed_is_never_taken_over_by_its_own_process(
    team: Team, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim's commit can yield to a maintenance pass before the run is in flight; were the clock
    past the run's lease then (a stalled process), the pass's recovery must not fail the run its
    own process is about to start (it did on PostgreSQL: the run failed, its mail was re-queued)."""
    rt = team.rt
    # Maintenance passes run when this test says: one woken by the clock in the background could
    # heartbeat with the run still alive after the test has let it go, and renew its lease.
    one_pass = rt.system.maintain

    async def no_pass() -> None:
        return None

    monkeypatch.setattr(rt.system, "maintain", no_pass)
    thread = await team.thread()
    rt.system.pause()
    await team.post(thread, "@engineer build")
    async with rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    alive_at_commit: list[set[str]] = []

    def on_commit(_connection: object) -> None:
        alive_at_commit.append(rt.system.alive())

    event.listen(rt.db.engine.sync_engine, "commit", on_commit)
    try:
        claim = await rt.system.claim(engineer.id)
    finally:
        event.remove(rt.db.engine.sync_engine, "commit", on_commit)
    assert claim is not None
    assert any(claim.run_id in alive for alive in alive_at_commit)  # alive while committing
    assert claim.run_id not in rt.system.alive()  # claimed by hand: nobody's once it returns
    rt.system.claiming.add(claim.run_id)  # as while its commit is under way
    clock.advance(rt.settings.lease_seconds + 1)
    await one_pass()  # its heartbeat renews the lease of a run being claimed here
    assert await rt.system.recover(expired_only=True) == 0
    assert [r.status for r in await team.runs(thread)] == ["running"]
    rt.system.claiming.discard(claim.run_id)  # nobody works on it any more: fair game
    clock.advance(2 * rt.settings.lease_seconds)
    assert await rt.system.recover(expired_only=True) == 1
    assert [r.status for r in await team.runs(thread)] == ["failed"]
