"""Scenario ``memory``: the top-8 injection read (``runtime.memory.store.relevant``) over 10,000
memories of one bot, on SQLite and (with ``OPENBOT_BENCH_DATABASE_URL``) PostgreSQL.

The memories are 12 words each drawn from a 5,000-word vocabulary with Zipf weights; each sample is
one ``relevant()`` call inside an open read session, as prepare makes it, for a trigger of 12 words
drawn the same way plus 4 English stop words. Two workloads:

- ``typical``: the vocabulary's 200 most frequent words never occur (they play the part of the stop
  words a real text's query drops), so a trigger's words are in a few hundred memories;
- ``stress``: they do occur, so almost every memory (94%) matches every trigger and all of them are
  ranked: the cost of the lexical ranking grows with the number of matches.
 The bot is created for the run and deleted afterwards (its memories cascade), so the database
is otherwise left alone.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path
from typing import Any

from sqlalchemy import delete, insert

from benchmarks.stats import summarize
from openbot.core.ids import new_id
from openbot.runtime.memory.store import relevant
from openbot.store.db import Database
from openbot.store.migrate import upgrade
from openbot.store.models import Actor, Memory

MEMORIES = 10_000
WORDS = 5_000
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "fen", "gal"]
STOP = ["the", "a", "of", "to", "and", "is", "in", "for", "on", "with"]


def vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < WORDS:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Texts:
    """Zipf-weighted sentences over a fixed vocabulary."""

    def __init__(self, seed: int, skip: int = 0) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)[skip:]
        self.cumulative = list(accumulate(1 / (rank + 1) for rank in range(skip, WORDS)))

    def sentence(self, n: int, stop_words: int = 0) -> str:
        words = self.rng.choices(self.words, cum_weights=self.cumulative, k=n)
        words += self.rng.sample(STOP, stop_words)
        self.rng.shuffle(words)
        return " ".join(words)


async def _fill(db: Database, texts: Texts) -> str:
    stamp = datetime.now(UTC)
    bot_id = new_id("act")
    async with db.transaction() as s:
        await s.execute(
            insert(Actor),
            [
                {
                    "id": bot_id,
                    "kind": "bot",
                    "handle": f"bench{bot_id[-8:]}",
                    "name": "bench",
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            ],
        )
        rows: list[dict[str, Any]] = [
            {
                "id": new_id("mem"),
                "bot_id": bot_id,
                "content": texts.sentence(12),
                "segment": "knowledge",
                "tier": "long",
                "importance": 0.5,
                "access_count": 0,
                "last_accessed_at": stamp,
                "lifecycle": "active",
                "source": "human",
                "created_at": stamp,
                "updated_at": stamp,
            }
            for _ in range(MEMORIES)
        ]
        for start in range(0, len(rows), 1_000):
            await s.execute(insert(Memory), rows[start : start + 1_000])
    if db.backend == "postgresql":
        # What autovacuum does after a bulk load: statistics for the planner, and the GIN index's
        # pending list merged (scanning a long pending list costs more than the ranking).
        async with db.engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.exec_driver_sql("VACUUM ANALYZE memories")
    return bot_id


WORKLOADS = {"typical": 200, "stress": 0}  # most frequent words left out of the vocabulary


async def one_backend(url: str, samples: int, workload: str) -> dict[str, Any]:
    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    texts = Texts(seed=9, skip=WORKLOADS[workload])
    try:
        bot_id = await _fill(db, texts)
        triggers = [texts.sentence(12, stop_words=4) for _ in range(samples)]
        timings: list[float] = []
        found: list[int] = []
        async with db.read() as s:
            for trigger in triggers[:10]:  # warm the statement cache and the pages
                await relevant(s, bot_id, trigger)
            for trigger in triggers:
                started = time.perf_counter()
                hits = await relevant(s, bot_id, trigger)
                timings.append((time.perf_counter() - started) * 1000)
                found.append(len(hits))
        async with db.transaction() as s:
            await s.execute(delete(Actor).where(Actor.id == bot_id))
    finally:
        await db.dispose()
    return {
        "backend": db.backend,
        "workload": workload,
        "memories": MEMORIES,
        "top8_ms": summarize(timings),
        "injected_per_trigger": round(sum(found) / len(found), 2),
        "target_p50_ms": 5.0,
    }


async def run(samples: int, pg_url: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for workload in WORKLOADS:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
            out[f"sqlite_{workload}"] = await one_backend(url, samples, workload)
        if pg_url:
            out[f"postgresql_{workload}"] = await one_backend(pg_url, samples, workload)
    return out
