"""The LangGraph checkpointer for run transcripts, keyed by run id (deleted when a run ends).

The durable saver comes from the store's dialect (``Dialect.open_checkpointer``).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.base import SerializerProtocol


class DeferredSaver(BaseCheckpointSaver[str]):
    """Keep a run's checkpoints in memory while it runs; write them durably only when it pauses.

    A run that completes never touches the durable saver (its transcript would be deleted at once
    anyway). A run that pauses for a human is persisted — the latest checkpoint and its pending
    writes, which is what resuming needs — so it survives a restart. Reads fall back to the durable
    saver, which is how a resumed run finds its state.

    A resumed run starts from a checkpoint that is durable only, and LangGraph writes against that
    checkpoint (the resume value; a new interrupt when the same node asks again, which makes no new
    checkpoint). Those writes go straight to the durable saver, next to their checkpoint: there reads
    find them and the real saver's rules for repeated writes apply, and ``persist`` has nothing more
    to copy. Any run's transcript is deleted when it ends or is recovered, so this never leaves half
    a run behind. Lists merge both savers, since a resumed run's history is in both.
    """

    def __init__(self, durable: BaseCheckpointSaver[str]) -> None:
        super().__init__(serde=durable.serde)
        self.durable = durable
        self.memory = InMemorySaver(serde=_Kept())
        self._fresh: set[str] = set()  # runs that never paused: nothing durable to look up

    def start(self, thread_id: str, *, fresh: bool) -> None:
        if fresh:
            self._fresh.add(thread_id)

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self.durable.get_next_version(current, channel)

    def _is_fresh(self, config: RunnableConfig) -> bool:
        return config["configurable"].get("thread_id") in self._fresh

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await self.memory.aget_tuple(config)
        if found is not None:
            return self._copy(found)
        if self._is_fresh(config):
            return None
        return await self.durable.aget_tuple(config)

    def _copy(self, kept: CheckpointTuple) -> CheckpointTuple:
        """A checkpoint read back from memory, as the durable saver would give it back: a copy of
        its own, through the real serializer. The memory layer keeps the objects it was given
        (``_Kept``), and a graph that starts from a checkpoint changes what it read (its version
        maps, messages an approval edits): without the copy it would change the stored one too.
        No run reads its own checkpoints while it runs (a fresh run finds memory empty, a pause
        moves them to the durable saver), so this costs the hot path nothing."""
        serde = self.durable.serde

        def again(value: Any) -> Any:
            return serde.loads_typed(serde.dumps_typed(value))

        writes = kept.pending_writes
        return kept._replace(
            checkpoint=again(kept.checkpoint),
            metadata=again(kept.metadata),
            pending_writes=None if writes is None else [(t, c, again(v)) for t, c, v in writes],
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Both savers' checkpoints, newest first: a resumed run has older ones durable, newer in memory."""
        found = [
            self._copy(t) async for t in self.memory.alist(config, filter=filter, before=before, limit=limit)
        ]
        if config is None or not self._is_fresh(config):
            seen = {_key(t.config) for t in found}
            found += [
                t
                async for t in self.durable.alist(config, filter=filter, before=before, limit=limit)
                if _key(t.config) not in seen and not self._is_fresh(t.config)
            ]
        found.sort(key=lambda t: t.checkpoint["id"], reverse=True)  # ids are time-ordered (uuid6)
        for item in found[:limit]:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.memory.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Save writes where their checkpoint is: in memory, or durable for the one a run resumed from."""
        saver = self.durable if await self._is_durable_only(config) else self.memory
        await saver.aput_writes(config, writes, task_id, task_path)

    async def _is_durable_only(self, config: RunnableConfig) -> bool:
        # LangGraph may save writes before the checkpoint they belong to (its saves run in the
        # background), so a checkpoint missing from memory is not yet taken for a durable one.
        thread_id, checkpoint_ns, checkpoint_id = _key(config)
        in_memory = checkpoint_id in self.memory.storage.get(thread_id, {}).get(checkpoint_ns, {})
        if in_memory or self._is_fresh(config):
            return False
        return await self.durable.aget_tuple(config) is not None

    async def persist(self, thread_id: str) -> None:
        """Copy the thread's latest checkpoint and its pending writes to the durable saver.

        Without a checkpoint in memory (a resumed run that paused again in the same step) its
        checkpoint and writes are durable already.
        """
        latest = await self.memory.aget_tuple({"configurable": {"thread_id": thread_id}})
        if latest is None:
            return
        parent = latest.parent_config or {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        checkpoint = latest.checkpoint
        saved = await self.durable.aput(parent, checkpoint, latest.metadata, checkpoint["channel_versions"])
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in latest.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            await self.durable.aput_writes(saved, writes, task_id)
        await self.discard(thread_id)

    async def discard(self, thread_id: str) -> None:
        self._fresh.discard(thread_id)
        await self.memory.adelete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.discard(thread_id)
        await self.durable.adelete_thread(thread_id)


class _Kept(SerializerProtocol):
    """The memory layer's "serializer": values are kept as they are, not encoded.

    Encoding a checkpoint costs a pass over every message of the window (msgpack), for a
    transcript that is deleted as soon as its run completes. Runs save with ``durability="exit"``:
    a checkpoint is put once, when the graph stops, and nothing changes it afterwards. A pause
    hands it to the durable saver (``persist``), which encodes it then, with the real serializer;
    anything else that reads it back gets an encoded copy (``DeferredSaver._copy``)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return "kept", obj

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return data[1]


def _key(config: RunnableConfig) -> tuple[str, str, str]:
    conf = config["configurable"]
    return conf["thread_id"], conf.get("checkpoint_ns", ""), conf.get("checkpoint_id", "")


# LangGraph asks at the start of every invocation whether ``aput_writes`` takes ``task_path``, by
# ``inspect.signature`` (~25–45 µs a run here). A function's ``__signature__`` is what ``inspect``
# returns for it, so it is worked out once, here.
DeferredSaver.aput_writes.__signature__ = inspect.signature(DeferredSaver.aput_writes)  # type: ignore[attr-defined]
