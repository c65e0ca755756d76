"""Workspace tools (DESIGN §9): files in the thread's working directory, and ``run_shell``.

The file tools are granted by a bot's ``workspace_access`` (``read``: list, read, search; ``write``:
also write and edit); ``run_shell`` by naming it in the bot's ``tools``. Each call finds its
thread's directory in the run context's :class:`WorkspaceGrant`. A refusal (a path outside the
directory, a special or oversized file, a read-only bot) is a tool error the model sees: the run
goes on. Blocking file I/O runs in a worker thread; commands run as bounded child processes
(:mod:`openbot.runtime.tools.sandbox`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, tool

from openbot.runtime.tools import sandbox
from openbot.runtime.tools.context import RunContext
from openbot.runtime.tools.workspace import Refused, Workspace, WorkspaceGrant, confine

READ_TOOLS = ("list_files", "read_file", "search_files")
WRITE_TOOLS = ("write_file", "edit_file")
MAX_READ_LINES = 2_000
MAX_LINE_CHARS = 2_000
MAX_SEARCH_RESULTS = 200
SEARCH_SECONDS = 10.0


_T = TypeVar("_T")


async def _io(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Blocking file I/O in a worker thread; an OS error is a tool error, never the run's end."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except OSError as exc:
        raise Refused(f"the workspace could not be used: {exc.strerror or exc}") from exc


async def _child(argv: list[str], cwd: Path, limits: sandbox.Limits) -> sandbox.Result:
    try:
        return await sandbox.run(argv, cwd, limits)
    except OSError as exc:  # could not start (no such program, no working directory, ...)
        raise Refused(f"the command could not start: {exc.strerror or exc}") from exc
    except KeyError as exc:
        raise Refused(f"the shell user {limits.user!r} does not exist (OPENBOT_SHELL_USER)") from exc


def _account(limits: sandbox.Limits) -> tuple[int, int] | None:
    try:
        return limits.account()
    except KeyError as exc:
        raise Refused(f"the shell user {limits.user!r} does not exist (OPENBOT_SHELL_USER)") from exc


def _grant(runtime: ToolRuntime[RunContext]) -> WorkspaceGrant:
    grant = runtime.context.env.workspace
    if grant is None:
        raise Refused("this run has no workspace")
    return grant


@tool
async def list_files(runtime: ToolRuntime[RunContext], path: str = ".", recursive: bool = False) -> str:
    """List a directory of the thread's working directory (paths are relative to it).
    Directories end with '/', files show their size, symlinks their target."""
    ws = _grant(runtime).open()
    await _io(ws.ensure)
    lines, more = await _io(ws.entries, path, recursive=recursive)
    if not lines:
        return f"{path} is empty."
    return "\n".join(lines) + (f"\n[… listing stopped at {len(lines)} entries]" if more else "")


@tool
async def read_file(
    path: str, runtime: ToolRuntime[RunContext], start_line: int = 1, end_line: int | None = None
) -> str:
    """Read a text file of the working directory, lines start_line..end_line (1-based, inclusive;
    at most 2000 lines per call), each prefixed with its number. Files over 1 MiB are refused."""
    ws = _grant(runtime).open()
    text = await _io(ws.read_text, path)
    lines = text.splitlines()
    first = max(1, start_line)
    last = min(len(lines), end_line if end_line is not None else first + MAX_READ_LINES - 1)
    last = min(last, first + MAX_READ_LINES - 1)
    if first > len(lines):
        return f"{path} has {len(lines)} line(s); nothing at line {first}."
    body = "\n".join(f"{n:>6}\t{lines[n - 1][:MAX_LINE_CHARS]}" for n in range(first, last + 1))
    if last < len(lines):
        body += f"\n[… {len(lines) - last} more line(s); read on with start_line={last + 1}]"
    return body


@tool
async def search_files(
    pattern: str,
    runtime: ToolRuntime[RunContext],
    path: str = ".",
    glob: str | None = None,
    max_results: int = 50,
) -> str:
    """Search the working directory's text files for a regular expression (POSIX extended, as
    `grep -E`); `glob` limits the file names (e.g. '*.py'). Returns file:line: text, capped."""
    grant = _grant(runtime)
    ws = grant.open()
    await _io(ws.ensure)
    target = await _io(ws.search_target, path)
    argv = ["grep", "-rInE", "-D", "skip", "--no-messages", "-m", "100"]
    if glob:
        argv.append(f"--include={glob}")
    argv += ["-e", pattern, "--", target]
    limits = sandbox.Limits(
        timeout_seconds=SEARCH_SECONDS, memory_mb=grant.limits.memory_mb, user=grant.limits.user
    )
    result = await _child(argv, ws.directory, limits)
    if result.killed:
        raise Refused(f"the search was stopped ({result.killed}); narrow the path or the pattern")
    if result.exit_code == 1:
        return f"No match for {pattern!r}."
    if result.exit_code != 0:
        raise Refused(f"the search failed: {result.output.strip()[:500]}")
    cap = max(1, min(max_results, MAX_SEARCH_RESULTS))
    hits = [line[:300] for line in result.output.splitlines() if line and not line.startswith("[… ")]
    shown = "\n".join(line.removeprefix("./") for line in hits[:cap])
    if len(hits) > cap or result.omitted:
        shown += f"\n[… more matches; showing the first {cap}]"
    return shown


@tool
async def write_file(path: str, content: str, runtime: ToolRuntime[RunContext]) -> str:
    """Create or overwrite a text file of the working directory (parent directories are created)."""
    ws = _grant(runtime).open()
    await _io(ws.ensure)
    size = await _io(ws.write_text, path, content)
    return f"Wrote {size} bytes to {path}."


@tool
async def edit_file(
    path: str,
    old_string: str,
    new_string: str,
    runtime: ToolRuntime[RunContext],
    replace_all: bool = False,
) -> str:
    """Replace old_string with new_string in a file of the working directory. old_string must match
    exactly (whitespace included) and only once, unless replace_all is true."""
    ws = _grant(runtime).open()
    count = await _io(ws.replace_text, path, old_string, new_string, replace_all=replace_all)
    return f"Replaced {count} occurrence(s) in {path}."


@tool
async def run_shell(command: str, runtime: ToolRuntime[RunContext]) -> str:
    """Run a shell command (/bin/sh -c) in the thread's working directory. It is bounded: a
    wall-clock timeout, CPU, memory, file-size and process limits, 64 KiB of output (head and tail
    kept), no secrets in its environment. The result gives the exit code, or why it was killed."""
    grant = _grant(runtime)
    ws = Workspace(confine(grant.root, grant.working_directory, grant.thread_id), writable=False)
    await _io(ws.ensure, _account(grant.limits))
    result = await _child(["/bin/sh", "-c", command], ws.directory, grant.limits)
    return result.report()


WORKSPACE_TOOLS: list[BaseTool] = [list_files, read_file, search_files, write_file, edit_file, run_shell]
for _tool in WORKSPACE_TOOLS:
    _tool.handle_tool_error = True  # a Refused (ToolException) becomes the call's error result
