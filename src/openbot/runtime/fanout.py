"""One journal reader for every event stream of the process, fanned out in memory.

The bus says "journal rows up to N exist" (or, from another process, "something new exists"); the
fan-out's single task reads the journal once for all streams, from its own cursor, and hands each
row to the streams that want it (all of them, or those following the row's thread). Live-only
events (token deltas, activity) go out as they are published, unless a journal read is pending:
then they wait behind it, so a stream shows them in the order they happened relative to the rows.
The task also polls every ``poll_seconds`` while streams are open (a missed signal is late, never
lost: every read starts at the cursor), and ends when the last stream closes.

A stream that connects replays what was committed before the shared cursor itself
(``Stream.replay``), then takes rows from its buffer. The buffer is bounded: a client that cannot
keep up gets an ``overflow`` event and its stream ends; it reconnects with ``Last-Event-ID`` and
replays from the journal like any other reconnect.

A stream opened with an actor token ends with an ``unauthorized`` event when the journal row that
revokes the actor's tokens arrives (``actor.tokens_revoked``), in whichever process it was opened:
the row reaches every process's fan-out, so no open stream outlives its token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable

from openbot.runtime.access import TOKENS_REVOKED
from openbot.runtime.bus import Signal
from openbot.runtime.scope import StreamScope
from openbot.store.models import Event

log = logging.getLogger(__name__)

ReadJournal = Callable[[str | None, int, int | None, int], Awaitable[list[Event]]]

BUFFER = 1000  # events waiting for one client before it is disconnected
PAGE = 500
_READ_ALL = Signal("journal")  # no ``upto``: read everything new (a poll, another process's commit)
_LINES = re.compile(r"\r\n|\r|\n")


def sse(event: str, data: str, id_: str | None = None) -> bytes:
    """One event on the wire, encoded once however many streams it goes to."""
    head = f"id: {id_}\r\nevent: {event}\r\n" if id_ is not None else f"event: {event}\r\n"
    return (head + "".join(f"data: {line}\r\n" for line in _LINES.split(data)) + "\r\n").encode()


def journal_item(row: Event) -> bytes:
    return sse(row.type, json.dumps(row.data), str(row.id))


def revoked_item(actor: str) -> bytes:
    reason = f"the tokens of @{actor} were revoked; this stream ends and a reconnect needs a valid token"
    return sse("unauthorized", json.dumps({"reason": reason, "actor": actor}))


def ends_stream_of(row: Event, actor: str | None) -> bool:
    """Whether ``row`` revokes the token a stream of ``actor`` was opened with."""
    return actor is not None and row.type == TOKENS_REVOKED and row.data.get("actor") == actor


def overflow_item(buffer: int) -> bytes:
    reason = f"client too slow: more than {buffer} events were waiting; reconnect with Last-Event-ID"
    return sse("overflow", json.dumps({"reason": reason, "buffer": buffer}))


class Stream:
    """One client's view: a replay range, then a bounded buffer filled by the fan-out."""

    def __init__(
        self,
        fanout: Fanout,
        thread_id: str | None,
        after: int,
        cursor: int,
        scope: StreamScope | None = None,
        actor: str | None = None,
        opened_at: int = 0,
    ) -> None:
        self._fanout = fanout
        self.thread_id = thread_id
        self.scope = scope  # an actor token's threads (None: every row of ``thread_id``, or all)
        self.actor = actor  # the actor whose token opened the stream (None: the admin)
        # The journal head when the stream was opened, read after its token was checked: only a
        # revocation after it ends the stream (an earlier one revoked older tokens, not this one's).
        self.opened_at = opened_at
        self.after = max(after, cursor)  # rows up to here come from the replay, or were seen
        self.replay: tuple[int, int] | None = (after, cursor) if after < cursor else None
        self.buffer = fanout.buffer
        self._items: list[bytes] = []
        self._ready = asyncio.Event()
        self._ended = False  # the overflow or unauthorized notice is the last item

    def push(self, item: bytes) -> None:
        if self._ended:
            return
        if len(self._items) >= self.buffer:
            self._items.clear()
            item = overflow_item(self.buffer)
            self._ended = True
            self._fanout.detach(self)
        self._items.append(item)
        self._ready.set()

    def end(self, item: bytes) -> None:
        """Deliver ``item`` as the stream's last event."""
        self.push(item)
        self._ended = True
        self._fanout.detach(self)

    async def next(self) -> bytes | None:
        """Every event waiting, as one chunk; None once the stream has ended (after ``overflow`` or
        ``unauthorized``).

        A stream that keeps up gets each event at once; on a busy server the events that gathered
        meanwhile go out as one write (fewer writes exactly when they cost the most)."""
        while not self._items:
            if self._ended:
                return None
            self._ready.clear()
            await self._ready.wait()
        chunk = b"".join(self._items)
        self._items.clear()
        return chunk

    def close(self) -> None:
        self._fanout.detach(self)


class Fanout:
    def __init__(self, read: ReadJournal, poll_seconds: Callable[[], float], buffer: int = BUFFER) -> None:
        self.read = read
        self.poll_seconds = poll_seconds
        self.buffer = buffer  # for streams attached from now on
        self._streams: dict[str | None, set[Stream]] = {}  # by the thread they follow (None: all)
        self._pending: deque[Signal] = deque()
        self._wake = asyncio.Event()
        self._cursor = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def streams(self) -> int:
        return sum(len(streams) for streams in self._streams.values())

    def attach(
        self,
        thread_id: str | None,
        after: int,
        head: int,
        scope: StreamScope | None = None,
        actor: str | None = None,
    ) -> Stream:
        """An event stream of rows after ``after`` (``head``: the journal head the caller read just
        now), fed by the one shared journal reader: replay ``Stream.replay`` first, then ``next()``.
        With ``scope`` (an actor token), only the rows of the actor's threads; with ``actor``, it
        ends when the actor's tokens are revoked."""
        if self._task is None or self._task.done():
            self._cursor = head
            self._pending.clear()
            self._pending.append(_READ_ALL)  # rows committed since the caller read ``head``
            self._task = asyncio.create_task(self._run(), name="openbot-event-fanout")
        stream = Stream(self, thread_id, after, self._cursor, scope, actor, opened_at=head)
        self._streams.setdefault(thread_id, set()).add(stream)
        return stream

    def detach(self, stream: Stream) -> None:
        streams = self._streams.get(stream.thread_id)
        if streams is None or stream not in streams:
            return
        streams.discard(stream)
        if not streams:
            del self._streams[stream.thread_id]
        if not self._streams:
            self._wake.set()  # the task ends

    def publish(self, signal: Signal) -> None:
        """The bus's listener: called for every signal, in order."""
        if self._task is None:
            return  # nobody listens; the next stream starts from the journal head
        if signal.type != "journal" and not self._pending:
            self._deliver_live(signal)
            return
        self._pending.append(signal)
        self._wake.set()

    async def _run(self) -> None:
        try:
            while self._streams:
                if self._pending:
                    await self._step()
                    continue
                self._wake.clear()
                try:
                    async with asyncio.timeout(self.poll_seconds()):
                        await self._wake.wait()
                except TimeoutError:
                    self._pending.append(_READ_ALL)
        finally:
            self._task = None

    async def _step(self) -> None:
        first = self._pending[0]
        if first.type != "journal":
            self._pending.popleft()
            self._deliver_live(first)
            return
        # Every journal signal up to the next live event is answered by one read; the signals stay
        # queued while it runs, so live events published meanwhile wait behind them.
        count, upto = self._journal_batch()
        try:
            if upto is None or upto > self._cursor:
                await self._read(upto)
        except Exception:  # the cursor did not move: the next signal or poll reads these rows
            log.exception("reading the journal for the event streams failed")
        for _ in range(count):
            self._pending.popleft()

    def _journal_batch(self) -> tuple[int, int | None]:
        """How many journal signals lead the queue, and how far they announce (None: everything)."""
        count, upto, everything = 0, 0, False
        for signal in self._pending:
            if signal.type != "journal":
                break
            count += 1
            announced = (signal.data or {}).get("upto")
            everything = everything or announced is None
            upto = max(upto, int(announced or 0))
        return count, None if everything else upto

    async def _read(self, upto: int | None) -> None:
        while True:
            rows = await self.read(None, self._cursor, upto, PAGE)
            if rows:
                self._cursor = int(rows[-1].id)
                self._deliver_rows(rows)
            if len(rows) < PAGE:
                return

    def _deliver_rows(self, rows: list[Event]) -> None:
        everyone = tuple(self._streams.get(None, ()))
        for row in rows:
            if row.type == TOKENS_REVOKED:
                self._end_streams_of(row)
            item = journal_item(row)
            followers = self._streams.get(row.thread_id, ()) if row.thread_id is not None else ()
            for stream in (*everyone, *followers):
                if row.id <= stream.after:
                    continue
                if stream.scope is None or stream.scope.allows(row.type, row.thread_id, row.data):
                    stream.push(item)

    def _end_streams_of(self, row: Event) -> None:
        ending = [
            stream
            for streams in self._streams.values()
            for stream in streams
            if row.id > stream.opened_at and ends_stream_of(row, stream.actor)
        ]
        for stream in ending:
            stream.end(revoked_item(str(stream.actor)))

    def _deliver_live(self, signal: Signal) -> None:
        try:
            item = sse(signal.type, json.dumps(signal.data))
        except (TypeError, ValueError):  # a bad payload must not fail its publisher (a run)
            log.exception("live event %s could not be encoded", signal.type)
            return
        # As for journal rows: a stream that follows one thread gets only that thread's events.
        targets = [*self._streams.get(None, ())]
        if signal.thread_id is not None:
            targets += self._streams.get(signal.thread_id, ())
        for stream in targets:
            if stream.scope is None or stream.scope.allows(signal.type, signal.thread_id, None):
                stream.push(item)


__all__ = ["BUFFER", "Fanout", "Stream", "ends_stream_of", "journal_item", "revoked_item", "sse"]
