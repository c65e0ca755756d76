"""A minimal Server-Sent Events reader over an httpx streaming response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass(frozen=True)
class SseEvent:
    type: str
    id: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class SseParser:
    """Feed it lines; it returns an event at each blank line that ends one (comments are skipped)."""

    _type: str = "message"
    _id: str | None = None
    _data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data:
                self._type, self._id = "message", None
                return None
            event = SseEvent(self._type, self._id, "\n".join(self._data))
            self._type, self._id, self._data = "message", None, []
            return event
        if line.startswith(":"):
            return None  # heartbeat / ping comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._type = value
        elif name == "id":
            self._id = value
        elif name == "data":
            self._data.append(value)
        return None


async def read_events(response: httpx.Response) -> AsyncIterator[SseEvent]:
    parser = SseParser()
    async for line in response.aiter_lines():
        event = parser.feed(line)
        if event is not None:
            yield event
