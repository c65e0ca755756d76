"""``openbot automations``: the automations table, one automation's occurrences, firing one now.

Ids are shown by their last characters (as ``openbot threads`` shows threads); every option that
takes an automation accepts that short form, or any unambiguous end or start of the id.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openbot.client import Client
from openbot.tables import ago, clipped_column, fit_widths, new_table
from openbot.thread_refs import pick_id, short_id


def schedule(automation: dict[str, Any]) -> str:
    """``0 9 * * 1-5 Europe/Paris`` or ``at 2026-01-01 09:00 UTC``."""
    if automation.get("cron"):
        zone = automation.get("timezone") or "UTC"
        return f"{automation['cron']}" + ("" if zone == "UTC" else f" {zone}")
    return f"at {str(automation.get('at') or '')[:16].replace('T', ' ')} UTC"


def automation_table(automations: list[dict[str, Any]], width: int) -> Table:
    """Automations, oldest first; ``Next`` says ``off`` when disabled (a one-shot that fired is)."""
    table = new_table("Automations")
    bot = max((len(a["bot"]) + 1 for a in automations), default=4)
    when, content = fit_widths(width, [6, bot, 11], [2, 1])
    table.add_column("ID", style="dim", no_wrap=True)
    table.add_column("Bot", style="bold cyan", no_wrap=True)
    clipped_column(table, "Schedule", when)
    table.add_column("Next (UTC)", no_wrap=True)
    clipped_column(table, "Content", content)
    for automation in automations:
        table.add_row(
            short_id(automation["id"]),
            "@" + automation["bot"],
            escape(schedule(automation)),
            _next(automation),
            escape(automation.get("title") or automation.get("content") or ""),
        )
    return table


def _next(automation: dict[str, Any]) -> str:
    if not automation["enabled"]:
        return "off"
    return str(automation.get("next_run_at") or "")[5:16].replace("T", " ") or "-"


def resolve(client: Client, ref: str) -> str:
    """The id of the automation ``ref`` names: a whole id, or its unique start or end."""
    return pick_id([a["id"] for a in client.automations()], ref, "automation", "automations", "automations")


def print_automations(server: str, token: str | None, *, run: str | None, history: str | None) -> None:
    console = Console(highlight=False)
    with Client(server, token) as client:
        if run is not None:
            occurrence = client.run_automation(resolve(client, run))
            thread = occurrence.get("thread_id") or "-"
            console.print(
                f"fired {short_id(occurrence['automation_id'])}: {occurrence['status']} in thread {thread}"
            )
            return
        if history is not None:
            automation_id = resolve(client, history)
            rows = client.occurrences(automation_id)
            table = new_table(f"Occurrences of {short_id(automation_id)}, newest first")
            for name in ("Scheduled for", "Status", "Fired", "Thread"):
                table.add_column(name, no_wrap=True)
            for row in rows:
                scheduled = str(row.get("scheduled_for") or "")[:16].replace("T", " ")
                table.add_row(scheduled, row["status"], ago(row.get("fired_at")), row.get("thread_id") or "-")
            console.print(table)
            return
        console.print(automation_table(client.automations(), console.width))
