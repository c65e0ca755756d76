"""The ``openbot`` command: serve, post, db, and the terminal client."""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from openbot.cli_base import DEFAULT_SERVER, ServerOpt, TokenOpt, app, db_app, fail, reported

if TYPE_CHECKING:
    from openbot.config import Settings


def _settings(**values: object) -> Settings:
    """The settings, or one line naming the variable that does not parse."""
    from pydantic import ValidationError

    from openbot.config import Settings

    try:
        return Settings(**values)  # type: ignore[arg-type]
    except ValidationError as error:
        problem = error.errors()[0]
        name = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")  # pydantic's prefix for our own
        typer.echo(f"openbot: bad setting {name}: {message}", err=True)
        raise typer.Exit(2) from None  # as every refusal to start


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


DataDirOpt = Annotated[
    Path,
    typer.Option(
        "--data-dir",
        envvar="OPENBOT_DATA_DIR",
        help="Where the embedded database, the workspaces and the node name live.",
    ),
]


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    data_dir: DataDirOpt = Path(".openbot"),
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Run bots in N `openbot worker` processes (PostgreSQL).")
    ] = 0,
) -> None:
    """Start the API and the web UI, with the bots' workers in this process or in N others."""
    import uvicorn

    from openbot import startup
    from openbot.api.app import create_app

    os.environ["OPENBOT_DATA_DIR"] = str(data_dir)  # what this process and its workers use
    settings = _settings(data_dir=data_dir)
    if not _is_loopback(host) and not settings.api_token:
        typer.echo(
            f"openbot: refusing to bind {host} (beyond loopback) without OPENBOT_API_TOKEN set", err=True
        )
        raise typer.Exit(2)
    from openbot import fleet

    with _startup():
        startup.check_settings(settings, workers=workers)
        sock = startup.listen(host, port)  # before the database: a port in use is said first
        try:
            startup.lock_database(settings)  # SQLite: held until this process ends
            startup.check_database(settings)
        except BaseException:
            sock.close()
            raise
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    backend = "PostgreSQL" if settings.database_url and "postgres" in settings.database_url else "SQLite"
    where = settings.resolved_database_url() if backend == "SQLite" else "OPENBOT_DATABASE_URL"
    address = f"[{host}]" if ":" in host else host  # an IPv6 literal, bracketed as URLs need
    port = sock.getsockname()[1]  # the one bound (--port 0 picks one)
    typer.echo(f"OpenBot on http://{address}:{port}/  (API: http://{address}:{port}/api/v1)")
    typer.echo(f"Database: {backend} ({where})" + ("  — single process" if backend == "SQLite" else ""))
    model = settings.default_model()
    hint = "" if settings.model else "  (set OPENBOT_MODEL=provider:model to use a real model)"
    typer.echo(f"Bots use model: {model}{hint}")

    def run_http(app_settings: Settings) -> None:
        config = uvicorn.Config(create_app(app_settings, settle_heap=True), log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])

    if not workers:
        run_http(settings)
        return
    typer.echo(f"Workers: {workers} process(es) beside this API process")
    children = fleet.spawn_workers(workers, str(data_dir))
    try:
        run_http(settings.model_copy(update={"run_workers": False}))
    finally:
        fleet.stop_workers(children, timeout=settings.drain_seconds + 5)


@app.command()
def worker(data_dir: DataDirOpt = Path(".openbot")) -> None:
    """Run bots (no HTTP) against the shared PostgreSQL database, beside any number of servers."""
    import asyncio

    from openbot import fleet, startup

    settings = _settings(data_dir=data_dir)
    with _startup():
        startup.check_settings(settings)
        startup.check_database(settings)
    try:
        fleet.require_shared_database(settings)
    except fleet.FleetError as exc:
        typer.echo(f"openbot: {exc}", err=True)
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

    with reported(server), Client(server, token, timeout=30) as client:
        found = resolve_thread(client, thread)
        body = client.post_message(found["id"], text, sender=sender.lstrip("@") if sender else None)
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

    if thread is not None and new is not None:
        fail("give --thread or --new, not both")
    if new is not None and not new.strip():
        fail("--new needs a title")
    with reported(server):
        run_chat(server, token, thread, new)


@app.command()
def threads(server: ServerOpt = DEFAULT_SERVER, token: TokenOpt = None) -> None:
    """List threads with their last activity."""
    from openbot.tables import print_threads

    with reported(server):
        print_threads(server, token)


@app.command()
def bots(server: ServerOpt = DEFAULT_SERVER, token: TokenOpt = None) -> None:
    """List bots with their live state."""
    from openbot.tables import print_bots

    with reported(server):
        print_bots(server, token)


@app.command()
def activity(
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new entries.")] = False,
) -> None:
    """The diagnostic timeline (why each bot did what it did)."""
    from openbot.tables import print_activity

    with reported(server):
        print_activity(server, token, follow)


@db_app.command("upgrade")
def db_upgrade(data_dir: DataDirOpt = Path(".openbot")) -> None:
    """Apply database migrations (the server also does this at start)."""
    from openbot import startup
    from openbot.store.migrate import upgrade

    settings = _settings(data_dir=data_dir)
    with _startup():
        startup.lock_database(settings)  # SQLite: not under a running server; makes the data dir
        startup.check_database(settings)
    upgrade(settings.resolved_database_url())
    typer.echo("database is up to date")


# The commands beyond the server's and the spine's register themselves on the same app (after
# these, so `openbot --help` lists the server and the spine's commands first).
import openbot.cli_features  # noqa: E402,F401


def main() -> None:
    app()


if __name__ == "__main__":
    main()
