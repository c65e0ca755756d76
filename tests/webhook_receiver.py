"""A real HTTP receiver for webhook tests: a uvicorn server on 127.0.0.1 that records every POST and
answers with the statuses it is told to (then 200), verifying nothing itself.

Used by ``tests/runtime/test_webhooks.py`` and the browser test of the deliveries view.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """``statuses`` are answered in order, then ``default`` forever."""

    statuses: list[int] = field(default_factory=list)
    default: int = 200
    requests: list[Received] = field(default_factory=list)
    url: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    hold: asyncio.Event | None = None  # when set, each answer waits for it (an attempt in flight)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append(Received(headers, b"".join(chunks)))
        self.arrived.set()
        if self.hold is not None:
            await self.hold.wait()
        status = self.statuses.pop(0) if self.statuses else self.default
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": f"answered {status}".encode()})


@asynccontextmanager
async def receiving(receiver: Receiver, path: str = "/hook") -> AsyncIterator[Receiver]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(receiver, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    receiver.url = f"http://127.0.0.1:{sock.getsockname()[1]}{path}"
    try:
        yield receiver
    finally:
        server.should_exit = True
        await task
        sock.close()
