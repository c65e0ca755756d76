"""A stand-in HTTP server for the terminal client's failure paths: whatever a test's ``answer``
function returns, on a free port, in a background thread (only the standard library)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, str, bytes]  # status, content type, body
Responder = Callable[[str, str], Answer]  # (method, path) -> answer


def json_answer(status: int, body: Any) -> Answer:
    return status, "application/json", json.dumps(body).encode()


@contextmanager
def fake_server(answer: Responder) -> Iterator[str]:
    """Serve ``answer`` until the block ends; yields the server's URL."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            status, kind, body = answer(self.command, self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
