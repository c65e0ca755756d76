"""The garbage collector in a long-running process (``runtime.heap``)."""

from __future__ import annotations

import gc

import pytest

from openbot.api.app import create_app
from openbot.config import Settings
from openbot.runtime import heap


def test_settle_freezes_what_is_alive_and_collects_the_young_less_often() -> None:
    before = gc.get_threshold()
    try:
        heap.settle()
        assert gc.get_freeze_count() > 10_000  # the modules, classes and schemas loaded so far
        assert gc.get_threshold() == heap.THRESHOLDS
        assert heap.THRESHOLDS[0] > before[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.parametrize("settle_heap", [True, False])
async def test_the_server_settles_its_heap_once_its_runtime_is_up(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, settle_heap: bool
) -> None:
    calls: list[bool] = []
    app = create_app(settings, settle_heap=settle_heap)
    monkeypatch.setattr(heap, "settle", lambda: calls.append(hasattr(app.state, "runtime")))
    async with app.router.lifespan_context(app):
        assert calls == ([True] if settle_heap else [])
