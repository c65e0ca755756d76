"""``openbot drafts``: what bots staged for a person to send, and sending or rejecting one.

Ids are shown by their last characters; ``--send`` and ``--reject`` accept that short form, or any
unambiguous end or start of the id.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import Client
from openbot.tables import clipped_column, fit_widths, new_table
from openbot.thread_refs import pick_id, short_id


def draft_table(drafts: list[dict[str, Any]], status: str, width: int) -> Table:
    """Drafts oldest first: who wrote it, whom it goes to, its title and the start of its content."""
    table = new_table(f"Drafts ({status})")
    bot = max((len(d["bot"]) + 1 for d in drafts), default=4)
    to = max((len(d["target"].get("actor") or "thread") + 1 for d in drafts), default=6)
    title, content = fit_widths(width, [8, bot, to], [2, 3])
    table.add_column("ID", style="dim", no_wrap=True)
    table.add_column("Bot", style="bold cyan", no_wrap=True)
    table.add_column("To", no_wrap=True)
    clipped_column(table, "Title", title)
    clipped_column(table, "Content", content)
    for draft in drafts:
        actor = draft["target"].get("actor")
        table.add_row(
            short_id(draft["id"]),
            "@" + draft["bot"],
            "@" + actor if actor else "thread",
            escape(draft["title"]),
            escape(" ".join(draft["content"].split())),
        )
    return table


def destination(draft: dict[str, Any]) -> str:
    """``@partner in thr…1234`` or ``thread thr…1234``."""
    thread = short_id(draft["target"].get("thread_id") or draft["thread_id"])
    actor = draft["target"].get("actor")
    return f"@{actor} in {thread}" if actor else f"thread {thread}"


def resolve(client: Client, ref: str) -> str:
    """The id of the draft ``ref`` names: a whole id, or its unique start or end."""
    return pick_id([d["id"] for d in client.drafts()], ref, "draft", "drafts", "drafts")


def print_drafts(
    server: str,
    token: str | None,
    *,
    status: str,
    send: str | None,
    content: str | None,
    reject: str | None,
    reason: str | None,
) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        if send is not None:
            sent = client.approve_draft(resolve(client, send), content)
            console.print(f"sent {short_id(sent['id'])} as @{sent['bot']} ({escape(destination(sent))})")
            return
        if reject is not None:
            rejected = client.reject_draft(resolve(client, reject), reason)
            bot = rejected["bot"]
            console.print(f"rejected {short_id(rejected['id'])}; @{bot} will read why in its thread")
            return
        console.print(draft_table(client.drafts(status=status), status, console.width))
