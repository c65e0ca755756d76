"""Turn whatever a model provider raised into one of OpenBot's typed model errors.

Pure: this module never imports a provider SDK, httpx or LangChain. It reads only what every
provider exception exposes in some form, walking the exception and its ``__cause__`` chain:

1. an HTTP status (an int ``status_code`` or ``status`` attribute, or ``response.status_code``):
   401/403 → auth, 429 → rate limit, 408/504 → timeout, 413 → context length;
2. the class names in the MRO (``AuthenticationError``, ``PermissionDeniedError``,
   ``RateLimitError``, anything containing ``Timeout``, ``ContextOverflowError``…);
3. the message text ("api key", "rate limit", "maximum context length", "prompt is too long"…).

The first signal found in that order decides; with none, the failure is a plain
:class:`~openbot.core.errors.ModelCallError`. An OpenBot ``ModelError`` is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from openbot.core.errors import (
    ContextLengthError,
    ModelAuthError,
    ModelCallError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
)

__all__ = ["MESSAGE_LIMIT", "classify_model_error"]

MESSAGE_LIMIT = 300
"""Longest message a classified error carries (the original text is cut to fit)."""

_MAX_CHAIN = 8

_STATUS_KINDS: dict[int, type[ModelError]] = {
    401: ModelAuthError,
    403: ModelAuthError,
    429: ModelRateLimitError,
    408: ModelTimeoutError,
    504: ModelTimeoutError,
    413: ContextLengthError,
}

# Substrings of class names (from the MRO), checked in order.
_NAME_KINDS: tuple[tuple[str, type[ModelError]], ...] = (
    ("authentication", ModelAuthError),
    ("permissiondenied", ModelAuthError),
    ("unauthorized", ModelAuthError),
    ("ratelimit", ModelRateLimitError),
    ("toomanyrequests", ModelRateLimitError),
    ("contextoverflow", ContextLengthError),
    ("contextlength", ContextLengthError),
    ("contextwindow", ContextLengthError),
    ("timeout", ModelTimeoutError),
)

# Substrings of lower-cased messages, checked in order: rate-limit messages often talk about
# tokens too ("too many tokens per minute"), so rate limits are recognised before context length.
_TEXT_KINDS: tuple[tuple[str, type[ModelError]], ...] = (
    ("rate limit", ModelRateLimitError),
    ("rate_limit", ModelRateLimitError),
    ("ratelimit", ModelRateLimitError),
    ("too many requests", ModelRateLimitError),
    ("authentication", ModelAuthError),
    ("api key", ModelAuthError),
    ("api_key", ModelAuthError),
    ("api-key", ModelAuthError),
    ("unauthorized", ModelAuthError),
    ("permission denied", ModelAuthError),
    ("context length", ContextLengthError),
    ("context_length", ContextLengthError),
    ("maximum context", ContextLengthError),
    ("context window", ContextLengthError),
    ("too many tokens", ContextLengthError),
    ("prompt is too long", ContextLengthError),
    ("timed out", ModelTimeoutError),
    ("timeout", ModelTimeoutError),
)

_SUMMARIES: dict[type[ModelError], str] = {
    ModelAuthError: "The model provider rejected the credentials",
    ModelRateLimitError: "The model provider is rate limiting requests",
    ModelTimeoutError: "The model call timed out",
    ContextLengthError: "The conversation is too long for the model's context window",
    ModelCallError: "The model call failed",
}


@dataclass(frozen=True, slots=True)
class _Signals:
    names: tuple[str, ...]
    status: int | None
    text: str


def classify_model_error(exc: BaseException) -> ModelError:
    """Map ``exc`` (usually from a provider SDK) to a typed :class:`ModelError`.

    The result's message reads ``"<what happened> (<code>): <original>"``, at most
    :data:`MESSAGE_LIMIT` characters; ``details`` holds the original exception class name and the
    HTTP status when one was found.
    """
    if isinstance(exc, ModelError):
        return exc
    chain = [_signals(link) for link in _chain(exc)]
    kind = _kind(chain)
    status = next((s.status for s in chain if s.status is not None), None)
    details: dict[str, object] = {"exception": type(exc).__name__}
    if status is not None:
        details["status_code"] = status
    return kind(_message(kind, exc), details=details)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what caused it (``raise … from``), and the only member of a one-error group."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        elif isinstance(current, BaseExceptionGroup) and len(current.exceptions) == 1:
            current = current.exceptions[0]
        else:
            current = None


def _signals(exc: BaseException) -> _Signals:
    names = tuple(cls.__name__.lower() for cls in type(exc).__mro__)
    return _Signals(names=names, status=_status(exc), text=str(exc).lower())


def _status(exc: BaseException) -> int | None:
    for candidate in (
        getattr(exc, "status_code", None),
        getattr(exc, "status", None),
        getattr(getattr(exc, "response", None), "status_code", None),
    ):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
    return None


def _kind(chain: list[_Signals]) -> type[ModelError]:
    for signals in chain:
        if signals.status in _STATUS_KINDS:
            return _STATUS_KINDS[signals.status]
    for signals in chain:
        for fragment, kind in _NAME_KINDS:
            if any(fragment in name for name in signals.names):
                return kind
    for signals in chain:
        for fragment, kind in _TEXT_KINDS:
            if fragment in signals.text:
                return kind
    return ModelCallError


def _message(kind: type[ModelError], exc: BaseException) -> str:
    original = str(exc).strip() or type(exc).__name__
    if kind is ModelCallError:
        original = f"{type(exc).__name__}: {original}"
    message = f"{_SUMMARIES[kind]} ({kind.code}): {' '.join(original.split())}"
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 1].rstrip() + "…"
    return message
