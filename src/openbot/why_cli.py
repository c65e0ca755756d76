"""``openbot why MESSAGE_ID BOT``: one answer to "why didn't @bot answer this?" in the terminal,
and with ``--all`` who saw the message and what each bot decided (its dispositions)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from openbot.cli_base import DEFAULT_SERVER, ServerOpt, TokenOpt, reported
from openbot.client import Client


def explain(answer: dict[str, Any]) -> list[str]:
    """The answer as a few lines: the verdict and its sentence, then the evidence behind it."""
    lines = [f"{answer['answer']}: {answer['summary']}"]
    disposition = answer.get("disposition")
    if disposition:
        lines.append(
            f"  saw it: {disposition['disposition']} (tier {disposition['tier']}, "
            f"{disposition['signal']}): {disposition['reason']}"
        )
    run = answer.get("run")
    if run:
        lines.append(f"  run {run['id']}: {run['status']}")
    if answer.get("reply_message_id"):
        lines.append(f"  reply: {answer['reply_message_id']}")
    disposal = answer.get("disposal")
    if disposal:
        lines.append(f"  dropped: {disposal['reason']} ({disposal['created_at']})")
    return lines


def why(
    message_id: Annotated[str, typer.Argument(help="The message that went unanswered.")],
    bot: Annotated[str, typer.Argument(help="The bot's handle (with or without @).")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    all_bots: Annotated[bool, typer.Option("--all", help="Also list what every bot decided.")] = False,
) -> None:
    """Why didn't a bot answer a message? (observed, held, dropped, still queued, answered…)"""
    with reported(server), Client(server, token) as client:
        for line in explain(client.why(message_id, bot)):
            typer.echo(line)
        if all_bots:
            for d in client.dispositions(message_id):
                typer.echo(f"@{d['bot']}: {d['disposition']} (tier {d['tier']}, {d['signal']}) {d['reason']}")
