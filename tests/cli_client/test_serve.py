"""Start-up refusals of ``openbot serve`` / ``worker`` / ``db upgrade``: one line, non-zero exit,
no traceback (issue #8). Real processes: the lock is held by a live server."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import make_url
from typer.testing import CliRunner

from conftest import PG_URL
from live_server import OPENBOT, LiveServer, free_port
from openbot.cli import app
from openbot.client import Client
from openbot.config import Settings
from openbot.runtime.scheduler import node
from openbot.startup import lock_database

COMMANDS = [["db", "upgrade"], ["worker"], ["serve", "--port", "0"]]


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENBOT_")}
    return subprocess.run(
        [str(OPENBOT), *args], capture_output=True, text=True, env={**clean, **env}, cwd=cwd, timeout=120
    )


def test_a_second_server_on_one_data_dir_refuses_and_a_killed_one_restarts(tmp_path: Path) -> None:
    first = LiveServer(tmp_path / "data").start()
    try:
        second = run(["serve", "--port", str(free_port()), "--data-dir", str(first.data_dir)], {}, tmp_path)
        assert second.returncode == 2, second.stderr
        assert second.stdout == ""
        assert second.stderr == (
            f"openbot: another OpenBot process (pid {first.proc.pid}) is already serving "  # type: ignore[union-attr]
            f"{(first.data_dir / 'openbot.db').resolve()}; SQLite is one process per data dir: "
            "stop it, or use another --data-dir\n"
        )
        with Client(first.url) as api:  # the first server is untouched
            api.create_thread(title="Still served")
        first.restart(kill=True)  # SIGKILL: the kernel releases the lock with the process
        with Client(first.url) as api:
            assert "Still served" in [t.get("title") for t in api.threads()]
    finally:
        first.stop()


def test_serve_and_db_upgrade_use_openbot_data_dir(tmp_path: Path) -> None:
    """The variable is the default of ``--data-dir`` for every command that opens the database."""
    upgraded = run(["db", "upgrade"], {"OPENBOT_DATA_DIR": str(tmp_path / "new" / "dir")}, tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert (tmp_path / "new" / "dir" / "openbot.db").exists()  # the directory was made
    first = LiveServer(tmp_path / "data").start()
    try:  # a second serve pointed at the first one's data dir by the variable alone is refused
        second = run(["serve", "--port", "0"], {"OPENBOT_DATA_DIR": str(first.data_dir)}, tmp_path)
        assert second.returncode == 2
        assert f"is already serving {(first.data_dir / 'openbot.db').resolve()}" in second.stderr
        assert not (tmp_path / ".openbot").exists()
    finally:
        first.stop()


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--data-dir", "{file}"], {}, "cannot use {file} as the data dir: it is a file"),
        ([], {"OPENBOT_EMBEDDINGS": "bogus"}, "OPENBOT_EMBEDDINGS='bogus': expected provider:model"),
        ([], {"OPENBOT_EMBEDDINGS": "hashing:abc"}, "OPENBOT_EMBEDDINGS='hashing:abc': hashing takes a"),
        ([], {"OPENBOT_RUN_WORKERS": "0"}, "OPENBOT_RUN_WORKERS=0 on SQLite: no process would run the bots"),
        (["--workers", "2"], {}, "workers need PostgreSQL (set OPENBOT_DATABASE_URL)"),
        (
            [],
            {"OPENBOT_MODEL": "scripted "},
            "bad setting OPENBOT_MODEL: expected 'scripted' or 'provider:model'",
        ),
        (
            [],
            {"OPENBOT_MODEL": "anthropic:"},
            "bad setting OPENBOT_MODEL: expected 'scripted' or 'provider:model'",
        ),
        ([], {"OPENBOT_POLL_SECONDS": "soon"}, "bad setting OPENBOT_POLL_SECONDS: "),
        (["--host", "0.0.0.0"], {}, "refusing to bind 0.0.0.0 (beyond loopback) without OPENBOT_API_TOKEN"),
    ],
    ids=[
        "data-dir-is-a-file",
        "embeddings",
        "embeddings-dims",
        "no-workers",
        "workers-on-sqlite",
        "model",
        "model-without-name",
        "bad-number",
        "open-without-token",
    ],
)
def test_settings_that_cannot_work_are_one_line(
    args: list[str], env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    file = tmp_path / "a-file"
    file.write_text("not a directory")
    argv = ["serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    argv += [a.format(file=file) for a in args]
    done = run(argv, env, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # refused before the banner
    assert done.stderr.startswith("openbot: " + expected.format(file=file)), done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "data" / "openbot.db").exists()


def test_a_port_in_use_is_one_line_before_the_database_is_touched(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(["serve", "--port", str(port), "--data-dir", str(tmp_path / "data")], {}, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        f"openbot: port {port} on 127.0.0.1 is in use (another server?): stop it, or pick another --port\n"
    )
    assert not (tmp_path / "data").exists()  # no database made, no migration run


def test_postgresql_takes_no_lock(tmp_path: Path) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/openbot"
    lock_database(Settings(data_dir=tmp_path, database_url=url))
    lock_database(Settings(data_dir=tmp_path, database_url=url))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not PG_URL, reason="needs a PostgreSQL server (OPENBOT_TEST_DATABASE_URL)")
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_missing_postgresql_database(args: list[str], tmp_path: Path) -> None:
    server = make_url(PG_URL or "")
    url = server.set(database="openbot_h1_no_such_db").render_as_string(hide_password=False)
    done = run(args, {"OPENBOT_DATABASE_URL": url}, tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    where = f"{server.host}:{server.port or 5432}"
    assert done.stderr.startswith(
        f'openbot: database "openbot_h1_no_such_db" does not exist on {where} — create it first: createdb '
    )
    assert done.stderr.count("\n") == 1 and done.stderr.endswith(" openbot_h1_no_such_db\n")


@pytest.mark.skipif(not PG_URL, reason="needs a PostgreSQL server (OPENBOT_TEST_DATABASE_URL)")
def test_serve_with_a_node_id_held_by_a_live_process_is_one_line(tmp_path: Path) -> None:
    """Two processes must never share a node name: the second says so in one line, exit 2, as
    ``worker`` does (``test_node_identity``), instead of uvicorn's traceback."""
    plain = make_url(PG_URL or "").set(drivername="postgresql").render_as_string(hide_password=False)
    key = (node.LOCK_SPACE, node.lock_key("node-held-x"))
    with psycopg.connect(plain, autocommit=True) as holder:
        assert holder.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone() == (True,)
        env = {"OPENBOT_DATABASE_URL": PG_URL or "", "OPENBOT_NODE_ID": "node-held-x"}
        done = run(["serve", "--port", "0"], env, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(
        "node id 'node-held-x' is held by another live process; every process needs its own OPENBOT_NODE_ID\n"
    )
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://postgres@127.0.0.1:{port}/openbot", "cannot reach PostgreSQL at 127.0.0.1:"),
        ("not a url", "OPENBOT_DATABASE_URL is not a database URL"),
        ("mysql://root@127.0.0.1/openbot", "OPENBOT_DATABASE_URL names 'mysql'"),
    ],
    ids=["unreachable", "unparsable", "unsupported"],
)
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_bad_database_url(args: list[str], url: str, expected: str, tmp_path: Path) -> None:
    env = {"OPENBOT_DATABASE_URL": url.format(port=free_port()), "OPENBOT_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("openbot: " + expected) and result.stderr.count("\n") == 1, result.stderr
