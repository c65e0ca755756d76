"""The status state machines: every legal move allowed, every other one refused with a code."""

from __future__ import annotations

import pytest

from openbot.core.errors import ErrorCode, IllegalTransition
from openbot.core.states import (
    ACTIVE_RUNS,
    RUN_MOVES,
    TERMINAL_RUNS,
    HoldStatus,
    ItemStatus,
    RunStatus,
    can_move,
    check,
)

LEGAL_RUN_MOVES = {
    ("queued", "running"),
    ("queued", "failed"),
    ("queued", "cancelled"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
    ("running", "waiting_human"),
    ("waiting_human", "running"),
    ("waiting_human", "failed"),
    ("waiting_human", "cancelled"),
}


@pytest.mark.parametrize("current", list(RunStatus))
@pytest.mark.parametrize("target", list(RunStatus))
def test_run_moves(current: RunStatus, target: RunStatus) -> None:
    legal = (str(current), str(target)) in LEGAL_RUN_MOVES
    assert can_move(current, target) is legal
    if legal:
        assert check(RunStatus, str(current), target) is target
    else:
        with pytest.raises(IllegalTransition) as raised:
            check(RunStatus, str(current), target)
        assert raised.value.code is ErrorCode.INTERNAL
        assert raised.value.details == {"from": str(current), "to": str(target)}


def test_terminal_runs_never_move_again() -> None:
    for status in TERMINAL_RUNS:
        assert not RUN_MOVES[status]
    assert set(ACTIVE_RUNS).isdisjoint(TERMINAL_RUNS)


def test_items_can_be_requeued_only_from_processing() -> None:
    assert can_move(ItemStatus.PROCESSING, ItemStatus.QUEUED)
    for settled in (ItemStatus.DONE, ItemStatus.FAILED, ItemStatus.CANCELLED):
        assert not can_move(settled, ItemStatus.QUEUED)
        with pytest.raises(IllegalTransition):
            check(ItemStatus, str(settled), ItemStatus.PROCESSING)


def test_a_hold_is_released_or_superseded_once() -> None:
    assert can_move(HoldStatus.PENDING, HoldStatus.RELEASED)
    assert can_move(HoldStatus.PENDING, HoldStatus.SUPERSEDED)
    assert not can_move(HoldStatus.RELEASED, HoldStatus.SUPERSEDED)


def test_an_unknown_status_is_refused() -> None:
    with pytest.raises(IllegalTransition, match="unknown RunStatus 'paused'"):
        check(RunStatus, "paused", RunStatus.RUNNING)
