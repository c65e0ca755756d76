"""The parts of the report around the numbers: the machine they came from and the targets."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "langchain",
    "langgraph",
    "langchain-core",
    "sqlalchemy",
    "aiosqlite",
    "psycopg",
    "fastapi",
    "uvicorn",
)

HOP_P50_MS = 15.0
HOP_P95_MS = 25.0
HOP_OVER_BARE = 2.0
LONG_OVER_SHORT = 1.2
RUNS_PER_SECOND = 150.0
STATEMENTS_PER_RUN = 12.0
TWO_WORKERS_OVER_ONE = 1.6
CROSS_PROCESS_OVER_HOP = 2.0


def machine() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: _version(name) for name in PACKAGES},
        "git": _git(),
    }


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git() -> dict[str, Any]:
    """The commit measured, and the source files that differed from it (others edit concurrently)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    changed = [line.split(maxsplit=1)[-1] for line in git("status", "--porcelain", "--", "src").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD") or None, "uncommitted_src_changes": changed}


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, checked against whichever scenarios ran."""
    out: dict[str, Any] = {}
    hop, bare = report.get("hop"), report.get("bare")
    if hop:
        out.update(_hop_targets(hop))
    if hop and bare:
        for baseline in ("build_and_ainvoke", "prebuilt_ainvoke"):
            ratio = round(hop["fresh_thread_per_20"]["latency_ms"]["p50"] / bare[baseline]["p50"], 2)
            out[f"hop_over_bare_{baseline}"] = _check(ratio, "<=", HOP_OVER_BARE, "x")
    out.update(_throughput_targets(report.get("throughput") or {}))
    fleet = report.get("fleet") or {}
    rows = {row["workers"]: row for row in fleet.get("throughput", [])}
    if 2 in rows and rows[2].get("scaling"):
        out["postgresql_two_workers_over_one"] = _check(rows[2]["scaling"], ">=", TWO_WORKERS_OVER_ONE, "x")
    if hop and "cross_process_hop" in fleet:
        ratio = (
            fleet["cross_process_hop"]["latency_ms"]["p50"] / hop["fresh_thread_per_20"]["latency_ms"]["p50"]
        )
        out["cross_process_hop_over_hop"] = _check(round(ratio, 2), "<=", CROSS_PROCESS_OVER_HOP, "x")
    if "cross_over_single" in fleet:  # like for like: both hops on the same PostgreSQL database
        out["cross_process_hop_over_single_process_hop_postgresql"] = _check(
            fleet["cross_over_single"], "<=", CROSS_PROCESS_OVER_HOP, "x"
        )
    for name, row in (report.get("memory") or {}).items():
        out[f"memory_top8_{name}_p50"] = _check(row["top8_ms"]["p50"], "<=", row["target_p50_ms"], "ms")
    return out


def _hop_targets(hop: dict[str, Any]) -> dict[str, Any]:
    latency = hop["fresh_thread_per_20"]["latency_ms"]
    out = {
        "hop_p50": _check(latency["p50"], "<=", HOP_P50_MS, "ms"),
        "hop_p95": _check(latency["p95"], "<=", HOP_P95_MS, "ms"),
    }
    if "long_thread" in hop:
        ratio = hop["long_thread"]["p50_over_short_thread_p50"]
        out["hop_long_thread_over_short"] = _check(ratio, "<=", LONG_OVER_SHORT, "x")
    return out


def _throughput_targets(throughput: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for backend in ("sqlite", "postgresql"):
        row = throughput.get(backend, {}).get("max_concurrent_runs_4")
        if not row:
            continue
        measured = row["posted_one_by_one"]
        if backend == "sqlite":
            out["throughput_sqlite_default_slots"] = {
                **_check(measured["runs_per_second"], ">=", RUNS_PER_SECOND, "runs/s"),
                "all_runs_completed": measured["all_completed"],
            }
            outside = throughput["sqlite"].get("over_http")
            if outside:
                out["throughput_sqlite_over_http"] = {
                    **_check(outside["runs_per_second"], ">=", RUNS_PER_SECOND, "runs/s"),
                    "all_runs_completed": outside["all_completed"],
                }
        statements = measured["per_run"].get("db_statements")
        if statements is not None:
            out[f"statements_per_run_{backend}"] = _check(statements, "<=", STATEMENTS_PER_RUN, "")
    return out


def _check(actual: float, op: str, target: float, unit: str) -> dict[str, Any]:
    met = actual <= target if op == "<=" else actual >= target
    return {"actual": actual, "target": f"{op} {target:g} {unit}", "met": met}
