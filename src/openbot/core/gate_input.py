"""Tier 2's bounded input: what the cheap classification call is shown (DESIGN §7).

Up to 30 earlier messages in chronological order with who wrote them (person or bot), each body
cut to 2,000 characters keeping its opening and its ending, and the whole conversation capped at
32,000 characters by dropping the oldest history first. The message being judged is rendered once,
separately, and never dropped. Deciding whether to answer must cost far less than answering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HISTORY_MESSAGES = 30
BODY_CHARS = 2_000
TOTAL_CHARS = 32_000
MARKER = " […] "


@dataclass(frozen=True)
class Line:
    author: str  # handle, or "system"
    is_bot: bool
    text: str


def clip(text: str, limit: int = BODY_CHARS) -> str:
    """``text`` if it fits, else its head and tail around a marker, ``limit`` characters in all."""
    if len(text) <= limit:
        return text
    keep = limit - len(MARKER)
    head = keep - keep // 2
    return text[:head] + MARKER + text[len(text) - keep // 2 :]


def render(line: Line) -> str:
    who = f"@{line.author} (bot)" if line.is_bot else f"@{line.author}"
    return f"{who}: {clip(line.text)}"


def bounded(history: Sequence[Line], current: Line, total: int = TOTAL_CHARS) -> tuple[list[str], str]:
    """The history lines to show (oldest first) and the current message, within the bounds."""
    now = render(current)
    budget = total - len(now)
    kept: list[str] = []
    for line in reversed(history[-HISTORY_MESSAGES:]):
        text = render(line)
        if len(text) + 1 > budget:
            break
        budget -= len(text) + 1
        kept.append(text)
    kept.reverse()
    return kept, now


def prompt(bot: str, history: Sequence[Line], current: Line) -> str:
    """The classification question, with its bounded context."""
    lines, now = bounded(history, current)
    context = "\n".join(lines) or "(no earlier messages)"
    return (
        f"You are @{bot}, one participant in a shared conversation. Decide whether the NEW message "
        f"is addressed to you, continues a request you are already handling, or is only about you "
        f"(or for someone else). Answer with one word: engage or observe.\n\n"
        f"Earlier messages:\n{context}\n\nNEW message:\n{now}"
    )
