"""The heartbeat for stuck runs: a run still running past OPENBOT_RUN_TIME_LIMIT_SECONDS is failed
with a notice and its agent stopped, while its lease keeps being renewed."""

from __future__ import annotations

import asyncio

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim


async def test_a_run_past_its_time_limit_is_reaped_with_a_notice(team: Team, clock: FakeClock) -> None:
    await team.script("engineer", [], delay_ms=60_000)  # a model call that never comes back in time
    started = asyncio.Event()

    async def model_starts(_claim: Claim, _prepared: Prepared) -> None:
        started.set()

    team.on_prepared(model_starts)
    thread = await team.thread("stuck")
    await team.post(thread, "@engineer take forever")
    async with asyncio.timeout(10):
        await started.wait()
    limit = team.rt.settings.run_time_limit_seconds
    clock.advance(limit - 1)
    await team.rt.system.maintain()
    [run] = await team.runs(thread)
    assert run.status == "running"  # renewed lease, within the limit
    clock.advance(2)
    await team.rt.system.maintain()
    await team.idle()
    [run] = await team.runs(thread)
    assert run.status == "failed" and run.error is not None and run.error["code"] == "run_time_limit"
    notice = (await team.messages(thread))[-1]
    assert notice["sender"] is None and notice["metadata"]["kind"] == "run_failed"
    assert f"time limit of {limit:g} s" in notice["content"]
    assert not team.rt.system.in_flight
    [item] = await team.items("engineer")
    assert item.status == "failed"
