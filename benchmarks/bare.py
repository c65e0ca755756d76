"""Scenario ``bare``: the engineer's agent invoked in-process, without OpenBot around it.

The same pieces the runner assembles (``openbot.runtime.runner.Runner.build_agent``): the scripted
model answering one ``ping``, tools with the built-ins' names and argument shapes (no-ops here:
the default reply calls none), the same middleware list, a checkpointer keyed by a fresh thread
id per invocation. Variants:

- ``build_and_ainvoke``: model + tools + middleware + ``create_agent`` + ``ainvoke`` per hop,
  what the runner paid per run until dbd68ba (it now caches the compiled agent per bot profile);
- ``prebuilt_ainvoke``: ``ainvoke`` only, on an agent built once.

Two more rows split the difference between the bare agent and the runner: ``prebuilt_astream``
streams with ``stream_mode=["updates", "messages"]`` like the runner, and
``prebuilt_astream_sqlite_saver`` also swaps the in-memory checkpointer for the SQLite one the
server opens (``langgraph.db``, WAL, ``synchronous=NORMAL``) and deletes the transcript afterwards,
which is what every run paid before dbd68ba and what a run that pauses for a human still pays.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal
from uuid import uuid4

import aiosqlite
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelCallLimitMiddleware,
    ModelRetryMiddleware,
)
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import BaseModel, Field

from benchmarks.stats import summarize
from openbot.config import Settings
from openbot.core.model_errors import classify_model_error
from openbot.core.prompt import PromptInput, RosterEntry, render_system_prompt
from openbot.runtime.runner.scripted import ScriptedChatModel
from openbot.runtime.team import SEED_TEAM
from openbot.runtime.tools.registry import BUILTIN_TOOLS

log = logging.getLogger(__name__)

HANDLE = "engineer"
WARM_UP = 10


class Todo(BaseModel):
    content: str = Field(description="what to do")
    status: Literal["pending", "in_progress", "completed"] = "pending"


# Written out: a docstring nested one level deeper would be indented differently.
_SCHEDULE_MESSAGE = """Post `content` to yourself in this thread once, later: at `at` (ISO 8601 time, read in
    `timezone` when it has no offset) or in `in_seconds` seconds. Use it for reminders and
    follow-ups; you will be woken with that message."""


def noop_tools() -> list[BaseTool]:
    """The built-in tools' names, descriptions and argument shapes, doing nothing."""

    @tool
    async def list_bots() -> str:
        """List the bots of the team with their handles and what they do."""
        return ""

    @tool
    def ask_human(question: str) -> str:
        """Ask the humans in this thread a question and wait for the answer. The run pauses."""
        return ""

    @tool
    async def read_history(offset: int = 0, limit: int = 20) -> str:
        """Read this thread's messages in chronological order, `limit` at a time from `offset` (0 = first)."""
        return ""

    @tool
    async def recall_messages(query: str, limit: int = 8) -> str:
        """Search this thread's messages for `query` (lexical match) and return the best matches."""
        return ""

    @tool
    async def todo_write(todos: list[Todo]) -> str:
        """Replace your todo list for this thread. It is shown to you at the start of every run here."""
        return ""

    @tool(description=_SCHEDULE_MESSAGE)
    async def schedule_message(
        content: str, at: str | None = None, in_seconds: float | None = None, timezone: str = "UTC"
    ) -> str:
        return ""

    tools = [list_bots, ask_human, read_history, recall_messages, todo_write, schedule_message]
    assert tuple(t.name for t in tools) == BUILTIN_TOOLS, "the built-in tools changed: update this copy"
    return tools


def system_prompt() -> str:
    """A prompt of the size the engineer gets in a two-participant thread."""
    seed = {bot["handle"]: bot for bot in SEED_TEAM}
    me = seed[HANDLE]
    return render_system_prompt(
        PromptInput(
            handle=HANDLE,
            name=me["name"],
            description=me["description"],
            instructions=me["instructions"],
            thread_title="hop benchmark",
            participants=(RosterEntry("you", "You", "", "human"), RosterEntry(HANDLE, me["name"], "")),
            default_bot="chief_of_staff",
            roster=tuple(RosterEntry(h, b["name"], b["description"]) for h, b in seed.items() if h != HANDLE),
            scoped=True,
            trigger_count=1,
            tools=BUILTIN_TOOLS,
        )
    )


def build_agent(checkpointer: BaseCheckpointSaver[str], prompt: str) -> Any:
    """What ``Runner.build_agent`` builds for a scripted bot without approval tools."""
    settings = Settings()
    model = ScriptedChatModel(handle=HANDLE, script=[], trigger_text="ping", trigger_count=1)
    middleware: list[Any] = [
        ModelCallLimitMiddleware(run_limit=settings.max_model_calls, exit_behavior="end"),
        ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=settings.context_trigger_tokens)]),
        ModelRetryMiddleware(
            max_retries=2,
            retry_on=lambda exc: classify_model_error(exc).retryable,
            on_failure="error",
            initial_delay=1.0,
            max_delay=20.0,
        ),
    ]
    return create_agent(
        model, noop_tools(), system_prompt=prompt, middleware=middleware, checkpointer=checkpointer
    )


def _inputs(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    payload = {"messages": [HumanMessage(f"[@you] @{HANDLE} ping {index} (new)")]}
    config = {"configurable": {"thread_id": f"bare-{uuid4().hex}"}, "recursion_limit": 200}
    return payload, config


def _expect_reply(result: dict[str, Any]) -> None:
    text = result["messages"][-1].text
    if "received 1 message" not in text:
        raise RuntimeError(f"unexpected bare reply: {text!r}")


async def _time(step: Callable[[int], Awaitable[None]], count: int) -> list[float]:
    samples: list[float] = []
    for index in range(WARM_UP + count):
        start = time.perf_counter()
        await step(index)
        samples.append((time.perf_counter() - start) * 1000)
    return samples[WARM_UP:]


async def run(count: int) -> dict[str, Any]:
    prompt = system_prompt()
    memory = InMemorySaver()
    prebuilt = build_agent(memory, prompt)

    async def build_and_ainvoke(index: int) -> None:
        payload, config = _inputs(index)
        _expect_reply(await build_agent(memory, prompt).ainvoke(payload, config))

    async def prebuilt_ainvoke(index: int) -> None:
        payload, config = _inputs(index)
        _expect_reply(await prebuilt.ainvoke(payload, config))

    async def prebuilt_astream(index: int, agent: Any = prebuilt, saver: Any = None) -> None:
        payload, config = _inputs(index)
        async for _mode, _chunk in agent.astream(payload, config, stream_mode=["updates", "messages"]):
            pass
        if saver is not None:
            await saver.adelete_thread(config["configurable"]["thread_id"])

    report: dict[str, Any] = {"bot": HANDLE, "warm_up_discarded": WARM_UP}
    steps: dict[str, Callable[[int], Awaitable[None]]] = {
        "build_and_ainvoke": build_and_ainvoke,
        "prebuilt_ainvoke": prebuilt_ainvoke,
        "prebuilt_astream": prebuilt_astream,
    }
    for name, step in steps.items():
        log.info("bare: %s x %d", name, count)
        report[name] = summarize(await _time(step, count))

    with tempfile.TemporaryDirectory(prefix="openbot-bench-") as tmp:
        async with aiosqlite.connect(str(Path(tmp) / "langgraph.db")) as conn:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
            durable = build_agent(saver, prompt)
            log.info("bare: prebuilt_astream_sqlite_saver x %d", count)
            samples = await _time(lambda index: prebuilt_astream(index, durable, saver), count)
            report["prebuilt_astream_sqlite_saver"] = summarize(samples)
    return report
