"""Limits on what a request may carry, checked before anything is stored (pure, no I/O).

Both databases must give the same answer for the same input, so input that one of them would
refuse (PostgreSQL: NUL characters, lone surrogates, NaN in JSON, integers past 64 bits) or that
would break reading it back (objects nested so deep that serialising them fails) is refused here,
for every backend alike:

- strings (object keys included) hold no NUL character and no lone surrogate;
- numbers are finite (JSON has no NaN or Infinity; ``1e400`` parses as Infinity);
- a free JSON value (``model_settings``, resume ``decisions``) nests at most :data:`MAX_DEPTH`
  containers deep and serialises to at most :data:`MAX_BYTES` bytes;
- integer ids and cursors fit a signed 64-bit integer (:func:`int64_problem`).

Problems are sentences that locate the offending value JSON-path style (``script[0].reply``).
"""

from __future__ import annotations

import json
import math
import re

MAX_DEPTH = 32
MAX_BYTES = 64 * 1024
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_INTEGER = re.compile(r"\s*[+-]?[0-9][0-9_]*\s*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_BYTES",
    "MAX_DEPTH",
    "int64_problem",
    "json_size_problem",
    "text_problem",
    "value_problem",
]


def text_problem(text: str) -> str | None:
    """What is wrong with ``text`` as stored text, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _child(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = str(key)
    if _NAME.fullmatch(name):
        return f"{path}.{name}" if path else name
    return f"{path}[{json.dumps(name)}]"


def _located(path: str, what: str) -> str:
    if len(path) > 120:
        path = "…" + path[-119:]
    return f"{path} {what}" if path else what


def value_problem(value: object, max_depth: int = MAX_DEPTH) -> str | None:
    """The first problem in a decoded JSON ``value`` (strings, numbers, nesting), or None.

    Walks without recursion, and never deeper than ``max_depth`` containers, so a value nested
    thousands of levels deep is refused cheaply instead of exhausting the stack.
    """
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return _located(path, problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return _located(path, "is not a finite number (JSON has no NaN or Infinity)")
        elif isinstance(item, dict | list | tuple):
            if depth + 1 > max_depth:
                return _located(path, f"is nested deeper than {max_depth} levels")
            pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
            for key, child in reversed(pairs):
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem:
                        return _located(path, f"has a key that {problem}")
                stack.append((child, _child(path, key), depth + 1))
    return None


def json_size_problem(value: object, max_bytes: int = MAX_BYTES) -> str | None:
    """Whether ``value`` (already checked by :func:`value_problem`) serialises to more than
    ``max_bytes`` bytes of compact UTF-8 JSON."""
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    if size > max_bytes:
        return f"is {size} bytes as JSON; at most {max_bytes} are allowed"
    return None


def int64_problem(text: str) -> str | None:
    """Whether ``text``, written as an integer, lies outside the signed 64-bit range.

    Text that is not an integer at all is not this function's business (None): the caller's own
    parsing refuses it with its own message.
    """
    if not _INTEGER.fullmatch(text):
        return None
    try:
        number = int(text)
    except ValueError:  # more digits than Python converts: far beyond 64 bits
        number = INT64_MAX + 1
    if INT64_MIN <= number <= INT64_MAX:
        return None
    return f"must be an integer from {INT64_MIN} to {INT64_MAX}"
