"""Leases and fencing: a worker wrongly declared dead cannot finish its run a second time."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from conftest import Team
from openbot.runtime.runs import Outcome, StaleLease, finish
from openbot.runtime.team import get_actor
from openbot.store.journal import now
from openbot.store.models import Run


async def test_a_stale_worker_cannot_finish_a_run_taken_over(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    rt.system.pause()
    await team.post(thread, "@engineer build")
    async with rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    stale = await rt.system.claim(engineer.id)
    assert stale is not None
    # The owner stops heartbeating; its lease lapses and recovery takes the run over.
    async with rt.db.transaction() as s:
        await s.execute(update(Run).where(Run.id == stale.run_id).values(lease_expires_at=now()))
    assert await rt.system.recover(expired_only=True) == 1
    rt.system.unpause()
    rt.system.notify([engineer.id])
    await team.idle()
    before = await team.messages(thread)
    # The "dead" worker wakes up and tries to finish: refused, nothing is written.
    with pytest.raises(StaleLease):
        async with rt.db.transaction() as s:
            await finish(s, stale, Outcome(reply="late reply @reviewer"), rt.delivery)
    assert await team.messages(thread) == before
    runs = await team.runs(thread)
    assert [r.status for r in runs] == ["failed", "completed"]
    replies = [m for m in before if m["sender"] and m["sender"]["handle"] == "engineer"]
    assert len(replies) == 1 and not await team.items("reviewer")


async def test_recovery_leaves_runs_with_a_live_lease_alone(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    rt.system.pause()
    await team.post(thread, "@engineer build")
    async with rt.db.read() as s:
        engineer = await get_actor(s, "engineer")
    claim = await rt.system.claim(engineer.id)
    assert claim is not None
    assert await rt.system.recover(expired_only=True) == 0
    assert [r.status for r in await team.runs(thread)] == ["running"]
