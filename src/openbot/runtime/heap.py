"""The garbage collector in a long-running process (``openbot serve``, ``openbot worker``).

CPython's cyclic collector runs on the event loop's thread. With LangChain, LangGraph, SQLAlchemy
and FastAPI loaded, a process holds ~200,000 objects that live as long as it does (modules,
classes, schemas, compiled statements and agents), and every full collection walked all of them:
~130 ms with the loop stopped, about once every 200 runs, on top of ~120 young collections
(measured on 200 runs; ``docs/benchmarks.md``, "A seventh session").

Once the runtime is up, :func:`settle` freezes what exists then (``gc.freeze``: those objects are
never scanned again, and they would never be freed anyway), and raises the youngest generation's
threshold so the young collections that remain each do a useful amount of work. Garbage that is
not part of a reference cycle is freed at once either way; cycles wait a little longer.
"""

from __future__ import annotations

import gc

# (youngest, middle, oldest): allocations net of frees before the youngest generation is
# collected, then collections of each generation before the next one is. CPython's default is
# (700, 10, 10). Measured on CPython 3.11; 3.14's incremental collector reads the last two
# differently, so measure again there.
THRESHOLDS = (5_000, 20, 10)


def settle() -> None:
    """Freeze the objects alive now and collect less often; call once the process is up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
