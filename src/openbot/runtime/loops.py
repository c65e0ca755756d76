"""Background loops the runtime owns (the automations scheduler, webhook delivery, memory upkeep,
the gate's model calls): run one for the length of a block, and sleep on the runtime's clock until
a wake-up comes first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager, suppress
from typing import Any

from openbot.core.clock import Clock


@asynccontextmanager
async def background(loop: Coroutine[Any, Any, None], name: str) -> AsyncIterator[None]:
    """Run ``loop`` as a task for the duration of the block; cancel it (and wait) on the way out."""
    task = asyncio.create_task(loop, name=name)
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def stop_if_cancelled() -> None:
    """Call first in a loop's ``except Exception``: if this task was cancelled while the pass ran
    and the cancellation surfaced as another error (a driver interrupted mid-statement, then a
    connection invalidated on the way out), stop as cancelled. A loop that swallows its own
    cancellation never ends, and whoever cancelled it waits for it forever."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def sleep_or_wake(clock: Clock, seconds: float, wake: asyncio.Event) -> None:
    """Until ``seconds`` pass on ``clock`` or ``wake`` is set, whichever comes first (a wake-up
    that came while the caller worked ends the sleep at once); ``wake`` is cleared."""
    if wake.is_set():
        wake.clear()
        return
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    woken = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        woken.cancel()
    wake.clear()
