"""The ``openbot threads`` / ``bots`` / ``activity`` tables, and time formatting shared with chat.

Every table fits an 80-column terminal: ids are shortened (``thread_refs.short_id``, which every
command accepts back), long cells end in an ellipsis rather than wrap, and only the activity
summary (the diagnostic text itself) wraps within its column.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import ApiError, Client, Event, Thread
from openbot.thread_refs import SHORT_ID, listed_threads, short_id


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


def new_table(title: str | None, *, expand: bool = False) -> Table:
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        expand=expand,
        show_header=title is not None,
    )


def clipped_column(table: Table, name: str, width: int, **options: object) -> None:
    """A column whose cells stay on one line and end in "…" past ``width``."""
    table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=width, **options)  # type: ignore[arg-type]


def fit_widths(width: int, fixed: list[int], shares: list[int]) -> list[int]:
    """Widths for the clipped columns: what the ``fixed`` columns and the gaps (three characters
    a column, edges included) leave of ``width``, shared in proportion to ``shares``, at least 8 each.
    (Rich would squeeze every column alike, ids and counts included, rather than clip long ones.)"""
    spare = width - sum(fixed) - 3 * (len(fixed) + len(shares))
    return [max(8, spare * share // sum(shares)) for share in shares]


def thread_table(threads: list[Thread], width: int) -> Table:
    table = new_table("Threads")
    number = len(str(len(threads)))
    title, people = fit_widths(width, [number, SHORT_ID, 10, 6, 6], [3, 2])
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("ID", style="dim", no_wrap=True)
    clipped_column(table, "Title", title, style="bold")
    clipped_column(table, "With", people)
    table.add_column("Last", no_wrap=True)
    table.add_column("Unread", justify="right", no_wrap=True)
    table.add_column("Action", justify="right", no_wrap=True)
    for i, t in enumerate(threads, 1):
        unread = t.get("unread") or 0
        action = t.get("needs_action") or 0
        title = escape(t.get("title") or "Untitled")
        table.add_row(
            str(i),
            short_id(t["id"]),
            f"#{title}" if t.get("kind") == "channel" else title,
            " ".join("@" + p["handle"] for p in t.get("participants", [])),
            ago(t.get("last_message_at") or t.get("created_at")),
            f"[bold]{unread}[/]" if unread else "",
            f"[yellow]{action}[/]" if action else "",
        )
    return table


def print_thread_table(client: Client, console: Console) -> list[Thread]:
    """Print the numbered listing (``/switch N`` and ``openbot post N`` use its numbers)."""
    threads = listed_threads(client)
    if not threads:
        console.print("[dim]No threads yet.[/]")
    else:
        console.print(thread_table(threads, console.width))
    return threads


def _bot_state(bot: dict[str, Any]) -> str:
    state = bot.get("state") or {}
    parts = []
    if bot.get("enabled") is False:
        parts.append("[red]disabled[/]")
    if state.get("running_threads"):
        parts.append(f"[green]running[/] ×{len(state['running_threads'])}")
    if state.get("waiting_threads"):
        parts.append(f"[yellow]waiting[/] ×{len(state['waiting_threads'])}")
    if not parts or parts == ["[red]disabled[/]"]:
        parts.append(escape(str(state.get("status") or "idle")))
    return ", ".join(parts)


def bot_table(bots: list[dict[str, Any]], titles: dict[str, str], width: int) -> Table:
    """Bots by handle. ``State`` counts the threads a bot runs in or waits in for a human (×N);
    ``Threads`` names them; ``Max`` is its parallel-thread ceiling."""
    table = new_table("Bots")
    handle = max((len(b["handle"]) + 1 for b in bots), default=6)
    model, state, busy, approval = fit_widths(width, [handle, 5, 3], [3, 3, 2, 3])
    table.add_column("Handle", style="bold cyan", no_wrap=True)
    clipped_column(table, "Model", model)
    clipped_column(table, "State", state)
    clipped_column(table, "Threads", busy)
    table.add_column("Queue", justify="right", no_wrap=True)
    table.add_column("Max", justify="right", no_wrap=True)
    clipped_column(table, "Approval", approval)
    for bot in sorted(bots, key=lambda b: b["handle"]):
        state = bot.get("state") or {}
        busy = [*state.get("running_threads", []), *state.get("waiting_threads", [])]
        table.add_row(
            "@" + bot["handle"],
            escape(bot.get("model") or ""),
            _bot_state(bot),
            escape(", ".join(titles.get(t, short_id(t)) for t in busy)),
            str(state.get("queue_depth", 0)),
            str(bot.get("max_parallel_threads", 1)),
            escape(", ".join(bot.get("approval_tools") or [])),
        )
    return table


def print_threads(server: str, token: str | None) -> None:
    with Client(server, token) as client:
        print_thread_table(client, Console(highlight=False))


def print_bots(server: str, token: str | None) -> None:
    with Client(server, token) as client:
        bots = client.bots()
        titles = {t["id"]: t.get("title") or short_id(t["id"]) for t in client.threads()}
    console = Console(highlight=False)
    console.print(bot_table(bots, titles, console.width))


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


def activity_table(rows: list[dict[str, Any]], title: str | None = "Activity") -> Table:
    """The timeline; without a title, rows alone in the same columns (what ``--follow`` prints)."""
    table = new_table(title, expand=True)
    table.add_column("Time", width=5, no_wrap=True)
    table.add_column("Level", width=7, no_wrap=True)
    table.add_column("Event", width=20, no_wrap=True, overflow="ellipsis")
    table.add_column("Actor", width=12, no_wrap=True, overflow="ellipsis")
    table.add_column("Summary", ratio=1)  # wraps: it is the diagnostic itself
    for row in rows:
        table.add_row(*_activity_row(row))
    return table


def print_activity(server: str, token: str | None, follow: bool) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        if follow:
            ActivityFollower(client, console).run()
        else:
            console.print(activity_table(client.activity(limit=50)))  # the newest rows, oldest first


class ActivityFollower:
    """``openbot activity --follow``: the newest rows, then each new one as it is written.

    ``activity.created`` is live-only (no journal id, no replay), so the event stream is subscribed
    before the table is read and "Following…" printed: a row written in between arrives on the
    stream too, and rows are shown once each, by id. After a reconnect, rows written while the
    stream was down are read before following again."""

    def __init__(self, client: Client, console: Console) -> None:
        self.client = client
        self.console = console
        self.newest = 0  # the highest activity id shown
        self.since: int | None = None  # the last journal id seen, to resume the stream

    def run(self) -> None:
        try:
            with self.client.subscribe() as stream:  # failing here is the command's to report
                rows = self.client.activity(limit=50)
                self.console.print(activity_table(rows))
                self.newest = max((int(r["id"]) for r in rows), default=0)
                self.console.print("[dim]Following… (Ctrl-C to stop)[/]")
                self.follow(stream)
            while True:  # one line when the connection goes, one when it is back
                self.console.print("[red]connection lost; reconnecting…[/]")
                while not self.reconnect():
                    pass
        except KeyboardInterrupt:
            self.console.print()

    def reconnect(self) -> bool:
        """Wait a second, then follow again until the stream ends; False if it could not connect."""
        time.sleep(1.0)  # back-off before reconnecting
        try:
            with self.client.subscribe(since=self.since) as stream:
                self.catch_up()
                self.console.print("[green]reconnected[/]")
                self.follow(stream)
        except (httpx.TransportError, ApiError):
            return False
        return True

    def follow(self, stream: Iterator[Event]) -> None:
        try:
            for event in stream:
                if event.id is not None:
                    self.since = event.id
                if event.event == "activity.created" and isinstance(event.data, dict):
                    self.show(event.data)
                elif event.id is not None:
                    self.catch_up()  # rows another process wrote reach this one by the journal
        except httpx.TransportError:
            return

    def catch_up(self) -> None:
        for row in self.client.activity(after_id=self.newest, limit=500):
            self.show(row)

    def show(self, row: dict[str, Any]) -> None:
        if int(row.get("id") or 0) <= self.newest:
            return
        self.newest = int(row["id"])
        self.console.print(activity_table([row], title=None))
