"""The other ways into the registry and its edges: a server slow to start or misconfigured never
holds up the server, an approval-gated MCP tool resumes after a restart, mcp-server-time from
PyPI, a tools directory, and the config file's parsing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from conftest import Boot, Team
from mcp_tools.conftest import fixture_server, until, write_config
from openbot.config import Settings
from openbot.runtime.commands import ResumeBody
from openbot.runtime.tools.mcp_config import expand, load_config, parse_server

ADD = {
    "match": "add",
    "reply": "sum {tool_result}",
    "tool_calls": [{"name": "fx__add", "args": {"a": 2, "b": 3}}],
}


async def test_a_server_slow_to_start_or_broken_never_holds_up_the_runtime(
    boot: Boot, settings: Settings, tmp_path: Path
) -> None:
    settings.mcp_config = write_config(
        tmp_path / "servers.json",
        {
            "sleepy": {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]},
            "missing": {"command": str(tmp_path / "no-such-binary")},
            "bad__name": {"command": "true"},
        },
    )
    async with boot() as rt:
        team = Team(rt)
        rt.mcp.ready_timeout = 0.2  # a run using sleepy waits this long for it, then goes without
        servers = {s["name"]: s for s in rt.mcp.views()}
        assert servers["sleepy"]["status"] == "starting"
        assert servers["bad__name"]["status"] == "failed" and "no __" in servers["bad__name"]["error"]
        await team.script("engineer", [{"match": ".", "reply": "still here"}], tools=["mcp:sleepy"])
        thread = await team.thread()
        await team.post(thread, "@engineer hello")
        await team.idle()
        assert (await team.messages(thread))[-1]["content"] == "still here"
        missing = rt.mcp.servers["missing"]
        await until(lambda: missing.restarts >= 1)  # failed, retried, failing again: never fatal
        assert missing.status in ("failed", "starting") and missing.error
    assert rt.mcp.servers["sleepy"].status == "stopped"


async def test_an_approval_gated_mcp_call_resumes_after_a_restart(
    boot: Boot, settings: Settings, tmp_path: Path
) -> None:
    settings.mcp_config = write_config(tmp_path / "mcp.json", {"fx": fixture_server()})
    async with boot() as rt:
        team = Team(rt)
        await until(lambda: rt.mcp.servers["fx"].status == "running")
        await team.script("engineer", [ADD], tools=["mcp:fx"], approval_tools=["mcp:fx"])
        thread = await team.thread()
        await team.post(thread, "@engineer add")
        await team.idle()
        [run] = await team.runs(thread)
        assert run.status == "waiting_human"
        assert run.interrupt is not None and run.interrupt["actions"][0]["name"] == "fx__add"
    async with boot() as rt:
        team = Team(rt)
        assert rt.mcp.servers["fx"].status == "starting"  # resumed before the server is up:
        await rt.runs.resume(run.id, ResumeBody(decisions=[{"type": "approve"}]))  # the run waits
        await team.idle()
        assert [r.status for r in await team.runs(thread)] == ["completed"]
        assert (await team.messages(thread))[-1]["content"] == "sum 5"


@pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None, reason="mcp-server-time not installed"
)
async def test_mcp_server_time_from_pypi_works_the_same_way(
    boot: Boot, settings: Settings, tmp_path: Path
) -> None:
    server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    settings.mcp_config = write_config(tmp_path / "mcp.json", {"time": server})
    call = {
        "name": "time__convert_time",
        "args": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    }
    async with boot() as rt:
        team = Team(rt)
        await until(lambda: rt.mcp.servers["time"].status == "running")
        assert {"time__get_current_time", "time__convert_time"} <= set(rt.mcp.servers["time"].proxies)
        await team.script(
            "engineer",
            [{"match": "tokyo", "reply": "{tool_result}", "tool_calls": [call]}],
            tools=["mcp:time"],
        )
        thread = await team.thread()
        await team.post(thread, "@engineer noon UTC in tokyo?")
        await team.idle()
        assert "21:00" in (await team.messages(thread))[-1]["content"]


async def test_a_tools_directory_adds_its_modules_tools(
    boot: Boot, settings: Settings, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "loud.py").write_text(
        "from langchain_core.tools import tool\n\n@tool\ndef shout(text: str) -> str:\n"
        '    """Say it loudly."""\n    return text.upper()\n'
    )
    (tools / "broken.py").write_text("raise RuntimeError('not today')\n")
    settings.tools_dir = tools
    call = {"name": "shout", "args": {"text": "hi"}}
    async with boot() as rt:
        [entry] = [e for e in rt.tools.entries() if e.name == "shout"]
        assert (entry.source, entry.server) == ("plugin", "loud")
        team = Team(rt)
        await team.script(
            "engineer", [{"match": ".", "reply": "{tool_result}", "tool_calls": [call]}], tools=["shout"]
        )
        thread = await team.thread()
        await team.post(thread, "@engineer go")
        await team.idle()
        assert (await team.messages(thread))[-1]["content"] == "HI"


def test_the_config_file_expands_variables_and_refuses_what_it_cannot_start(tmp_path: Path) -> None:
    env = {"TOKEN": "s3cret"}
    assert expand({"a": ["${TOKEN}", "${NOPE:-dflt}", "${NOPE}"]}, env) == {"a": ["s3cret", "dflt", ""]}
    http = parse_server(
        "remote", {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer x"}}
    )
    assert http.transport == "streamable_http" and http.error is None
    assert http.connection == {
        "transport": "streamable_http",
        "url": "https://mcp.example/mcp",
        "headers": {"Authorization": "Bearer x"},
    }
    assert parse_server("x", {"url": "ftp://nope"}).error == "url must be an http(s) URL"
    assert parse_server("x", {"command": "a", "args": "b"}).error == "args must be a list of strings"
    assert parse_server("x", {}).error == "a server needs a command (stdio) or a url (HTTP)"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read MCP config"):
        load_config(bad)
    bad.write_text('{"servers": {}}')
    with pytest.raises(ValueError, match="expected"):
        load_config(bad)
