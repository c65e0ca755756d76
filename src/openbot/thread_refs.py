"""How a person names a thread in the terminal client.

``openbot post REF``, ``openbot chat --thread REF`` and the REPL's ``/switch REF`` all resolve
``REF`` here, so they accept the same things, tried in this order:

1. a number from the thread listing (``openbot threads``, ``/threads``: newest activity first);
2. a full id;
3. a piece of an id: its start (``thr_0006…``), its end, or the start of the piece the tables
   print (``3fa9`` of ``3fa9c1d2``);
4. a title, case-insensitively: an exact title, else words the title contains.

The first step that names exactly one thread wins; an ambiguous one lists what it matched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from openbot.client import ApiError, Client, Thread

SHORT_ID = 8
"""Characters of an id the tables show: its end (the start is a timestamp shared by neighbours)."""

_ID_CHARS = re.compile(r"[\w-]+")


class ThreadRefError(LookupError):
    """No thread, or more than one, matches a reference; the message says which."""


def pick_id(ids: Sequence[str], ref: str, noun: str, plural: str, command: str) -> str:
    """The one id ``ref`` names: a whole id, or the unique start or end of one, or the start of
    the piece the tables print. A :class:`ThreadRefError` (one ``openbot:`` line, exit status 1)
    says what matched instead."""
    found = [i for i in ids if i == ref] or [i for i in ids if _names(i, ref)]
    if len(found) != 1:
        what = f"no {noun} matches" if not found else f"{len(found)} {plural} match"
        raise ThreadRefError(f"{what} {ref!r} (see `openbot {command}`)")
    return found[0]


def short_id(thread_id: str) -> str:
    return thread_id[-SHORT_ID:]


def listed_threads(client: Client) -> list[Thread]:
    """Threads as the listings number them: most recent activity first."""
    return sorted(client.threads(), key=_activity, reverse=True)


def resolve_thread(client: Client, ref: str, listing: Sequence[str] = ()) -> Thread:
    """The one thread ``ref`` names. ``listing`` is the ids of the listing the user last saw, in
    order; without it, numbers refer to the listing ``openbot threads`` would print now."""
    ref = ref.strip()
    if not ref:
        raise ThreadRefError("no thread given")
    if ref.isdigit():
        ids = list(listing) or [t["id"] for t in listed_threads(client)]
        if 0 < int(ref) <= len(ids):
            return client.thread(ids[int(ref) - 1])
    if _ID_CHARS.fullmatch(ref):
        try:
            return client.thread(ref)
        except ApiError as error:
            if error.status != 404:
                raise
    threads = client.threads()
    ambiguous: list[Thread] = []
    for matches in _MATCHERS:
        found = [t for t in threads if matches(t, ref)]
        if len(found) == 1:
            return found[0]
        ambiguous = ambiguous or found
    if ambiguous:
        names = ", ".join(f"{short_id(t['id'])} {t.get('title') or 'Untitled'!r}" for t in ambiguous[:5])
        more = f" and {len(ambiguous) - 5} more" if len(ambiguous) > 5 else ""
        raise ThreadRefError(
            f"{ref!r} matches {len(ambiguous)} threads ({names}{more}): give more of the id or the title"
        )
    raise ThreadRefError(
        f"no thread matches {ref!r} (give a number from `openbot threads`, an id, or title words)"
    )


def _activity(thread: Thread) -> str:
    return thread.get("last_message_at") or thread.get("created_at") or ""


def _names(id_: str, ref: str) -> bool:
    """Whether ``ref`` is the start or the end of ``id_``, or the start of its :func:`short_id`."""
    return id_.startswith(ref) or id_.endswith(ref) or short_id(id_).startswith(ref)


def _id_piece(thread: Thread, ref: str) -> bool:
    return len(ref) >= 4 and _names(thread["id"], ref)


def _title_is(thread: Thread, ref: str) -> bool:
    return (thread.get("title") or "").casefold() == ref.casefold()


def _title_has(thread: Thread, ref: str) -> bool:
    return ref.casefold() in (thread.get("title") or "").casefold()


_MATCHERS: tuple[Callable[[Thread, str], bool], ...] = (_id_piece, _title_is, _title_has)
