"""Memory decay with reinforcement (core.decay): the formula, the thresholds, permanence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openbot.core.decay import ARCHIVE_BELOW, HALF_LIFE_DAYS, PRUNE_BELOW, Fading, plan_decay, score

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def memory(
    id_: str = "m", *, tier: str = "short", importance: float = 0.5, uses: int = 0, days: float = 0
) -> Fading:
    accessed = NOW - timedelta(days=days)
    return Fading(id_, tier, importance, uses, accessed, accessed)


def test_a_memory_loses_half_its_weight_per_half_life_of_its_tier() -> None:
    for tier, half_life in HALF_LIFE_DAYS.items():
        assert score(memory(tier=tier, importance=0.8), NOW) == pytest.approx(0.8)
        assert score(memory(tier=tier, importance=0.8, days=half_life), NOW) == pytest.approx(0.4)
        assert score(memory(tier=tier, importance=0.8, days=2 * half_life), NOW) == pytest.approx(0.2)


def test_permanent_memories_never_decay_and_are_never_planned() -> None:
    old = memory("p", tier="permanent", importance=0.01, days=10_000)
    assert score(old, NOW) == pytest.approx(0.01)
    plan = plan_decay([old], NOW)
    assert plan.archive == () and plan.prune == () and "p" not in plan.scores


def test_thresholds_archive_below_015_and_prune_below_005() -> None:
    # importance 0.5, short tier (7-day half-life): 0.5 · 2^(-d/7)
    fresh = memory("fresh", days=1)  # 0.45
    fading = memory("fading", days=14)  # 0.125 → archive
    gone = memory("gone", days=28)  # 0.03125 → prune
    plan = plan_decay([fresh, fading, gone], NOW)
    assert plan.archive == ("fading",) and plan.prune == ("gone",)
    assert plan.scores["fading"] == pytest.approx(0.125)
    assert PRUNE_BELOW <= plan.scores["fading"] < ARCHIVE_BELOW


def test_a_never_accessed_memory_counts_from_its_creation() -> None:
    created = NOW - timedelta(days=14)
    unused = Fading("u", "short", 0.5, 0, None, created)
    assert score(unused, NOW) == pytest.approx(0.125)


def test_access_reinforces_a_memory_so_it_outlives_an_unused_one() -> None:
    used = memory("used", uses=50, days=14)
    unused = memory("unused", uses=0, days=14)
    plan = plan_decay([used, unused], NOW)
    assert plan.archive == ("unused",)
    assert plan.scores["used"] >= ARCHIVE_BELOW


@given(
    importance=st.floats(0, 1),
    days=st.floats(0, 5_000),
    later=st.floats(0, 5_000),
    uses=st.integers(0, 10_000),
    tier=st.sampled_from(["short", "long"]),
)
def test_score_never_grows_with_time_and_grows_with_use(
    importance: float, days: float, later: float, uses: int, tier: str
) -> None:
    now = memory(tier=tier, importance=importance, uses=uses, days=days)
    older = memory(tier=tier, importance=importance, uses=uses, days=days + later)
    more_used = memory(tier=tier, importance=importance, uses=uses + 1, days=days)
    assert score(older, NOW) <= score(now, NOW) + 1e-12
    assert score(more_used, NOW) >= score(now, NOW) - 1e-12
    assert score(now, NOW) >= 0
