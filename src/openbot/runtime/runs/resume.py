"""Answering a paused run: validate the human's answer against what the run asked (DESIGN §6).

A question takes ``{"answer"}``; an approval takes one decision per action (approve | edit with
``args`` | reject with an optional ``message``). The answer is stored as the run's ``resumed``
event (items carry no content, invariant 2) and a ``resume`` item wakes the bot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Conflict, Forbidden, InvalidArgument, NotFound
from openbot.core.scheduling import ItemKind
from openbot.core.states import OPEN_ITEMS, ItemStatus, RunStatus, check
from openbot.runtime.commands import ResumeBody
from openbot.runtime.delivery.inbox import announce, enqueue
from openbot.runtime.runs.events import add_run_event, log_run
from openbot.store.db import now
from openbot.store.models import Actor, InboxItem, Run, RunEvent

Parameters = Callable[[str], "dict[str, Any] | None"]
"""A tool's argument schema by name (``ToolRegistry.parameters``); None when it is not known."""


def _unknown(_name: str) -> dict[str, Any] | None:
    return None


def resume_value(interrupt: dict[str, Any], body: ResumeBody, parameters: Parameters = _unknown) -> Any:
    """The value LangGraph resumes with, or InvalidArgument if the body does not fit the interrupt
    (an ``edit``'s args are checked against the tool's parameters when the tool is known)."""
    if interrupt.get("kind") == "question":
        if body.decisions is not None:
            raise InvalidArgument(
                'this run asked a question: resume with {"answer": "..."} and no decisions',
                {"field": "decisions"},
            )
        if body.answer is None or not body.answer.strip():
            raise InvalidArgument(
                'this run asked a question: resume with {"answer": "..."}', {"field": "answer"}
            )
        return body.answer
    actions = interrupt.get("actions") or []
    decisions = body.decisions
    if body.answer is not None or decisions is None or len(decisions) != len(actions):
        extra = " and no answer" if body.answer is not None else ""
        raise InvalidArgument(
            f"this run waits for approval of {len(actions)} action(s): resume with one decision per action"
            + extra,
            {
                "field": "answer" if body.answer is not None else "decisions",
                "expected_decisions": len(actions),
            },
        )
    return {
        "decisions": [
            _decision(i, d, a, parameters) for i, (d, a) in enumerate(zip(decisions, actions, strict=True))
        ]
    }


# The fields each kind of decision may carry; anything else does not fit the interrupt.
_FIELDS = {"approve": {"type"}, "edit": {"type", "args"}, "reject": {"type", "message"}}


def _decision(
    index: int, decision: dict[str, Any], action: dict[str, Any], parameters: Parameters
) -> dict[str, Any]:
    kind = decision.get("type")
    extra = sorted(set(decision) - _FIELDS.get(kind, set(decision))) if isinstance(kind, str) else []
    if extra:
        raise InvalidArgument(
            f"decision {index}: {kind} takes no {', '.join(repr(k) for k in extra)}",
            {"index": index, "fields": extra},
        )
    if kind == "approve":
        return {"type": "approve"}
    if kind == "edit":
        args = decision.get("args")
        if not isinstance(args, dict):
            raise InvalidArgument(f"decision {index}: edit needs an 'args' object", {"index": index})
        _check_args(index, action["name"], args, parameters(action["name"]))
        return {"type": "edit", "edited_action": {"name": action["name"], "args": args}}
    if kind == "reject":
        message = decision.get("message")
        if message is not None and not isinstance(message, str):
            raise InvalidArgument(f"decision {index}: reject 'message' must be a string", {"index": index})
        return {"type": "reject", "message": message} if message else {"type": "reject"}
    raise InvalidArgument(f"decision {index}: type must be approve, edit or reject", {"index": index})


def _check_args(index: int, tool: str, args: dict[str, Any], schema: dict[str, Any] | None) -> None:
    """Refuse edited args the tool would refuse: the human hears it now (422), not as a tool error
    after the run resumed. A schema that is not valid JSON Schema (an MCP server's) checks nothing."""
    if not schema:
        return
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError:
        return
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if errors:
        found = [
            {"path": "/".join(str(p) for p in e.absolute_path), "message": e.message} for e in errors[:10]
        ]
        raise InvalidArgument(
            f"decision {index}: the edited args do not fit {tool}'s parameters: {errors[0].message}",
            {"index": index, "tool": tool, "errors": found},
        )


async def request_resume(
    session: AsyncSession,
    run_id: str,
    body: ResumeBody,
    answerer: Actor,
    *,
    asked_only: bool = False,
    parameters: Parameters = _unknown,
) -> tuple[Run, Actor]:
    """Record ``answerer``'s answer and wake the bot. With ``asked_only`` (an actor token), only an
    actor whose mailbox got the question may answer it."""
    run = await session.get(Run, run_id, with_for_update=True)  # one answer, and never after a cancel
    if run is None:
        raise NotFound(f"run {run_id} not found", {"run_id": run_id})
    if run.status != RunStatus.WAITING_HUMAN or run.interrupt is None:
        raise Conflict(f"run {run_id} is {run.status}, not waiting_human", {"status": run.status})
    if asked_only and not await _was_asked(session, run.id, answerer.id):
        raise Forbidden(
            f"run {run_id}'s question did not reach @{answerer.handle}",
            {"run_id": run_id, "actor": answerer.handle},
        )
    value = resume_value(run.interrupt, body, parameters)
    bot = await session.get(Actor, run.bot_id)
    if bot is None:
        raise NotFound(f"run {run_id} has no bot", {"run_id": run_id})
    pending = await session.scalar(
        select(func.count())
        .select_from(InboxItem)
        .where(
            InboxItem.run_id == run.id, InboxItem.kind == ItemKind.RESUME, InboxItem.status.in_(OPEN_ITEMS)
        )
    )
    if pending:
        raise Conflict(f"run {run_id} already has an answer on its way")
    questions = list(
        await session.scalars(
            select(InboxItem).where(
                InboxItem.run_id == run.id,
                InboxItem.kind == ItemKind.QUESTION,
                InboxItem.status == ItemStatus.QUEUED,
            )
        )
    )
    for question in questions:
        question.status = check(ItemStatus, question.status, ItemStatus.DONE)
        question.updated_at = now(session)
    await announce(session, questions)
    await add_run_event(session, run, "resumed", {"value": value, "answered_by": answerer.handle})
    await enqueue(session, bot, run.thread_id, kind=ItemKind.RESUME, run_id=run.id)
    log_run(
        session,
        "run.resume_requested",
        f"@{answerer.handle} answered @{bot.handle}",
        run,
        bot,
        detail={"answered_by": answerer.handle},
    )
    return run, bot


async def _was_asked(session: AsyncSession, run_id: str, actor_id: str) -> bool:
    """Whether the run's question reached this actor's mailbox (whatever became of the item)."""
    found = await session.scalar(
        select(InboxItem.id).where(
            InboxItem.run_id == run_id, InboxItem.kind == ItemKind.QUESTION, InboxItem.actor_id == actor_id
        )
    )
    return found is not None


async def resume_payload(session: AsyncSession, run_id: str) -> Any:
    """The value of the latest ``resumed`` event: what the human decided."""
    event = await session.scalar(
        select(RunEvent)
        .where(RunEvent.run_id == run_id, RunEvent.type == "resumed")
        .order_by(RunEvent.seq.desc())
    )
    return event.payload.get("value") if event else None
