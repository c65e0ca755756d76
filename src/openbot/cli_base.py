"""What every ``openbot`` command shares: the Typer app, the server and token options, and how a
client command fails (one line on stderr, a non-zero exit, no traceback)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn

import typer

app = typer.Typer(
    help="OpenBot: a team of LLM bots, their humans and external systems in shared threads.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

DEFAULT_SERVER = "http://127.0.0.1:8000"
ServerOpt = Annotated[
    str, typer.Option("--server", envvar="OPENBOT_SERVER", help="Server URL (or OPENBOT_SERVER).")
]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="OPENBOT_API_TOKEN", help="API token.")]


def fail(message: str) -> NoReturn:
    typer.echo(f"openbot: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def reported(server: str) -> Iterator[None]:
    """A client command's foreseeable failures (no server there, not an OpenBot server, an error
    answer, no such thread) end it with one line on stderr and exit status 1."""
    import httpx

    from openbot.client import ApiError
    from openbot.thread_refs import ThreadRefError

    try:
        yield
    except ApiError as error:
        where = f" {error.where} with" if error.where else ""
        fail(f"{server} answered{where} {error.status} {error.code}: {error.message}")
    except httpx.TransportError as error:
        reason = re.sub(r"^\[Errno -?\d+\] ", "", str(error)) or type(error).__name__
        fail(f"cannot reach an OpenBot server at {server}: {reason}")
    except httpx.InvalidURL as error:
        fail(f"--server {server!r} is not a URL: {error}")
    except ThreadRefError as error:
        fail(str(error))
