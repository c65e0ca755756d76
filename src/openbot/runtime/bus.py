"""In-process "something changed" signals and live-only events (token deltas).

The journal is the truth: listeners are told that new journal rows may exist and read them from
the database; only live-only events (``text.delta``, ``activity.created``) travel with a payload.
Listeners (``listen``) are called synchronously, in publishing order: the SSE streams' one is
``runtime.fanout``, which reads the journal once for all of them. Subscriptions are queues for
in-process waiters (tests, benchmarks); they are bounded: a subscription that falls behind loses
live-only events, never journal signals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Signal:
    """``type`` is ``"journal"`` (read the journal) or a live-only event type with ``data``."""

    type: str
    thread_id: str | None = None
    data: dict[str, Any] | None = None


class Subscription:
    def __init__(self, bus: Bus, thread_id: str | None, maxsize: int = 1000) -> None:
        self._bus = bus
        self.thread_id = thread_id
        self.queue: asyncio.Queue[Signal] = asyncio.Queue(maxsize)

    def offer(self, signal: Signal) -> None:
        if self.thread_id and signal.thread_id and signal.thread_id != self.thread_id:
            return
        try:
            self.queue.put_nowait(signal)
        except asyncio.QueueFull:
            if signal.type == "journal":  # make room: a journal signal must not be lost
                self.queue.get_nowait()
                self.queue.put_nowait(signal)

    async def next(self, timeout: float) -> Signal | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        self._bus._subs.discard(self)


class Bus:
    def __init__(self) -> None:
        self._subs: set[Subscription] = set()
        self._listeners: list[Callable[[Signal], None]] = []

    def listen(self, listener: Callable[[Signal], None]) -> None:
        """Call ``listener`` with every signal, as it is published (it must not block)."""
        self._listeners.append(listener)

    def subscribe(self, thread_id: str | None = None) -> Subscription:
        sub = Subscription(self, thread_id)
        self._subs.add(sub)
        return sub

    def journal_changed(self, thread_id: str | None = None, upto: int | None = None) -> None:
        """Journal rows up to ``upto`` were committed (for ``thread_id``; None: not thread-scoped)."""
        self._publish(Signal("journal", thread_id, {"upto": upto} if upto else None))

    def live(self, type_: str, data: dict[str, Any], thread_id: str | None) -> None:
        self._publish(Signal(type_, thread_id, data))

    def _publish(self, signal: Signal) -> None:
        for listener in self._listeners:
            listener(signal)
        for sub in list(self._subs):
            sub.offer(signal)
