"""Screenshots of each main view of the web UI, for docs/screenshots/ and the README.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Starts ``openbot serve`` on a private data dir, plays a small scripted scenario (a release thread
with a streamed reply, a review, an open question, an approval, a cancelled run, an unread bot
update) and captures the views at 1280×800 (light and dark) and at phone width.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
]


def _live_server() -> Any:
    spec = importlib.util.spec_from_file_location("openbot_live_server", ROOT / "tests" / "live_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settle(client: Any, thread_id: str, statuses: set[str], wait_until: Any) -> None:
    wait_until(
        lambda: all(r["status"] in statuses for r in client.runs(thread_id=thread_id)),
        timeout=30,
        message=f"runs in {thread_id} to reach {statuses}",
    )


def scenario(client: Any, wait_until: Any) -> dict[str, str]:
    client.update_bot(
        "engineer",
        model_settings={
            "script": [
                {
                    "match": "(?i)release notes",
                    "reply": (
                        "Draft for 1.4 is ready:\n```markdown\n## 1.4\n- Threads: search by title\n"
                        "- Bots: live state and queue depth\n- Faster first render for long threads\n```\n"
                        "@reviewer can you check the wording?"
                    ),
                },
                {
                    "match": "(?i)ship",
                    "reply": "Shipping: {tool_result}",
                    "tool_calls": [
                        {"name": "ask_human", "args": {"question": "Tag v1.4.0 and publish to PyPI now?"}}
                    ],
                },
                {
                    "match": "(?i)plan",
                    "reply": "Plan recorded: {tool_result}",
                    "tool_calls": [
                        {
                            "name": "todo_write",
                            "args": {
                                "todos": [
                                    {"content": "Migrate CI to the new runners", "status": "pending"},
                                    {"content": "Cut the 1.5 branch", "status": "pending"},
                                ]
                            },
                        }
                    ],
                },
            ],
            "delay_ms": 150,
        },
        approval_tools=["todo_write"],
    )
    client.update_bot(
        "reviewer",
        model_settings={
            "script": [
                {
                    "match": "(?i)wording",
                    "reply": "Wording is clear. One nit: say “search threads by title”. Otherwise LGTM.",
                },
            ]
        },
    )
    client.update_bot(
        "qa", model_settings={"script": [{"match": ".", "reply": "Suite finished."}], "delay_ms": 4000}
    )

    release = client.create_thread(
        title="Release 1.4", participants=["you", "engineer", "reviewer"], default_bot="engineer"
    )["id"]
    client.post_message(release, "@engineer please draft the release notes for 1.4")
    wait_until(
        lambda: any(m["sender"] and m["sender"]["handle"] == "reviewer" for m in client.messages(release)),
        timeout=30,
        message="review",
    )
    settle(client, release, {"completed"}, wait_until)
    client.post_message(release, "Thanks both. @engineer ship it when you are ready.")
    settle(client, release, {"completed", "waiting_human"}, wait_until)

    planning = client.create_thread(
        title="Sprint 12 planning", participants=["you", "engineer"], default_bot="engineer"
    )["id"]
    client.post_message(planning, "@engineer plan the infrastructure work for this sprint")
    settle(client, planning, {"waiting_human"}, wait_until)

    flaky = client.create_thread(
        title="Flaky integration tests", participants=["you", "qa"], default_bot="qa"
    )["id"]
    client.post_message(flaky, "@qa run the full integration suite, please")
    run = wait_until(
        lambda: next((r for r in client.runs(thread_id=flaky) if r["status"] == "running"), None),
        timeout=30,
        message="qa running",
    )
    client.cancel(run["id"])
    settle(client, flaky, {"cancelled"}, wait_until)
    client.post_message(
        flaky, "Re-ran locally: 3 flaky tests, all in test_webhooks.py (timeouts).", sender="qa"
    )

    client.create_thread(title="Onboarding checklist", participants=["you", "chief_of_staff"])
    return {"release": release, "planning": planning, "flaky": flaky}


def capture(url: str, threads: dict[str, str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots: list[Path] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        def shoot(
            name: str,
            route: str,
            *,
            theme: str = "light",
            width: int = 1280,
            height: int = 800,
            ready: str = "#conn[data-state='live']",
            before: Any = None,
        ) -> None:
            context = browser.new_context(
                viewport={"width": width, "height": height}, color_scheme=theme, device_scale_factor=1
            )
            page = context.new_page()
            page.add_init_script(f"localStorage.setItem('openbot.theme', '{theme}')")
            page.goto(f"{url}/#{route}")
            page.wait_for_selector(ready)
            page.wait_for_load_state("networkidle")
            if before:
                before(page)
            page.wait_for_timeout(300)  # let transitions and relative times settle for the picture
            path = out / f"{name}.png"
            page.screenshot(path=str(path))
            shots.append(path)
            context.close()

        shoot("inbox", "/inbox", ready=".thread-row")
        shoot("inbox-needs-action", "/inbox/action", ready=".action-item")
        shoot("threads", "/threads", ready=".thread-row")
        shoot("new-thread", "/threads?new=1", ready="dialog.new-thread[open]")
        shoot("thread", f"/t/{threads['release']}", ready=".interrupt-question")
        shoot("thread-dark", f"/t/{threads['release']}", theme="dark", ready=".interrupt-question")
        shoot("approval", f"/t/{threads['planning']}", ready=".interrupt-approval")
        shoot("bots", "/bots/engineer", ready=".bot-editor")
        shoot("activity", "/activity", ready=".activity-table tbody tr[data-id]")
        shoot("thread-phone", f"/t/{threads['release']}", width=390, height=844, ready=".interrupt-question")
        shoot("inbox-phone-dark", "/inbox", theme="dark", width=390, height=844, ready=".thread-row")
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from openbot.client import Client

    live = _live_server()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, live.LiveServer(Path(tmp)) as server:
        with Client(server.url) as client:
            threads = scenario(client, live.wait_until)
        shots = capture(server.url, threads, args.out)
    for path in shots:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    print(f"{len(shots)} screenshots in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
