"""What a memory may hold, and how text becomes a lexical query (DESIGN §8). Pure: no I/O.

Relevance is lexical by default: the trigger text's words (lower-cased; @mentions, stop words and
one-letter words dropped; at most :data:`MAX_TERMS`) are OR-ed into one query, and the index ranks the
memories that match any of them (SQLite FTS5 with bm25, PostgreSQL full-text with ``ts_rank``; both
stem English words). A memory that shares no word with the trigger never matches, so it is never
injected, however few memories match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from openbot.core.errors import InvalidArgument

SEGMENTS = ("identity", "preference", "correction", "relationship", "project", "knowledge", "context")
TIERS = ("short", "long", "permanent")
LIFECYCLES = ("active", "archived")
SOURCES = ("tool", "reflection", "human", "consolidation")
DEFAULT_SEGMENT = "knowledge"
DEFAULT_TIER = "long"
DEFAULT_IMPORTANCE = 0.5
MAX_CONTENT = 4_000  # characters
INJECTED = 8  # memories injected into a run's system prompt
MAX_TERMS = 32  # words of the trigger text that take part in a query

_WORD = re.compile(r"[^\W_]+")
_MENTION = re.compile(r"@[A-Za-z0-9_-]+")  # who a text is addressed to, not what it is about
# Words too common to say what a text is about (both indexes must drop the same ones). "one" and
# "ones" are here because SQLite's Porter stemmer makes them "on", which would match every "on".
STOP_WORDS = frozenset(
    """a about above after again all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my no
    nor not now of off on once one ones only or other our ours out over own same she should so some such
    than that the their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours""".split()
)


def check_content(content: str) -> str:
    """The content as stored (stripped); empty or too long is refused."""
    text = content.strip()
    if not text:
        raise InvalidArgument("a memory needs content", {"field": "content"})
    if len(text) > MAX_CONTENT:
        raise InvalidArgument(
            f"a memory holds at most {MAX_CONTENT} characters", {"field": "content", "length": len(text)}
        )
    return text


def check_choice(field: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidArgument(
            f"{field} must be one of {', '.join(choices)}", {"field": field, "value": value}
        )
    return value


def check_importance(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise InvalidArgument("importance must be between 0 and 1", {"field": "importance", "value": value})
    return float(value)


def query_terms(text: str) -> tuple[str, ...]:
    """The words of ``text`` that carry meaning (not stop words, not @mentions), first occurrence
    first, at most :data:`MAX_TERMS`."""
    terms: dict[str, None] = {}
    for word in _WORD.findall(_MENTION.sub(" ", text).lower()):
        if len(word) > 1 and word not in STOP_WORDS:
            terms[word] = None
            if len(terms) == MAX_TERMS:
                break
    return tuple(terms)


def fts5_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the words (each quoted, so none is read as syntax)."""
    return " OR ".join(f'"{t}"' for t in terms)


def tsquery(terms: Sequence[str]) -> str:
    """A PostgreSQL ``to_tsquery`` expression: any of the words (letters and digits only)."""
    return " | ".join(terms)
