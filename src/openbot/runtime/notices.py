"""The system notices the runtime posts in a thread, in one place.

A notice is a system message (it wakes nobody, invariant 9) that says why something did not
happen the way a reader of the thread would expect: the hop limit stopped a hand-off, a hand-off
is held, a run failed or was cancelled. Its ``metadata.kind`` lets clients render it specially.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Notice:
    text: str
    metadata: dict[str, Any]
    hop: int = 0
    run_id: str | None = None


def handles(names: Iterable[str]) -> str:
    return ", ".join(f"@{h}" for h in names)


def unknown_mentions(found: Iterable[tuple[str, str | None]]) -> str:
    """``@enginer is not a member — did you mean @engineer?`` for each (handle, suggestion)."""
    return "; ".join(
        f"@{handle} is not a member" + (f" — did you mean @{suggestion}?" if suggestion else "")
        for handle, suggestion in found
    )


def hop_limit(max_hops: int, hop: int) -> Notice:
    return Notice(
        f"Hop limit reached ({max_hops} bot-to-bot hand-offs since the last human message). "
        "Bots will not wake each other in this thread until a human posts.",
        {"kind": "hop_limit", "max_hops": max_hops},
        hop=hop,
    )


def handoff_held(sender: str, targets: list[str], message_id: str, hop: int) -> Notice:
    return Notice(
        f"Hand-off from @{sender} to {handles(targets)} is held until @{sender} has handled "
        "the messages still waiting for it in this thread; it will be delivered automatically.",
        {"kind": "handoff_held", "sender": sender, "targets": targets, "message_id": message_id},
        hop=hop,
    )


def run_failed(bot: str, run_id: str, hop: int, error: dict[str, Any]) -> Notice:
    """A run ended in an error of its own (the model or a tool failed)."""
    return Notice(
        f"@{bot}'s run failed ({error.get('code')}): {error.get('message')}",
        {"kind": "run_failed", "run_id": run_id, "bot": bot, "error": error},
        hop=hop,
        run_id=run_id,
    )


def run_ended(
    bot: str,
    run_id: str,
    hop: int,
    *,
    cancelled: bool,
    error: dict[str, Any],
    requeued: int,
    exhausted: int = 0,
    max_attempts: int = 0,
) -> Notice:
    """A run stopped from outside: cancelled by a human, or failed by a restart or lease takeover
    (``exhausted``: messages it held that had had their ``max_attempts`` and are given up on)."""
    text = f"@{bot}'s run was cancelled." if cancelled else f"@{bot}'s run failed: {error.get('message')}."
    if requeued:
        text += f" {requeued} message(s) it was handling are queued again."
    if exhausted:
        text += (
            f" {exhausted} message(s) it was handling had been tried {max_attempts} times"
            " and will not be answered (attempts_exhausted)."
        )
    return Notice(
        text,
        {
            "kind": "run_cancelled" if cancelled else "run_failed",
            "run_id": run_id,
            "bot": bot,
            "error": error,
            "requeued": requeued,
            "exhausted": exhausted,
        },
        hop=hop,
        run_id=run_id,
    )


def resumed_again(bot: str, run_id: str, hop: int, why: str = "") -> Notice:
    """A resumed run was cut off (a restart, or a lease takeover): it resumes again with the answer."""
    return Notice(
        f"@{bot}'s run was interrupted while it resumed ({why or 'the server restarted'}); "
        "it resumes again with the answer already given.",
        {"kind": "run_resumed_again", "run_id": run_id, "bot": bot},
        hop=hop,
        run_id=run_id,
    )
