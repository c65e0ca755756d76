"""One place that turns errors into the envelope ``{"error": {"code", "message", "details"?}}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from openbot.core.errors import HTTP_STATUS, ErrorCode, OpenBotError

log = logging.getLogger(__name__)

_BY_STATUS = {
    400: ErrorCode.INVALID_ARGUMENT,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.NOT_FOUND,
    409: ErrorCode.CONFLICT,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    422: ErrorCode.INVALID_ARGUMENT,
    429: ErrorCode.RATE_LIMITED,
}


def envelope(
    code: ErrorCode, message: str, details: dict[str, object] | None = None, status: int | None = None
) -> JSONResponse:
    body: dict[str, object] = {"code": str(code), "message": message}
    if details:
        body["details"] = details
    return JSONResponse({"error": body}, status_code=status or HTTP_STATUS[code])


def install(app: FastAPI) -> None:
    @app.exception_handler(OpenBotError)
    async def _openbot(_request: Request, exc: OpenBotError) -> JSONResponse:
        return envelope(exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append({"field": where, "problem": err.get("msg", "invalid")})
        first = problems[0] if problems else {"field": "", "problem": "invalid request"}
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            return envelope(
                ErrorCode.INVALID_ARGUMENT, "the request body is not valid JSON", {"problems": problems}
            )
        message = f"{first['field'] or 'body'}: {first['problem']}"
        return envelope(ErrorCode.INVALID_ARGUMENT, message, {"problems": problems})

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _BY_STATUS.get(exc.status_code, ErrorCode.INTERNAL)
        return envelope(code, str(exc.detail), status=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return envelope(ErrorCode.INTERNAL, "internal error; see the server log")
