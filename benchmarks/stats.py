"""Latency summaries: percentiles by linear interpolation between closest ranks (numpy's default)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of values already sorted ascending."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


def summarize(samples_ms: Sequence[float]) -> dict[str, float | int]:
    """``n``, ``p50``, ``p95``, ``p99``, ``mean``, ``min`` and ``max`` of samples in milliseconds."""
    ordered = sorted(samples_ms)
    return {
        "n": len(ordered),
        "p50": round(percentile(ordered, 50), 2),
        "p95": round(percentile(ordered, 95), 2),
        "p99": round(percentile(ordered, 99), 2),
        "mean": round(statistics.fmean(ordered), 2),
        "min": round(ordered[0], 2),
        "max": round(ordered[-1], 2),
    }
