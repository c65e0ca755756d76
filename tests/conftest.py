"""Shared fixtures: a runtime per test on SQLite, and on PostgreSQL when OPENBOT_TEST_DATABASE_URL is set.

Real model providers are forbidden for the whole test session (OPENBOT_FORBID_REAL_MODELS=1).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import event, select

os.environ["OPENBOT_FORBID_REAL_MODELS"] = "1"
for _key in ("OPENBOT_MODEL", "OPENBOT_API_TOKEN", "OPENBOT_DATABASE_URL"):
    os.environ.pop(_key, None)

from openbot.api.app import create_app  # noqa: E402
from openbot.config import Settings  # noqa: E402
from openbot.core.clock import FakeClock  # noqa: E402
from openbot.runtime import threads  # noqa: E402
from openbot.runtime.commands import BotUpdate, ThreadCreate  # noqa: E402
from openbot.runtime.engine import Runtime  # noqa: E402
from openbot.runtime.runner.prepare import Prepared  # noqa: E402
from openbot.runtime.runs.claim import Claim  # noqa: E402
from openbot.runtime.team import get_actor, update_bot  # noqa: E402
from openbot.store import driver  # noqa: E402
from openbot.store.db import Database  # noqa: E402
from openbot.store.models import Base, InboxItem, Message, Run, Thread  # noqa: E402


def _worker_database(url: str | None) -> str | None:
    """Under pytest-xdist each worker gets a database of its own (``<name>_gw0``, …), created on
    first use: tests empty their database, so two workers must never share one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not url or not worker:
        return url
    import psycopg
    from sqlalchemy import make_url

    parsed = make_url(url)
    name = f"{parsed.database}_{worker}"
    admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    return parsed.set(database=name).render_as_string(hide_password=False)


PG_URL = _worker_database(os.environ.get("OPENBOT_TEST_DATABASE_URL"))
BACKENDS = ["sqlite", *(["postgresql"] if PG_URL else [])]


@contextmanager
def watch_statements(db: Database, seen: Callable[[str, Any], None]) -> Iterator[None]:
    """Call ``seen(sql, parameters)`` for every statement the runtime sends while the block runs:
    through SQLAlchemy's engines and straight to the driver (``store.fast``)."""

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen(statement, parameters)

    engines = {db.engine.sync_engine, db.read_engine.sync_engine}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    driver.statement_listeners.append(seen)
    try:
        yield
    finally:
        driver.statement_listeners.remove(seen)
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest 9 every operation Schemathesis generates (``tests/api/test_schemathesis.py``)
    has the function's node id: it sets the operation on ``_nodeid``, which pytest 9 no longer
    reads (it builds ``nodeid`` from ``_id``). pytest-xdist's file scheduler keys tests by node id,
    so all but one of the operations were dropped without a word. Each gets the operation in its
    id, as its name has it (``test_every_operation_conforms[POST /api/v1/threads]``)."""
    for item in items:
        if "[" in item.name and "[" not in item.nodeid:
            item._id = item._id.with_params(item.name.split("[", 1)[1].removesuffix("]"))


_MIGRATED: set[str] = set()  # databases this process has brought to the migrations' heads


def _migrated(url: str) -> None:
    """Run the migrations once a process (Alembic reads every migration script, ~50 ms, even when
    there is nothing to do; no test changes the schema after them)."""
    if url not in _MIGRATED:
        from openbot.store.migrate import upgrade

        upgrade(url)
        _MIGRATED.add(url)


_SQLITE_TEMPLATE: list[Path] = []  # a migrated, empty database file, made once a process


def _fresh_sqlite(path: Path) -> None:
    """Put a migrated, empty SQLite database at ``path`` (where the runtime looks for it): a copy of
    one migrated once a process. Running the migrations takes ~0.5 s a test; the copy is the same
    file, and the runtime's own upgrade at start finds it at the heads."""
    from openbot.store.migrate import upgrade

    if not _SQLITE_TEMPLATE:
        template = Path(tempfile.mkdtemp(prefix="openbot-template-")) / "openbot.db"
        upgrade(f"sqlite:///{template}")
        assert not template.with_name("openbot.db-wal").exists(), "the template must be one file"
        _SQLITE_TEMPLATE.append(template)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_SQLITE_TEMPLATE[0], path)


async def reset_postgres(url: str) -> None:
    """Empty every table (ours and the checkpointer's) and restart every sequence, so each test
    starts from a fresh install. ``DELETE`` rather than ``TRUNCATE``: the tables of one test hold a
    few rows, and ``TRUNCATE`` gives each of ~30 tables a new file (~140 ms a test against ~8)."""
    import psycopg
    from sqlalchemy import make_url

    await asyncio.to_thread(_migrated, url)
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(conninfo) as conn:
        cursor = await conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            " AND tablename LIKE 'checkpoint%' AND tablename <> 'checkpoint_migrations'"
        )
        checkpoints = [row[0] for row in await cursor.fetchall()]
        cursor = await conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")
        sequences = [row[0] for row in await cursor.fetchall()]
        tables = [t.name for t in reversed(Base.metadata.sorted_tables)] + checkpoints  # children first
        statements = [f'DELETE FROM "{name}"' for name in tables]
        statements += [f'ALTER SEQUENCE "{name}" RESTART' for name in sequences]
        await conn.execute("; ".join(statements))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(tmp_path: Path, backend: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=PG_URL if backend == "postgresql" else None,
        poll_seconds=0.5,
        lease_seconds=30,
        drain_seconds=2,
    )


@pytest.fixture
def clock() -> FakeClock:
    """The runtime's clock: time moves only when a test advances it."""
    return FakeClock()


Boot = Callable[[], AbstractAsyncContextManager[Runtime]]


@pytest.fixture
def boot(settings: Settings, clock: FakeClock) -> Boot:
    """Start a runtime on the test's database: ``async with boot() as rt``. Boot again to restart
    it on the same data (the first boot starts from a fresh install)."""
    fresh = [True]

    @asynccontextmanager
    async def start() -> AsyncIterator[Runtime]:
        if fresh[0] and settings.database_url:
            await reset_postgres(settings.database_url)
        elif fresh[0] and not (settings.data_dir / "openbot.db").exists():
            await asyncio.to_thread(_fresh_sqlite, settings.data_dir / "openbot.db")
        fresh[0] = False
        async with Runtime(settings, clock=clock) as runtime:
            yield runtime

    return start


@pytest.fixture
async def rt(boot: Boot) -> AsyncIterator[Runtime]:
    async with boot() as runtime:
        yield runtime


class Team:
    """Test-side helpers over a runtime: threads, posts, scripts, reads, and waiting for idle."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def thread(self, title: str = "t", **body: Any) -> str:
        async with self.rt.db.transaction() as s:
            thread = await threads.create_thread(s, ThreadCreate(title=title, **body))
            return thread.id

    async def post(
        self, thread_id: str, content: str, sender: str = "you", to: list[str] | None = None
    ) -> Any:
        async with self.rt.db.transaction() as s:
            thread = await threads.get_thread(s, thread_id)
            actor = await get_actor(s, sender)
            return await self.rt.delivery.post(s, thread, content, sender=actor, to=to or [])

    def on_prepared(self, hook: Callable[[Claim, Prepared], Awaitable[None]]) -> None:
        """Call ``hook`` after each run has read its thread, before its model runs."""
        self.rt.runner.on_prepared.append(hook)

    async def slow_run_started(self, content: str, delay_ms: int, handle: str = "engineer") -> str:
        """Post ``content`` to a slow ``handle`` in a new thread; return the thread once its run
        has read the thread and its model call begins (the run is ``running``)."""
        await self.script(handle, [], delay_ms=delay_ms)
        started = asyncio.Event()

        async def model_starts(_claim: Claim, _prepared: Prepared) -> None:
            started.set()

        self.on_prepared(model_starts)
        thread = await self.thread()
        await self.post(thread, content)
        async with asyncio.timeout(10):
            await started.wait()
        return thread

    def prepared(self) -> list[Prepared]:
        """Every run prepared from now on, in order (what its model is given)."""
        seen: list[Prepared] = []

        async def record(_claim: Claim, prepared: Prepared) -> None:
            seen.append(prepared)

        self.on_prepared(record)
        return seen

    def post_when_prepared(self, thread_id: str, content: str) -> list[str]:
        """Post ``content`` once, right after the next run has read its thread and before its model
        runs: mail that lands mid-run. The returned list gets the message id once it is posted."""
        posted: list[str] = []

        async def post_once(_claim: Claim, _prepared: Prepared) -> None:
            if not posted:
                posted.append((await self.post(thread_id, content)).message.id)

        self.on_prepared(post_once)
        return posted

    async def script(self, handle: str, rules: list[dict[str, Any]], **extra: Any) -> None:
        model_settings = ("delay_ms", "max_model_calls")
        settings = {"script": rules, **{k: v for k, v in extra.items() if k in model_settings}}
        fields = {k: v for k, v in extra.items() if k not in model_settings}
        command = BotUpdate(model="scripted", model_settings=settings, **fields)
        async with self.rt.db.transaction() as s:
            await update_bot(s, handle, command)

    async def asks(
        self, handle: str, question: str = "Ship it?", *, match: str = ".", reply: str = "ok: {tool_result}"
    ) -> None:
        """Make ``handle`` ask the humans ``question`` (and pause) when a trigger matches ``match``."""
        call = {"name": "ask_human", "args": {"question": question}}
        await self.script(handle, [{"match": match, "reply": reply, "tool_calls": [call]}])

    async def idle(self) -> None:
        await self.rt.system.run_until_idle()

    async def messages(self, thread_id: str) -> list[dict[str, Any]]:
        async with self.rt.db.read() as s:
            return [dict(m) for m in await threads.list_messages(s, thread_id, after=None, limit=10_000)]

    async def runs(self, thread_id: str | None = None) -> list[Run]:
        async with self.rt.db.read() as s:
            stmt = select(Run).order_by(Run.id)
            if thread_id:
                stmt = stmt.where(Run.thread_id == thread_id)
            return list(await s.scalars(stmt))

    async def items(self, handle: str, **filters: Any) -> list[InboxItem]:
        async with self.rt.db.read() as s:
            actor = await get_actor(s, handle)
            stmt = select(InboxItem).where(InboxItem.actor_id == actor.id)
            for key, value in filters.items():
                stmt = stmt.where(getattr(InboxItem, key) == value)
            return list(await s.scalars(stmt.order_by(InboxItem.id)))

    async def thread_row(self, thread_id: str) -> Thread:
        async with self.rt.db.read() as s:
            row = await s.get(Thread, thread_id)
            assert row is not None
            return row

    async def message_count(self) -> int:
        async with self.rt.db.read() as s:
            return len(list(await s.scalars(select(Message.id))))


@pytest.fixture
def team(rt: Runtime) -> Team:
    return Team(rt)


@pytest.fixture
async def client(rt: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(runtime=rt)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@pytest.fixture
async def server(rt: Runtime) -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound and listening before the server starts: no start-up race
    sock.listen(64)
    config = uvicorn.Config(create_app(runtime=rt), log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    task = asyncio.create_task(srv.serve(sockets=[sock]))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv.should_exit = True
    await task
    sock.close()
