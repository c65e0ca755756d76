"""Memory relevance by embeddings, when ``OPENBOT_EMBEDDINGS=provider:model`` is set (DESIGN §8).

The embedder is LangChain's ``init_embeddings(provider:model)``; ``hashing:<dims>`` is a built-in,
offline one (words hashed into ``dims`` buckets, then normalised: cosine similarity is word
overlap), for tests and for a server without a provider, as the scripted model is for chat.

Vectors live beside the memories (``memory_vectors``), written in the transaction that writes the
memory's content, so a memory never exists without its vector while embeddings are on; memories
written before they were turned on get theirs at start (:func:`backfill`). A bad spec stops the
server at start: relevance never silently falls back to the lexical index.

The provider is asked before that transaction begins (:func:`ahead`, then :func:`use` inside it):
a write transaction holds SQLite's one writer, or a memory's row lock on PostgreSQL, and a
provider's round trip inside it would hold every other write of the server, or that memory's
edits, for as long as the provider takes. Only content nobody knew before the transaction (a
merge that keeps an older memory's text) is embedded inside it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.memory import MAX_CONTENT
from openbot.store.db import Database, database_of
from openbot.store.models import Memory, MemoryVector

_WORD = re.compile(r"[a-z0-9]+")
BATCH = 64  # memories embedded per provider call by the backfill
MIN_SCORE = 0.05  # a memory this far from the query matches nothing: it is not injected


class Embedder(Protocol):
    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...
    async def aembed_query(self, text: str) -> list[float]: ...


class Embeddings:
    """The active embedder and the spec that names it (vectors of another spec are stale)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.embedder = make_embedder(spec)


class HashingEmbeddings:
    """Words hashed into ``dims`` buckets (signed), normalised to unit length."""

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dims
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        return _unit(vector)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        return self._vector(text)


def make_embedder(spec: str) -> Embedder:
    """The embedder ``spec`` names; a ValueError says why when it names none."""
    provider, _, model = spec.partition(":")
    if not provider or not model:
        raise ValueError(f"OPENBOT_EMBEDDINGS={spec!r}: expected provider:model (or hashing:<dims>)")
    if provider == "hashing":
        if not model.isdigit() or not 8 <= int(model) <= 4096:
            raise ValueError(f"OPENBOT_EMBEDDINGS={spec!r}: hashing takes a dimension from 8 to 4096")
        return HashingEmbeddings(int(model))
    from langchain.embeddings import init_embeddings

    try:
        embedder: Any = init_embeddings(spec)
    except Exception as error:  # an unknown provider, a missing package or key: say so at start
        raise ValueError(f"OPENBOT_EMBEDDINGS={spec!r} cannot be used: {error}") from error
    return embedder  # type: ignore[no-any-return]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


_AHEAD = "openbot_vectors"  # session.info: Vectors embedded before the transaction began


@dataclass(frozen=True)
class Vectors:
    """Unit vectors embedded ahead of a transaction: memory contents (as stored: stripped) and
    search queries."""

    documents: dict[str, list[float]] = field(default_factory=dict)
    queries: dict[str, list[float]] = field(default_factory=dict)


async def ahead(db: Database, contents: Iterable[str | None] = (), queries: Iterable[str] = ()) -> Vectors:
    """The vectors a transaction on ``db`` is about to need, embedded now, outside it (nothing
    when embeddings are off). Content the write will refuse (empty, too long) is not sent."""
    embeddings: Embeddings | None = getattr(db, "embeddings", None)
    if embeddings is None:
        return Vectors()
    texts = list(dict.fromkeys(t.strip() for t in contents if t and 0 < len(t.strip()) <= MAX_CONTENT))
    asked = list(dict.fromkeys(q for q in queries if q.strip()))
    documents = await embeddings.embedder.aembed_documents(texts) if texts else []
    found = [await embeddings.embedder.aembed_query(q) for q in asked]
    return Vectors(
        {t: _unit(v) for t, v in zip(texts, documents, strict=True)},
        {q: _unit(list(v)) for q, v in zip(asked, found, strict=True)},
    )


def use(session: AsyncSession, vectors: Vectors) -> None:
    """Let the transaction's memory writes and searches take their vectors from ``vectors``."""
    session.sync_session.info[_AHEAD] = vectors


def _ahead_of(session: AsyncSession) -> Vectors | None:
    found: Vectors | None = session.sync_session.info.get(_AHEAD)
    return found


def embeddings_of(session: AsyncSession) -> Embeddings | None:
    """The database's embeddings, when ``OPENBOT_EMBEDDINGS`` is set (the runtime attaches them)."""
    embeddings: Embeddings | None = getattr(database_of(session), "embeddings", None)
    return embeddings


async def remember_vector(session: AsyncSession, memory: Memory) -> None:
    """The memory's vector, in the transaction that writes its content (embeddings on only): the
    one embedded :func:`ahead` when there is one, else embedded now."""
    embeddings = embeddings_of(session)
    if embeddings is None:
        return
    vectors = _ahead_of(session)
    vector = vectors.documents.get(memory.content) if vectors is not None else None
    if vector is None:  # content only this transaction knew (``ahead``)
        (embedded,) = await embeddings.embedder.aembed_documents([memory.content])
        vector = _unit(embedded)
    row = MemoryVector(memory_id=memory.id, bot_id=memory.bot_id, model=embeddings.spec, vector=vector)
    await session.merge(row)


_CANDIDATES = (
    select(Memory.id, Memory.content, MemoryVector.vector)
    .join(MemoryVector, MemoryVector.memory_id == Memory.id)
    .where(
        Memory.bot_id == bindparam("bot_id"),
        Memory.lifecycle == "active",
        Memory.thread_id.is_(None),
        MemoryVector.model == bindparam("model"),
    )
)


async def nearest(
    session: AsyncSession, embeddings: Embeddings, bot_id: str, text: str, limit: int
) -> list[tuple[str, str, float]]:
    """The bot's active, bot-level memories closest to ``text`` by cosine similarity, best first."""
    query = _unit(list(await embeddings.embedder.aembed_query(text)))
    rows = (await session.execute(_CANDIDATES, {"bot_id": bot_id, "model": embeddings.spec})).all()
    scored = [(id_, content, _dot(query, vector)) for id_, content, vector in rows]
    scored = [hit for hit in scored if hit[2] >= MIN_SCORE]
    scored.sort(key=lambda hit: -hit[2])
    return scored[:limit]


async def ranked(
    session: AsyncSession, embeddings: Embeddings, stmt: Any, bot_id: str, text: str, limit: int
) -> list[tuple[Memory, float]]:
    """``stmt`` (memories with their vectors, filtered) ranked by closeness to ``text``."""
    vectors = _ahead_of(session)
    query = vectors.queries.get(text) if vectors is not None else None
    if query is None:
        query = _unit(list(await embeddings.embedder.aembed_query(text)))
    rows = (await session.execute(stmt, {"bot_id": bot_id, "model": embeddings.spec})).all()
    scored = [(memory, _dot(query, vector)) for memory, vector in rows]
    scored = [hit for hit in scored if hit[1] >= MIN_SCORE]
    scored.sort(key=lambda hit: -hit[1])
    return scored[:limit]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=False)))


async def backfill(session: AsyncSession, embeddings: Embeddings) -> int:
    """Vectors for the memories that have none of this spec (written before embeddings were on, or
    under another model); returns how many were embedded."""
    missing = (
        await session.execute(
            select(Memory.id, Memory.bot_id, Memory.content)
            .outerjoin(
                MemoryVector,
                (MemoryVector.memory_id == Memory.id) & (MemoryVector.model == embeddings.spec),
            )
            .where(MemoryVector.memory_id.is_(None))
        )
    ).all()
    for start in range(0, len(missing), BATCH):
        chunk = missing[start : start + BATCH]
        vectors = await embeddings.embedder.aembed_documents([content for _id, _bot, content in chunk])
        for (memory_id, bot_id, _text), vector in zip(chunk, vectors, strict=True):
            spec = embeddings.spec
            row = MemoryVector(memory_id=memory_id, bot_id=bot_id, model=spec, vector=_unit(vector))
            await session.merge(row)
    return len(missing)
