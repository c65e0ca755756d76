"""The bots editor picks tools from the registry: an MCP server's tools (from a config file) are
listed under their server, the whole server is selected as mcp:<server>, one tool put behind
approval; the saved bot has exactly those names."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from live_server import LiveServer, wait_until
from mcp_tools.conftest import fixture_server
from openbot.client import Client

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("openbot-tools")
    config = data / "mcp.json"
    broken = {"args": ["no command given"]}  # a configuration error: failed, never started
    config.write_text(
        json.dumps({"mcpServers": {"fx": fixture_server(), "broken": broken}}), encoding="utf-8"
    )
    live = LiveServer(data, env={"OPENBOT_MCP_CONFIG": str(config)})
    live.start()
    yield live
    live.stop()


def _mcp_up(api: Client) -> bool:
    return {s["name"]: s["status"] for s in api.mcp_servers()} == {"fx": "running", "broken": "failed"}


def test_the_editor_shows_each_mcp_servers_state_and_why_one_failed(
    page: Page, server: LiveServer, api: Client
) -> None:
    wait_until(lambda: _mcp_up(api), message="the MCP servers settled")
    (broken,) = [s for s in api.mcp_servers() if s["name"] == "broken"]
    api.update_bot("reviewer", tools=["mcp:broken"])
    page.goto(f"{server.url}/#/bots/reviewer")
    picker = page.get_by_role("group", name="Tools")
    servers = picker.get_by_role("table", name="MCP servers")
    expect(servers.locator("tr[data-server=fx]")).to_contain_text("running")
    row = servers.locator("tr[data-server=broken]")
    expect(row).to_contain_text("failed")
    expect(row.locator(".mcp-error")).to_have_text(broken["error"])
    kept = picker.get_by_role("table", name="Not in the registry (kept until unticked)")
    expect(kept).to_contain_text(f"mcp:broken (the server is failed: {broken['error']})")


def test_the_editor_selects_a_whole_mcp_server_and_puts_one_tool_behind_approval(
    page: Page, server: LiveServer, api: Client
) -> None:
    wait_until(lambda: _mcp_up(api), message="the MCP server is up")
    api.update_bot("qa", tools=["save_draft", "gone_tool"], approval_tools=[])
    page.goto(f"{server.url}/#/bots/qa")
    picker = page.get_by_role("group", name="Tools")
    fx = picker.get_by_role("table", name="MCP: fx")
    expect(fx.get_by_role("row")).to_have_count(6)  # head, mcp:fx, four tools
    expect(picker.get_by_label("Use save_draft")).to_be_checked()
    expect(picker.get_by_label("Use ask_human")).to_be_disabled()  # every bot has it
    expect(picker.get_by_label("Use gone_tool")).to_be_checked()  # kept: not in the registry

    fx.get_by_label("Use every tool of mcp:fx").check()
    expect(fx.get_by_label("Use fx__add")).to_be_checked()
    expect(fx.get_by_label("Use fx__add")).to_be_disabled()
    fx.get_by_label("fx__add needs approval").check()
    picker.get_by_label("Use save_draft").uncheck()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved @qa")).to_be_visible()
    bot = api.bot("qa")
    assert sorted(bot["tools"]) == ["gone_tool", "mcp:fx"]
    assert bot["approval_tools"] == ["fx__add"]

    page.reload()
    fx = page.get_by_role("group", name="Tools").get_by_role("table", name="MCP: fx")
    expect(fx.get_by_label("Use every tool of mcp:fx")).to_be_checked()
    expect(fx.get_by_label("fx__add needs approval")).to_be_checked()
