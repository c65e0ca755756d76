"""Unrolling a thread into the model's context (DESIGN §6, seed openbot §6).

A bot has no memory of a thread between runs: every run rebuilds its context from the thread's
messages. The default bot (and the only bot of a thread) sees the whole thread; every other bot is
a delegate and sees only what was addressed to it, its own replies and this run's triggers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    AI = "ai"
    HUMAN = "human"


@dataclass(frozen=True)
class HistoryMessage:
    id: str
    sender: str | None  # handle; None for system notices
    sender_name: str
    content: str
    mentions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Turn:
    role: Role
    text: str


@dataclass(frozen=True)
class History:
    turns: tuple[Turn, ...]
    shown: int
    left_out: int  # messages of the thread not shown (older, or out of this bot's scope)
    scoped: bool

    def note(self) -> str | None:
        if not self.left_out:
            return None
        why = "are out of your view or older than what fits" if self.scoped else "are older than what fits"
        return (
            f"{self.left_out} other message(s) in this thread {why} and are not shown. "
            "Use read_history (chronological paging) or recall_messages (search) to fetch them."
        )


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 1


def is_scoped(bot: str, default_bot: str | None, bots_in_thread: Sequence[str]) -> bool:
    """A delegate: not the thread's default bot, and not the only bot in the thread."""
    return bot != default_bot and len(set(bots_in_thread)) > 1


def unroll(
    messages: Sequence[HistoryMessage],
    *,
    bot: str,
    triggers: frozenset[str],
    scoped: bool,
    token_budget: int = 24_000,
    max_messages: int = 80,
) -> History:
    """Pick the newest messages that fit and render them as alternating turns.

    Triggers always make it in (they are what the run answers), even past the budget.
    """
    candidates = [
        m for m in messages if not scoped or m.sender == bot or bot in m.mentions or m.id in triggers
    ]
    chosen: list[HistoryMessage] = []
    tokens = 0
    for message in reversed(candidates):
        cost = estimate_tokens(message.content) + 8
        over = len(chosen) >= max_messages or tokens + cost > token_budget
        if over and message.id not in triggers:
            break
        chosen.append(message)
        tokens += cost
    chosen.reverse()
    return History(
        turns=tuple(_render(chosen, bot=bot, triggers=triggers)),
        shown=len(chosen),
        left_out=len(messages) - len(chosen),
        scoped=scoped,
    )


def _render(messages: Sequence[HistoryMessage], *, bot: str, triggers: frozenset[str]) -> list[Turn]:
    turns: list[Turn] = []
    pending: list[str] = []
    for message in messages:
        if message.sender == bot:
            if pending:
                turns.append(Turn(Role.HUMAN, "\n\n".join(pending)))
                pending = []
            turns.append(Turn(Role.AI, message.content))
            continue
        marker = " (new)" if message.id in triggers else ""
        name = message.sender_name if message.sender else "system"
        pending.append(f"[{name}]{marker}: {message.content}")
    if pending:
        turns.append(Turn(Role.HUMAN, "\n\n".join(pending)))
    return turns
