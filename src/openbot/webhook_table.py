"""``openbot webhooks``: deliveries to external actors' webhooks, and retrying one.

Ids are shown by their last characters; ``--retry`` accepts that short form, or any unambiguous
end or start of the id.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import Client
from openbot.tables import clipped_column, fit_widths, new_table
from openbot.thread_refs import pick_id, short_id

STYLE = {"delivered": "green", "pending": "yellow", "failed": "bold red"}


def delivery_table(deliveries: list[dict[str, Any]], width: int) -> Table:
    """Newest first: to whom, what, how it went, and the last error if any."""
    table = new_table("Webhook deliveries")
    actor = max((len(d["actor"]) + 1 for d in deliveries), default=6)
    (error,) = fit_widths(width, [8, actor, 9, 8], [1])
    table.add_column("ID", style="dim", no_wrap=True)
    table.add_column("Actor", style="bold cyan", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    table.add_column("Attempts", justify="right", no_wrap=True)
    clipped_column(table, "Last error", error)
    for d in deliveries:
        status = d["status"]
        table.add_row(
            short_id(d["id"]),
            "@" + d["actor"],
            f"[{STYLE.get(status, '')}]{status}[/]",
            str(d["attempts"]),
            escape(d["last_error"] or ""),
        )
    return table


def resolve(deliveries: list[dict[str, Any]], ref: str) -> str:
    """The id of the delivery ``ref`` names: a whole id, or its unique start or end."""
    return pick_id([d["id"] for d in deliveries], ref, "delivery", "deliveries", "webhooks")


def print_deliveries(
    server: str, token: str | None, *, actor: str | None, status: str | None, retry: str | None
) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        if retry is not None:
            delivery = client.retry_delivery(resolve(client.deliveries(), retry))
            console.print(f"retrying {short_id(delivery['id'])} to @{delivery['actor']} now")
            return
        console.print(delivery_table(client.deliveries(actor=actor, status=status), console.width))
