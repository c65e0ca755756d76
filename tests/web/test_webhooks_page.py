"""The webhook deliveries view (#/webhooks, reached from Activity): a failed delivery shows its
status, attempts and last error, and its Retry button redelivers it (headless Chromium against a
real ``openbot serve`` and a real receiver on 127.0.0.1)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from openbot.client import Client
from openbot.core import signing

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SECRET = "whsec_page"


class Receiver(ThreadingHTTPServer):
    status = 500
    received: list[tuple[dict[str, str], bytes]]


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(self.server.status)
        self.end_headers()
        self.wfile.write(b"receiver says no" if self.server.status >= 300 else b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # No retries: the first failure marks the delivery failed, and the page's Retry is the next try.
    env = {"OPENBOT_WEBHOOK_ALLOW_PRIVATE": "1", "OPENBOT_WEBHOOK_RETRIES": ""}
    live = LiveServer(tmp_path_factory.mktemp("openbot-webhooks"), env=env)
    live.start()
    yield live
    live.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    httpd = Receiver(("127.0.0.1", 0), Handler)
    httpd.received = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_failed_delivery_is_shown_and_retried_from_the_page(
    page: Page, server: LiveServer, api: Client, receiver: Receiver
) -> None:
    url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    body = {"kind": "external", "handle": "hook", "webhook_url": url, "webhook_secret": SECRET}
    api._request("POST", "/actors", json=body)
    thread = api.create_thread(title="Deploys", participants=["you", "hook"])["id"]
    posted = api.post_message(thread, "deploy finished")  # a bot answers too: two deliveries

    def deliveries() -> list[dict[str, Any]]:
        return list(api._request("GET", "/webhooks/deliveries", params={"actor": "hook"})["items"])

    wait_until(
        lambda: (ds := deliveries()) and len(ds) == 2 and all(d["status"] == "failed" for d in ds),
        message="both deliveries failed",
    )
    (mine,) = [d for d in deliveries() if d["message_id"] == posted["message"]["id"]]

    page.goto(f"{server.url}/#/activity")
    page.get_by_role("link", name="Webhook deliveries").click()
    expect(page.get_by_role("heading", name="Webhook deliveries")).to_be_visible()
    expect(page.locator("tr[data-delivery]")).to_have_count(2)
    row = page.locator(f'tr[data-delivery="{mine["id"]}"]')
    expect(row).to_have_attribute("data-status", "failed")
    expect(row).to_contain_text("@hook")
    expect(row).to_contain_text("message.created")
    expect(row).to_contain_text("HTTP 500: receiver says no")
    expect(row.locator("td.num")).to_have_text("1")

    receiver.status = 200
    row.get_by_role("button", name="Retry").click()
    expect(row).to_have_attribute("data-status", "delivered")  # live: webhook.updated
    expect(row.locator("td.num")).to_have_text("2")
    expect(row.get_by_role("button", name="Retry")).to_be_hidden()
    assert {d["id"]: d["status"] for d in deliveries()}[mine["id"]] == "delivered"
    retried = [(h, b) for h, b in receiver.received if h["x-openbot-delivery"] == mine["id"]]
    assert len(retried) == 2
    for headers, sent in receiver.received:
        assert signing.verify(SECRET, headers["x-openbot-timestamp"], sent, headers["x-openbot-signature"])

    page.select_option("#webhooks-status", "failed")
    expect(page.locator("tr[data-delivery]")).to_have_count(1)
    expect(page.locator("tr[data-delivery]")).to_have_attribute("data-status", "failed")
    assert "status=failed" in page.url
