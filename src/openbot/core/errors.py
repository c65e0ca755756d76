"""The error hierarchy, drawn as a tree so callers catch at the level they need.

    OpenBotError (code, message, details)
    ├── NotFound            not_found          404
    ├── Conflict            conflict           409
    │   ├── StaleLease          a run moved on without the worker holding it (cancelled, taken over)
    │   └── IdempotencyConflict conflict 409  a reused Idempotency-Key, another body
    ├── InvalidArgument     invalid_argument   422
    │   └── InvalidIdempotencyKey invalid_argument 422  not 1-255 printable ASCII
    ├── Unauthorized        unauthorized       401
    ├── Forbidden           forbidden          403
    ├── PayloadTooLarge     payload_too_large  413
    ├── RateLimited         rate_limited       429
    ├── Internal            internal           500  the system broke one of its own rules
    │   └── IllegalTransition   a status change that its state machine forbids (core.states)
    └── ModelError          a model call failed; ``code`` says how
        ├── ModelAuthError        model_auth
        ├── ModelRateLimitError   model_rate_limit
        ├── ModelTimeoutError     model_timeout
        ├── ContextLengthError    context_length
        └── ModelCallError        internal

``method_not_allowed`` (405) has no exception class: only the router raises it, for a path that
exists without the request's method.

The API maps ``code`` to an HTTP status in one exception handler (``openbot.api.errors``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    INVALID_ARGUMENT = "invalid_argument"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    RATE_LIMITED = "rate_limited"
    MODEL_AUTH = "model_auth"
    MODEL_RATE_LIMIT = "model_rate_limit"
    MODEL_TIMEOUT = "model_timeout"
    CONTEXT_LENGTH = "context_length"
    INTERNAL = "internal"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INVALID_ARGUMENT: 422,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.MODEL_AUTH: 502,
    ErrorCode.MODEL_RATE_LIMIT: 429,
    ErrorCode.MODEL_TIMEOUT: 504,
    ErrorCode.CONTEXT_LENGTH: 422,
    ErrorCode.INTERNAL: 500,
}


class OpenBotError(Exception):
    code: ErrorCode = ErrorCode.INTERNAL

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class NotFound(OpenBotError):
    code = ErrorCode.NOT_FOUND


class Conflict(OpenBotError):
    code = ErrorCode.CONFLICT


class StaleLease(Conflict):
    """The run moved on without this worker (cancelled, or its lease was taken over)."""


class IdempotencyConflict(Conflict):
    """An ``Idempotency-Key`` already names a different post by this sender in this thread (409
    ``conflict``, as the contract's codes go; ``details.header`` says what conflicts)."""


class InvalidArgument(OpenBotError):
    code = ErrorCode.INVALID_ARGUMENT


class InvalidIdempotencyKey(InvalidArgument):
    """An ``Idempotency-Key`` header that is not 1-255 printable ASCII characters (422
    ``invalid_argument``; ``details.header`` locates it)."""


class Unauthorized(OpenBotError):
    code = ErrorCode.UNAUTHORIZED


class Forbidden(OpenBotError):
    code = ErrorCode.FORBIDDEN


class PayloadTooLarge(OpenBotError):
    code = ErrorCode.PAYLOAD_TOO_LARGE


class RateLimited(OpenBotError):
    code = ErrorCode.RATE_LIMITED


class Internal(OpenBotError):
    code = ErrorCode.INTERNAL


class IllegalTransition(Internal):
    """A run, item or hold was asked to move to a status its state machine forbids."""


class ModelError(OpenBotError):
    """A model call failed. Subclasses say how; ``retryable`` says whether backing off may help."""

    retryable = False


class ModelAuthError(ModelError):
    code = ErrorCode.MODEL_AUTH


class ModelRateLimitError(ModelError):
    code = ErrorCode.MODEL_RATE_LIMIT
    retryable = True


class ModelTimeoutError(ModelError):
    code = ErrorCode.MODEL_TIMEOUT
    retryable = True


class ContextLengthError(ModelError):
    code = ErrorCode.CONTEXT_LENGTH


class ModelCallError(ModelError):
    code = ErrorCode.INTERNAL
