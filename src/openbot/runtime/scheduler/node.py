"""Node identity: the stable name a process leases its runs under (DESIGN §6).

A run's lease names the process that runs it. Because the name survives a restart, a restarted
process knows which in-flight runs were its own: the process that held them is gone, so start-up
recovery fails them with a notice and re-queues their mail at once instead of waiting for their
leases to lapse. Runs leased to other names are left to their leases.

The name is ``OPENBOT_NODE_ID`` or, by default, the host name and a digest of the data directory.
``openbot serve --workers N`` names its workers ``<node>-w1`` … ``<node>-wN``.

Two live processes must never share a name: each would take the other's running runs for orphans.
Where processes share the database (PostgreSQL) a process holds a session advisory lock on its name
for its lifetime, and the database drops the lock when the connection dies, however the process
died. A configured name that is held already is refused (:class:`NodeInUse`); a default name that is
held moves on to ``<default>-2``, ``-3``… so that two workers started on one host over one data
directory still differ. SQLite is one process per database: there is nothing to hold.
"""

from __future__ import annotations

import hashlib
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import make_url

from openbot.config import Settings
from openbot.core.errors import Conflict
from openbot.store.db import Database

LOCK_SPACE = 0x0B0D  # advisory locks with two int4 keys: (this space, hash of the name)
_DEFAULT_SLOTS = 64
_HOST_CHARS = re.compile(r"[^A-Za-z0-9._-]")
# The server notices a vanished host (no FIN ever comes) within about 25 s instead of hours.
_KEEPALIVES = "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3"


class NodeInUse(Conflict):
    """Another live process holds this node name (two processes must never share one)."""


def default_name(settings: Settings) -> str:
    """``<host>-<8 hex digits of the data directory's absolute path>``."""
    host = _HOST_CHARS.sub("-", socket.gethostname())[:40] or "host"
    digest = hashlib.sha256(str(settings.data_dir.resolve()).encode()).hexdigest()[:8]
    return f"{host}-{digest}"


def configured_name(settings: Settings) -> str:
    """The name this process asks for: ``OPENBOT_NODE_ID``, else the default."""
    return settings.node_id or default_name(settings)


def worker_name(node: str, index: int) -> str:
    """The name of the ``index``-th (from 1) worker that ``openbot serve --workers N`` starts."""
    return f"{node}-w{index}"


def candidates(settings: Settings) -> list[str]:
    """The names this process may take, in order: the configured one, or the default's slots."""
    if settings.node_id:
        return [settings.node_id]
    base = default_name(settings)
    return [base, *(f"{base}-{i}" for i in range(2, _DEFAULT_SLOTS + 1))]


def lock_key(name: str) -> int:
    """A signed 32-bit key for the name's advisory lock."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


@asynccontextmanager
async def hold(db: Database, settings: Settings) -> AsyncIterator[str]:
    """Take the first free name of :func:`candidates` and keep it until the block exits."""
    names = candidates(settings)
    if not db.dialect.shared:
        yield names[0]
        return
    import psycopg

    plain = make_url(db.url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(plain, autocommit=True) as conn:
        for name in names:
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_SPACE, lock_key(name)))
            row = await cursor.fetchone()
            if row is not None and row[0]:
                break
        else:
            raise in_use(settings, names)
        await conn.execute(_KEEPALIVES)
        # Operators find a name's holder in pg_stat_activity.
        await conn.execute("SELECT set_config('application_name', %s, false)", (f"openbot node {name}",))
        yield name


def in_use(settings: Settings, names: list[str]) -> NodeInUse:
    if settings.node_id:
        return NodeInUse(
            f"node id {settings.node_id!r} is held by another live process; "
            "every process needs its own OPENBOT_NODE_ID",
            {"node_id": settings.node_id},
        )
    return NodeInUse(
        f"all {len(names)} default node ids of this host and data directory are held; set OPENBOT_NODE_ID",
        {"node_id": names[0]},
    )
