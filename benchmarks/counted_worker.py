"""``openbot worker`` with its SQL counted: ``python -m benchmarks.counted_worker <report.json>``.

The fleet scenario starts its workers through this module so it can report statements, round
trips and transactions per run across processes. Every SQLAlchemy engine of the process is counted
(a class-level hook on ``Engine``), and the statements the fast path hands the driver itself
(``store.driver``'s listeners); the report is written when the worker exits (SIGTERM). Statements
are grouped by their first words (``SELECT … FROM <table>``, ``INSERT INTO <table>`` …), so the
report shows which ones a run repeats. The LISTEN connection and the checkpointer's pool are
psycopg connections of their own and are not counted (a run that never pauses does not touch the
checkpointer's tables).
"""

from __future__ import annotations

import atexit
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from openbot.store import driver

_FROM = re.compile(r"\bFROM\s+(\w+)", re.IGNORECASE)
_INTO = re.compile(r"^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)
_WITH_INTO = re.compile(
    r"^\s*WITH\b.*?\)\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE | re.DOTALL
)
_CALL = re.compile(r"^\s*SELECT\s+(pg_\w+)", re.IGNORECASE)


def kind(statement: str) -> str:
    """A short name for a statement: its verb and first table (or the function it calls)."""
    if found := _INTO.match(statement) or _WITH_INTO.match(statement):
        return f"{found.group(1).split()[0].upper()} {found.group(2)}"
    if found := _CALL.match(statement):
        return found.group(1)
    if found := _FROM.search(statement):
        return f"SELECT {found.group(1)}"
    return statement.split(None, 1)[0].upper() if statement.strip() else "?"


def install(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        counts["round_trips"] += 1
        on_sent(statement)

    def on_sent(statement: str, _params: Any = ()) -> None:  # the ORM's or the fast path's
        counts["statements"] += 1
        counts["sql: " + kind(statement)] += 1

    event.listen(Engine, "before_cursor_execute", on_statement)
    event.listen(Engine, "begin", lambda *_a: counts.update(["transactions"]))
    event.listen(Engine, "commit", lambda *_a: counts.update(["commits"]))  # its trip: the driver's

    def on_rollback(conn: Any) -> None:
        counts["rollbacks"] += 1
        if driver.in_transaction(conn):  # autocommit reads end with a rollback that sends nothing
            counts["round_trips"] += 1

    event.listen(Engine, "rollback", on_rollback)
    driver.statement_listeners.append(on_sent)
    driver.trip_listeners.append(lambda _statements: counts.update(["round_trips"]))
    atexit.register(lambda: path.write_text(json.dumps(dict(counts))))
    return counts


def main() -> None:
    install(Path(sys.argv[1]))
    from openbot import cli

    sys.argv = ["openbot", "worker"]
    cli.main()


if __name__ == "__main__":
    main()
