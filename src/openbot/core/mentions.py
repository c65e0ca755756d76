"""Mention parsing: ``@handle`` not preceded by a word character, ``@`` or ``.``."""

from __future__ import annotations

import re

HANDLE_PATTERN = r"[a-z0-9_-]{2,32}"
HANDLE_RE = re.compile(rf"^{HANDLE_PATTERN}$")
_MENTION_RE = re.compile(r"(?<![\w@.])@([A-Za-z0-9_-]{2,32})(?![A-Za-z0-9_-])")


def parse_mentions(text: str) -> list[str]:
    """Return the handles mentioned in ``text``, lower-cased, in order of first appearance.

    ``me@example.com`` and ``@@x`` and ``a.@b`` are not mentions; ``(@qa)`` and ``@qa,`` are.
    """
    seen: dict[str, None] = {}
    for match in _MENTION_RE.finditer(text):
        seen.setdefault(match.group(1).lower(), None)
    return list(seen)


def is_valid_handle(handle: str) -> bool:
    return bool(HANDLE_RE.match(handle))
