"""Fate isolation (invariant 14): a run that hangs, blocks or floods fails or is bounded alone;
other bots and the API carry on."""

from __future__ import annotations

import asyncio
import threading

import httpx
from langchain_core.tools import tool

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.commands import BotUpdate
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim
from openbot.runtime.team import update_bot
from openbot.runtime.tools.registry import StaticSource, ToolEntry


async def _bot(team: Team, handle: str, rules: list[dict[str, object]], **model_settings: object) -> None:
    async with team.rt.db.transaction() as s:
        settings = {"script": rules, **model_settings}
        tools = sorted({c["name"] for r in rules for c in r.get("tool_calls", [])})  # type: ignore[attr-defined]
        await update_bot(s, handle, BotUpdate(model="scripted", model_settings=settings, tools=tools))


def _grant(team: Team, *tools: object) -> None:
    team.rt.runner.tools.add_source("test", StaticSource([ToolEntry(t, "plugin") for t in tools]))  # type: ignore[arg-type]


class _Ended(list[str]):
    """Run ids in the order their runs ended (a run's transcript is forgotten last)."""

    def __init__(self, team: Team) -> None:
        super().__init__()
        self.one = asyncio.Event()
        team.rt.runner.on_forget.append(self.record)

    async def record(self, run_id: str) -> None:
        self.append(run_id)
        self.one.set()


async def test_a_hung_model_fails_alone_while_another_bot_answers_and_the_api_stays_up(
    team: Team, clock: FakeClock, client: httpx.AsyncClient
) -> None:
    await _bot(team, "engineer", [], delay_ms=600_000, run_timeout_seconds=30)  # never answers in time
    await _bot(team, "qa", [{"match": "ping", "reply": "pong"}])
    started = asyncio.Event()

    async def hung_starts(claim: Claim, _prepared: Prepared) -> None:
        if claim.bot_handle == "engineer":
            started.set()

    team.on_prepared(hung_starts)
    ended = _Ended(team)
    hung, other = await team.thread("hung"), await team.thread("other")
    await team.post(hung, "@engineer think forever")
    async with asyncio.timeout(10):
        await started.wait()
    assert (await client.get("/api/v1/health")).json() == {"ok": True}
    await team.post(other, "@qa ping")
    async with asyncio.timeout(10):
        await ended.one.wait()  # qa's run ends while engineer's model call still hangs
    [qa_run] = await team.runs(other)
    assert ended == [qa_run.id] and qa_run.status == "completed"
    assert (await team.messages(other))[-1]["content"] == "pong"
    [hung_run] = await team.runs(hung)
    assert hung_run.status == "running"
    assert (await client.get("/api/v1/health")).status_code == 200
    clock.advance(31)  # past engineer's own limit (the install's is longer)
    await team.rt.system.maintain()
    await team.idle()
    [hung_run] = await team.runs(hung)
    assert hung_run.status == "failed" and hung_run.error == {
        "code": "run_time_limit",
        "message": "the run was still running after its time limit of 30 s and was stopped",
    }
    notice = (await team.messages(hung))[-1]
    assert notice["sender"] is None and notice["metadata"]["kind"] == "run_failed"


async def test_a_blocking_sync_tool_does_not_delay_another_bot_s_run(team: Team) -> None:
    entered, release, left = threading.Event(), threading.Event(), threading.Event()

    @tool
    def block() -> str:
        """Block this thread until released, as a slow library call would."""
        entered.set()
        released = release.wait(30)  # the blocking call under test (it runs in a worker thread)
        left.set()
        return "unblocked" if released else "never released"

    _grant(team, block)
    await _bot(
        team,
        "engineer",
        [{"match": "go", "reply": "{tool_result}", "tool_calls": [{"name": "block", "args": {}}]}],
    )
    await _bot(team, "qa", [{"match": "ping", "reply": "pong"}])
    ended = _Ended(team)
    slow, fast = await team.thread("slow"), await team.thread("fast")
    await team.post(slow, "@engineer go")
    assert await asyncio.to_thread(entered.wait, 10)
    await team.post(fast, "@qa ping")
    finished_before_the_tool: list[bool] = []

    async def note(_run_id: str) -> None:
        finished_before_the_tool.append(not left.is_set())
        release.set()  # the first run to end is qa's: only then does the tool return

    team.rt.runner.on_forget.insert(0, note)
    await team.idle()
    [qa_run], [engineer_run] = await team.runs(fast), await team.runs(slow)
    assert ended == [qa_run.id, engineer_run.id]
    assert finished_before_the_tool == [True, False]  # qa was done while the tool still blocked
    assert (await team.messages(slow))[-1]["content"] == "unblocked"


async def test_a_tool_past_its_time_limit_is_an_error_the_model_reads(team: Team) -> None:
    team.rt.settings.tool_timeout_seconds = 0.2
    never = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait for something that never happens."""
        await never.wait()
        return "impossible"

    _grant(team, wait_forever)
    call = {"name": "wait_forever", "args": {}}
    await _bot(team, "engineer", [{"match": "go", "reply": "tool said: {tool_result}", "tool_calls": [call]}])
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    [run] = await team.runs(thread)
    assert run.status == "completed"
    reply = (await team.messages(thread))[-1]["content"]
    assert reply == "tool said: error: the tool wait_forever did not finish within 0.2 s and was stopped"


async def test_a_flood_of_tool_output_keeps_its_head_and_tail_around_a_marker(team: Team) -> None:
    team.rt.settings.tool_output_max_chars = 300

    @tool
    def flood() -> str:
        """Print far too much."""
        return "HEAD" + "x" * 10_000 + "TAIL"

    _grant(team, flood)
    call = {"name": "flood", "args": {}}
    await _bot(team, "engineer", [{"match": "go", "reply": "{tool_result}", "tool_calls": [call]}])
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    reply = (await team.messages(thread))[-1]["content"]
    assert reply.startswith("HEADxxx") and reply.endswith("xxxTAIL")
    assert "[9708 characters cut: the tool's output was over 300]" in reply
    assert len(reply) < 400


async def test_a_tool_that_raises_fails_its_run_alone_with_a_notice(team: Team) -> None:
    @tool
    def explode() -> str:
        """Raise."""
        raise RuntimeError("kaboom")

    _grant(team, explode)
    await _bot(
        team,
        "engineer",
        [{"match": "go", "reply": "{tool_result}", "tool_calls": [{"name": "explode", "args": {}}]}],
    )
    await _bot(team, "qa", [{"match": "ping", "reply": "pong"}])
    broken, fine = await team.thread("broken"), await team.thread("fine")
    await team.post(broken, "@engineer go")
    await team.post(fine, "@qa ping")
    await team.idle()
    [run] = await team.runs(broken)
    notice = (await team.messages(broken))[-1]
    assert run.status == "failed" and notice["metadata"]["kind"] == "run_failed"
    assert (await team.messages(fine))[-1]["content"] == "pong"
