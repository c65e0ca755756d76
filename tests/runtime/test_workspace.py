"""Workspaces: every escape is a tool error and nothing outside the root is read or written."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from conftest import Team
from openbot.runtime.commands import BotUpdate
from openbot.runtime.tools.workspace import MAX_FILE_BYTES, Refused, Workspace, confine, normalise_directory
from openbot.store.models import RunEvent


@pytest.fixture
def jail(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): the workspaces root holding the thread's directory ``proj``, and a
    directory beside the root with a secret in it."""
    root = tmp_path / "root"
    (root / "proj" / "src").mkdir(parents=True)
    (root / "proj" / "src" / "app.py").write_text("print('hi')\nTODO = 1\n")
    (root / "other").mkdir()
    (root / "other" / "neighbour.txt").write_text("another thread's file")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    return root, outside


def _snapshot(*dirs: Path) -> dict[str, tuple[int, bytes]]:
    seen = {}
    for top in dirs:
        for path in sorted(top.rglob("*")):
            if path.is_file() and not path.is_symlink():
                seen[str(path)] = (path.stat().st_mode, path.read_bytes())
            else:
                seen[str(path)] = (path.lstat().st_mode, b"")
    return seen


Setup = Callable[[Path, Path], None]


def _nothing(proj: Path, outside: Path) -> None:
    pass


def _link_out(proj: Path, outside: Path) -> None:
    (proj / "link").symlink_to(outside / "secret.txt")


def _dir_link_out(proj: Path, outside: Path) -> None:
    (proj / "dirlink").symlink_to(outside)


def _relative_link_out(proj: Path, outside: Path) -> None:
    (proj / "up").symlink_to("../other")


def _loop(proj: Path, outside: Path) -> None:
    (proj / "a").symlink_to("b")
    (proj / "b").symlink_to("a")


def _fifo(proj: Path, outside: Path) -> None:
    os.mkfifo(proj / "pipe")


def _device(proj: Path, outside: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(proj / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def _big(proj: Path, outside: Path) -> None:
    with (proj / "big.bin").open("wb") as f:
        f.truncate(10 * 1024 * 1024)  # 10 MB


def _socket_in_path(proj: Path, outside: Path) -> None:
    (proj / "file").write_text("x")


ESCAPES: list[tuple[str, Setup, str, str]] = [
    ("dotdot", _nothing, "read", "../other/neighbour.txt"),
    ("dotdot deep", _nothing, "write", "src/../../outside.txt"),
    ("absolute", _nothing, "read", "/etc/passwd"),
    ("absolute write", _nothing, "write", "/tmp/openbot-escape.txt"),
    ("home", _nothing, "read", "~/.bashrc"),
    ("symlink out", _link_out, "read", "link"),
    ("symlink out, write", _link_out, "write", "link"),
    ("symlink out, edit", _link_out, "edit", "link"),
    ("directory symlink out", _dir_link_out, "read", "dirlink/secret.txt"),
    ("directory symlink out, write", _dir_link_out, "write", "dirlink/new.txt"),
    ("directory symlink out, list", _dir_link_out, "list", "dirlink"),
    ("relative symlink up", _relative_link_out, "read", "up/neighbour.txt"),
    ("symlink loop", _loop, "read", "a"),
    ("symlink loop, write", _loop, "write", "a"),
    ("fifo", _fifo, "read", "pipe"),
    ("fifo, write", _fifo, "write", "pipe"),
    ("device file", _device, "read", "null"),
    ("device file, write", _device, "write", "null"),
    ("10 MB file", _big, "read", "big.bin"),
    ("10 MB file, edit", _big, "edit", "big.bin"),
    ("a file as a directory", _socket_in_path, "read", "file/x"),
    ("NUL in the path", _nothing, "read", "src/app.py\x00"),
]


@pytest.mark.parametrize(
    ("setup", "operation", "path"), [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES]
)
def test_every_escape_is_refused_and_nothing_outside_changes(
    jail: tuple[Path, Path], setup: Setup, operation: str, path: str
) -> None:
    root, outside = jail
    proj = root / "proj"
    setup(proj, outside)
    before = _snapshot(outside, root / "other")
    ws = Workspace(confine(root, "proj", "thr_1"), writable=True)
    with pytest.raises(Refused) as refused:
        if operation == "read":
            ws.read_text(path)
        elif operation == "write":
            ws.write_text(path, "overwritten")
        elif operation == "edit":
            ws.replace_text(path, "top", "bottom", replace_all=False)
        else:
            ws.entries(path, recursive=True)
    assert str(refused.value)  # the model is told why
    assert _snapshot(outside, root / "other") == before
    assert not Path("/tmp/openbot-escape.txt").exists()


def test_symlinks_that_stay_inside_are_followed(jail: tuple[Path, Path]) -> None:
    root, _outside = jail
    proj = root / "proj"
    (proj / "rel").symlink_to("src/app.py")
    (proj / "abs").symlink_to(proj.resolve() / "src" / "app.py")
    (proj / "src" / "back").symlink_to("../src")
    ws = Workspace(confine(root, "proj", "thr_1"), writable=True)
    assert ws.read_text("rel").startswith("print")
    assert ws.read_text("abs").startswith("print")
    assert ws.read_text("src/back/app.py").startswith("print")
    ws.write_text("rel", "changed\n")
    assert (proj / "src" / "app.py").read_text() == "changed\n"


def test_reading_writing_and_editing_inside(jail: tuple[Path, Path]) -> None:
    root, _outside = jail
    ws = Workspace(confine(root, "proj", "thr_1"), writable=True)
    assert ws.write_text("docs/notes/a.md", "one\ntwo\ntwo\n") == 12
    assert (root / "proj" / "docs" / "notes" / "a.md").read_text() == "one\ntwo\ntwo\n"
    with pytest.raises(Refused, match="2 times"):
        ws.replace_text("docs/notes/a.md", "two", "2", replace_all=False)
    with pytest.raises(Refused, match="not in"):
        ws.replace_text("docs/notes/a.md", "three", "3", replace_all=False)
    assert ws.replace_text("docs/notes/a.md", "two", "2", replace_all=True) == 2
    assert ws.read_text("docs/notes/a.md") == "one\n2\n2\n"
    lines, more = ws.entries(".", recursive=True)
    assert "docs/notes/a.md (8 bytes)" in lines and "src/" in lines and not more
    with pytest.raises(Refused, match="too large"):
        ws.write_text("huge.txt", "x" * (MAX_FILE_BYTES + 1))


def test_a_read_only_workspace_refuses_writes(jail: tuple[Path, Path]) -> None:
    root, _outside = jail
    ws = Workspace(confine(root, "proj", "thr_1"), writable=False)
    with pytest.raises(Refused, match="workspace_access"):
        ws.write_text("new.txt", "x")
    with pytest.raises(Refused, match="workspace_access"):
        ws.replace_text("src/app.py", "hi", "ho", replace_all=False)
    assert not (root / "proj" / "new.txt").exists()
    assert "hi" in (root / "proj" / "src" / "app.py").read_text()


@pytest.mark.parametrize(
    ("value", "stored"),
    [("proj", "proj"), ("proj/src/", "proj/src"), ("./a/../proj", "proj"), ("new/dir", "new/dir")],
)
def test_working_directories_inside_the_root_are_normalised(
    jail: tuple[Path, Path], value: str, stored: str
) -> None:
    root, _outside = jail
    assert normalise_directory(root, value) == stored
    assert normalise_directory(root, str(root / value)) == stored


@pytest.mark.parametrize(
    "value", ["..", "../outside", "/etc", "proj/../../outside", "", "link/x", "y" * 256, "proj/" + "é" * 128]
)
def test_working_directories_outside_the_root_are_refused(jail: tuple[Path, Path], value: str) -> None:
    root, outside = jail
    (root / "link").symlink_to(outside)
    with pytest.raises(ValueError):
        normalise_directory(root, value)


async def test_a_bot_refused_an_escape_goes_on_with_its_run(team: Team) -> None:
    """The run completes; the refusal is the tool's error result; the write inside happened."""
    await team.rt.team.update_bot("engineer", BotUpdate(workspace_access="write"))
    calls = [
        {"name": "write_file", "args": {"path": "notes/plan.md", "content": "step 1\n"}},
        {"name": "read_file", "args": {"path": "../../../../etc/passwd"}},
    ]
    await team.script("engineer", [{"match": ".", "reply": "said: {tool_result}", "tool_calls": calls}])
    thread = await team.thread(working_directory="proj")
    await team.post(thread, "@engineer write the plan")
    await team.idle()
    run = (await team.runs(thread))[0]
    assert run.status == "completed"
    async with team.rt.db.read() as s:
        results = [e.payload for e in await s.scalars(select(RunEvent).where(RunEvent.type == "tool_result"))]
    by_name = {r["name"]: r for r in results}  # parallel calls: in the order they finish
    assert {n: r["status"] for n, r in by_name.items()} == {"write_file": "success", "read_file": "error"}
    assert "'..'" in by_name["read_file"]["content"]
    root = team.rt.settings.resolved_workspaces_root()
    assert (root / "proj" / "notes" / "plan.md").read_text() == "step 1\n"
    assert "said:" in (await team.messages(thread))[-1]["content"]


async def test_file_tools_follow_workspace_access(team: Team) -> None:
    """Read access (the default) has no write tools: the call is an error, nothing is written."""
    call = [{"name": "write_file", "args": {"path": "x.txt", "content": "x"}}]
    await team.script("qa", [{"match": ".", "reply": "{tool_result}", "tool_calls": call}])
    thread = await team.thread()
    await team.post(thread, "@qa write")
    await team.idle()
    assert (await team.runs(thread))[0].status == "completed"
    root = team.rt.settings.resolved_workspaces_root()
    assert not (root / thread / "x.txt").exists()
    assert "write_file" in (await team.messages(thread))[-1]["content"]  # "not a valid tool"


async def test_search_files_finds_matches_and_refuses_escapes(team: Team) -> None:
    """grep -E in a bounded child: a backtracking-prone pattern returns at once; '..' is refused."""
    root = team.rt.settings.resolved_workspaces_root()
    (root / "proj" / "src").mkdir(parents=True)
    (root / "proj" / "src" / "a.py").write_text("x = 1  # TODO: fix\n" + "a" * 5000 + "!\n")
    (root / "proj" / "notes.md").write_text("TODO later\n")
    (root / "secret.txt").write_text("TODO outside\n")
    rules = [
        {"match": "glob", "reply": "{tool_result}", "tool_calls": [_search("TODO", glob="*.py")]},
        {"match": "evil", "reply": "{tool_result}", "tool_calls": [_search("(a+)+$")]},
        {"match": "escape", "reply": "{tool_result}", "tool_calls": [_search("TODO", path="..")]},
        {"match": ".", "reply": "{tool_result}", "tool_calls": [_search("TODO")]},
    ]
    await team.script("reviewer", rules)
    thread = await team.thread(working_directory="proj")
    replies = []
    for ask in ("all", "glob", "evil", "escape"):
        await team.post(thread, f"@reviewer {ask}")
        await team.idle()
        replies.append((await team.messages(thread))[-1]["content"])
    everything, only_py, evil, escape = replies
    assert "src/a.py:1:x = 1  # TODO: fix" in everything and "notes.md:1:TODO later" in everything
    assert "outside" not in everything
    assert "src/a.py" in only_py and "notes.md" not in only_py
    assert evil.startswith("No match")  # the line fails (a+)+$ after 5000 a: Python re would hang
    assert "'..'" in escape and "outside" not in escape


def _search(pattern: str, **args: str) -> dict[str, object]:
    return {"name": "search_files", "args": {"pattern": pattern, **args}}
