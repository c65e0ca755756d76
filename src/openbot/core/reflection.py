"""Reflection: what a model's answer asks to change in a bot's memory, checked before anything is
written (DESIGN §8, invariant 10).

A reflection answer is JSON, ``{"operations": [...]}`` (or the bare list), each operation one of::

    {"op": "create", "content", "segment"?, "tier"?, "importance"?}
    {"op": "update", "id" | "match", "content"?, "segment"?, "tier"?, "importance"?}
    {"op": "delete", "id" | "match"}

A real model names the memories it was shown by ``id``; the scripted model (DESIGN §11) names
them by ``match``, a regular expression searched in their contents (every match is affected).
:func:`plan_reflection` turns an answer into operations on known memory ids and the list of what
it refused, and why: an unknown id, a bad segment, tier or importance, empty content, or content
that is about the thread being reflected on rather than about how the bot works (its id, its
title, ids of its messages or runs). A refused operation is reported, never half-applied.

Pure: no I/O; the caller reads the memories and writes the plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openbot.core.memory import MAX_CONTENT, SEGMENTS, TIERS

__all__ = [
    "SCOPE_RULE",
    "Change",
    "Known",
    "ReflectionPlan",
    "parse_json_answer",
    "plan_reflection",
    "thread_specific",
]

MAX_OPERATIONS = 20

SCOPE_RULE = (
    "Memory is yours across every thread you work in. Keep only durable, bot-level knowledge about "
    "how to do your job: preferences, conventions, corrections, lessons. Never keep facts that are "
    "only true inside one thread: task state, identifiers, file names, decisions or numbers "
    "specific to one conversation belong in that thread."
)
"""The rule every memory write is made under (the reflection prompt carries it)."""

_IDS = re.compile(r"\b(?:thr|msg|run)_[0-9a-f]{16,}\b")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Known:
    """An active memory the reflection may update or delete."""

    id: str
    content: str


@dataclass(frozen=True)
class Change:
    """One operation on memory, checked: ``create`` has no id, ``update``/``delete`` have one."""

    op: str
    id: str | None = None
    content: str | None = None
    segment: str | None = None
    tier: str | None = None
    importance: float | None = None


@dataclass(frozen=True)
class ReflectionPlan:
    changes: tuple[Change, ...]
    refused: tuple[dict[str, Any], ...] = field(default=())
    """``{"operation": <as given>, "reason": str}`` for each operation not applied."""


def parse_json_answer(text: str) -> Any:
    """The JSON a model answered with: the whole text, a fenced block, or the first object in it.

    Raises ValueError when there is none.
    """
    text = text.strip()
    candidates = [text, *_FENCE.findall(text)]
    start = text.find("{")
    if start >= 0:
        candidates.append(text[start : text.rfind("}") + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise ValueError("the answer holds no JSON")


def thread_specific(content: str, thread_id: str, thread_title: str) -> str | None:
    """Why ``content`` is about one thread rather than about the bot's work; None when it is not."""
    if thread_id and thread_id in content:
        return "names the thread's id"
    found = _IDS.search(content)
    if found:
        return f"names a thread-scoped id ({found.group(0)})"
    title = thread_title.strip()
    if len(title) >= 8 and title.lower() in content.lower():
        return "names the thread's title"
    return None


def plan_reflection(
    answer: Any, memories: Sequence[Known], *, thread_id: str = "", thread_title: str = ""
) -> ReflectionPlan:
    """Check a reflection answer (parsed JSON) against the bot's active memories."""
    raw = answer.get("operations") if isinstance(answer, dict) else answer
    if not isinstance(raw, list):
        return ReflectionPlan((), ({"operation": answer, "reason": "expected a list of operations"},))
    changes: list[Change] = []
    refused: list[dict[str, Any]] = []
    touched: set[str] = set()
    for operation in raw[:MAX_OPERATIONS]:
        planned, problem = _plan_one(operation, memories, thread_id, thread_title)
        planned = [c for c in planned if c.id is None or c.id not in touched]
        if problem is None and not planned:
            problem = "matches no memory it may change"
        if problem is not None:
            refused.append({"operation": operation, "reason": problem})
            continue
        touched.update(c.id for c in planned if c.id)
        changes.extend(planned)
    refused.extend({"operation": op, "reason": "too many operations"} for op in raw[MAX_OPERATIONS:])
    return ReflectionPlan(tuple(changes), tuple(refused))


def _plan_one(
    operation: Any, memories: Sequence[Known], thread_id: str, thread_title: str
) -> tuple[list[Change], str | None]:
    if not isinstance(operation, dict):
        return [], "an operation must be an object"
    op = operation.get("op")
    if op not in ("create", "update", "delete"):
        return [], "op must be create, update or delete"
    fields, problem = _fields(operation, require_content=op == "create")
    if problem is None and fields.get("content"):
        problem = thread_specific(str(fields["content"]), thread_id, thread_title)
    if problem is not None:
        return [], problem
    if op == "create":
        return [Change("create", **fields)], None
    targets, problem = _targets(operation, memories)
    if problem is not None:
        return [], problem
    if op == "update":
        if not fields:
            return [], "an update changes content, segment, tier or importance"
        return [Change("update", id=target, **fields) for target in targets], None
    return [Change("delete", id=target) for target in targets], None


def _fields(operation: dict[str, Any], *, require_content: bool) -> tuple[dict[str, Any], str | None]:
    fields: dict[str, Any] = {}
    content = operation.get("content")
    if content is not None or require_content:
        if not isinstance(content, str) or not content.strip():
            return {}, "content must be a non-empty string"
        if len(content) > MAX_CONTENT:
            return {}, f"content is longer than {MAX_CONTENT} characters"
        fields["content"] = content.strip()
    for key, allowed in (("segment", SEGMENTS), ("tier", TIERS)):
        value = operation.get(key)
        if value is not None:
            if value not in allowed:
                return {}, f"{key} must be one of {', '.join(allowed)}"
            fields[key] = value
    importance = operation.get("importance")
    if importance is not None:
        if isinstance(importance, bool) or not isinstance(importance, (int, float)):
            return {}, "importance must be a number from 0 to 1"
        if not 0 <= importance <= 1:
            return {}, "importance must be a number from 0 to 1"
        fields["importance"] = float(importance)
    return fields, None


def _targets(operation: dict[str, Any], memories: Sequence[Known]) -> tuple[list[str], str | None]:
    """The memory ids an update or delete names, by ``id`` or by ``match``."""
    if isinstance(operation.get("id"), str):
        wanted = operation["id"]
        if not any(m.id == wanted for m in memories):
            return [], f"no active memory {wanted!r}"
        return [wanted], None
    pattern = operation.get("match")
    if not isinstance(pattern, str) or not pattern:
        return [], "an update or delete names its memory by id (or match)"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return [], f"match is not a valid regular expression: {exc}"
    return [m.id for m in memories if compiled.search(m.content)], None
