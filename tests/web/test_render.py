"""The first render of a 2,000-message thread stays under one second (headless Chromium)."""

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


def test_two_thousand_message_thread_renders_under_one_second(
    browser, server: LiveServer, api: Client
) -> None:  # type: ignore[no-untyped-def]
    thread_id = ui_render.seed(api, 2000)
    ui_render.measure(browser, server.url, thread_id)  # warm the server's caches once
    samples = sorted(
        (ui_render.measure(browser, server.url, thread_id) for _ in range(3)),
        key=lambda s: s["cold_painted_ms"],
    )
    result = samples[1]  # the median sample: one slow outlier on a busy 2-CPU box is not the UI
    print(f"2,000-message thread: {samples}")
    assert result["messages"] == 2000
    assert result["rendered_entries"] < 2000, "the list should be windowed"
    assert result["cold_painted_ms"] < 1000, result
    assert result["warm_painted_ms"] < 1000, result


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
