"""Conformance: the exact LangChain / LangGraph shapes OpenBot's runner consumes.

This suite exists so that a LangChain or LangGraph upgrade breaks a test, not production. It pins,
against the real libraries and the real scripted model (no mocks):

- the ``HumanInTheLoopMiddleware`` interrupt payload and the resume command for approve, edit and
  reject;
- a tool calling ``interrupt()`` for a question, and resuming it with the answer;
- how an interrupt is observed: ``astream(stream_mode=["updates", "messages"])`` chunk shapes and
  ``(await agent.aget_state(config)).interrupts``; resuming several pending interrupts by id;
- the checkpointers' per-thread delete (``adelete_thread``) on SQLite and PostgreSQL.

``docs/langchain-shapes.md`` describes the same shapes for the runner's authors. When a test here
fails after an upgrade, fix the runner and that note, then this test.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt, interrupt

from openbot.runtime.runner.scripted import ScriptedChatModel

DEPLOY_RULE = {
    "match": "ship",
    "reply": "Result: {tool_result}",
    "tool_calls": [{"name": "deploy", "args": {"target": "prod"}}],
}
QUESTION_RULE = {
    "match": "ask",
    "reply": "The human said: {tool_result}",
    "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it?"}}],
}
TRIGGER = "please ship it"


class Deployments:
    """A deploy tool that records what it actually ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        @tool
        def deploy(target: str) -> str:
            """Deploy the service to a target environment."""
            self.ran.append(target)
            return f"deployed to {target}"

        self.tool = deploy


@tool
def ask_human(question: str) -> str:
    """Ask the humans in the thread a question and wait for the answer."""
    answer = interrupt({"kind": "question", "question": question})
    return str(answer)


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def hitl_agent(deployments: Deployments, checkpointer: BaseCheckpointSaver[Any], **hitl: Any) -> Any:
    model = ScriptedChatModel(handle="ops", script=[DEPLOY_RULE], trigger_text=TRIGGER)
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"deploy": {"allowed_decisions": ["approve", "edit", "reject"]}}, **hitl
    )
    return create_agent(model, tools=[deployments.tool], middleware=[middleware], checkpointer=checkpointer)


async def collect(agent: Any, payload: Any, cfg: dict[str, Any]) -> list[tuple[str, Any]]:
    return [chunk async for chunk in agent.astream(payload, cfg, stream_mode=["updates", "messages"])]


async def start(agent: Any, thread_id: str, text: str = TRIGGER) -> list[tuple[str, Any]]:
    return await collect(agent, {"messages": [HumanMessage(text)]}, config(thread_id))


# -- (a) HumanInTheLoopMiddleware -------------------------------------------------------------


async def test_hitl_interrupt_payload_shape() -> None:
    deployments = Deployments()
    agent = hitl_agent(deployments, InMemorySaver())

    await start(agent, "t")

    state = await agent.aget_state(config("t"))
    assert len(state.interrupts) == 1
    pending = state.interrupts[0]
    assert isinstance(pending, Interrupt)
    assert isinstance(pending.id, str) and pending.id
    assert set(pending.value) == {"action_requests", "review_configs"}
    [action] = pending.value["action_requests"]
    assert {key: action[key] for key in ("name", "args")} == {"name": "deploy", "args": {"target": "prod"}}
    assert isinstance(action["description"], str)
    assert pending.value["review_configs"] == [
        {"action_name": "deploy", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    assert state.next  # paused, not finished
    assert deployments.ran == []


async def test_hitl_approve_runs_the_tool() -> None:
    deployments = Deployments()
    agent = hitl_agent(deployments, InMemorySaver())
    await start(agent, "t")

    await collect(agent, Command(resume={"decisions": [{"type": "approve"}]}), config("t"))

    state = await agent.aget_state(config("t"))
    assert deployments.ran == ["prod"]
    assert state.interrupts == ()
    assert state.next == ()
    assert state.values["messages"][-1].content == "Result: deployed to prod"


async def test_hitl_edit_runs_the_tool_with_the_edited_args() -> None:
    deployments = Deployments()
    agent = hitl_agent(deployments, InMemorySaver())
    await start(agent, "t")
    edit = {"type": "edit", "edited_action": {"name": "deploy", "args": {"target": "staging"}}}

    await collect(agent, Command(resume={"decisions": [edit]}), config("t"))

    messages = (await agent.aget_state(config("t"))).values["messages"]
    assert deployments.ran == ["staging"]
    # The transcript keeps the model's own call; the reviewer's call is what ran.
    ai_call = next(m for m in messages if isinstance(m, AIMessage) and m.tool_calls)
    assert ai_call.tool_calls[0]["args"] == {"target": "prod"}
    # By default the tool result is prefixed with a notice naming the call that actually ran.
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert result.content.startswith("Note: a human reviewer replaced this tool call")
    assert 'Executed instead: deploy with arguments {"target": "staging"}' in result.content
    assert result.content.endswith("deployed to staging")


async def test_hitl_edit_without_notice_gives_the_plain_tool_result() -> None:
    deployments = Deployments()
    agent = hitl_agent(deployments, InMemorySaver(), edit_notice=None)
    await start(agent, "t")
    edit = {"type": "edit", "edited_action": {"name": "deploy", "args": {"target": "staging"}}}

    await collect(agent, Command(resume={"decisions": [edit]}), config("t"))

    messages = (await agent.aget_state(config("t"))).values["messages"]
    assert next(m for m in messages if isinstance(m, ToolMessage)).content == "deployed to staging"
    assert messages[-1].content == "Result: deployed to staging"


async def test_hitl_reject_does_not_run_the_tool_and_tells_the_model_why() -> None:
    deployments = Deployments()
    agent = hitl_agent(deployments, InMemorySaver())
    await start(agent, "t")

    await collect(
        agent, Command(resume={"decisions": [{"type": "reject", "message": "not today"}]}), config("t")
    )

    messages = (await agent.aget_state(config("t"))).values["messages"]
    assert deployments.ran == []
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert result.status == "error"
    assert result.tool_call_id == "call_1"
    assert result.content == "User rejected the tool call for `deploy` with reason: not today"
    assert messages[-1].content == f"Result: {result.content}"


async def test_hitl_needs_one_decision_per_action() -> None:
    agent = hitl_agent(Deployments(), InMemorySaver())
    await start(agent, "t")

    with pytest.raises(ValueError, match="does not match"):
        await collect(agent, Command(resume={"decisions": []}), config("t"))


async def test_hitl_rejects_a_decision_type_not_allowed_for_the_tool() -> None:
    agent = hitl_agent(Deployments(), InMemorySaver())
    await start(agent, "t")

    with pytest.raises(ValueError, match="not allowed"):
        await collect(
            agent, Command(resume={"decisions": [{"type": "respond", "message": "x"}]}), config("t")
        )


# -- (b) a question through interrupt() --------------------------------------------------------


def question_agent(checkpointer: BaseCheckpointSaver[Any], *tool_calls: dict[str, Any]) -> Any:
    rule = dict(QUESTION_RULE, tool_calls=list(tool_calls)) if tool_calls else QUESTION_RULE
    model = ScriptedChatModel(handle="ops", script=[rule], trigger_text="ask them")
    return create_agent(model, tools=[ask_human], checkpointer=checkpointer)


async def test_question_interrupt_value_and_answer_as_tool_result() -> None:
    agent = question_agent(InMemorySaver())
    await start(agent, "q", "ask them")

    [pending] = (await agent.aget_state(config("q"))).interrupts
    assert pending.value == {"kind": "question", "question": "Ship it?"}

    await collect(agent, Command(resume="yes, ship it"), config("q"))

    messages = (await agent.aget_state(config("q"))).values["messages"]
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert (result.name, result.tool_call_id, result.content) == ("ask_human", "call_1", "yes, ship it")
    assert messages[-1].content == "The human said: yes, ship it"


async def test_several_pending_interrupts_are_resumed_by_id() -> None:
    agent = question_agent(
        InMemorySaver(),
        {"name": "ask_human", "args": {"question": "A?"}},
        {"name": "ask_human", "args": {"question": "B?"}},
    )
    chunks = await start(agent, "q", "ask them")

    # Each interrupted tool task reports its own "__interrupt__" update.
    reported = [
        data["__interrupt__"] for mode, data in chunks if mode == "updates" and "__interrupt__" in data
    ]
    assert sorted(i.value["question"] for group in reported for i in group) == ["A?", "B?"]
    pending = (await agent.aget_state(config("q"))).interrupts
    assert sorted(i.value["question"] for i in pending) == ["A?", "B?"]

    # A bare value is ambiguous with several pending interrupts…
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        await collect(agent, Command(resume="both"), config("q"))

    # …so each answer is keyed by its interrupt id.
    answers = {i.id: f"answer to {i.value['question']}" for i in pending}
    await collect(agent, Command(resume=answers), config("q"))

    state = await agent.aget_state(config("q"))
    results = sorted(m.content for m in state.values["messages"] if isinstance(m, ToolMessage))
    assert results == ["answer to A?", "answer to B?"]
    assert state.interrupts == ()


async def test_a_single_interrupt_can_also_be_resumed_by_id() -> None:
    """The runner always resumes by id: ``{interrupt.id: answer}`` works for one or many."""
    questions = question_agent(InMemorySaver())
    await start(questions, "q", "ask them")
    [question] = (await questions.aget_state(config("q"))).interrupts
    assert (await questions.aget_state(config("q"))).next == ("tools",)

    await collect(questions, Command(resume={question.id: "by id"}), config("q"))

    assert (await questions.aget_state(config("q"))).values["messages"][-1].content == "The human said: by id"

    deployments = Deployments()
    approvals = hitl_agent(deployments, InMemorySaver())
    await start(approvals, "t")
    [approval] = (await approvals.aget_state(config("t"))).interrupts

    await collect(approvals, Command(resume={approval.id: {"decisions": [{"type": "approve"}]}}), config("t"))

    assert deployments.ran == ["prod"]


# -- (c) how an interrupt is observed ----------------------------------------------------------


async def test_stream_chunk_shapes_up_to_an_interrupt() -> None:
    agent = hitl_agent(Deployments(), InMemorySaver())

    chunks = await start(agent, "t")

    # With a list of modes every chunk is a (mode, data) 2-tuple.
    assert all(isinstance(chunk, tuple) and len(chunk) == 2 for chunk in chunks)
    assert {mode for mode, _ in chunks} == {"updates", "messages"}

    # "messages": (message chunk, metadata dict); the model's tool calls arrive as one chunk.
    messages = [data for mode, data in chunks if mode == "messages"]
    [(call_chunk, metadata)] = messages
    assert isinstance(call_chunk, AIMessageChunk)
    assert metadata["langgraph_node"] == "model"
    assert call_chunk.tool_calls == [
        {"name": "deploy", "args": {"target": "prod"}, "id": "call_1", "type": "tool_call"}
    ]

    # "updates": {node name: state update}; the interrupt is an update under "__interrupt__"
    # holding a tuple of Interrupt objects, and it is the last chunk of the stream.
    updates = [data for mode, data in chunks if mode == "updates"]
    assert list(updates[0]) == ["model"]
    assert isinstance(updates[0]["model"]["messages"][0], AIMessage)
    mode, last = chunks[-1]
    assert mode == "updates"
    assert list(last) == ["__interrupt__"]
    assert isinstance(last["__interrupt__"], tuple)
    [reported] = last["__interrupt__"]
    assert isinstance(reported, Interrupt)

    # The same interrupt is visible afterwards in the state, with the same id.
    state = await agent.aget_state(config("t"))
    assert [i.id for i in state.interrupts] == [reported.id]
    assert state.interrupts[0].value == reported.value


async def test_stream_chunk_shapes_after_resume() -> None:
    agent = hitl_agent(Deployments(), InMemorySaver())
    await start(agent, "t")

    chunks = await collect(agent, Command(resume={"decisions": [{"type": "approve"}]}), config("t"))

    # Tool results come through "messages" whole (a ToolMessage from the "tools" node)…
    tool_messages = [
        (message, metadata)
        for mode, (message, metadata) in ((m, d) for m, d in chunks if m == "messages")
        if isinstance(message, ToolMessage)
    ]
    assert [(m.content, meta["langgraph_node"]) for m, meta in tool_messages] == [
        ("deployed to prod", "tools")
    ]
    # …and the final reply as several AIMessageChunk tokens from the "model" node.
    tokens = [
        data[0]
        for mode, data in chunks
        if mode == "messages" and isinstance(data[0], AIMessageChunk) and data[1]["langgraph_node"] == "model"
    ]
    assert len(tokens) > 1
    assert "".join(token.text for token in tokens) == "Result: deployed to prod"
    assert len({token.id for token in tokens}) == 1  # one message id for all of a reply's tokens

    updates = [data for mode, data in chunks if mode == "updates"]
    assert not any("__interrupt__" in update for update in updates)
    assert any("tools" in update for update in updates)
    final = await agent.aget_state(config("t"))
    assert final.interrupts == () and final.next == ()


async def test_ainvoke_reports_interrupts_under_the_interrupt_key() -> None:
    agent = question_agent(InMemorySaver())

    result = await agent.ainvoke({"messages": [HumanMessage("ask them")]}, config("q"))

    [pending] = result["__interrupt__"]
    assert pending.value == {"kind": "question", "question": "Ship it?"}


async def test_a_run_without_interrupt_ends_with_no_pending_interrupts() -> None:
    model = ScriptedChatModel(handle="ops", script=[], trigger_text="hi")
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver())

    chunks = await start(agent, "plain", "hi")

    assert not any(mode == "updates" and "__interrupt__" in data for mode, data in chunks)
    state = await agent.aget_state(config("plain"))
    assert state.interrupts == () and state.next == ()
    assert state.values["messages"][-1].content == "(scripted) ops received 1 message(s)."


# -- (d) checkpointers: durable pause and per-thread delete -----------------------------------


def _postgres_url() -> str | None:
    from conftest import PG_URL  # this worker's database under pytest-xdist

    return PG_URL.replace("+psycopg", "") if PG_URL else None


@pytest.fixture(params=["sqlite", "postgres"])
def open_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory opening a saver on one persistent database (call it again to 'restart')."""
    if request.param == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = str(tmp_path / "checkpoints.sqlite")

        def open_sqlite() -> Any:
            return _set_up(AsyncSqliteSaver.from_conn_string(path))

        return open_sqlite

    url = _postgres_url()
    if url is None:
        pytest.skip("set OPENBOT_TEST_DATABASE_URL to run the PostgreSQL checkpointer conformance")
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    def open_postgres() -> Any:
        return _set_up(AsyncPostgresSaver.from_conn_string(url))

    return open_postgres


@asynccontextmanager
async def _set_up(manager: Any) -> AsyncIterator[Any]:
    """Enter a saver's ``from_conn_string`` and run ``await saver.setup()``.

    PostgreSQL needs ``setup()`` before first use. SQLite sets itself up lazily in most methods,
    but not in ``adelete_thread`` ("no such table: checkpoints" on a fresh file), so the runner
    calls ``setup()`` at start for both.
    """
    async with manager as saver:
        await saver.setup()
        yield saver


async def _checkpoints(saver: BaseCheckpointSaver[Any], thread_id: str) -> int:
    return len([c async for c in saver.alist(config(thread_id))])


async def test_adelete_thread_removes_only_that_threads_checkpoints(open_saver: Any) -> None:
    keep, drop = f"run_keep_{uuid.uuid4().hex}", f"run_drop_{uuid.uuid4().hex}"
    async with open_saver() as saver:
        agent = hitl_agent(Deployments(), saver)
        await start(agent, keep)
        await start(agent, drop)
        assert await _checkpoints(saver, keep) > 0
        assert await _checkpoints(saver, drop) > 0

        await saver.adelete_thread(drop)

        assert await saver.aget_tuple(config(drop)) is None
        assert await _checkpoints(saver, drop) == 0
        assert (await agent.aget_state(config(drop))).values == {}
        assert await _checkpoints(saver, keep) > 0
        assert len((await agent.aget_state(config(keep))).interrupts) == 1
        await saver.adelete_thread(keep)


async def test_a_paused_run_resumes_after_the_saver_is_reopened(open_saver: Any) -> None:
    thread_id = f"run_{uuid.uuid4().hex}"
    async with open_saver() as saver:
        await start(hitl_agent(Deployments(), saver), thread_id)

    deployments = Deployments()
    async with open_saver() as saver:  # a fresh process would do exactly this
        agent = hitl_agent(deployments, saver)
        [pending] = (await agent.aget_state(config(thread_id))).interrupts
        assert pending.value["action_requests"][0]["name"] == "deploy"

        await collect(agent, Command(resume={"decisions": [{"type": "approve"}]}), config(thread_id))

        assert deployments.ran == ["prod"]
        assert (await agent.aget_state(config(thread_id))).values["messages"][-1].content == (
            "Result: deployed to prod"
        )
        await saver.adelete_thread(thread_id)


async def test_adelete_thread_of_an_unknown_thread_is_a_no_op(open_saver: Any) -> None:
    async with open_saver() as saver:
        await saver.adelete_thread(f"never_{uuid.uuid4().hex}")
