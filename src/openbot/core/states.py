"""Statuses of runs, inbox items and held hand-offs, with their legal transitions (DESIGN §6).

Every status change in the runtime goes through :func:`check` (or a function that calls it), so
an illegal move — finishing a cancelled run, re-queueing a finished item — is an error with a
stable code instead of a silent overwrite.

    run:  queued ──► running ──► completed | failed | cancelled
                       │  ▲
                       ▼  │ (resume)
                  waiting_human ──► cancelled | failed

    item: queued ──► processing ──► done | failed | cancelled
             │           └──► queued (re-queued after a crash)
             └──► done (acknowledged) | cancelled | failed
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from openbot.core.errors import IllegalTransition


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_HUMAN = "waiting_human"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ItemStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class HoldStatus(StrEnum):
    PENDING = "pending"
    RELEASED = "released"
    SUPERSEDED = "superseded"


# Runs that hold the (bot, thread) slot: at most one per bot and thread (invariant 3).
ACTIVE_RUNS = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_HUMAN)
# Runs that occupy one of the bot's parallel threads (a waiting run parks its thread instead).
IN_FLIGHT_RUNS = (RunStatus.QUEUED, RunStatus.RUNNING)
TERMINAL_RUNS = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
OPEN_ITEMS = (ItemStatus.QUEUED, ItemStatus.PROCESSING)

S = TypeVar("S", RunStatus, ItemStatus, HoldStatus)

_R, _I, _H = RunStatus, ItemStatus, HoldStatus
# One table per machine: their values overlap ("queued", "failed"…) and StrEnums equal to one
# string are equal to each other, so a single table would mix the machines up.
RUN_MOVES: dict[RunStatus, frozenset[RunStatus]] = {
    _R.QUEUED: frozenset({_R.RUNNING, _R.FAILED, _R.CANCELLED}),
    _R.RUNNING: frozenset({_R.COMPLETED, _R.FAILED, _R.CANCELLED, _R.WAITING_HUMAN}),
    _R.WAITING_HUMAN: frozenset({_R.RUNNING, _R.FAILED, _R.CANCELLED}),
    _R.COMPLETED: frozenset(),
    _R.FAILED: frozenset(),
    _R.CANCELLED: frozenset(),
}
ITEM_MOVES: dict[ItemStatus, frozenset[ItemStatus]] = {
    _I.QUEUED: frozenset({_I.PROCESSING, _I.DONE, _I.FAILED, _I.CANCELLED}),
    _I.PROCESSING: frozenset({_I.DONE, _I.FAILED, _I.CANCELLED, _I.QUEUED}),
    _I.DONE: frozenset(),
    _I.FAILED: frozenset(),
    _I.CANCELLED: frozenset(),
}
HOLD_MOVES: dict[HoldStatus, frozenset[HoldStatus]] = {
    _H.PENDING: frozenset({_H.RELEASED, _H.SUPERSEDED}),
    _H.RELEASED: frozenset(),
    _H.SUPERSEDED: frozenset(),
}
_MOVES: dict[type, dict[Any, Any]] = {RunStatus: RUN_MOVES, ItemStatus: ITEM_MOVES, HoldStatus: HOLD_MOVES}


def can_move(current: S, target: S) -> bool:
    moves: frozenset[S] = _MOVES[type(current)][current]
    return target in moves


def check(kind: type[S], current: str, target: S) -> S:
    """Return ``target`` if a ``kind`` may move from ``current`` to it; raise IllegalTransition."""
    try:
        state = kind(current)
    except ValueError as exc:
        raise IllegalTransition(f"unknown {kind.__name__} {current!r}", {"from": current}) from exc
    if not can_move(state, target):
        raise IllegalTransition(
            f"a {kind.__name__} cannot move from {state} to {target}", {"from": str(state), "to": str(target)}
        )
    return target
