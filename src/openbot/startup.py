"""What ``openbot serve``, ``worker`` and ``db upgrade`` check before starting, so that a foreseeable
mistake ends in one line and a non-zero exit instead of a traceback from deep inside start-up.

- **One process per SQLite database.** ``serve`` holds an exclusive ``flock`` on a lock file beside
  the database (``.openbot/openbot.db.lock`` by default) for its whole life. The kernel releases it
  when the process ends, however it ends, so a killed server never blocks a restart; a second
  server on the same data dir refuses to start and leaves the first untouched. PostgreSQL is
  multi-process by design and takes no lock.
- **The address.** ``serve`` binds its port before it touches the database, so a port in use is
  one line before any migration runs, and the socket it bound is the one it serves on.
- **Settings that parse but cannot work**: workers that could never run on SQLite, an
  embedder that cannot be built.
- **The database URL** parses and names a backend OpenBot supports; on PostgreSQL the server
  answers and the database exists (OpenBot creates tables, never databases).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import socket
from pathlib import Path

from sqlalchemy import Connection, create_engine, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError

from openbot.config import Settings
from openbot.store.db import normalise_url, sync_url

CONNECT_TIMEOUT = 5  # seconds: an unreachable host is reported, not waited on


class StartupError(Exception):
    """Why this process cannot start, in one line for the operator."""


_held: list[int] = []  # lock files held open for the life of the process


def sqlite_path(settings: Settings) -> Path | None:
    """The SQLite database file, or None on PostgreSQL (and for a URL ``check_database`` refuses)."""
    try:
        url = make_url(normalise_url(settings.resolved_database_url()))
    except ArgumentError:
        return None
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def check_settings(settings: Settings, *, workers: int = 0) -> None:
    """Settings that parse but cannot work: said before anything starts.

    - ``serve --workers N`` or ``OPENBOT_RUN_WORKERS=0`` on SQLite: nothing would ever run the bots
      (``openbot worker`` needs PostgreSQL, where processes share the database);
    - an ``OPENBOT_EMBEDDINGS`` that names no embedder OpenBot can build.
    """
    if workers:
        from openbot import fleet  # the rule `openbot worker` applies too

        try:
            fleet.require_shared_database(settings)
        except fleet.FleetError as error:
            raise StartupError(str(error)) from None
    if sqlite_path(settings) is not None:
        if not settings.run_workers:
            raise StartupError(
                "OPENBOT_RUN_WORKERS=0 on SQLite: no process would run the bots (`openbot worker` "
                "needs PostgreSQL); unset it"
            )
    if settings.embeddings:
        from openbot.runtime.memory.embeddings import make_embedder

        try:
            make_embedder(settings.embeddings)
        except ValueError as error:
            raise StartupError(str(error)) from None


def lock_database(settings: Settings) -> None:
    """Take the process-wide lock on the SQLite database (nothing on PostgreSQL)."""
    database = sqlite_path(settings)
    if database is None:
        return
    try:
        database.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StartupError(f"cannot use {database.parent} as the data dir: it is a file") from None
    except OSError as error:
        raise StartupError(f"cannot use {database.parent} as the data dir: {error.strerror}") from None
    lock = database.with_name(database.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise StartupError(
            f"another OpenBot process (pid {holder}) is already serving {database}; SQLite is "
            "one process per data dir: stop it, or use another --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held.append(fd)


def listen(host: str, port: int) -> socket.socket:
    """Bind and listen on the server's address now (uvicorn serves this socket), or say why it
    cannot. The socket is made as uvicorn makes its own: IPv6 when the host has a colon."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # listening now: a second server started at once cannot bind it too
    except socket.gaierror:
        sock.close()
        raise StartupError(f"cannot listen on {host}:{port}: {host} does not resolve") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {host} is in use (another server?): stop it, or pick another --port"
            ) from None
        raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def check_database(settings: Settings) -> None:
    """Refuse a URL OpenBot cannot use, and a PostgreSQL server or database that is not there."""
    raw = settings.resolved_database_url()
    try:
        url = make_url(normalise_url(raw))
    except ArgumentError:
        raise StartupError(
            "OPENBOT_DATABASE_URL is not a database URL (expected postgresql+psycopg://user@host/db)"
        ) from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        return
    if backend != "postgresql":
        raise StartupError(
            f"OPENBOT_DATABASE_URL names {backend!r}: OpenBot runs on SQLite (leave it unset) or "
            "PostgreSQL (postgresql+psycopg://user@host/db)"
        )
    _check_postgres(url, raw, settings)


def _check_postgres(url: URL, raw: str, settings: Settings) -> None:
    engine = create_engine(sync_url(raw), connect_args={"connect_timeout": CONNECT_TIMEOUT})
    try:
        with engine.connect() as conn:
            if settings.node_id:
                _check_node_free(conn, settings)
    except DBAPIError as error:
        raise StartupError(_postgres_problem(url, str(error.orig))) from None
    finally:
        engine.dispose()


def _check_node_free(conn: Connection, settings: Settings) -> None:
    """An ``OPENBOT_NODE_ID`` another live process holds, said now rather than from deep inside
    start-up (the runtime still takes the name for itself: ``scheduler.node.hold``)."""
    from openbot.runtime.scheduler import node

    key = {"space": node.LOCK_SPACE, "key": node.lock_key(str(settings.node_id))}
    if not conn.scalar(text("SELECT pg_try_advisory_lock(:space, :key)"), key):
        raise StartupError(str(node.in_use(settings, [str(settings.node_id)])))
    conn.execute(text("SELECT pg_advisory_unlock(:space, :key)"), key)


def _postgres_problem(url: URL, text: str) -> str:
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    name = url.database or ""
    if re.search(r'database "[^"]*" does not exist', text):
        flags = f"-h {url.host} " if url.host else ""
        flags += f"-p {url.port} " if url.port else ""
        flags += f"-U {url.username} " if url.username else ""
        return f'database "{name}" does not exist on {where} — create it first: createdb {flags}{name}'
    if "Connection refused" in text or "timeout expired" in text or "resolve host" in text:
        return f"cannot reach PostgreSQL at {where}: is it running, and is OPENBOT_DATABASE_URL right?"
    fatal = re.search(r"FATAL:\s+(.*)", text)
    detail = fatal.group(1) if fatal else text.strip().splitlines()[0]
    return f"PostgreSQL at {where} refused the connection: {detail}"
