"""A thread's workspace: files confined to its working directory (DESIGN §9, root-confined files).

Every path a bot gives is relative to the thread's working directory. It is resolved one component
at a time with ``lstat``: ``..`` and absolute paths are refused outright, and a symlink is followed
only while its target stays inside the directory (40 links at most: a loop is refused). The file is
then opened through a chain of directory descriptors with ``O_NOFOLLOW`` on every component, so a
component swapped for a symlink after the check fails the open instead of escaping. Only regular
files are read or written (never a device, a fifo or a socket), and only up to ``MAX_FILE_BYTES``.

Every refusal is a :class:`Refused` (a ``ToolException``): the model sees the reason and the run
goes on. The methods do blocking I/O; the tools call them in a worker thread.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from langchain_core.tools import ToolException

from openbot.runtime.tools.sandbox import Limits

MAX_FILE_BYTES = 1_048_576  # read, written or edited at most
MAX_LIST_ENTRIES = 500
_MAX_LINKS = 40  # as the kernel's own limit: more is a loop
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a fifo opens without waiting, then is refused


class Refused(ToolException):
    """A path or file the workspace will not touch; the message says why, for the model."""


def confine(root: Path, working_directory: str | None, thread_id: str) -> Path:
    """The thread's directory: ``<root>/<working_directory>``, or ``<root>/<thread id>`` when unset.

    Raises :class:`Refused` when it resolves outside the root (a symlink moved it, say)."""
    real_root = Path(os.path.realpath(root))
    directory = Path(os.path.realpath(real_root / (working_directory or thread_id)))
    if directory != real_root and real_root not in directory.parents:
        raise Refused(f"the working directory {working_directory!r} is outside the workspaces root")
    return directory


def normalise_directory(root: Path, value: str) -> str:
    """A thread's ``working_directory`` as stored: relative to the root, inside it. ValueError if not."""
    if not value.strip() or "\x00" in value or len(value) > 1000:
        raise ValueError("working_directory must be a non-empty path of at most 1000 characters")
    real_root = os.path.realpath(root)
    candidate = os.path.realpath(os.path.join(real_root, value))  # an absolute value stands alone
    if candidate != real_root and not candidate.startswith(real_root + os.sep):
        raise ValueError(f"working_directory {value!r} resolves outside the workspaces root")
    stored = os.path.relpath(candidate, real_root)
    if any(len(os.fsencode(part)) > 255 for part in stored.split(os.sep)):  # NAME_MAX: never creatable
        raise ValueError("working_directory has a name longer than 255 bytes")
    return stored


@dataclass(frozen=True)
class Workspace:
    directory: Path  # resolved, inside the workspaces root
    writable: bool

    # ---- resolving ---------------------------------------------------------------------------

    def resolve(self, path: str) -> list[str]:
        """The path's components under the directory, every symlink followed and checked."""
        if "\x00" in path:
            raise Refused("the path contains a NUL character")
        if os.path.isabs(path) or path.startswith("~"):
            raise Refused(f"{path!r} is absolute: give a path relative to the working directory")
        if ".." in path.split("/"):
            raise Refused(f"{path!r} contains '..': paths stay inside the working directory")
        pending = [p for p in reversed(path.split("/")) if p not in ("", ".")]
        done: list[str] = []
        links = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":  # only from a symlink's target
                if not done:
                    raise Refused(f"{path!r} is a symlink that points outside the working directory")
                done.pop()
                continue
            here = self.directory.joinpath(*done, part)
            try:
                mode = os.lstat(here).st_mode
            except FileNotFoundError:
                done.append(part)
                continue
            except OSError as exc:
                raise Refused(f"cannot resolve {path!r}: {exc.strerror}") from exc
            if not stat.S_ISLNK(mode):
                done.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                raise Refused(f"{path!r} is a symlink loop")
            target = os.readlink(here)
            if os.path.isabs(target):  # inside the directory, or refused; then from its top
                done = []
                target = self._inside(path, target)
            pending.extend(reversed(target.split("/")))
        return done

    def _inside(self, path: str, target: str) -> str:
        base = str(self.directory)
        if target != base and not target.startswith(base + os.sep):
            raise Refused(f"{path!r} is a symlink that points outside the working directory")
        return os.path.relpath(target, base)

    def ensure(self, owner: tuple[int, int] | None = None) -> None:
        """Create the working directory (it is inside the root: :func:`confine` checked), owned by
        ``owner`` (uid, gid) when given: the user a root OpenBot runs shell commands as."""
        if self.directory.is_dir():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        if owner is not None:
            os.chown(self.directory, *owner)

    # ---- opening -----------------------------------------------------------------------------

    @contextmanager
    def _parent(self, parts: list[str], *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory holding ``parts[-1]``, opened without following links."""
        fd = os.open(self.directory, _DIR)
        try:
            for part in parts[:-1]:
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, _DIR, dir_fd=fd)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _open_file(self, path: str, flags: int, *, create: bool = False) -> int:
        parts = self.resolve(path)
        if not parts:
            raise Refused(f"{path!r} is the working directory, not a file")
        try:
            with self._parent(parts, create=create) as parent:
                fd = os.open(parts[-1], flags | _FILE, 0o644, dir_fd=parent)
        except OSError as exc:
            raise _refusal(path, exc) from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Refused(f"{path!r} is not a regular file (a device, fifo or socket is never opened)")
            if info.st_size > MAX_FILE_BYTES:
                raise Refused(f"{path!r} is too large ({info.st_size} bytes; the limit is {MAX_FILE_BYTES})")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_dir(self, path: str) -> int:
        parts = self.resolve(path)
        try:
            if not parts:
                return os.open(self.directory, _DIR)
            with self._parent(parts) as parent:
                return os.open(parts[-1], _DIR, dir_fd=parent)
        except OSError as exc:
            raise _refusal(path, exc) from exc

    # ---- operations --------------------------------------------------------------------------

    def read_text(self, path: str) -> str:
        fd = self._open_file(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if b"\x00" in data[:8192]:
            raise Refused(f"{path!r} is a binary file")
        return data.decode("utf-8", errors="replace")

    def write_text(self, path: str, content: str) -> int:
        self._check_writable()
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"the content is too large ({len(data)} bytes; the limit is {MAX_FILE_BYTES})")
        fd = self._open_file(path, os.O_WRONLY | os.O_CREAT, create=True)  # checked before truncating
        with os.fdopen(fd, "wb") as f:
            f.truncate(0)
            f.write(data)
        return len(data)

    def replace_text(self, path: str, old: str, new: str, *, replace_all: bool) -> int:
        self._check_writable()
        text = self.read_text(path)
        count = text.count(old) if old else 0
        if count == 0:
            raise Refused(f"old_string is not in {path!r} (it must match exactly, whitespace included)")
        if count > 1 and not replace_all:
            raise Refused(f"old_string occurs {count} times in {path!r}: add context or set replace_all")
        self.write_text(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
        return count if replace_all else 1

    def entries(self, path: str, *, recursive: bool) -> tuple[list[str], bool]:
        """``name/`` for directories, ``name -> target`` for links, ``name (size)`` for files; capped."""
        fd = self._open_dir(path)
        lines: list[str] = []
        try:
            for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
                dirs.sort()
                prefix = "" if folder == "." else folder[2:] + "/"
                for name in sorted([*(d + "/" for d in dirs), *files]):
                    lines.append(prefix + _describe(name, dir_fd))
                    if len(lines) >= MAX_LIST_ENTRIES:
                        return lines, True
                if not recursive:
                    break
        finally:
            os.close(fd)
        return lines, False

    def search_target(self, path: str) -> str:
        """The resolved relative path ``search_files`` hands to grep (checked like any other)."""
        parts = self.resolve(path)
        if parts:
            try:
                with self._parent(parts) as parent:
                    mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
            except OSError as exc:
                raise _refusal(path, exc) from exc
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise Refused(f"{path!r} is not a regular file or a directory")
        return "/".join(parts) or "."

    def _check_writable(self) -> None:
        if not self.writable:
            raise Refused('this bot may only read the workspace (its workspace_access is not "write")')


@dataclass(frozen=True)
class WorkspaceGrant:
    """What a run may touch: its thread's directory under the workspaces root, and how."""

    root: Path
    working_directory: str | None
    thread_id: str
    access: str  # none | read | write
    limits: Limits

    def open(self) -> Workspace:
        if self.access not in ("read", "write"):
            raise Refused("this bot has no workspace access")
        return Workspace(confine(self.root, self.working_directory, self.thread_id), self.access == "write")


def _describe(name: str, dir_fd: int) -> str:
    if name.endswith("/"):
        return name
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return name
    if stat.S_ISLNK(info.st_mode):
        return f"{name} -> {os.readlink(name, dir_fd=dir_fd)}"
    if stat.S_ISREG(info.st_mode):
        return f"{name} ({info.st_size} bytes)"
    return f"{name} (special file)"


def _refusal(path: str, exc: OSError) -> Refused:
    if exc.errno == errno.ELOOP:
        return Refused(f"{path!r} became a symlink while it was opened; refused")
    if exc.errno == errno.ENOENT:
        return Refused(f"{path!r} does not exist")
    if exc.errno == errno.ENOTDIR:
        return Refused(f"a part of {path!r} is not a directory")
    if exc.errno == errno.EISDIR:
        return Refused(f"{path!r} is a directory")
    if exc.errno in (errno.ENXIO, errno.EAGAIN):
        return Refused(f"{path!r} is not a regular file")
    return Refused(f"cannot open {path!r}: {exc.strerror}")
