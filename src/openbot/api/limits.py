"""ASGI middleware: refuse what cannot be served before anything parses it.

- A body above the cap is ``413 payload_too_large``, whether it announces its size
  (``Content-Length``) or streams in chunks: the chunk that crosses the cap raises
  :class:`~openbot.api.errors.RefusedRequest` inside the app, which the error handlers answer.
- A URL whose path or query holds a NUL character, or whose integer query parameters (those the
  operation declares as integers in the OpenAPI schema) lie outside the signed 64-bit range, is
  ``422 invalid_argument``: neither database could take them, and they would fail differently.
"""

from __future__ import annotations

from starlette.datastructures import QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openbot.api.errors import RefusedRequest, envelope
from openbot.api.operations import operations
from openbot.core.errors import ErrorCode
from openbot.core.json_limits import int64_problem


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self._url_problem(scope)
        if refused is not None:
            message, details = refused
            await envelope(ErrorCode.INVALID_ARGUMENT, message, details)(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._too_large().as_response()(scope, receive, send)
                return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._too_large()
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except RefusedRequest as exc:  # raised where no exception handler saw it
            if started:
                raise
            await exc.as_response()(scope, receive, send)

    def _too_large(self) -> RefusedRequest:
        return RefusedRequest(
            413,
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"request body exceeds {self.max_bytes} bytes",
            {"max_bytes": self.max_bytes},
        )

    # -- the URL ---------------------------------------------------------------------------------

    def _url_problem(self, scope: Scope) -> tuple[str, dict[str, object]] | None:
        if "\x00" in scope.get("path", ""):
            return "the URL path contains a NUL character (%00)", {"field": "path"}
        raw = scope.get("query_string", b"")
        if not raw:
            return None
        query = QueryParams(raw)
        for name, value in query.multi_items():
            if "\x00" in name or "\x00" in value:
                return f"{name.replace(chr(0), '%00')}: contains a NUL character (%00)", {"field": name}
        for name in self._route_int_params(scope):
            for value in query.getlist(name):
                problem = int64_problem(value)
                if problem:
                    return f"{name}: {problem}", {"field": name, "value": value}
        return None

    @staticmethod
    def _route_int_params(scope: Scope) -> frozenset[str]:
        """The query parameters the operation this request goes to declares as integers."""
        index = operations(scope.get("app"))
        if index is None:
            return frozenset()
        return index.int_query_params(scope.get("path", ""), scope.get("method", "GET"))
