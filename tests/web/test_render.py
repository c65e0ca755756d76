"""A 2,000-message thread renders windowed (its timing is measured by ``benchmarks/ui_render.py``,
not asserted here: wall-clock limits in tests fail on a busy machine, not on a slow UI)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from live_server import LiveServer
from openbot.client import Client
from openbot.config import Settings
from openbot.core.ids import new_id
from openbot.runtime import threads
from openbot.runtime.commands import ThreadCreate
from openbot.runtime.engine import Runtime
from openbot.runtime.team import get_actor
from openbot.store.models import Message

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location(
    "ui_render", Path(__file__).resolve().parents[2] / "benchmarks" / "ui_render.py"
)
assert _spec and _spec.loader
ui_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ui_render)


LONG = 2000


async def _seed(data_dir: Path) -> str:
    """A thread of ``LONG`` bot messages (as ``ui_render.seed`` posts them: no mentions), written
    straight into a new install's database before the server starts: posting them one by one
    takes the server ~20 s of this test run."""
    async with Runtime(Settings(data_dir=data_dir)) as rt:
        async with rt.db.transaction() as s:
            create = ThreadCreate(title="Two thousand messages", participants=["you", "engineer", "reviewer"])
            thread = await threads.create_thread(s, create)
            senders = [(await get_actor(s, handle)).id for handle in ("engineer", "reviewer")]
            start = rt.clock.now()
            s.add_all(
                Message(
                    id=new_id("msg"),
                    thread_id=thread.id,
                    sender_id=senders[i % 2],
                    content=f"#{i + 1} {ui_render.BODIES[i % len(ui_render.BODIES)]}",
                    mentions=[],
                    hop=0,
                    metadata_={},
                    created_at=start + timedelta(milliseconds=i),
                )
                for i in range(LONG)
            )
            return thread.id


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The module's server, started on data that holds the long thread (``server.long_thread``)."""
    live = LiveServer(tmp_path_factory.mktemp("openbot-web"))
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold this thread's event loop
        live.long_thread = pool.submit(asyncio.run, _seed(live.data_dir)).result()  # type: ignore[attr-defined]
    live.start()
    yield live
    live.stop()


def test_a_two_thousand_message_thread_renders_windowed(browser, server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    thread_id = server.long_thread  # type: ignore[attr-defined]
    result = ui_render.measure(browser, server.url, thread_id)
    assert result["messages"] == LONG
    assert 0 < result["rendered_entries"] < LONG, "the list should be windowed"


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
