"""The system prompt a bot sees at the start of every run (DESIGN §6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RosterEntry:
    handle: str
    name: str
    description: str
    kind: str = "bot"


@dataclass(frozen=True)
class PromptInput:
    handle: str
    name: str
    description: str
    instructions: str
    thread_title: str
    participants: tuple[RosterEntry, ...]
    default_bot: str | None
    roster: tuple[RosterEntry, ...]  # every other enabled bot
    scoped: bool
    trigger_count: int
    tools: tuple[str, ...]
    approval_tools: tuple[str, ...] = ()
    working_directory: str | None = None
    todos: tuple[tuple[str, str], ...] = ()  # (status, content)
    memories: tuple[str, ...] = ()
    history_note: str | None = None


def render_system_prompt(p: PromptInput) -> str:
    parts = [
        f"You are {p.name} (@{p.handle}). {p.description}".strip(),
        p.instructions.strip(),
        "## How this workspace works",
        _platform_rules(p),
    ]
    if p.roster:
        parts += ["## Other bots you can hand off to", _entries(p.roster)]
    if p.memories:
        parts += ["## What you have learned (your memory)", "\n".join(f"- {m}" for m in p.memories[:8])]
    if p.todos:
        parts += ["## Your todo list for this thread", "\n".join(f"- [{s}] {c}" for s, c in p.todos)]
    return "\n\n".join(part for part in parts if part)


def _platform_rules(p: PromptInput) -> str:
    default = f"@{p.default_bot}" if p.default_bot else "@chief_of_staff"
    rules = [
        f'You are working in the thread "{p.thread_title}". Participants:\n{_entries(p.participants)}',
        f"The thread's coordinating bot is {default}.",
        f"Messages marked (new) are the {p.trigger_count} message(s) you are answering now; "
        "your reply is posted to the thread.",
        "Mentioning @handle in your reply wakes that bot: only the FIRST bot you mention is woken, "
        "later mentions are just recorded. A reply that mentions no bot ends the exchange. "
        "Delegate in this thread, never elsewhere.",
        "Delegates only see messages addressed to them: every hand-off must be self-contained "
        "(goal, relevant paths or numbers, acceptance criteria, what to report back).",
        "ask_human pauses your run until a human answers; use it when you cannot proceed safely.",
    ]
    if p.scoped:
        rules.append(
            "You are a delegate here: you see only messages that mention you, your own replies and "
            "the new messages. Use read_history or recall_messages for the rest of the thread."
        )
    if p.history_note:
        rules.append(p.history_note)
    if p.approval_tools:
        rules.append(f"These tools need a human's approval before they run: {', '.join(p.approval_tools)}.")
    if p.working_directory:
        rules.append(f"The thread's working directory is {p.working_directory}.")
    rules.append(f"Your tools: {', '.join(p.tools)}.")
    return "\n".join(f"- {rule}" for rule in rules)


def _entries(entries: Sequence[RosterEntry]) -> str:
    lines = []
    for e in entries:
        about = f": {e.description}" if e.description else ""
        lines.append(f"  - @{e.handle} ({e.kind}, {e.name}){about}")
    return "\n".join(lines)
