"""``Idempotency-Key`` on posts: a retried request returns the first result instead of posting twice.

The key's row is written in the post's own transaction, so a crash leaves both the message and the
key or neither, and a client whose connection dropped after the commit gets the first answer back
when it retries. A key names one post by one sender in one thread: the same key with another body
(content, ``from``, ``to``) is an :class:`IdempotencyConflict`.

Two first attempts at once are settled by the table's primary key, never by reading first: the
loser's insert fails, its whole transaction (the message with it) rolls back, and it replays the
winner's row. Keys are kept at least :data:`KEEP`; the maintenance pass prunes older ones.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import IdempotencyConflict, InvalidIdempotencyKey
from openbot.runtime.commands import MessageCreate
from openbot.runtime.views import PostView
from openbot.store.db import now
from openbot.store.models import IdempotencyKey

KEEP = timedelta(hours=24)
KEY_MAX = 255


def check_key(key: str) -> str:
    """The key when it is 1-255 printable ASCII characters (space to ``~``); else a 422."""
    if not 1 <= len(key) <= KEY_MAX or not all(" " <= c <= "~" for c in key):
        raise InvalidIdempotencyKey(
            f"Idempotency-Key must be 1-{KEY_MAX} printable ASCII characters",
            {"header": "Idempotency-Key", "length": len(key)},
        )
    return key


def fingerprint(command: MessageCreate) -> str:
    """What makes two requests the same post (the thread and sender are part of the key)."""
    body = {"content": command.content, "from": command.from_, "to": command.to}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


async def find(session: AsyncSession, thread_id: str, sender_id: str, key: str) -> IdempotencyKey | None:
    return await session.get(IdempotencyKey, (thread_id, sender_id, key))


def replay(row: IdempotencyKey, request_hash: str) -> PostView:
    """The first post's answer, when this request is the same post."""
    if row.request_hash != request_hash:
        raise IdempotencyConflict(
            "this Idempotency-Key was already used for a different message",
            {"header": "Idempotency-Key", "message_id": row.message_id},
        )
    view: PostView = row.response  # type: ignore[assignment]
    return view


def remember(
    session: AsyncSession, thread_id: str, sender_id: str, key: str, request_hash: str, view: PostView
) -> None:
    """Record the post under its key, in the post's transaction."""
    session.add(
        IdempotencyKey(
            thread_id=thread_id,
            sender_id=sender_id,
            key=key,
            request_hash=request_hash,
            message_id=view["message"]["id"],
            response=dict(view),
            created_at=now(session),
        )
    )


async def prune(session: AsyncSession, cutoff: datetime) -> int:
    """Drop keys written before ``cutoff``; return how many."""
    result = await session.execute(delete(IdempotencyKey).where(IdempotencyKey.created_at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
