"""Background loops (``runtime.loops``): a loop's supervision boundary never swallows its own
cancellation, even when the cancellation surfaces as another error."""

from __future__ import annotations

import asyncio

import pytest

from openbot.runtime.loops import stop_if_cancelled


async def test_a_loop_stops_when_its_cancellation_comes_back_as_another_error() -> None:
    started = asyncio.Event()
    passes = 0

    async def one_pass() -> None:
        started.set()
        try:
            await asyncio.Event().wait()  # a statement in flight
        except asyncio.CancelledError:
            # What a driver interrupted mid-statement can do: the connection is invalidated on
            # the way out, and that error replaces the cancellation.
            raise RuntimeError("the connection was invalidated") from None

    async def loop() -> None:
        nonlocal passes
        while True:
            try:
                passes += 1
                await one_pass()
            except Exception:  # the supervision boundary under test
                stop_if_cancelled()

    task = asyncio.create_task(loop())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(5):  # without the guard the loop goes on: no pass ends it
            await task
    assert passes == 1
