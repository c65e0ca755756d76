"""Opaque, time-sortable identifiers.

An id is ``<prefix>_<16 hex digits of microseconds><6 hex random>``. Within one process ids are
strictly increasing, so ordering rows by id orders them by creation; across processes the order is
by clock, which is all the product relies on.
"""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last = 0


def new_id(prefix: str) -> str:
    global _last
    with _lock:
        now = max(time.time_ns() // 1000, _last + 1)
        _last = now
    return f"{prefix}_{now:016x}{os.urandom(3).hex()}"
