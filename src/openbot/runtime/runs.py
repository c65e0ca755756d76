"""Run state transitions, each one transaction with its journal rows (DESIGN §6).

queued → running → completed | failed | cancelled | waiting_human; waiting_human → running (resume)
or cancelled. Every transition of a running run is fenced by its lease token: a worker that lost
its lease cannot finish the run a second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Conflict, InvalidArgument, NotFound
from openbot.core.ids import new_id
from openbot.core.scheduling import Batch, ItemKind, QueuedItem, pick
from openbot.runtime.delivery import Delivery, enqueue, release_holds
from openbot.store.journal import append_event, log_activity, now
from openbot.store.models import (
    ACTIVE_RUN_STATUSES,
    Actor,
    BotProfile,
    InboxItem,
    Message,
    Run,
    RunEvent,
    Thread,
    ThreadParticipant,
)
from openbot.store.views import run_event_view, run_view


class StaleLease(Exception):
    """The run moved on without this worker (cancelled, or its lease was taken over)."""


@dataclass(frozen=True)
class Claim:
    run_id: str
    bot_id: str
    bot_handle: str
    thread_id: str
    token: int
    resume: bool
    item_ids: tuple[str, ...]
    trigger_ids: tuple[str, ...]
    hop: int
    at_ceiling: bool = False  # this claim filled the bot's last free thread


@dataclass
class Outcome:
    """What a run produced; the runner fills it in and ``finish`` writes it."""

    reply: str | None = None
    interrupt: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


async def journal_run(session: AsyncSession, run: Run, bot_handle: str) -> None:
    await append_event(session, "run.updated", run_view(run, bot_handle), run.thread_id)


async def add_run_event(session: AsyncSession, run: Run, type_: str, payload: dict[str, Any]) -> RunEvent:
    """Append the run's next event: the seq is computed inside the INSERT (one statement, not two)."""
    stamp = now()
    next_seq = (
        select(func.coalesce(func.max(RunEvent.seq), 0) + 1)
        .where(RunEvent.run_id == run.id)
        .scalar_subquery()
    )
    seq = (
        await session.execute(
            insert(RunEvent)
            .values(run_id=run.id, seq=next_seq, type=type_, payload=payload, created_at=stamp)
            .returning(RunEvent.seq)
        )
    ).scalar_one()
    # A detached copy of the row for the journal and the caller (the row itself is written).
    event = RunEvent(run_id=run.id, seq=int(seq), type=type_, payload=payload, created_at=stamp)
    await append_event(session, "run.event", run_event_view(event, run.thread_id), run.thread_id)
    return event


async def claim_next(
    session: AsyncSession, bot: Actor, profile: BotProfile, owner: str, lease_seconds: float
) -> Claim | None:
    """Pick the bot's next batch and turn it into a running run, or return None.

    The caller holds a global run slot. On PostgreSQL the bot row is locked first, so two
    processes claiming for one bot serialise here and the ceiling holds across them.
    """
    if session.bind.dialect.name == "postgresql":
        # NO KEY UPDATE: serialises claimers of this bot without blocking the foreign-key checks
        # of concurrent posts that enqueue mail for it.
        await session.execute(select(Actor.id).where(Actor.id == bot.id).with_for_update(key_share=True))
    active = (
        await session.execute(
            select(Run.thread_id, Run.status).where(Run.bot_id == bot.id, Run.status.in_(ACTIVE_RUN_STATUSES))
        )
    ).all()
    in_flight = [t for t, s in active if s in ("queued", "running")]
    if len(in_flight) >= max(1, profile.max_parallel_threads):
        return None
    parked = frozenset(t for t, s in active if s == "waiting_human")
    # Each item with its message's hop (a new run's hop is the highest of its triggers').
    loaded = (
        await session.execute(
            select(InboxItem, Message.hop)
            .outerjoin(Message, Message.id == InboxItem.message_id)
            .where(InboxItem.actor_id == bot.id, InboxItem.status == "queued")
            .order_by(InboxItem.id)
            .limit(1000)
        )
    ).all()
    rows = [item for item, _hop in loaded]
    hops = {item.id: hop for item, hop in loaded}
    queued = [
        QueuedItem(i.id, ItemKind(i.kind), i.thread_id, i.created_at.timestamp(), i.run_id) for i in rows
    ]
    batch = pick(queued, parked, frozenset(in_flight))
    if batch is None:
        return None
    by_id = {i.id: i for i in rows}
    items = [by_id[q.id] for q in batch.items]
    stamp = now()
    if batch.is_resume:
        run = await session.get(Run, items[0].run_id)
        if run is None or run.status != "waiting_human":
            items[0].status = "cancelled"
            items[0].updated_at = stamp
            return None
        run.status = "running"
    else:
        run = _new_run(bot, batch, items, hops, stamp)
        session.add(run)
    run.lease_owner = owner
    run.lease_token += 1
    run.lease_expires_at = stamp + timedelta(seconds=lease_seconds)
    for item in items:
        item.status = "processing"
        item.attempts += 1
        item.claimed_by_run = run.id
        item.updated_at = stamp
    await session.flush()
    await journal_run(session, run, bot.handle)
    log_activity(
        session,
        "run.resumed" if batch.is_resume else "run.started",
        f"@{bot.handle} {'resumed' if batch.is_resume else 'started'} a run on {len(items)} item(s)",
        thread_id=run.thread_id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run.id,
        detail={"items": [i.id for i in items], "triggers": run.trigger_message_ids},
    )
    return Claim(
        run_id=run.id,
        bot_id=bot.id,
        bot_handle=bot.handle,
        thread_id=run.thread_id,
        token=run.lease_token,
        resume=batch.is_resume,
        item_ids=tuple(i.id for i in items),
        trigger_ids=tuple(run.trigger_message_ids),
        hop=run.hop,
        at_ceiling=len(in_flight) + 1 >= max(1, profile.max_parallel_threads),
    )


def _new_run(
    bot: Actor, batch: Batch, items: Sequence[InboxItem], hops: dict[str, int | None], stamp: Any
) -> Run:
    trigger_ids = [item.message_id for item in items if item.message_id]
    found = [hop for item in items if item.message_id and (hop := hops.get(item.id)) is not None]
    run = Run(
        id=new_id("run"),
        bot_id=bot.id,
        thread_id=batch.thread_id,
        status="running",
        trigger_message_ids=trigger_ids,
        hop=max(found, default=0),
        input_tokens=0,
        output_tokens=0,
        model_calls=0,
        lease_token=0,
        created_at=stamp,
        started_at=stamp,
    )
    return run


async def fenced_run(session: AsyncSession, claim: Claim) -> Run:
    """Lock and return the run if this claim still owns it; raise StaleLease otherwise."""
    stmt = select(Run).where(Run.id == claim.run_id)
    if session.bind.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    run = await session.scalar(stmt)
    if run is None or run.status != "running" or run.lease_token != claim.token:
        raise StaleLease(claim.run_id)
    return run


async def finish(session: AsyncSession, claim: Claim, outcome: Outcome, delivery: Delivery) -> list[str]:
    """Write a run's outcome; returns the bot ids this woke (held hand-offs released)."""
    # The run (locked on PostgreSQL, as in fenced_run) with its bot and thread, in one statement.
    stmt = (
        select(Run, Actor, Thread)
        .join(Actor, Actor.id == Run.bot_id)
        .join(Thread, Thread.id == Run.thread_id)
        .where(Run.id == claim.run_id)
    )
    if session.bind.dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=Run)
    row = (await session.execute(stmt)).one_or_none()
    if row is None or row[0].status != "running" or row[0].lease_token != claim.token:
        raise StaleLease(claim.run_id)
    run, bot, thread = row
    stamp = now()
    run.input_tokens += outcome.input_tokens
    run.output_tokens += outcome.output_tokens
    run.model_calls += outcome.model_calls
    for type_, payload in outcome.events:
        await add_run_event(session, run, type_, payload)
    items = claim.item_ids

    if outcome.interrupt is not None:
        run.status = "waiting_human"
        run.interrupt = outcome.interrupt
        await add_run_event(session, run, "interrupt", outcome.interrupt)
        await _settle(session, items, "done", stamp)
        await deliver_question(session, run, thread, bot)
        await journal_run(session, run, bot.handle)
        log_activity(
            session,
            "run.waiting_human",
            f"@{bot.handle} is waiting for a human",
            thread_id=thread.id,
            actor_id=bot.id,
            actor_handle=bot.handle,
            run_id=run.id,
            detail=outcome.interrupt,
        )
        return []

    if outcome.error is not None:
        run.status = "failed"
        run.error = outcome.error
        run.finished_at = stamp
        await add_run_event(session, run, "error", outcome.error)
        await _settle(session, items, "failed", stamp)
        await journal_run(session, run, bot.handle)
        await delivery.post(
            session,
            thread,
            f"@{bot.handle}'s run failed ({outcome.error.get('code')}): {outcome.error.get('message')}",
            sender=None,
            hop=run.hop,
            run_id=run.id,
            metadata={"kind": "run_failed", "run_id": run.id, "bot": bot.handle, "error": outcome.error},
        )
        log_activity(
            session,
            "run.failed",
            f"@{bot.handle}'s run failed: {outcome.error.get('message')}",
            level="error",
            thread_id=thread.id,
            actor_id=bot.id,
            actor_handle=bot.handle,
            run_id=run.id,
            detail=outcome.error,
        )
    else:
        run.status = "completed"
        run.finished_at = stamp
        await _settle(session, items, "done", stamp)
        if outcome.reply:
            result = await delivery.post(
                session, thread, outcome.reply, sender=bot, hop=run.hop + 1, run_id=run.id
            )
            await add_run_event(session, run, "message", {"message_id": result.message.id})
        await journal_run(session, run, bot.handle)
        log_activity(
            session,
            "run.completed",
            f"@{bot.handle} completed a run",
            thread_id=thread.id,
            actor_id=bot.id,
            actor_handle=bot.handle,
            run_id=run.id,
        )
    return await release_holds(session, bot, thread.id)


async def has_mail(session: AsyncSession, bot_id: str) -> bool:
    """Whether the bot has anything queued at all (worth waking its worker for)."""
    row = await session.scalar(
        select(InboxItem.id).where(InboxItem.actor_id == bot_id, InboxItem.status == "queued").limit(1)
    )
    return row is not None


async def _settle(session: AsyncSession, item_ids: Sequence[str], status: str, stamp: Any) -> None:
    """Settle the claim's items that are still processing, in one UPDATE."""
    await session.execute(
        update(InboxItem)
        .where(InboxItem.id.in_(item_ids), InboxItem.status == "processing")
        .values(status=status, updated_at=stamp)
    )


async def deliver_question(session: AsyncSession, run: Run, thread: Thread, bot: Actor) -> None:
    """A question item for every human and external participant of the thread."""
    humans = await session.scalars(
        select(Actor)
        .join(ThreadParticipant, ThreadParticipant.actor_id == Actor.id)
        .where(ThreadParticipant.thread_id == thread.id, Actor.kind != "bot", Actor.deleted.is_(False))
    )
    for human in humans:
        await enqueue(session, human, thread.id, kind="question", run_id=run.id)


def resume_value(interrupt: dict[str, Any], body: dict[str, Any]) -> Any:
    """Validate a resume body against the run's interrupt; return the value LangGraph resumes with."""
    if interrupt.get("kind") == "question":
        answer = body.get("answer")
        if not isinstance(answer, str) or not answer.strip() or "decisions" in body:
            raise InvalidArgument('this run asked a question: resume with {"answer": "..."}')
        return answer
    actions = interrupt.get("actions") or []
    decisions = body.get("decisions")
    if "answer" in body or not isinstance(decisions, list) or len(decisions) != len(actions):
        raise InvalidArgument(
            f"this run waits for approval of {len(actions)} action(s): resume with one decision per action",
            {"expected_decisions": len(actions)},
        )
    out: list[dict[str, Any]] = []
    for index, (decision, action) in enumerate(zip(decisions, actions, strict=True)):
        kind = decision.get("type") if isinstance(decision, dict) else None
        if kind == "approve":
            out.append({"type": "approve"})
        elif kind == "edit":
            args = decision.get("args")
            if not isinstance(args, dict):
                raise InvalidArgument(f"decision {index}: edit needs an 'args' object", {"index": index})
            out.append({"type": "edit", "edited_action": {"name": action["name"], "args": args}})
        elif kind == "reject":
            message = decision.get("message")
            if message is not None and not isinstance(message, str):
                raise InvalidArgument(
                    f"decision {index}: reject 'message' must be a string", {"index": index}
                )
            out.append({"type": "reject", "message": message} if message else {"type": "reject"})
        else:
            raise InvalidArgument(f"decision {index}: type must be approve, edit or reject", {"index": index})
    return {"decisions": out}


async def request_resume(session: AsyncSession, run_id: str, body: dict[str, Any]) -> Run:
    run = await session.get(Run, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    if run.status != "waiting_human" or run.interrupt is None:
        raise Conflict(f"run {run_id} is {run.status}, not waiting_human", {"status": run.status})
    value = resume_value(run.interrupt, body)
    bot = await session.get(Actor, run.bot_id)
    assert bot is not None
    pending = await session.scalar(
        select(func.count())
        .select_from(InboxItem)
        .where(
            InboxItem.run_id == run.id,
            InboxItem.kind == "resume",
            InboxItem.status.in_(("queued", "processing")),
        )
    )
    if pending:
        raise Conflict(f"run {run_id} already has an answer on its way")
    stamp = now()
    await session.execute(
        update(InboxItem)
        .where(InboxItem.run_id == run.id, InboxItem.kind == "question", InboxItem.status == "queued")
        .values(status="done", updated_at=stamp)
    )
    await add_run_event(session, run, "resumed", {"value": value})
    await enqueue(session, bot, run.thread_id, kind="resume", run_id=run.id)
    log_activity(
        session,
        "run.resume_requested",
        f"a human answered @{bot.handle}",
        thread_id=run.thread_id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run.id,
    )
    return run


async def resume_payload(session: AsyncSession, run_id: str) -> Any:
    """The value of the latest ``resumed`` event: what the human decided."""
    event = await session.scalar(
        select(RunEvent)
        .where(RunEvent.run_id == run_id, RunEvent.type == "resumed")
        .order_by(RunEvent.seq.desc())
    )
    return event.payload.get("value") if event else None


async def cancel(session: AsyncSession, run_id: str, delivery: Delivery, reason: str = "cancelled") -> Run:
    run = await session.get(Run, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    if run.status not in ACTIVE_RUN_STATUSES:
        raise Conflict(f"run {run_id} is already {run.status}", {"status": run.status})
    await end_run(session, run, "cancelled", {"code": "cancelled", "message": reason}, delivery)
    return run


async def end_run(
    session: AsyncSession,
    run: Run,
    status: str,
    error: dict[str, Any],
    delivery: Delivery,
    *,
    requeue_items: bool = False,
    max_attempts: int = 3,
) -> None:
    """Cancel or fail a run that is not finishing by itself, and say so in the thread."""
    bot = await session.get(Actor, run.bot_id)
    thread = await session.get(Thread, run.thread_id)
    assert bot is not None and thread is not None
    stamp = now()
    run.status = status
    run.error = error
    run.finished_at = stamp
    run.lease_token += 1  # fence off whoever was running it
    await add_run_event(session, run, "error", error)
    items = list(
        await session.scalars(
            select(InboxItem).where(
                ((InboxItem.claimed_by_run == run.id) & (InboxItem.status == "processing"))
                | ((InboxItem.run_id == run.id) & (InboxItem.status == "queued"))
            )
        )
    )
    requeued = 0
    for item in items:
        if requeue_items and item.kind == "message" and item.attempts < max_attempts:
            item.status = "queued"
            item.claimed_by_run = None
            requeued += 1
        else:
            item.status = "cancelled" if status == "cancelled" else "failed"
        item.updated_at = stamp
    await journal_run(session, run, bot.handle)
    kind = "run_cancelled" if status == "cancelled" else "run_failed"
    text = (
        f"@{bot.handle}'s run was cancelled."
        if status == "cancelled"
        else f"@{bot.handle}'s run failed: {error.get('message')}."
    )
    if requeued:
        text += f" {requeued} message(s) it was handling are queued again."
    await delivery.post(
        session,
        thread,
        text,
        sender=None,
        hop=run.hop,
        run_id=run.id,
        metadata={"kind": kind, "run_id": run.id, "bot": bot.handle, "error": error, "requeued": requeued},
    )
    log_activity(
        session,
        f"run.{status}",
        text,
        level="warning",
        thread_id=thread.id,
        actor_id=bot.id,
        actor_handle=bot.handle,
        run_id=run.id,
        detail={**error, "requeued": requeued},
    )
