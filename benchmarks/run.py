"""Run the benchmarks and print one JSON report on stdout (progress goes to stderr).

    python -m benchmarks.run [--scenario hop|bare|throughput|fleet|sse_fanout|memory|gate|all] [--quick]

``OPENBOT_BENCH_DATABASE_URL`` (e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/openbot_bench``)
adds the PostgreSQL runs (throughput, and the fleet of worker processes); that database is emptied
first. See ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from typing import Any

from benchmarks import bare, fleet, gate, hop, memory, report, sse_fanout, throughput

SCENARIOS = ("hop", "bare", "throughput", "fleet", "sse_fanout", "memory", "gate")


async def collect(scenarios: list[str], quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machine": report.machine(),
        "quick": quick,
        "load_average_1m_before": report.load_average(),
    }
    started = time.perf_counter()
    if "hop" in scenarios:
        out["hop"] = await hop.run(30 if quick else 200)
    if "bare" in scenarios:
        out["bare"] = await bare.run(30 if quick else 200)
    if "throughput" in scenarios:
        load = throughput.QUICK if quick else throughput.FULL
        out["throughput"] = await throughput.run(load, os.environ.get("OPENBOT_BENCH_DATABASE_URL"))
    if "fleet" in scenarios:
        load = throughput.QUICK if quick else throughput.FULL
        url = os.environ.get("OPENBOT_BENCH_DATABASE_URL")
        out["fleet"] = await fleet.run(url, load, 30 if quick else 200)
    if "sse_fanout" in scenarios:
        out["sse_fanout"] = await sse_fanout.run(30 if quick else 200, 50 if quick else sse_fanout.CLIENTS)
    if "memory" in scenarios:
        out["memory"] = await memory.run(30 if quick else 200, os.environ.get("OPENBOT_BENCH_DATABASE_URL"))
    if "gate" in scenarios:
        out["gate"] = gate.run(0.5 if quick else 2.0)
    out["load_average_1m_after"] = report.load_average()
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["targets"] = report.targets(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="fewer hops and runs (a smoke test)")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("httpx", "openbot", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ["OPENBOT_FORBID_REAL_MODELS"] = "1"  # the scripted model only, whatever the shell says
    scenarios = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    print(json.dumps(asyncio.run(collect(scenarios, args.quick)), indent=2))


if __name__ == "__main__":
    main()
