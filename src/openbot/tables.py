"""The ``openbot threads`` / ``bots`` / ``activity`` tables, and time formatting shared with chat."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import Client


def parse_time(iso: str) -> datetime:
    """An API timestamp; one without an offset is UTC."""
    stamp = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def clock(iso: str | None) -> str:
    if not iso:
        return "--:--"
    try:
        return parse_time(iso).astimezone().strftime("%H:%M")
    except ValueError:
        return iso[11:16]


def ago(iso: str | None) -> str:
    if not iso:
        return "never"
    try:
        then = parse_time(iso)
    except ValueError:
        return iso
    seconds = int((datetime.now(UTC) - then).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    return then.astimezone().strftime("%Y-%m-%d")


def print_thread_table(client: Client, console: Console) -> list[Any]:
    threads = sorted(
        client.threads(), key=lambda t: t.get("last_message_at") or t.get("created_at") or "", reverse=True
    )
    table = Table(title="Threads", title_justify="left", expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("Title", style="bold")
    table.add_column("Kind")
    table.add_column("Participants")
    table.add_column("Last activity")
    table.add_column("Unread", justify="right")
    table.add_column("Action", justify="right")
    table.add_column("ID", style="dim", overflow="fold")
    for i, t in enumerate(threads, 1):
        unread = t.get("unread") or 0
        action = t.get("needs_action") or 0
        table.add_row(
            str(i),
            escape(t.get("title") or "Untitled"),
            t.get("kind", "task"),
            " ".join("@" + p["handle"] for p in t.get("participants", [])),
            ago(t.get("last_message_at") or t.get("created_at")),
            f"[bold]{unread}[/]" if unread else "",
            f"[yellow]{action}[/]" if action else "",
            t["id"],
        )
    if not threads:
        console.print("[dim]No threads yet.[/]")
    else:
        console.print(table)
    return threads


def _bot_state(bot: dict[str, Any]) -> str:
    state = bot.get("state") or {}
    parts = []
    if bot.get("enabled") is False:
        parts.append("[red]disabled[/]")
    if state.get("running_threads"):
        parts.append(f"[green]running[/] in {len(state['running_threads'])} thread(s)")
    if state.get("waiting_threads"):
        parts.append(f"[yellow]waiting for a human[/] in {len(state['waiting_threads'])} thread(s)")
    if not parts or parts == ["[red]disabled[/]"]:
        parts.append(str(state.get("status") or "idle"))
    return ", ".join(parts)


def print_threads(server: str, token: str | None) -> None:
    with Client(server, token) as client:
        print_thread_table(client, Console(highlight=False))


def print_bots(server: str, token: str | None) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        bots = sorted(client.bots(), key=lambda b: b["handle"])
        threads = {t["id"]: t.get("title") or t["id"] for t in client.threads()}
    table = Table(title="Bots", title_justify="left")
    table.add_column("Handle", style="bold cyan")
    table.add_column("Name")
    table.add_column("Model")
    table.add_column("State")
    table.add_column("Threads")
    table.add_column("Queue", justify="right")
    table.add_column("Parallel", justify="right")
    table.add_column("Approval tools")
    for bot in bots:
        state = bot.get("state") or {}
        busy = [*state.get("running_threads", []), *state.get("waiting_threads", [])]
        table.add_row(
            "@" + bot["handle"],
            escape(bot.get("name") or ""),
            escape(bot.get("model") or ""),
            _bot_state(bot),
            escape(", ".join(threads.get(t, t) for t in busy)),
            str(state.get("queue_depth", 0)),
            str(bot.get("max_parallel_threads", 1)),
            escape(", ".join(bot.get("approval_tools") or [])),
        )
    console.print(table)


_LEVEL_STYLE = {"debug": "dim", "info": "blue", "warning": "yellow", "error": "bold red"}


def _activity_row(row: dict[str, Any]) -> tuple[str, ...]:
    level = str(row.get("level") or "info")
    style = _LEVEL_STYLE.get(level, "")
    return (
        clock(row.get("created_at")),
        f"[{style}]{level}[/]" if style else level,
        escape(str(row.get("event") or "")),
        "@" + row["actor"] if row.get("actor") else "",
        escape(str(row.get("summary") or "")),
    )


def print_activity(server: str, token: str | None, follow: bool) -> None:
    console = Console(highlight=False)
    client = Client(server, token)
    rows = client.activity(limit=50)  # the newest rows, oldest first
    table = Table(title="Activity", title_justify="left")
    for name, justify in (
        ("Time", "left"),
        ("Level", "left"),
        ("Event", "left"),
        ("Actor", "left"),
        ("Summary", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*_activity_row(row))
    console.print(table)
    if not follow:
        client.close()
        return
    console.print("[dim]Following… (Ctrl-C to stop)[/]")
    since: int | None = None
    newest = max((int(r["id"]) for r in rows), default=0)

    def show(row: dict[str, Any]) -> None:
        nonlocal newest
        if int(row.get("id") or 0) <= newest:
            return
        newest = int(row["id"])
        console.print("  ".join(_activity_row(row)), highlight=False, soft_wrap=True)

    try:
        while True:
            try:
                for event in client.events(since=since):
                    if event.id is not None:
                        since = event.id
                    if event.event == "activity.created" and isinstance(event.data, dict):
                        show(event.data)
                    elif event.id is not None:
                        # activity.created is live-only: catch up on rows written meanwhile.
                        for row in client.activity(after_id=newest, limit=500):
                            show(row)
            except httpx.TransportError:
                console.print("[red]connection lost; reconnecting…[/]")
                time.sleep(1.0)  # back-off before reconnecting
    except KeyboardInterrupt:
        console.print()
    finally:
        client.close()
