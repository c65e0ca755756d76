"""The fake clock: time moves only when a test advances it, and sleepers wake exactly then."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from openbot.core.clock import FakeClock, SystemClock


async def test_sleepers_wake_when_time_passes_their_deadline() -> None:
    clock = FakeClock()
    start = clock.now()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper("short", 5)), asyncio.create_task(sleeper("long", 60))]
    await asyncio.sleep(0)  # both tasks run up to their sleep
    assert clock.sleepers == 2
    clock.advance(4)
    await asyncio.sleep(0)
    assert woke == [] and clock.now() == start + timedelta(seconds=4)
    clock.advance(1)
    await asyncio.sleep(0)
    assert woke == ["short"] and clock.sleepers == 1
    clock.advance(3600)
    await asyncio.gather(*tasks)
    assert woke == ["short", "long"] and clock.sleepers == 0


async def test_a_zero_sleep_only_yields() -> None:
    clock = FakeClock()
    await clock.sleep(0)
    assert clock.sleepers == 0


def test_the_system_clock_is_timezone_aware() -> None:
    assert SystemClock().now().tzinfo is not None
