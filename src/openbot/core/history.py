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
    at_least: bool = False  # left_out is a lower bound: the thread was counted only so far

    def note(self) -> str | None:
        if not self.left_out:
            return None
        why = "are out of your view or older than what fits" if self.scoped else "are older than what fits"
        count = f"At least {self.left_out}" if self.at_least else str(self.left_out)
        return (
            f"{count} other message(s) in this thread {why} and are not shown. "
            "Use read_history (chronological paging) or recall_messages (search) to fetch them."
        )


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 1


def is_scoped(bot: str, default_bot: str | None, bots_in_thread: Sequence[str]) -> bool:
    """A delegate: not the thread's default bot, and not the only bot in the thread."""
    return bot != default_bot and len(set(bots_in_thread)) > 1


def in_view(message: HistoryMessage, *, bot: str, triggers: frozenset[str], scoped: bool) -> bool:
    """Whether ``message`` may be shown to ``bot``: a delegate sees only what mentions it, its own
    messages and its triggers."""
    return not scoped or message.sender == bot or bot in message.mentions or message.id in triggers


def window_rows(*, triggers: frozenset[str], max_messages: int) -> int:
    """How many of the thread's newest in-view messages always decide the window.

    The window is taken newest first and closes at the first non-trigger message that does not
    fit; among this many messages at least ``max_messages + 1`` are not triggers, and the last of
    those cannot fit. Nothing older can be shown, so a reader never needs more (DESIGN §6).
    """
    return max_messages + len(triggers) + 1


def unroll(
    messages: Sequence[HistoryMessage],
    *,
    bot: str,
    triggers: frozenset[str],
    scoped: bool,
    token_budget: int = 24_000,
    max_messages: int = 80,
    thread_size: int | None = None,
    at_least: bool = False,
) -> History:
    """Pick the newest messages that fit and render them as alternating turns.

    Triggers always make it in (they are what the run answers), even past the budget — down to
    the first message that does not fit. ``messages`` may be only the thread's newest (at least
    :func:`window_rows` of those in view, or all of them) and may leave out messages out of view;
    ``thread_size`` then counts the whole thread (``at_least``: a lower bound) for the note.
    """
    candidates = [m for m in messages if in_view(m, bot=bot, triggers=triggers, scoped=scoped)]
    chosen, _ = _choose(candidates, triggers=triggers, token_budget=token_budget, max_messages=max_messages)
    size = len(messages) if thread_size is None else max(thread_size, len(messages))
    return History(
        turns=tuple(_render(chosen, bot=bot, triggers=triggers)),
        shown=len(chosen),
        left_out=size - len(chosen),
        scoped=scoped,
        at_least=at_least,
    )


def window_closed(
    newest: Sequence[HistoryMessage],
    *,
    bot: str,
    triggers: frozenset[str],
    scoped: bool,
    token_budget: int = 24_000,
    max_messages: int = 80,
) -> bool:
    """Whether the thread's newest messages ``newest`` already decide the window: the walk from
    the newest stopped at a message that does not fit, so no older message can be shown."""
    candidates = [m for m in newest if in_view(m, bot=bot, triggers=triggers, scoped=scoped)]
    _, closed = _choose(candidates, triggers=triggers, token_budget=token_budget, max_messages=max_messages)
    return closed


def _choose(
    candidates: Sequence[HistoryMessage], *, triggers: frozenset[str], token_budget: int, max_messages: int
) -> tuple[list[HistoryMessage], bool]:
    """The newest candidates that fit (oldest first), and whether the walk stopped before the oldest."""
    chosen: list[HistoryMessage] = []
    tokens = 0
    closed = False
    for message in reversed(candidates):
        cost = estimate_tokens(message.content) + 8
        over = len(chosen) >= max_messages or tokens + cost > token_budget
        if over and message.id not in triggers:
            closed = True
            break
        chosen.append(message)
        tokens += cost
    chosen.reverse()
    return chosen, closed


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
