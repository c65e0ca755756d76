"""The LangGraph checkpointer for run transcripts, keyed by run id (deleted when a run ends)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import make_url

from openbot.store.db import Database


async def open_checkpointer(db: Database, stack: AsyncExitStack) -> BaseCheckpointSaver[str]:
    """SQLite: a ``langgraph.db`` file beside the main database. PostgreSQL: the same database."""
    if db.is_sqlite:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        database = make_url(db.url).database or ":memory:"
        path = ":memory:" if database == ":memory:" else str(Path(database).with_suffix(".langgraph.db"))
        conn = await aiosqlite.connect(path)
        stack.push_async_callback(conn.close)
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        sqlite_saver = AsyncSqliteSaver(conn)
        await sqlite_saver.setup()
        return sqlite_saver

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    url = make_url(db.url).set(drivername="postgresql").render_as_string(hide_password=False)
    pool = AsyncConnectionPool(
        url, min_size=1, max_size=10, open=False, kwargs={"autocommit": True, "row_factory": dict_row}
    )
    await pool.open()
    stack.push_async_callback(pool.close)
    pg_saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    await pg_saver.setup()
    return pg_saver
