"""A 2,000-message thread renders windowed (its timing is measured by ``benchmarks/ui_render.py``,
not asserted here: wall-clock limits in tests fail on a busy machine, not on a slow UI)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from live_server import LiveServer
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location(
    "ui_render", Path(__file__).resolve().parents[2] / "benchmarks" / "ui_render.py"
)
assert _spec and _spec.loader
ui_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ui_render)


def test_a_two_thousand_message_thread_renders_windowed(browser, server: LiveServer, api: Client) -> None:  # type: ignore[no-untyped-def]
    thread_id = ui_render.seed(api, 2000)
    result = ui_render.measure(browser, server.url, thread_id)
    assert result["messages"] == 2000
    assert 0 < result["rendered_entries"] < 2000, "the list should be windowed"


def test_scrolling_up_renders_earlier_messages(page, server: LiveServer, api: Client) -> None:  # type: ignore[no-untyped-def]
    thread = api.create_thread(title="Scrollback", participants=["you"])
    for i in range(200):
        api.post_message(thread["id"], f"scrollback message {i + 1}", sender="engineer")
    page.goto(f"{server.url}/#/t/{thread['id']}")
    page.wait_for_selector(".thread-view[data-rendered]")
    assert page.locator("article.msg").count() < 200
    assert (page.locator("article.msg").last.text_content() or "").endswith("scrollback message 200")
    for _ in range(10):
        shown = page.locator("article.msg").count()
        if shown == 200:
            break
        page.locator(".timeline").evaluate("el => el.scrollTop = 0")
        page.wait_for_function("n => document.querySelectorAll('article.msg').length > n", arg=shown)
    assert page.locator("article.msg").count() == 200
    assert (page.locator("article.msg").first.text_content() or "").endswith("scrollback message 1")
