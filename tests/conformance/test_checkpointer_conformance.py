"""Conformance: OpenBot's ``DeferredSaver`` against LangGraph's checkpointer conformance suite.

``DeferredSaver`` wraps the durable checkpointer (``AsyncSqliteSaver``, or ``AsyncPostgresSaver`` when
``OPENBOT_TEST_DATABASE_URL`` is set) and keeps a run's checkpoints in memory until ``persist()``.
LangGraph sees it as an ordinary ``BaseCheckpointSaver``, so it must pass the contract every
checkpointer passes. This file runs:

- every check of the ``langgraph-checkpoint-conformance`` package (a dev dependency) for each
  capability that ``DeferredSaver`` implements, one pytest item per check, in two modes: as for a
  resumed run (reads fall back to the durable saver) and as for a fresh run (``start(fresh=True)``
  before its first checkpoint, reads never reach the durable saver); and the suite's own
  ``validate()`` runner once per backend;
- ``get_next_version``, which the suite does not cover: it must be the durable saver's, so versions
  written before a pause and after a resume compare correctly;
- what is particular to ``DeferredSaver``, with real graphs: a fresh run never touches the durable
  saver; ``persist()`` writes the latest checkpoint and its pending writes, and a new
  ``DeferredSaver`` over the same durable saver (a restarted server) resumes from them;
  ``adelete_thread`` removes both copies;
- the suite's put_writes and list checks once more for a resumed run, whose checkpoint is durable
  while what it adds is in memory (both found bugs in ``DeferredSaver``, fixed since).
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    Capability,
    DetectedCapabilities,
)
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.conformance.spec.test_copy_thread import ALL_COPY_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_delete_for_runs import ALL_DELETE_FOR_RUNS_TESTS
from langgraph.checkpoint.conformance.spec.test_delete_thread import ALL_DELETE_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_get_tuple import ALL_GET_TUPLE_TESTS
from langgraph.checkpoint.conformance.spec.test_list import ALL_LIST_TESTS
from langgraph.checkpoint.conformance.spec.test_prune import ALL_PRUNE_TESTS
from langgraph.checkpoint.conformance.spec.test_put import ALL_PUT_TESTS
from langgraph.checkpoint.conformance.spec.test_put_writes import ALL_PUT_WRITES_TESTS
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import INTERRUPT
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from sqlalchemy import make_url

from conftest import PG_URL
from openbot.runtime.runner.checkpoints import DeferredSaver

BACKENDS = ["sqlite", *(["postgresql"] if PG_URL else [])]

Check = Callable[[BaseCheckpointSaver[Any]], Awaitable[None]]

SPEC: dict[Capability, list[Check]] = {
    Capability.PUT: ALL_PUT_TESTS,
    Capability.PUT_WRITES: ALL_PUT_WRITES_TESTS,
    Capability.GET_TUPLE: ALL_GET_TUPLE_TESTS,
    Capability.LIST: ALL_LIST_TESTS,
    Capability.DELETE_THREAD: ALL_DELETE_THREAD_TESTS,
    Capability.DELETE_FOR_RUNS: ALL_DELETE_FOR_RUNS_TESTS,
    Capability.COPY_THREAD: ALL_COPY_THREAD_TESTS,
    Capability.PRUNE: ALL_PRUNE_TESTS,
}
# Extended capabilities (copy_thread, prune, ...) are checked only once DeferredSaver implements them,
# exactly as the suite's own runner decides.
IMPLEMENTED = DetectedCapabilities.from_instance(DeferredSaver(InMemorySaver())).detected
CHECKS = [
    pytest.param(check, id=f"{cap.value}::{check.__name__}")
    for cap in Capability
    if cap in IMPLEMENTED
    for check in SPEC[cap]
]


# -- the durable savers, built as open_checkpointer builds them ------------------------------------


@asynccontextmanager
async def open_durable(backend: str, tmp_path: Path) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """A durable saver on one database; open it again over the same database to 'restart'."""
    if backend == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await aiosqlite.connect(str(tmp_path / "run.langgraph.db"))
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            sqlite_saver = AsyncSqliteSaver(conn)
            await sqlite_saver.setup()
            yield sqlite_saver
        finally:
            await conn.close()
        return

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    assert PG_URL is not None
    url = make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=1, max_size=4, open=False, kwargs={"autocommit": True, "row_factory": dict_row}
    )
    await pool.open()
    try:
        pg_saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await pg_saver.setup()
        yield pg_saver
    finally:
        await pool.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def durable(backend: str, tmp_path: Path) -> AsyncIterator[BaseCheckpointSaver[str]]:
    async with open_durable(backend, tmp_path) as saver:
        yield saver


class FreshRunSaver(DeferredSaver):
    """The runner's view of a fresh run: ``start(thread_id, fresh=True)`` before its first checkpoint."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Any,
        metadata: CheckpointMetadata,
        new_versions: Any,
    ) -> RunnableConfig:
        self.start(config["configurable"]["thread_id"], fresh=True)
        return await super().aput(config, checkpoint, metadata, new_versions)


# -- (a) LangGraph's conformance suite --------------------------------------------------------------


def test_the_suite_checks_every_base_capability() -> None:
    assert BASE_CAPABILITIES <= IMPLEMENTED
    assert len(CHECKS) >= 50


@pytest.mark.parametrize("check", CHECKS)
async def test_suite_as_for_a_resumed_run(durable: BaseCheckpointSaver[str], check: Check) -> None:
    await check(DeferredSaver(durable))


@pytest.mark.parametrize("check", CHECKS)
async def test_suite_as_for_a_fresh_run(durable: BaseCheckpointSaver[str], check: Check) -> None:
    await check(FreshRunSaver(durable))


async def test_the_suites_own_runner_passes(durable: BaseCheckpointSaver[str]) -> None:
    failures: list[str] = []

    def record(capability: str, name: str, passed: bool, error: str | None) -> None:
        if not passed:
            failures.append(f"{capability}::{name}\n{error}")

    @checkpointer_test(name="DeferredSaver")
    async def deferred() -> AsyncIterator[BaseCheckpointSaver[str]]:
        yield DeferredSaver(durable)

    report = await validate(deferred, progress=ProgressCallbacks(on_test_result=record))

    assert failures == []
    assert report.passed_all_base() and report.passed_all(), report.to_dict()
    assert {name for name, result in report.results.items() if result.detected} == {
        cap.value for cap in IMPLEMENTED
    }


# -- (b) get_next_version ---------------------------------------------------------------------------


async def test_get_next_version_is_the_durable_savers(durable: BaseCheckpointSaver[str]) -> None:
    saver = DeferredSaver(durable)
    current: str | None = None
    seen: list[str] = []
    for _ in range(12):  # past 9 and 10, where a careless string version would sort wrongly
        nxt = saver.get_next_version(current, None)
        assert isinstance(nxt, str)
        theirs = durable.get_next_version(current, None)  # both end in a random fraction
        assert nxt.split(".")[0] == theirs.split(".")[0] and len(nxt.split(".")) == len(theirs.split("."))
        seen.append(nxt)
        current = nxt
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    # Versions are ordered by their integer prefix across a pause and a resume as well.
    assert [int(v.split(".")[0]) for v in seen] == list(range(1, 13))


# -- (c) what DeferredSaver adds: in memory until persist(), durable after -------------------------


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def two_question_graph(checkpointer: BaseCheckpointSaver[Any], ran: list[str]) -> Any:
    """``work`` and ``ask`` run in one step; ``ask`` pauses, then ``ask_again`` pauses once more.

    While ``ask`` waits, ``work``'s result is a pending write of the paused checkpoint: if it were
    lost on the way to the durable saver, resuming would run ``work`` a second time.
    """

    def work(state: State) -> dict[str, list[str]]:
        ran.append("work")
        return {"log": ["worked"]}

    def ask(state: State) -> dict[str, list[str]]:
        return {"log": [f"first: {interrupt('first?')}"]}

    def ask_again(state: State) -> dict[str, list[str]]:
        return {"log": [f"second: {interrupt('second?')}"]}

    builder = StateGraph(State)
    builder.add_node("work", work)
    builder.add_node("ask", ask)
    builder.add_node("ask_again", ask_again)
    builder.add_edge(START, "work")
    builder.add_edge(START, "ask")
    builder.add_edge(["work", "ask"], "ask_again")
    builder.add_edge("ask_again", END)
    return builder.compile(checkpointer=checkpointer)


def one_step_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(State)
    builder.add_node("reply", lambda state: {"log": ["replied"]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def cfg(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


async def durable_history(saver: BaseCheckpointSaver[str], thread_id: str) -> list[CheckpointTuple]:
    return [t async for t in saver.alist(cfg(thread_id))]


async def test_a_fresh_run_never_reaches_the_durable_saver(durable: BaseCheckpointSaver[str]) -> None:
    thread_id = f"run_{uuid.uuid4().hex}"
    saver = DeferredSaver(durable)
    saver.start(thread_id, fresh=True)
    graph = one_step_graph(saver)

    assert await graph.ainvoke({"log": ["hi"]}, cfg(thread_id)) == {"log": ["hi", "replied"]}

    assert len([t async for t in saver.alist(cfg(thread_id))]) >= 2
    assert await durable_history(durable, thread_id) == []
    assert await durable.aget_tuple(cfg(thread_id)) is None

    await saver.discard(thread_id)  # what the runner does when a run ends
    assert await saver.aget_tuple(cfg(thread_id)) is None
    assert await durable_history(durable, thread_id) == []


async def test_a_fresh_run_does_not_read_the_durable_saver(durable: BaseCheckpointSaver[str]) -> None:
    thread_id = f"run_{uuid.uuid4().hex}"
    stale = generate_checkpoint()
    await durable.aput(generate_config(thread_id), stale, {"source": "loop", "step": 0}, {})
    try:
        saver = DeferredSaver(durable)
        assert (await saver.aget_tuple(cfg(thread_id))) is not None  # not fresh: falls back
        saver.start(thread_id, fresh=True)
        assert await saver.aget_tuple(cfg(thread_id)) is None
        assert await saver.aget_tuple(generate_config(thread_id, checkpoint_id=stale["id"])) is None
    finally:
        await durable.adelete_thread(thread_id)


async def test_persist_without_checkpoints_writes_nothing(durable: BaseCheckpointSaver[str]) -> None:
    thread_id = f"run_{uuid.uuid4().hex}"
    saver = DeferredSaver(durable)
    saver.start(thread_id, fresh=True)
    await saver.persist(thread_id)
    assert await durable_history(durable, thread_id) == []


async def test_a_checkpoint_read_back_from_memory_is_a_copy(durable: BaseCheckpointSaver[str]) -> None:
    """The memory layer keeps the objects it is given; a graph resumed from a checkpoint it holds
    changes what it read (version maps, values), and must not change the stored checkpoint."""
    thread_id = f"run_{uuid.uuid4().hex}"
    saver = DeferredSaver(durable)
    saver.start(thread_id, fresh=True)
    graph = two_question_graph(saver, [])
    await graph.ainvoke({"log": []}, cfg(thread_id), durability="exit")
    paused = await saver.aget_tuple(cfg(thread_id))
    assert paused is not None
    at = {"configurable": {**paused.config["configurable"]}}
    versions, values = paused.checkpoint["channel_versions"], paused.checkpoint["channel_values"]
    try:
        # Resumed from memory (no persist), through both questions, saved with every step.
        await graph.ainvoke(Command(resume="yes"), cfg(thread_id), durability="sync")
        done = await graph.ainvoke(Command(resume="again"), cfg(thread_id), durability="sync")
        assert done["log"][-1] == "second: again"
        again = await saver.aget_tuple(at)
        assert again is not None and again.checkpoint["id"] == paused.checkpoint["id"]
        assert again.checkpoint["channel_versions"] == versions
        assert again.checkpoint["channel_values"] == values
    finally:
        await saver.adelete_thread(thread_id)


async def test_persist_writes_the_latest_checkpoint_and_its_pending_writes(
    durable: BaseCheckpointSaver[str],
) -> None:
    thread_id = f"run_{uuid.uuid4().hex}"
    ran: list[str] = []
    saver = DeferredSaver(durable)
    saver.start(thread_id, fresh=True)
    graph = two_question_graph(saver, ran)
    await graph.ainvoke({"log": []}, cfg(thread_id))
    in_memory = await saver.aget_tuple(cfg(thread_id))
    assert in_memory is not None and in_memory.pending_writes
    assert await durable_history(durable, thread_id) == []

    await saver.persist(thread_id)

    try:
        assert await saver.memory.aget_tuple(cfg(thread_id)) is None  # the memory copy is gone
        [saved] = await durable_history(durable, thread_id)  # only the latest checkpoint
        assert saved.checkpoint["id"] == in_memory.checkpoint["id"]
        assert saved.checkpoint["channel_values"] == in_memory.checkpoint["channel_values"]
        assert saved.checkpoint["channel_versions"] == in_memory.checkpoint["channel_versions"]
        assert saved.checkpoint["versions_seen"] == in_memory.checkpoint["versions_seen"]
        assert saved.metadata["step"] == in_memory.metadata["step"]
        assert sorted(saved.pending_writes or [], key=repr) == sorted(in_memory.pending_writes, key=repr)
        assert {channel for _, channel, _ in saved.pending_writes or []} >= {"log", INTERRUPT}
        # The same saver now reads the paused run back from the durable copy.
        assert (await saver.aget_tuple(cfg(thread_id))) == saved
        assert [i.value for i in (await graph.aget_state(cfg(thread_id))).interrupts] == ["first?"]
    finally:
        await saver.adelete_thread(thread_id)


async def test_a_new_deferred_saver_resumes_from_the_persisted_checkpoint(
    backend: str, tmp_path: Path
) -> None:
    """Pause, persist, 'restart', resume — twice — with the runner's calls to the saver."""
    thread_id = f"run_{uuid.uuid4().hex}"
    ran: list[str] = []

    async with open_durable(backend, tmp_path) as durable:
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=True)
        await two_question_graph(saver, ran).ainvoke({"log": []}, cfg(thread_id))
        await saver.persist(thread_id)

    async with open_durable(backend, tmp_path) as durable:  # a restarted server
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=False)
        graph = two_question_graph(saver, ran)
        [pending] = (await graph.aget_state(cfg(thread_id))).interrupts
        assert pending.value == "first?"
        await graph.ainvoke(Command(resume={pending.id: "yes"}), cfg(thread_id))
        [pending] = (await graph.aget_state(cfg(thread_id))).interrupts
        assert pending.value == "second?"
        assert len(await durable_history(durable, thread_id)) == 1  # the resumed run is in memory
        await saver.persist(thread_id)
        assert len(await durable_history(durable, thread_id)) == 2

    async with open_durable(backend, tmp_path) as durable:  # and once more
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=False)
        graph = two_question_graph(saver, ran)
        [pending] = (await graph.aget_state(cfg(thread_id))).interrupts
        assert pending.value == "second?"
        result = await graph.ainvoke(Command(resume={pending.id: "sure"}), cfg(thread_id))
        try:
            assert sorted(result["log"][:2]) == ["first: yes", "worked"]
            assert result["log"][2:] == ["second: sure"]
            assert ran == ["work"]  # its pending write survived the restarts: it ran once
            assert (await graph.aget_state(cfg(thread_id))).next == ()
        finally:
            await saver.adelete_thread(thread_id)
        assert await durable_history(durable, thread_id) == []


async def test_adelete_thread_removes_the_memory_and_the_durable_copies(
    durable: BaseCheckpointSaver[str],
) -> None:
    drop, keep = f"run_{uuid.uuid4().hex}", f"run_{uuid.uuid4().hex}"
    saver = DeferredSaver(durable)
    for thread_id in (drop, keep):
        saver.start(thread_id, fresh=True)
        await two_question_graph(saver, []).ainvoke({"log": []}, cfg(thread_id))
        await saver.persist(thread_id)
        saver.start(thread_id, fresh=False)
        await two_question_graph(saver, []).ainvoke(Command(resume="yes"), cfg(thread_id))
    # Each thread now has a durable checkpoint (first pause) and newer ones in memory.
    for thread_id in (drop, keep):
        assert await saver.memory.aget_tuple(cfg(thread_id)) is not None
        assert len(await durable_history(durable, thread_id)) == 1

    await saver.adelete_thread(drop)

    try:
        assert await saver.aget_tuple(cfg(drop)) is None
        assert [t async for t in saver.alist(cfg(drop))] == []
        assert await saver.memory.aget_tuple(cfg(drop)) is None
        assert await durable_history(durable, drop) == []
        assert await saver.memory.aget_tuple(cfg(keep)) is not None
        assert len(await durable_history(durable, keep)) == 1
    finally:
        await saver.adelete_thread(keep)
    assert await durable_history(durable, keep) == []


# -- (d) a resumed run: its checkpoint is durable, what it adds is in memory ------------------------
#
# Writes that a resumed run puts against the durable checkpoint it resumed from (the resume value, a
# new interrupt) once stayed in memory, where neither aget_tuple nor persist() looked, so they were
# lost; and alist read the durable saver only when memory had nothing to list.


async def resumed_from_a_pause(
    durable: BaseCheckpointSaver[str], thread_id: str
) -> tuple[DeferredSaver, CheckpointTuple]:
    """A DeferredSaver as after a restart, over a durable saver holding a persisted pause."""
    first = DeferredSaver(durable)
    first.start(thread_id, fresh=True)
    await first.aput(
        generate_config(thread_id), generate_checkpoint(), {"source": "loop", "step": 0, "parents": {}}, {}
    )
    await first.persist(thread_id)
    saved = await durable.aget_tuple(cfg(thread_id))
    assert saved is not None
    saver = DeferredSaver(durable)
    saver.start(thread_id, fresh=False)
    return saver, saved


async def test_writes_against_the_durable_checkpoint_are_read_back_and_persisted(
    durable: BaseCheckpointSaver[str],
) -> None:
    """The suite's put_writes_basic, for the checkpoint a resumed run starts from."""
    thread_id = f"run_{uuid.uuid4().hex}"
    saver, saved = await resumed_from_a_pause(durable, thread_id)
    try:
        await saver.aput_writes(saved.config, [("ch", "value")], "task-1")

        tup = await saver.aget_tuple(saved.config)
        assert tup is not None
        assert ("task-1", "ch", "value") in (tup.pending_writes or [])

        await saver.persist(thread_id)
        tup = await durable.aget_tuple(saved.config)
        assert tup is not None
        assert ("task-1", "ch", "value") in (tup.pending_writes or [])
    finally:
        await saver.adelete_thread(thread_id)


def ask_twice_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    def ask(state: State) -> dict[str, list[str]]:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"log": [f"first: {first}", f"second: {second}"]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=checkpointer)


async def test_a_node_that_asks_twice_keeps_its_first_answer_across_a_restart(
    backend: str, tmp_path: Path
) -> None:
    """A resumed node that pauses again writes no new checkpoint: only writes against the old one.

    If those writes were lost at the restart, the run would ask its first question again and take
    the answer to the second question for the first.
    """
    thread_id = f"run_{uuid.uuid4().hex}"
    async with open_durable(backend, tmp_path) as durable:
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=True)
        await ask_twice_graph(saver).ainvoke({"log": []}, cfg(thread_id))
        await saver.persist(thread_id)

    async with open_durable(backend, tmp_path) as durable:
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=False)
        graph = ask_twice_graph(saver)
        [pending] = (await graph.aget_state(cfg(thread_id))).interrupts
        result = await graph.ainvoke(Command(resume={pending.id: "yes"}), cfg(thread_id))
        assert [i.value for i in result["__interrupt__"]] == ["second?"]
        await saver.persist(thread_id)

    async with open_durable(backend, tmp_path) as durable:
        saver = DeferredSaver(durable)
        saver.start(thread_id, fresh=False)
        graph = ask_twice_graph(saver)
        try:
            [pending] = (await graph.aget_state(cfg(thread_id))).interrupts
            assert pending.value == "second?"
            result = await graph.ainvoke(Command(resume={pending.id: "sure"}), cfg(thread_id))
            assert result == {"log": ["first: yes", "second: sure"]}
        finally:
            await saver.adelete_thread(thread_id)


async def test_list_of_a_resumed_run_includes_its_persisted_checkpoint(
    durable: BaseCheckpointSaver[str],
) -> None:
    """The suite's list_all and list_metadata_filter_step, for a run resumed after a pause."""
    thread_id = f"run_{uuid.uuid4().hex}"
    saver, saved = await resumed_from_a_pause(durable, thread_id)
    try:
        resumed = await saver.aput(
            saved.config, generate_checkpoint(), {"source": "loop", "step": 1, "parents": {}}, {}
        )
        by_step = [t.checkpoint["id"] async for t in saver.alist(cfg(thread_id), filter={"step": 0})]
        assert by_step == [saved.checkpoint["id"]]  # found by a filter ...
        listed = [t.checkpoint["id"] async for t in saver.alist(cfg(thread_id))]
        assert listed == [resumed["configurable"]["checkpoint_id"], saved.checkpoint["id"]]  # ... so listed
    finally:
        await saver.adelete_thread(thread_id)
