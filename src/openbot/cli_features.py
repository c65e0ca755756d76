"""The client commands of the features beyond the spine: automations, drafts, webhooks, tools,
actor tokens, memories and ``why``. They register on the one ``openbot`` app."""

from __future__ import annotations

import shutil
from typing import Annotated

import typer

from openbot.cli_base import DEFAULT_SERVER, ServerOpt, TokenOpt, app, fail, reported
from openbot.why_cli import why as why_command

token_app = typer.Typer(help="Actor tokens: bearer tokens that act as one actor.", no_args_is_help=True)
app.add_typer(token_app, name="token")
memory_app = typer.Typer(
    help="Bots' memories: list and search them; decay and consolidation, now.", no_args_is_help=True
)
app.add_typer(memory_app, name="memory")
app.command("why")(why_command)  # openbot why MESSAGE_ID BOT


@app.command()
def automations(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    run: Annotated[str | None, typer.Option("--run", help="Fire this automation now.")] = None,
    history: Annotated[str | None, typer.Option("--history", help="Show this one's occurrences.")] = None,
) -> None:
    """List automations (scheduled posts to bots) with their next run; fire one or show its history."""
    from openbot.automation_table import print_automations

    if run is not None and history is not None:
        fail("give --run or --history, not both")
    with reported(server):
        print_automations(server, token, run=run, history=history)


@app.command()
def drafts(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    status: Annotated[
        str, typer.Option("--status", help="pending, sent or rejected.", show_default=True)
    ] = "pending",
    send: Annotated[str | None, typer.Option("--send", help="Send this draft as its bot.")] = None,
    content: Annotated[str | None, typer.Option("--content", help="With --send: send this instead.")] = None,
    reject: Annotated[str | None, typer.Option("--reject", help="Reject this draft.")] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="With --reject: why (for the bot).")] = None,
) -> None:
    """Drafts bots staged with save_draft: list them, send one (maybe edited) or reject one."""
    from openbot.draft_table import print_drafts

    if send is not None and reject is not None:
        fail("give --send or --reject, not both")
    if content is not None and send is None:
        fail("--content goes with --send")
    if reason is not None and reject is None:
        fail("--reason goes with --reject")
    with reported(server):
        print_drafts(server, token, status=status, send=send, content=content, reject=reject, reason=reason)


@app.command()
def webhooks(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    actor: Annotated[str | None, typer.Option("--actor", help="Only this external actor's.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="pending, delivered or failed.")] = None,
    retry: Annotated[str | None, typer.Option("--retry", help="Attempt this delivery again now.")] = None,
) -> None:
    """Webhook deliveries to external actors (newest first), or retry one."""
    from openbot.webhook_table import print_deliveries

    with reported(server):
        print_deliveries(
            server, token, actor=actor.lstrip("@") if actor else None, status=status, retry=retry
        )


@app.command()
def tools(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    mcp: Annotated[bool, typer.Option("--mcp", help="The MCP servers and their state instead.")] = False,
) -> None:
    """Every tool a bot can be given (built-in, plugin, MCP, skill), or the MCP servers."""
    from openbot.tool_table import print_tools

    with reported(server):
        print_tools(server, token, mcp=mcp)


@token_app.command("issue")
def token_issue(
    handle: Annotated[str, typer.Argument(help="The actor the token acts as.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Issue a token that acts as HANDLE (printed once; needs the admin token when one is set)."""
    from openbot.client import Client

    handle = handle.removeprefix("@")  # `@alice` as people write it
    with reported(server), Client(server, token) as client:
        issued = client.issue_token(handle)
    typer.echo(issued["token"])
    typer.echo(f"acts as @{handle}; shown once: store it now", err=True)


@token_app.command("revoke")
def token_revoke(
    handle: Annotated[str, typer.Argument(help="The actor whose tokens are revoked.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Revoke every token of HANDLE."""
    from openbot.client import Client

    handle = handle.removeprefix("@")
    with reported(server), Client(server, token) as client:
        client.revoke_tokens(handle)
    typer.echo(f"revoked every token of @{handle}")


@memory_app.command("list")
def memory_list(
    bot: Annotated[str, typer.Argument(help="The bot whose memories are listed.")],
    q: Annotated[str | None, typer.Option("--q", help="Rank by relevance to this text.")] = None,
    archived: Annotated[bool, typer.Option("--archived", help="Archived memories instead.")] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """BOT's memories, newest first (with --q: most relevant first, with scores)."""
    from openbot.client import Client

    with reported(server), Client(server, token) as client:
        items = client.memories(bot, q=q, lifecycle="archived" if archived else "active")
    width = shutil.get_terminal_size((80, 24)).columns
    for m in items:
        score = f" {_score(m['score'])}" if m.get("score") is not None else ""
        head = f"{m['id'][-8:]} {m['segment']}/{m['tier']}{score}  "
        room = max(10, width - len(head))
        content = m["content"] if len(m["content"]) <= room else m["content"][: room - 1] + "…"
        typer.echo(head + content)
    if not items:
        typer.echo("no memory matches" if q else "no memories")


def _score(score: float) -> str:
    """Lexical scores can be tiny (2e-6): fixed decimals would show them all as 0."""
    return f"{score:.1e}" if score and abs(score) < 0.001 else f"{score:.3f}"


@memory_app.command("maintain")
def memory_maintain(
    bot: Annotated[str, typer.Argument(help="The bot whose memories decay now.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Decay BOT's memories now: archive those scoring below 0.15, delete those below 0.05."""
    from openbot.client import Client

    with reported(server), Client(server, token) as client:
        done = client.maintain_memories(bot)
    for what in ("archived", "pruned"):
        ids = done[what]
        typer.echo(f"{what} {len(ids)}" + (": " + ", ".join(ids) if ids else ""))


@memory_app.command("consolidate")
def memory_consolidate(
    bot: Annotated[str, typer.Argument(help="The bot whose similar memories are consolidated now.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Consolidate BOT's similar memories now (proposer, adversary, judge); one line per decision."""
    from openbot.client import Client

    with reported(server), Client(server, token) as client:
        decisions = client.consolidate_memories(bot)["decisions"]
    if not decisions:
        typer.echo("no similar memories: nothing to decide")
    for decision in decisions:
        result = f" -> {decision['result_id']}" if decision.get("result_id") else ""
        typer.echo(f"{decision['action']} {', '.join(decision['memory_ids'])}{result}: {decision['reason']}")
