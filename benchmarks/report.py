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
HOP_OVER_BARE = 2.0
RUNS_PER_SECOND = 300.0


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

    changed = [line[3:] for line in git("status", "--porcelain", "--", "src").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD") or None, "uncommitted_src_changes": changed}


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, checked against whichever scenarios ran."""
    out: dict[str, Any] = {}
    hop, bare, throughput = report.get("hop"), report.get("bare"), report.get("throughput")
    if hop:
        for variant in ("one_thread", "fresh_thread_per_20"):
            p50 = hop[variant]["latency_ms"]["p50"]
            out[f"hop_p50_{variant}"] = _check(p50, "<=", HOP_P50_MS, "ms")
    if hop and bare:
        for baseline in ("build_and_ainvoke", "prebuilt_ainvoke"):
            bare_p50 = bare[baseline]["p50"]
            for variant in ("one_thread", "fresh_thread_per_20"):
                ratio = round(hop[variant]["latency_ms"]["p50"] / bare_p50, 2)
                out[f"hop_{variant}_over_bare_{baseline}"] = _check(ratio, "<=", HOP_OVER_BARE, "x")
    if throughput:
        for backend in ("sqlite", "postgresql"):
            row = throughput.get(backend, {}).get("max_concurrent_runs_4")
            if row:
                measured = row["posted_one_by_one"]
                out[f"throughput_{backend}_default_slots"] = {
                    **_check(measured["runs_per_second"], ">=", RUNS_PER_SECOND, "runs/s"),
                    "all_runs_completed": measured["all_completed"],
                }
    return out


def _check(actual: float, op: str, target: float, unit: str) -> dict[str, Any]:
    met = actual <= target if op == "<=" else actual >= target
    return {"actual": actual, "target": f"{op} {target:g} {unit}", "met": met}
