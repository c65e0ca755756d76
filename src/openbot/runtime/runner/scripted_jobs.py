"""The scripted model's memory jobs: reflection and consolidation, offline (DESIGN §11).

A bot whose model is ``"scripted"`` answers these jobs from its ``model_settings``:

- ``reflection``: the list of operations it returns when asked to reflect on a finished run,
  ``{"op": "create", "content", "segment"?, "tier"?, "importance"?}``, ``{"op": "update", "match":
  regex over existing memories, "content"}``, ``{"op": "delete", "match": regex}``;
- ``consolidation``: the proposals its proposer returns, ``{"action": "merge" | "supersede" |
  "prune", "match": regex, "content"?}``; the scripted adversary objects to none and the scripted
  judge accepts every proposal it is shown.

Each answer is the JSON text a real model is asked for (``core.reflection``,
``core.consolidation``), so both kinds of model go through one parser. A missing setting answers
with no operations (and no proposals). Patterns are checked as the run script's are
(:func:`~openbot.runtime.runner.scripted.validate_script`'s guard against catastrophic
backtracking), and a bad setting refuses to build the model, so it is never silently skipped.
``delay_ms`` delays every asynchronous job call as it delays run calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, UsageMetadata
from pydantic import Field, model_validator

from openbot.runtime.runner import scripted

__all__ = ["JOBS", "ScriptedJobModel", "validate_jobs"]

JOBS = ("reflection", "proposer", "adversary", "judge")
_OPS = ("create", "update", "delete")
_ACTIONS = ("merge", "supersede", "prune")


def validate_jobs(model_settings: dict[str, Any]) -> list[str]:
    """The problems with ``model_settings.reflection`` and ``.consolidation``; empty when valid."""
    problems: list[str] = []
    for key, kind, allowed in (("reflection", "op", _OPS), ("consolidation", "action", _ACTIONS)):
        entries = model_settings.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            problems.append(f"{key} must be a list")
            continue
        for index, entry in enumerate(entries):
            where = f"{key}[{index}]"
            if not isinstance(entry, dict) or entry.get(kind) not in allowed:
                problems.append(f"{where}.{kind} must be one of {', '.join(allowed)}")
                continue
            pattern = entry.get("match")
            if pattern is None:
                continue
            problem = scripted._pattern_problem(pattern) if isinstance(pattern, str) else "must be a string"
            if problem:
                problems.append(f"{where}.match {problem}")
    return problems


class ScriptedJobModel(scripted.Scripted):
    """Answers one memory job of a scripted bot (see the module docstring)."""

    handle: str
    job: str
    operations: list[dict[str, Any]] = Field(default_factory=list)
    """``model_settings.reflection`` (job ``reflection``) or ``.consolidation`` (``proposer``)."""

    @model_validator(mode="after")
    def _check(self) -> ScriptedJobModel:
        if self.job not in JOBS:
            raise ValueError(f"unknown job {self.job!r}; known: {', '.join(JOBS)}")
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-job"

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The job's answer as JSON text (pure)."""
        answer: dict[str, Any]
        if self.job == "reflection":
            answer = {"operations": self.operations}
        elif self.job == "proposer":
            answer = {"proposals": self.operations}
        elif self.job == "adversary":
            answer = {"objections": []}
        else:
            verdicts = [{"proposal": i, "accept": True, "reason": "scripted judge"} for i in _shown(messages)]
            answer = {"verdicts": verdicts}
        usage = UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)
        return AIMessage(content=json.dumps(answer), usage_metadata=usage)


def _shown(messages: Sequence[BaseMessage]) -> list[int]:
    """The indexes of the proposals the judge was shown (the last human message's ``proposals``)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            try:
                payload = json.loads(message.text)
            except ValueError:
                return []
            proposals = payload.get("proposals") if isinstance(payload, dict) else None
            if not isinstance(proposals, list):
                return []
            return [p.get("proposal", i) if isinstance(p, dict) else i for i, p in enumerate(proposals)]
    return []
