"""One place that turns errors into the envelope ``{"error": {"code", "message", "details"?}}``.

Malformed JSON is located (``details``: ``line``, ``column``, ``position``, all counted in
characters, line and column from 1); a 405 keeps its ``Allow`` header.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from openbot.api.operations import operations
from openbot.core.errors import HTTP_STATUS, ErrorCode, OpenBotError

log = logging.getLogger(__name__)

_BY_STATUS = {
    400: ErrorCode.INVALID_ARGUMENT,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    409: ErrorCode.CONFLICT,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    422: ErrorCode.INVALID_ARGUMENT,
    429: ErrorCode.RATE_LIMITED,
}


def envelope(
    code: ErrorCode,
    message: str,
    details: Mapping[str, object] | None = None,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, object] = {"code": str(code), "message": message}
    if details:
        body["details"] = dict(details)
    return JSONResponse({"error": body}, status_code=status or HTTP_STATUS[code], headers=headers)


class RefusedRequest(StarletteHTTPException):
    """An HTTP-level refusal with its own code and details, raised by middleware (``limits``).

    It is an ``HTTPException`` so that FastAPI passes it through its body parsing untouched (any
    other exception raised while reading a body becomes a bare 400).
    """

    def __init__(self, status: int, code: ErrorCode, message: str, details: dict[str, object]) -> None:
        super().__init__(status_code=status, detail=message)
        self.code = code
        self.details = details

    def as_response(self) -> JSONResponse:
        return envelope(self.code, str(self.detail), self.details, status=self.status_code)


def _json_location(exc: RequestValidationError) -> tuple[str, dict[str, object]]:
    """Where the body stopped being JSON: a message and ``{line, column, position}``."""
    err = next(e for e in exc.errors() if e.get("type") == "json_invalid")
    loc = err.get("loc", ())
    position = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
    reason = str((err.get("ctx") or {}).get("error") or err.get("msg") or "invalid JSON")
    if position is None:
        return f"the request body is not valid JSON: {reason}", {}
    doc = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or "")
    line = doc.count("\n", 0, position) + 1
    column = position - (doc.rfind("\n", 0, position) + 1) + 1
    where: dict[str, object] = {"line": line, "column": column, "position": position}
    return f"the request body is not valid JSON: {reason} at line {line}, column {column}", where


def _allow(request: Request, given: str) -> str:
    """Every method the path takes: the router names only those of the first route it matched."""
    methods = {m.strip().upper() for m in given.split(",") if m.strip()}
    index = operations(request.scope.get("app"))
    if index is not None:
        methods |= index.methods(request.url.path)
    return ", ".join(sorted(methods))


def install(app: FastAPI) -> None:
    @app.exception_handler(OpenBotError)
    async def _openbot(_request: Request, exc: OpenBotError) -> JSONResponse:
        return envelope(exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            message, where = _json_location(exc)
            return envelope(ErrorCode.INVALID_ARGUMENT, message, where)
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append({"field": field, "problem": err.get("msg", "invalid")})
        first = problems[0] if problems else {"field": "", "problem": "invalid request"}
        message = f"{first['field'] or 'body'}: {first['problem']}"
        return envelope(ErrorCode.INVALID_ARGUMENT, message, {"problems": problems})

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc, RefusedRequest):
            return exc.as_response()
        code = _BY_STATUS.get(exc.status_code, ErrorCode.INTERNAL)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allow(request, headers.get("Allow", ""))
        return envelope(code, str(exc.detail), status=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return envelope(ErrorCode.INTERNAL, "internal error; see the server log")
