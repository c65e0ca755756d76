"""One worker per bot: it drains the bot's mailbox, never past the bot's ceiling (invariant 3)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from openbot.runtime.loops import stop_if_cancelled
from openbot.runtime.runs.claim import ClaimPaused

if TYPE_CHECKING:
    from openbot.runtime.scheduler.system import ActorSystem

log = logging.getLogger(__name__)

_RETRIES = 3  # claim loops retried at once after a failure, before waiting for a wake or the poll


class BotWorker:
    """Woken when its bot may have mail; claims runs until there is nothing it can pick."""

    def __init__(self, system: ActorSystem, bot_id: str) -> None:
        self.system = system
        self.bot_id = bot_id
        self.wake = asyncio.Event()
        self.busy = False  # inside a claim loop
        self.failures = 0  # claim loops that failed in a row

    @property
    def idle(self) -> bool:
        return not self.busy and not self.wake.is_set()

    async def loop(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            self.busy = True
            try:
                await self.drain()
                self.failures = 0
            except Exception:  # supervision boundary: a bad claim must not stop the system
                stop_if_cancelled()
                self.failures += 1
                retry = self.failures <= _RETRIES
                log.exception(
                    "worker for bot %s failed to claim; %s",
                    self.bot_id,
                    "trying again" if retry else "waiting for the next wake or poll",
                )
                if retry:  # a transient conflict (a deadlock, a serialisation failure) clears at once
                    self.wake.set()
            finally:
                self.busy = False
                self.system.changed()

    async def drain(self) -> None:
        """Take a global slot, then claim; stop when nothing is claimable or the bot is at its ceiling."""
        system = self.system
        while True:
            await system.unpaused.wait()
            await system.slots.acquire()
            try:
                claim = await system.claim(self.bot_id, unless_paused=True)
            except ClaimPaused:
                system.slots.release()
                continue  # its mail is queued again: claim it once the system is unpaused
            except BaseException:
                system.slots.release()
                raise
            if claim is None:
                system.slots.release()
                return
            system.start_run(claim)  # the run gives the slot back when it settles
            if claim.at_ceiling:
                return  # nothing more to claim until a run settles (which wakes this worker)
