"""Instructions a hop, counted by valgrind: a measure that a noisy machine does not move.

    python -m benchmarks.instructions [--hops 20] [--baseline DIR]

Each variant runs in a process of its own under ``valgrind --tool=callgrind`` with instrumentation
off: the runtime starts, settles its heap as ``openbot serve`` does and makes five warm-up hops;
then instrumentation is switched on (``callgrind_control``) for ``--hops`` in-process hops (post,
claim, prepare, agent, finish; no HTTP) and off again. ``short``: a fresh thread; ``long``: the
10,000-message thread of the hop benchmark. The report is the instructions per hop of each and
their ratio; repeated runs agree within ~1.5 % (short) to ~3 % (long). Background work that runs
by the wall clock (maintenance, lease renewals) is counted too, and under valgrind a hop takes
~50 times longer, so absolute counts drift with the machine's load (~8 % over an afternoon):
compare builds measured together. ``--baseline`` counts another checkout's ``src`` (a ``git
worktree``) the same way, right after. Needs valgrind (``apt-get install valgrind``); a variant
takes about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import hop, throughput

WARM_UP = 5
_TOTAL = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


async def _child(which: str, hops: int, template: Path, marks: Path) -> None:
    from sqlalchemy import select

    from openbot.config import Settings
    from openbot.runtime import heap, threads
    from openbot.runtime.commands import ThreadCreate
    from openbot.runtime.engine import Runtime
    from openbot.store.models import Thread

    data = marks / "data"
    if which == "long":
        shutil.copytree(template, data)
    async with Runtime(Settings(data_dir=data)) as rt:
        heap.settle()
        async with rt.db.transaction() as s:
            thread_id = (await threads.create_thread(s, ThreadCreate(title="instructions"))).id
        if which == "long":
            async with rt.db.read() as s:
                found = await s.scalar(select(Thread.id).where(Thread.title.like("hop benchmark%")))
            thread_id = str(found)

        async def hops_in(count: int) -> None:
            for _ in range(count):
                async with rt.db.transaction() as s:
                    await throughput.post_mention(rt, s, thread_id, hop.BOT)
                await rt.system.run_until_idle(timeout=600)

        await hops_in(WARM_UP)
        (marks / "ready").touch()
        # Another process (the parent) switches instrumentation on, then says go with a file.
        while not (marks / "go").exists():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await hops_in(hops)
        (marks / "done").touch()
        while (marks / "go").exists():  # noqa: ASYNC110 (instrumentation off, the counts dumped)
            await asyncio.sleep(0.05)


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"the counted process ended early ({process.returncode})")
        time.sleep(0.2)


def _control(*args: object) -> None:
    subprocess.run(["callgrind_control", *map(str, args)], check=True, capture_output=True)


def count(which: str, hops: int, template: Path, src: Path | None = None) -> int:
    """Instructions per hop of one variant, in a process of its own under callgrind."""
    with tempfile.TemporaryDirectory(prefix="openbot-instr-") as tmp:
        marks = Path(tmp)
        env = {**os.environ, "OPENBOT_FORBID_REAL_MODELS": "1"}
        if src is not None:  # another checkout's openbot (this benchmarks package: run from the repo root)
            env["PYTHONPATH"] = str(src / "src")
        out = marks / "callgrind.out"
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
            sys.executable, "-m", "benchmarks.instructions", "--child", which,
            "--hops", str(hops), "--template", str(template), "--marks", str(marks),
        ]  # fmt: skip
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for(marks / "ready", process)
            _control("-i", "on", process.pid)
            (marks / "go").touch()
            _wait_for(marks / "done", process)
            _control("-i", "off", process.pid)
            _control("-d", process.pid)
            (marks / "go").unlink()
            process.wait(timeout=600)
        finally:
            if process.poll() is None:
                process.kill()
        totals = [int(m) for f in marks.glob("callgrind.out*") for m in _TOTAL.findall(f.read_text())]
        return max(totals) // hops


def _seed(template: Path, src: Path | None) -> None:
    """The long thread's data, written by the build that will read it."""
    env = {**os.environ, "OPENBOT_FORBID_REAL_MODELS": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src / "src")
    command = [sys.executable, "-m", "benchmarks.instructions", "--seed", str(template)]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)


def run(hops: int, baseline: Path | None) -> dict[str, Any]:
    if shutil.which("valgrind") is None:
        return {"skipped": "valgrind is not installed (apt-get install valgrind)"}
    with tempfile.TemporaryDirectory(prefix="openbot-instr-long-") as tmp:
        report: dict[str, Any] = {"hops": hops, "unit": "instructions per in-process hop"}
        builds = {"this": None, **({"baseline": baseline} if baseline else {})}
        for name, src in builds.items():
            template = Path(tmp) / name / "data"  # each build's own schema (its migrations)
            _seed(template, src)
            short, long = count("short", hops, template, src), count("long", hops, template, src)
            report[name] = {"short": short, "long": long, "long_over_short": round(long / short, 3)}
        if baseline:
            report["this_over_baseline"] = {
                k: round(report["this"][k] / report["baseline"][k], 3) for k in ("short", "long")
            }
        return report


def main() -> None:
    doc = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=doc)
    parser.add_argument("--hops", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout (a git worktree) to count too")
    parser.add_argument("--child", choices=["short", "long"], help=argparse.SUPPRESS)
    parser.add_argument("--template", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--marks", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed:
        asyncio.run(hop.seed_long_thread(args.seed))
        return
    if args.child:
        asyncio.run(_child(args.child, args.hops, args.template, args.marks))
        return
    json.dump(run(args.hops, args.baseline), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
