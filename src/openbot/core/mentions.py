"""Mention parsing: ``@handle`` not preceded by a word character, ``@`` or ``.``, outside code.

Text in backticks (an inline span or a fenced block) is code, not address: a pasted ``@dataclass``
names nobody, as on GitHub. :func:`suggest_handle` finds the handle a mistyped mention meant.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

HANDLE_PATTERN = r"[a-z0-9_-]{2,32}"
HANDLE_RE = re.compile(HANDLE_PATTERN)
_MENTION_RE = re.compile(r"(?<![\w@.])@([A-Za-z0-9_-]{2,32})(?![A-Za-z0-9_-])")
# A fenced block (``` or ~~~ up to the same fence, or to the end) or an inline span of backticks
# closed by as many (CommonMark's rule); each is replaced by one space before mentions are read.
_CODE_RE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[ \t]*$|\Z)|(`+)(?!`).+?(?<!`)\2(?!`)")
SUGGESTION_CUTOFF = 0.75  # difflib ratio: "enginer" → "engineer" is 0.93, "qe" → "qa" only 0.5


def parse_mentions(text: str) -> list[str]:
    """Return the handles mentioned in ``text``, lower-cased, in order of first appearance.

    ``me@example.com`` and ``@@x`` and ``a.@b`` are not mentions; ``(@qa)`` and ``@qa,`` are;
    ``@qa`` inside backticks is code, not a mention.
    """
    seen: dict[str, None] = {}
    for match in _MENTION_RE.finditer(_CODE_RE.sub(" ", text)):
        seen.setdefault(match.group(1).lower(), None)
    return list(seen)


def suggest_handle(handle: str, known: Iterable[str]) -> str | None:
    """The known handle closest to ``handle`` when it is close enough to be a typo, else None."""
    matches = difflib.get_close_matches(handle, sorted(set(known)), n=1, cutoff=SUGGESTION_CUTOFF)
    return matches[0] if matches else None


def is_valid_handle(handle: str) -> bool:
    """The whole of ``handle`` is a handle (``fullmatch``: ``$`` would let a final newline by)."""
    return HANDLE_RE.fullmatch(handle) is not None
