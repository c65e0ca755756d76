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
    config.write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}), encoding="utf-8")
    live = LiveServer(data, env={"OPENBOT_MCP_CONFIG": str(config)})
    live.start()
    yield live
    live.stop()


def _mcp_up(api: Client) -> bool:
    return [s["status"] for s in api.mcp_servers()] == ["running"]


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
