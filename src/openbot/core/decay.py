"""Memory decay with reinforcement: which memories fade, which are archived, which are pruned (DESIGN §8).

A memory's score is ``importance × decay × reinforcement``:

- ``decay = 0.5 ** (days since last access / half-life of its tier)``: a short-tier memory nobody
  used for a week has half its weight, a long-tier one after three months (:data:`HALF_LIFE_DAYS`).
  A memory never accessed counts from its creation.
- ``reinforcement = 1 + 0.2 × ln(1 + access count)``: every use (injection, search) makes a
  memory last longer, with diminishing returns (×1.48 after 10 uses, ×1.92 after 100).

Below :data:`ARCHIVE_BELOW` an active memory is archived (kept, no longer injected); below
:data:`PRUNE_BELOW` it is pruned (deleted). ``permanent`` memories never decay. Archived memories
are history (and may be what a consolidation superseded), so decay leaves them alone.

Pure: frozen dataclasses in, a plan out; the clock's time is an argument.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "ARCHIVE_BELOW",
    "HALF_LIFE_DAYS",
    "PRUNE_BELOW",
    "DecayPlan",
    "Fading",
    "plan_decay",
    "reinforcement",
    "score",
]

ARCHIVE_BELOW = 0.15
PRUNE_BELOW = 0.05
HALF_LIFE_DAYS: dict[str, float] = {"short": 7.0, "long": 90.0}
"""Days without access after which a memory of this tier keeps half its weight."""
REINFORCEMENT_PER_LOG_USE = 0.2


@dataclass(frozen=True)
class Fading:
    """What decay needs to know about one active memory."""

    id: str
    tier: str
    importance: float
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class DecayPlan:
    archive: tuple[str, ...]
    prune: tuple[str, ...]
    scores: dict[str, float]
    """Every scored memory's score (permanent ones are not scored)."""


def reinforcement(access_count: int) -> float:
    return 1.0 + REINFORCEMENT_PER_LOG_USE * math.log1p(max(0, access_count))


def score(memory: Fading, at: datetime) -> float:
    """The memory's effective weight at ``at``; ``permanent`` memories keep their importance."""
    importance = min(1.0, max(0.0, memory.importance))
    half_life = HALF_LIFE_DAYS.get(memory.tier)
    if half_life is None:  # permanent (or a tier that does not decay)
        return importance
    since = memory.last_accessed_at or memory.created_at
    days = max(0.0, (at - since).total_seconds() / 86_400)
    return float(importance * 0.5 ** (days / half_life) * reinforcement(memory.access_count))


def plan_decay(memories: Iterable[Fading], at: datetime) -> DecayPlan:
    """Which of these active memories to archive and which to prune at ``at``, in the order given."""
    archive: list[str] = []
    prune: list[str] = []
    scores: dict[str, float] = {}
    for memory in memories:
        if memory.tier not in HALF_LIFE_DAYS:
            continue
        value = scores[memory.id] = score(memory, at)
        if value < PRUNE_BELOW:
            prune.append(memory.id)
        elif value < ARCHIVE_BELOW:
            archive.append(memory.id)
    return DecayPlan(archive=tuple(archive), prune=tuple(prune), scores=scores)
