"""classify_model_error: provider exceptions → OpenBot's typed model errors."""

from __future__ import annotations

import httpx
import pytest
from langchain_core import exceptions as lc

from openbot.core.errors import (
    ContextLengthError,
    ErrorCode,
    ModelAuthError,
    ModelCallError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from openbot.core.model_errors import MESSAGE_LIMIT, classify_model_error

# Look-alikes of provider SDK exceptions: classification goes by class name, status and text,
# so these behave exactly like the real ones without importing any SDK.


class APIStatusError(Exception):
    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class BadRequestError(APIStatusError):
    pass


class APITimeoutError(Exception):
    pass


class ClientResponseError(Exception):
    """aiohttp style: the status is in ``status``."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class OddError(Exception):
    status_code = True  # a bool is not an HTTP status


def _http_status_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.test/v1/messages")
    response = httpx.Response(status, request=request)
    return httpx.HTTPStatusError(f"Client error '{status}'", request=request, response=response)


def _caused(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


CASES: list[tuple[str, BaseException, type[ModelError]]] = [
    # HTTP status
    ("401 status", AuthenticationError("Error code: 401 - invalid x-api-key", 401), ModelAuthError),
    ("403 status", PermissionDeniedError("Error code: 403", 403), ModelAuthError),
    ("429 status", RateLimitError("Error code: 429", 429), ModelRateLimitError),
    ("429 beats token text", APIStatusError("too many tokens per minute", 429), ModelRateLimitError),
    ("408 status", APIStatusError("request timeout", 408), ModelTimeoutError),
    ("504 status", APIStatusError("gateway", 504), ModelTimeoutError),
    ("413 status", APIStatusError("request too large", 413), ContextLengthError),
    ("status attribute", ClientResponseError("Unauthorized", status=401), ModelAuthError),
    ("httpx response status", _http_status_error(429), ModelRateLimitError),
    ("httpx response 401", _http_status_error(401), ModelAuthError),
    # class names
    ("langchain auth", lc.ModelAuthenticationError("nope"), ModelAuthError),
    ("langchain permission", lc.ModelPermissionDeniedError("nope"), ModelAuthError),
    ("langchain rate limit", lc.ModelRateLimitError("slow down"), ModelRateLimitError),
    ("langchain timeout", lc.ModelTimeoutError("slow"), ModelTimeoutError),
    ("langchain context", lc.ContextOverflowError("big"), ContextLengthError),
    ("builtin TimeoutError", TimeoutError(), ModelTimeoutError),
    ("sdk timeout", APITimeoutError("Request timed out."), ModelTimeoutError),
    ("httpx read timeout", httpx.ReadTimeout("read timed out"), ModelTimeoutError),
    ("httpx connect timeout", httpx.ConnectTimeout("connect"), ModelTimeoutError),
    # message text
    ("api key text", ValueError("Invalid API key provided: sk-…"), ModelAuthError),
    ("api_key text", Exception("The api_key client option must be set"), ModelAuthError),
    ("authentication text", RuntimeError("authentication failed"), ModelAuthError),
    ("rate limit text", RuntimeError("Rate limit reached for gpt-4.1"), ModelRateLimitError),
    (
        "openai context",
        BadRequestError("This model's maximum context length is 8192 tokens", 400),
        ContextLengthError,
    ),
    (
        "anthropic context",
        BadRequestError("prompt is too long: 210000 tokens > 200000 maximum", 400),
        ContextLengthError,
    ),
    ("context length text", ValueError("context length exceeded"), ContextLengthError),
    ("too many tokens text", ValueError("too many tokens in request"), ContextLengthError),
    ("timed out text", RuntimeError("the request timed out"), ModelTimeoutError),
    # the cause chain
    ("cause", _caused(RuntimeError("call failed"), AuthenticationError("bad key", 401)), ModelAuthError),
    (
        "deep cause",
        _caused(RuntimeError("a"), _caused(RuntimeError("b"), httpx.ReadTimeout("t"))),
        ModelTimeoutError,
    ),
    ("one-error group", ExceptionGroup("tasks", [RateLimitError("429", 429)]), ModelRateLimitError),
    # nothing recognisable
    ("plain error", RuntimeError("boom"), ModelCallError),
    ("server error", APIStatusError("Error code: 500 - overloaded", 500), ModelCallError),
    ("bool status", OddError("weird"), ModelCallError),
    ("empty message", KeyError(), ModelCallError),
]


@pytest.mark.parametrize(("exc", "expected"), [(e, k) for _, e, k in CASES], ids=[n for n, _, _ in CASES])
def test_classification(exc: BaseException, expected: type[ModelError]) -> None:
    assert type(classify_model_error(exc)) is expected


@pytest.mark.parametrize(
    ("exc", "prefix"),
    [
        (
            AuthenticationError("invalid x-api-key", 401),
            "The model provider rejected the credentials (model_auth): ",
        ),
        (
            RateLimitError("slow down", 429),
            "The model provider is rate limiting requests (model_rate_limit): ",
        ),
        (TimeoutError("took too long"), "The model call timed out (model_timeout): "),
        (
            lc.ContextOverflowError("too big"),
            "The conversation is too long for the model's context window (context_length): ",
        ),
        (RuntimeError("boom"), "The model call failed (internal): RuntimeError: boom"),
    ],
)
def test_message_is_a_sentence_with_the_code_and_the_original(exc: BaseException, prefix: str) -> None:
    error = classify_model_error(exc)

    assert error.message.startswith(prefix)
    assert str(exc) in error.message
    assert str(error) == error.message


def test_code_and_retryable_follow_the_kind() -> None:
    assert classify_model_error(RateLimitError("x", 429)).code is ErrorCode.MODEL_RATE_LIMIT
    assert classify_model_error(RateLimitError("x", 429)).retryable
    assert classify_model_error(TimeoutError()).retryable
    assert not classify_model_error(AuthenticationError("x", 401)).retryable
    assert classify_model_error(RuntimeError("x")).code is ErrorCode.INTERNAL


def test_long_messages_are_truncated() -> None:
    error = classify_model_error(RuntimeError("x" * 5000))

    assert len(error.message) <= MESSAGE_LIMIT
    assert error.message.endswith("…")


def test_whitespace_in_the_original_is_collapsed() -> None:
    error = classify_model_error(RuntimeError("line one\n\n   line two"))

    assert error.message.endswith("RuntimeError: line one line two")


def test_empty_message_falls_back_to_the_class_name() -> None:
    assert (
        classify_model_error(TimeoutError()).message
        == "The model call timed out (model_timeout): TimeoutError"
    )


def test_details_carry_the_exception_class_and_status() -> None:
    error = classify_model_error(_caused(RuntimeError("wrapped"), RateLimitError("429", 429)))

    assert error.details == {"exception": "RuntimeError", "status_code": 429}
    assert classify_model_error(RuntimeError("x")).details == {"exception": "RuntimeError"}


def test_an_openbot_model_error_is_returned_unchanged() -> None:
    original = ModelTimeoutError("already classified")

    assert classify_model_error(original) is original


def test_a_cause_cycle_terminates() -> None:
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first

    assert type(classify_model_error(first)) is ModelCallError


def test_status_beats_names_and_text_anywhere_in_the_chain() -> None:
    # The outer error says "timeout", but the provider's 401 further down is the real story.
    exc = _caused(APITimeoutError("timeout while authenticating"), APIStatusError("denied", 401))

    assert type(classify_model_error(exc)) is ModelAuthError
