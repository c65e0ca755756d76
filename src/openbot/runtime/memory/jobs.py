"""One model call for a memory job (reflection, or a consolidation role), with the bot's own model.

A real model gets a system prompt that states the job and its answer format and a JSON payload
as the human message; the scripted model answers from ``model_settings`` (``runner.scripted_jobs``).
Either answer is parsed by ``core.reflection.parse_json_answer``. A call is bounded in time
(invariant 14): :data:`TIMEOUT` seconds.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from openbot.core.errors import InvalidArgument, ModelCallError
from openbot.core.reflection import SCOPE_RULE, parse_json_answer
from openbot.runtime.runner.models import SCRIPTED, build_chat_model
from openbot.runtime.runner.scripted_jobs import ScriptedJobModel, validate_jobs

TIMEOUT = 120.0

PROMPTS = {
    "reflection": (
        "You are {handle}, reflecting on a conversation you just took part in, to keep your long-term "
        "memory useful. " + SCOPE_RULE + " You are shown the conversation and your current memories. "
        "Prefer few, high-quality changes; correct or remove memories the conversation proved wrong. "
        'Answer with JSON only: {{"operations": [{{"op": "create", "content", "segment", "tier", '
        '"importance"}}, {{"op": "update", "id", "content"}}, {{"op": "delete", "id"}}]}}. Segments: '
        "identity, preference, correction, relationship, project, knowledge, context; tiers: short, "
        'long, permanent; importance 0 to 1. No change: {{"operations": []}}.'
    ),
    "proposer": (
        "You are {handle}'s memory curator. You are shown clusters of similar memories. Propose how to "
        "make them fewer and truer: merge (several entries say one thing: give the merged content), "
        "supersede (a newer entry replaces an older conflicting one) or prune (redundant or wrong). "
        'Answer with JSON only: {{"proposals": [{{"action", "memory_ids", "content"?, "reason"}}]}}.'
    ),
    "adversary": (
        "You review proposals to merge, supersede or prune {handle}'s memories. Object to any that "
        "would lose information or join things that differ. Answer with JSON only: "
        '{{"objections": [{{"proposal": index, "reason"}}]}}.'
    ),
    "judge": (
        "You judge proposals to change {handle}'s memories, given the adversary's objections. Accept "
        "a proposal only if it keeps every true, useful fact. Answer with JSON only: "
        '{{"verdicts": [{{"proposal": index, "accept": true | false, "reason"}}]}}.'
    ),
}


def job_model(model: str, model_settings: dict[str, Any], *, handle: str, job: str) -> BaseChatModel:
    """The bot's model for ``job`` (``reflection``, ``proposer``, ``adversary`` or ``judge``)."""
    if model.strip() == SCRIPTED:
        problems = validate_jobs(model_settings)
        if problems:
            raise InvalidArgument(
                "The scripted model's memory settings are invalid: " + "; ".join(problems),
                details={"problems": problems},
            )
        key = {"reflection": "reflection", "proposer": "consolidation"}.get(job)
        operations = list(model_settings.get(key) or []) if key else []
        delay_ms = model_settings.get("delay_ms", 0)
        delay_ms = delay_ms if isinstance(delay_ms, int) and not isinstance(delay_ms, bool) else 0
        return ScriptedJobModel(
            handle=handle.lstrip("@"), job=job, operations=operations, delay_ms=max(0, delay_ms)
        )
    return build_chat_model(model, model_settings, handle=handle, trigger_text="", trigger_count=0)


async def ask(model: BaseChatModel, job: str, handle: str, payload: dict[str, Any]) -> Any:
    """Make the job's one call and return its JSON answer.

    Raises:
        ModelCallError: the answer is not JSON (model failures propagate as the provider raised them).
        TimeoutError: no answer within :data:`TIMEOUT` seconds.
    """
    messages = [
        SystemMessage(PROMPTS[job].format(handle=f"@{handle.lstrip('@')}")),
        HumanMessage(json.dumps(payload, default=str)),
    ]
    async with asyncio.timeout(TIMEOUT):
        answer = await model.ainvoke(messages)
    try:
        return parse_json_answer(answer.text)
    except ValueError as exc:
        raise ModelCallError(f"the {job} answer was not JSON: {answer.text[:200]!r}") from exc
