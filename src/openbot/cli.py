"""The ``openbot`` command: serve, post, db, and the terminal client."""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from openbot.why_cli import why as why_command

if TYPE_CHECKING:
    from openbot.config import Settings

app = typer.Typer(
    help="OpenBot: a team of LLM bots, their humans and external systems in shared threads.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")
token_app = typer.Typer(help="Actor tokens: bearer tokens that act as one actor.", no_args_is_help=True)
app.add_typer(token_app, name="token")
memory_app = typer.Typer(
    help="Bots' memories: list and search them; decay and consolidation, now.", no_args_is_help=True
)
app.add_typer(memory_app, name="memory")
app.command("why")(why_command)  # openbot why MESSAGE_ID BOT

DEFAULT_SERVER = "http://127.0.0.1:8000"
ServerOpt = Annotated[
    str, typer.Option("--server", envvar="OPENBOT_SERVER", help="Server URL (or OPENBOT_SERVER).")
]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="OPENBOT_API_TOKEN", help="API token.")]


def _fail(message: str) -> NoReturn:
    typer.echo(f"openbot: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def _reported(server: str) -> Iterator[None]:
    """A client command's foreseeable failures (no server there, not an OpenBot server, an error
    answer, no such thread) end it with one line on stderr and exit status 1."""
    import httpx

    from openbot.client import ApiError
    from openbot.thread_refs import ThreadRefError

    try:
        yield
    except ApiError as error:
        where = f" {error.where} with" if error.where else ""
        _fail(f"{server} answered{where} {error.status} {error.code}: {error.message}")
    except httpx.TransportError as error:
        reason = re.sub(r"^\[Errno -?\d+\] ", "", str(error)) or type(error).__name__
        _fail(f"cannot reach an OpenBot server at {server}: {reason}")
    except httpx.InvalidURL as error:
        _fail(f"--server {server!r} is not a URL: {error}")
    except ThreadRefError as error:
        _fail(str(error))


def _settings(**values: object) -> Settings:
    """The settings, or one line naming the variable that does not parse."""
    from pydantic import ValidationError

    from openbot.config import Settings

    try:
        return Settings(**values)  # type: ignore[arg-type]
    except ValidationError as error:
        problem = error.errors()[0]
        name = ".".join(str(part) for part in problem["loc"])
        _fail(f"bad setting {name}: {problem['msg']}")


@contextmanager
def _startup() -> Iterator[None]:
    """``serve``/``worker``/``db upgrade``: what ``openbot.startup`` refuses is one line, exit 2."""
    from openbot.startup import StartupError

    try:
        yield
    except StartupError as error:
        typer.echo(f"openbot: {error}", err=True)
        raise typer.Exit(2) from None


def _is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: Annotated[Path, typer.Option("--data-dir", help="Where the embedded database lives.")] = Path(
        ".openbot"
    ),
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Run bots in N `openbot worker` processes (PostgreSQL).")
    ] = 0,
) -> None:
    """Start the API and the web UI, with the bots' workers in this process or in N others."""
    import uvicorn

    from openbot import startup
    from openbot.api.app import create_app

    os.environ.setdefault("OPENBOT_DATA_DIR", str(data_dir))
    settings = _settings(data_dir=data_dir)
    if not _is_loopback(host) and not settings.api_token:
        typer.echo("Refusing to bind beyond loopback without OPENBOT_API_TOKEN set.", err=True)
        raise typer.Exit(2)
    with _startup():
        startup.lock_database(settings)  # SQLite: held until this process ends
        startup.check_database(settings)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    backend = "PostgreSQL" if settings.database_url and "postgres" in settings.database_url else "SQLite"
    where = settings.resolved_database_url() if backend == "SQLite" else "OPENBOT_DATABASE_URL"
    typer.echo(f"OpenBot on http://{host}:{port}/  (API: http://{host}:{port}/api/v1)")
    typer.echo(f"Database: {backend} ({where})" + ("  — single process" if backend == "SQLite" else ""))
    model = settings.default_model()
    hint = "" if settings.model else "  (set OPENBOT_MODEL=provider:model to use a real model)"
    typer.echo(f"Bots use model: {model}{hint}")
    if not workers:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
        return
    from openbot import fleet

    try:
        fleet.require_shared_database(settings)
    except fleet.FleetError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"Workers: {workers} process(es) beside this API process")
    children = fleet.spawn_workers(workers, str(data_dir))
    try:
        api_only = settings.model_copy(update={"run_workers": False})
        uvicorn.run(create_app(api_only), host=host, port=port, log_level="warning")
    finally:
        fleet.stop_workers(children, timeout=settings.drain_seconds + 5)


@app.command()
def worker(
    data_dir: Annotated[Path, typer.Option("--data-dir", help="Data directory (settings file).")] = Path(
        ".openbot"
    ),
) -> None:
    """Run bots (no HTTP) against the shared PostgreSQL database, beside any number of servers."""
    import asyncio

    from openbot import fleet, startup

    settings = _settings(data_dir=data_dir)
    with _startup():
        startup.check_database(settings)
    try:
        fleet.require_shared_database(settings)
    except fleet.FleetError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(fleet.run_worker(settings.model_copy(update={"run_workers": True})))


@app.command()
def post(
    thread: Annotated[
        str, typer.Argument(help="Thread: id (or its start or end), number in `openbot threads`, or title.")
    ],
    text: Annotated[str, typer.Argument(help="Message text; @mentions wake bots.")],
    sender: Annotated[
        str | None, typer.Option("--from", help="Sender handle (default: the token's actor, or @you).")
    ] = None,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Post a message to a thread on a running server."""
    from openbot.client import Client, unknown_mentions
    from openbot.thread_refs import resolve_thread

    with _reported(server), Client(server, token, timeout=30) as client:
        found = resolve_thread(client, thread)
        body = client.post_message(found["id"], text, sender=sender)
    woke = ", ".join("@" + h for h in body["addressed"]) or "nobody"
    typer.echo(f"posted {body['message']['id']} in {found.get('title') or found['id']!r}; woke {woke}")
    for line in unknown_mentions(body):
        typer.echo(line, err=True)


@app.command()
def chat(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Open this thread.")] = None,
    new: Annotated[str | None, typer.Option("--new", help="Start a new thread with this title.")] = None,
) -> None:
    """A live terminal client: follow a thread, talk to the bots, answer questions and approvals."""
    from openbot.chat import run_chat

    with _reported(server):
        run_chat(server, token, thread, new)


@app.command()
def threads(server: ServerOpt = DEFAULT_SERVER, token: TokenOpt = None) -> None:
    """List threads with their last activity."""
    from openbot.tables import print_threads

    with _reported(server):
        print_threads(server, token)


@app.command()
def bots(server: ServerOpt = DEFAULT_SERVER, token: TokenOpt = None) -> None:
    """List bots with their live state."""
    from openbot.tables import print_bots

    with _reported(server):
        print_bots(server, token)


@app.command()
def activity(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new entries.")] = False,
) -> None:
    """The diagnostic timeline (why each bot did what it did)."""
    from openbot.tables import print_activity

    with _reported(server):
        print_activity(server, token, follow)


@app.command()
def automations(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    run: Annotated[str | None, typer.Option("--run", help="Fire this automation now.")] = None,
    history: Annotated[str | None, typer.Option("--history", help="Show this one's occurrences.")] = None,
) -> None:
    """List automations (scheduled posts to bots) with their next run; fire one or show its history."""
    from openbot.automation_table import print_automations

    with _reported(server):
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

    with _reported(server):
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

    with _reported(server):
        print_deliveries(server, token, actor=actor, status=status, retry=retry)


@app.command()
def tools(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    mcp: Annotated[bool, typer.Option("--mcp", help="The MCP servers and their state instead.")] = False,
) -> None:
    """Every tool a bot can be given (built-in, plugin, MCP, skill), or the MCP servers."""
    from openbot.tool_table import print_tools

    with _reported(server):
        print_tools(server, token, mcp=mcp)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply database migrations (the server also does this at start)."""
    from openbot import startup
    from openbot.store.migrate import upgrade

    settings = _settings()
    with _startup():
        startup.check_database(settings)
    upgrade(settings.resolved_database_url())
    typer.echo("database is up to date")


def main() -> None:
    app()


if __name__ == "__main__":
    main()


@token_app.command("issue")
def token_issue(
    handle: Annotated[str, typer.Argument(help="The actor the token acts as.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Issue a token that acts as HANDLE (printed once; needs the admin token when one is set)."""
    from openbot.client import Client

    with _reported(server), Client(server, token) as client:
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

    with _reported(server), Client(server, token) as client:
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

    with _reported(server), Client(server, token) as client:
        items = client.memories(bot, q=q, lifecycle="archived" if archived else "active")
    for m in items:
        score = f" {m['score']:.2f}" if m.get("score") is not None else ""
        typer.echo(f"{m['id'][-8:]} {m['segment']}/{m['tier']}{score}  {m['content'][:56]}")
    if not items:
        typer.echo("no memory matches" if q else "no memories")


@memory_app.command("maintain")
def memory_maintain(
    bot: Annotated[str, typer.Argument(help="The bot whose memories decay now.")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Decay BOT's memories now: archive those scoring below 0.15, delete those below 0.05."""
    from openbot.client import Client

    with _reported(server), Client(server, token) as client:
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

    with _reported(server), Client(server, token) as client:
        decisions = client.consolidate_memories(bot)["decisions"]
    if not decisions:
        typer.echo("no similar memories: nothing to decide")
    for decision in decisions:
        result = f" -> {decision['result_id']}" if decision.get("result_id") else ""
        typer.echo(f"{decision['action']} {', '.join(decision['memory_ids'])}{result}: {decision['reason']}")
