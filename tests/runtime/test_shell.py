"""run_shell: bounded child processes (invariant 14), gated by approval in the seeded bots."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from conftest import Team
from openbot.api.app import create_app
from openbot.runtime.commands import BotUpdate, ResumeBody
from openbot.runtime.tools import files, sandbox
from openbot.runtime.tools.sandbox import Limits, run, scrubbed_environment
from openbot.store.models import RunEvent


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory the shell's user may write (as the tools hand a new working directory to it)."""
    path = tmp_path / "work"
    path.mkdir()
    account = Limits().account()
    if account is not None:
        os.chown(path, *account)
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def test_a_timeout_kills_the_whole_process_group(workdir: Path) -> None:
    started = time.monotonic()
    result = await run(
        ["/bin/sh", "-c", "sleep 60 & echo $! > bg.pid; sleep 60"], workdir, Limits(timeout_seconds=1)
    )
    assert time.monotonic() - started < 10
    assert result.killed == "timeout after 1 s" and result.exit_code is None
    assert "killed: timeout" in result.report()
    assert not _alive(int((workdir / "bg.pid").read_text()))  # the background job died with it


async def test_a_background_job_does_not_outlive_the_command(workdir: Path) -> None:
    result = await run(["/bin/sh", "-c", "sleep 60 & echo $! > bg.pid; echo done"], workdir, Limits())
    assert (result.exit_code, result.killed, result.output.strip()) == (0, None, "done")
    assert result.seconds < 10
    assert not _alive(int((workdir / "bg.pid").read_text()))


async def test_a_memory_hog_is_stopped_by_the_address_space_limit(workdir: Path) -> None:
    hog = "import sys; b = bytearray(2 * 1024 ** 3); print('allocated', len(b))"
    result = await run(["python3", "-c", hog], workdir, Limits(memory_mb=256))
    assert result.exit_code not in (0, None) or result.killed
    assert "MemoryError" in result.output and "allocated" not in result.output


async def test_a_fork_bomb_is_stopped_by_the_process_limit(workdir: Path) -> None:
    limits = Limits(timeout_seconds=3, processes=32)
    if limits.account() is None and os.geteuid() == 0:
        pytest.skip("root without a shell user ignores RLIMIT_NPROC")
    result = await run(["/bin/sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"], workdir, limits)
    assert "fork" in result.output.lower()  # "Cannot fork": the limit held
    assert result.killed == "timeout after 3 s"
    after = await run(["/bin/sh", "-c", "echo still fine"], workdir, Limits())
    assert after.output.strip() == "still fine"  # the user's process budget came back


async def test_output_is_capped_keeping_head_and_tail(workdir: Path) -> None:
    result = await run(["/bin/sh", "-c", "echo FIRST; seq 1 200000; echo LAST"], workdir, Limits())
    assert result.exit_code == 0 and result.omitted > 1_000_000
    assert result.output.startswith("FIRST") and result.output.rstrip().endswith("LAST")
    assert len(result.output.encode()) < sandbox.OUTPUT_BYTES + 200
    assert "bytes omitted" in result.output


async def test_the_environment_has_no_secret(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leaks = {
        "OPENBOT_API_TOKEN": "t1",
        "OPENBOT_DATABASE_URL": "postgresql://u:pw@h/db",
        "ANTHROPIC_API_KEY": "k1",
        "GITHUB_TOKEN": "t2",
        "MY_SECRET": "s1",
        "DB_PASSWORD": "p1",
        "AWS_SECRET_ACCESS_KEY": "s2",
    }
    for name, value in leaks.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    result = await run(["/bin/sh", "-c", "env"], workdir, Limits())
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert not names & set(leaks) and not any(v in result.output for v in leaks.values())
    assert {"PATH", "HARMLESS_SETTING"} <= names
    assert set(scrubbed_environment(leaks)) == set()


async def test_exit_codes_and_signals_are_reported(workdir: Path) -> None:
    failed = await run(["/bin/sh", "-c", "echo oops >&2; exit 3"], workdir, Limits())
    assert (failed.exit_code, failed.killed, failed.output.strip()) == (3, None, "oops")
    killed = await run(["/bin/sh", "-c", "kill -9 $$"], workdir, Limits())
    assert (killed.exit_code, killed.killed) == (None, "signal SIGKILL")


async def _shell_events(team: Team) -> list[dict[str, Any]]:
    async with team.rt.db.read() as s:
        rows = await s.scalars(select(RunEvent).where(RunEvent.type == "tool_result").order_by(RunEvent.seq))
        return [e.payload for e in rows if e.payload.get("name") == "run_shell"]


async def test_seeded_bots_run_shell_only_after_approval(team: Team) -> None:
    call = [{"name": "run_shell", "args": {"command": "echo hello > out.txt; cat out.txt"}}]
    await team.script("engineer", [{"match": ".", "reply": "shell said: {tool_result}", "tool_calls": call}])
    thread = await team.thread(working_directory="proj")
    await team.post(thread, "@engineer run it")
    await team.idle()
    run_row = (await team.runs(thread))[0]
    assert run_row.status == "waiting_human"
    assert run_row.interrupt is not None and run_row.interrupt["actions"][0]["name"] == "run_shell"
    root = team.rt.settings.resolved_workspaces_root()
    assert not (root / "proj" / "out.txt").exists()  # nothing ran before the approval
    await team.rt.runs.resume(run_row.id, ResumeBody(decisions=[{"type": "approve"}]))
    await team.idle()
    assert (await team.runs(thread))[0].status == "completed"
    assert (root / "proj" / "out.txt").read_text() == "hello\n"
    reply = (await team.messages(thread))[-1]["content"]
    assert "exit code: 0" in reply and "hello" in reply


async def test_the_server_answers_while_a_long_command_runs(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = asyncio.Event()
    finished: list[bool] = []
    workdir: list[Path] = []
    real_run = sandbox.run

    async def observed(argv: list[str], cwd: Path, limits: Limits) -> sandbox.Result:
        workdir.append(cwd)
        started.set()
        result = await real_run(argv, cwd, limits)
        finished.append(True)
        return result

    monkeypatch.setattr(files.sandbox, "run", observed)
    await team.rt.team.update_bot("qa", BotUpdate(approval_tools=[]))
    # The command runs until the test lets it go: no wall-clock bound decides the outcome.
    command = "while [ ! -e go ]; do sleep 0.02; done; echo slept"
    call = [{"name": "run_shell", "args": {"command": command}}]
    await team.script("qa", [{"match": ".", "reply": "{tool_result}", "tool_calls": call}])
    thread = await team.thread()
    await team.post(thread, "@qa go")
    draining = asyncio.create_task(team.idle())
    async with asyncio.timeout(10):
        await started.wait()
    transport = httpx.ASGITransport(app=create_app(runtime=team.rt))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for _ in range(5):
            assert (await client.get("/api/v1/health")).json() == {"ok": True}
    assert not finished and not draining.done()  # health answered while the command was running
    (workdir[0] / "go").touch()
    await draining
    assert "slept" in (await team.messages(thread))[-1]["content"]
    assert [e["status"] for e in await _shell_events(team)] == ["success"]


async def test_a_shell_that_cannot_start_is_a_tool_error(team: Team) -> None:
    """A missing shell user (as root) or working directory is said to the model; the run goes on."""
    team.rt.runner.shell_limits = Limits(user="no-such-user-here")
    await team.rt.team.update_bot("qa", BotUpdate(approval_tools=[]))
    call = [{"name": "run_shell", "args": {"command": "echo hi"}}]
    await team.script("qa", [{"match": ".", "reply": "said: {tool_result}", "tool_calls": call}])
    thread = await team.thread()
    await team.post(thread, "@qa go")
    await team.idle()
    assert (await team.runs(thread))[0].status == "completed"
    reply = (await team.messages(thread))[-1]["content"]
    if os.geteuid() == 0:
        assert "no-such-user-here" in reply and [e["status"] for e in await _shell_events(team)] == ["error"]
    else:
        assert "exit code: 0" in reply  # not root: the shell user is not used
