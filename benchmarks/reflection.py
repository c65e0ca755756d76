"""Scenario ``reflection``: does reflection add latency to the runs that trigger it?

An in-process ``Runtime`` (SQLite in a temporary dir, and PostgreSQL when
``OPENBOT_BENCH_DATABASE_URL`` is set). @engineer is scripted to reply at once and, when asked to
reflect, to rewrite its one memory (so the memory set does not grow); its memory is on in every
variant (so injection and the memory tools cost the same in each). Each sample posts
``@engineer ping <i>`` in a fresh thread and stops the clock when the run is completed
(``run_until_idle``); samples run one after another, alternating between the variants' two
sides in one runtime (paired, so the machine's drift cancels). Three variants:

- ``no_reflection``: ``memory.pending.schedule`` replaced by a no-op: what a run costs without
  reflection;
- ``pending_row``: the run upserts its pending reflection in its finish transaction (the only
  work a run does for reflection), none due during the measurement (the 30 s delay);
- ``reflecting_alongside``: delay 0 and the upkeep loop polling every 20 ms, so a reflection (one
  model call and a memory write) follows every other run, beside the next measured ones: the worst
  case of contention for the process and the database, not the path of the run.

Reports each variant's latency summary and its p50 over ``no_reflection``'s.

    .venv/bin/python -m benchmarks.reflection [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.stats import summarize
from openbot.config import Settings
from openbot.runtime import threads
from openbot.runtime.commands import BotUpdate, ThreadCreate
from openbot.runtime.engine import Runtime
from openbot.runtime.memory import pending, store
from openbot.runtime.team import get_actor, update_bot

SCRIPT = [{"match": ".", "reply": "pong"}]
LESSON = [{"op": "update", "match": "pings", "content": "Answer pings with pong"}]  # no growth


async def _no_schedule(*_args: Any) -> None:
    return None


async def _sample(rt: Runtime, index: int, *, schedule: bool) -> float:
    """One post → completed run, with the pending-reflection upsert in its end or without."""
    real = pending.schedule
    if not schedule:
        pending.schedule = _no_schedule  # type: ignore[assignment]
    try:
        async with rt.db.transaction() as s:
            thread = await threads.create_thread(s, ThreadCreate(title=f"ping {index}"))
            you = await get_actor(s, "you")
            start = time.perf_counter()
            await rt.delivery.post(s, thread, f"@engineer ping {index}", sender=you)
        await rt.system.run_until_idle()
        return (time.perf_counter() - start) * 1000
    finally:
        pending.schedule = real  # type: ignore[assignment]


async def _runtime(
    url: str | None, data_dir: Path, samples: int, *, delay: float, poll: float
) -> dict[str, Any]:
    """Samples alternate without and with the upsert (paired, so the machine's drift cancels)."""
    settings = Settings(data_dir=data_dir, database_url=url, memory_reflection_delay=delay, poll_seconds=poll)
    async with Runtime(settings) as rt:
        command = BotUpdate(model="scripted", model_settings={"script": SCRIPT, "reflection": LESSON})
        async with rt.db.transaction() as s:
            await update_bot(s, "engineer", command)
            bot = await get_actor(s, "engineer")
            if not await store.listing(s, bot.id, limit=1):
                await store.create(s, store.BotRef(bot.id, bot.handle), "Answer pings with pong")
        for i in range(5):  # warm-up
            await _sample(rt, -i, schedule=True)
        timings: dict[bool, list[float]] = {False: [], True: []}
        for i in range(samples):
            for schedule in (False, True) if i % 2 else (True, False):
                timings[schedule].append(await _sample(rt, i, schedule=schedule))
        reflected = await rt.upkeep.reflector.run_due()
    return {"without": summarize(timings[False]), "with": summarize(timings[True]), "left": reflected}


async def collect(quick: bool) -> dict[str, Any]:
    samples = 40 if quick else 150
    backends: dict[str, str | None] = {"sqlite": None}
    if os.environ.get("OPENBOT_BENCH_DATABASE_URL"):
        backends["postgresql"] = os.environ["OPENBOT_BENCH_DATABASE_URL"]
    out: dict[str, Any] = {}
    for backend, url in backends.items():
        if url:
            from benchmarks.throughput import reset_postgres

            await reset_postgres(url)
        with tempfile.TemporaryDirectory() as tmp:
            print(f"reflection: {backend}", file=sys.stderr)
            quiet = await _runtime(url, Path(tmp) / "data", samples, delay=30.0, poll=2.0)
            busy = await _runtime(url, Path(tmp) / "data", samples, delay=0.0, poll=0.02)
        out[backend] = {
            "no_reflection": quiet["without"],
            "pending_row": quiet["with"],
            "pending_row_p50_over_no_reflection": round(quiet["with"]["p50"] / quiet["without"]["p50"], 3),
            "reflecting_alongside": busy["with"],
            "reflecting_alongside_p50_over_no_reflection": round(
                busy["with"]["p50"] / quiet["without"]["p50"], 3
            ),
            "reflections_left_at_end": busy["left"],
        }
    return out


def main() -> None:
    os.environ.setdefault("OPENBOT_FORBID_REAL_MODELS", "1")
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(collect(args.quick)), indent=2))


if __name__ == "__main__":
    main()
