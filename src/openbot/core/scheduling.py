"""The pick policy: which of a bot's queued items become its next run (DESIGN §6).

The worker reads the bot's queued items and the threads it cannot take right now, and this module
decides. Pure, so the property tests can drive it with arbitrary sequences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class ItemKind(StrEnum):
    MESSAGE = "message"
    QUESTION = "question"
    RESUME = "resume"


@dataclass(frozen=True)
class QueuedItem:
    id: str
    kind: ItemKind
    thread_id: str
    created_at: float  # ordering key; ties broken by id
    run_id: str | None = None


@dataclass(frozen=True)
class Batch:
    thread_id: str
    items: tuple[QueuedItem, ...]

    @property
    def is_resume(self) -> bool:
        return self.items[0].kind is ItemKind.RESUME


def pick(
    queued: Sequence[QueuedItem],
    parked_threads: frozenset[str],
    busy_threads: frozenset[str] = frozenset(),
) -> Batch | None:
    """Oldest queued item whose thread can be taken; a resume runs alone, messages coalesce.

    ``parked_threads``: threads where this bot has a run waiting for a human — their message items
    wait, but the resume that un-parks them does not. ``busy_threads``: threads where this bot has
    a run in flight (never two runs of one bot in one thread).
    """
    ordered = sorted(queued, key=lambda item: (item.created_at, item.id))
    for item in ordered:
        if item.thread_id in busy_threads:
            continue
        if item.kind is ItemKind.RESUME:
            return Batch(item.thread_id, (item,))
        if item.kind is ItemKind.MESSAGE and item.thread_id not in parked_threads:
            same_thread = tuple(
                other
                for other in ordered
                if other.thread_id == item.thread_id and other.kind is ItemKind.MESSAGE
            )
            return Batch(item.thread_id, same_thread)
    return None
