"""Consolidation: clusters of similar memories, and what a proposer, an adversary and a judge made
of them, turned into decisions (DESIGN §8).

- :func:`clusters` groups active memories whose words overlap (Jaccard similarity of their word
  sets ≥ :data:`SIMILAR`, joined transitively, at most :data:`MAX_CLUSTER` per group). Lexical on
  purpose: it needs no embeddings and is what the proposer is shown.
- The proposer answers ``{"proposals": [{"action": "merge" | "supersede" | "prune",
  "memory_ids" | "match", "content"?, "reason"?}]}``; the adversary ``{"objections": [{"proposal":
  index, "reason"}]}``; the judge ``{"verdicts": [{"proposal": index, "accept": bool, "reason"}]}``.
- :func:`decide` applies the rules: a proposal is carried out only if it is well-formed, the judge
  accepted it, and no earlier accepted proposal touched the same memories; everything else, and
  every cluster nobody changed, is a ``keep`` decision. Every decision has a reason.

Merge: the memories become one new memory with the proposal's content (the old ones archived).
Supersede: the newest of them stays (with the proposal's content if it has one) and the older
ones are archived. Prune: they are deleted.

Pure: no I/O, no model; the runtime makes the calls and writes the decisions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openbot.core.memory import query_terms

__all__ = [
    "ACTIONS",
    "MAX_CLUSTER",
    "SIMILAR",
    "Decision",
    "Proposal",
    "Remembered",
    "clusters",
    "decide",
    "objections_from",
    "proposals_from",
    "similarity",
    "verdicts_from",
    "words",
]

ACTIONS = ("merge", "supersede", "prune")
SIMILAR = 0.4
MAX_CLUSTER = 8
MAX_MEMORIES = 1_000
"""Clustering looks at this many memories at most (the most recently updated come first)."""


@dataclass(frozen=True)
class Remembered:
    id: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class Proposal:
    action: str
    memory_ids: tuple[str, ...]
    content: str | None
    reason: str


@dataclass(frozen=True)
class Decision:
    action: str  # merge | supersede | prune | keep
    memory_ids: tuple[str, ...]
    reason: str
    content: str | None = None
    keeper: str | None = None
    """Supersede: the memory that stays."""


def words(text: str) -> frozenset[str]:
    """The words that carry meaning, as the lexical index sees them (``core.memory.query_terms``)."""
    return frozenset(query_terms(text))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def clusters(memories: Sequence[Remembered], threshold: float = SIMILAR) -> list[tuple[str, ...]]:
    """Groups (two or more) of similar memories, each in the order given, largest first."""
    memories = list(memories)[:MAX_MEMORIES]
    bags = [words(m.content) for m in memories]
    index: dict[str, list[int]] = {}
    for i, bag in enumerate(bags):
        for word in bag:
            index.setdefault(word, []).append(i)
    parent = list(range(len(memories)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, bag in enumerate(bags):
        near = {j for word in bag for j in index[word] if j > i}
        for j in sorted(near):
            if similarity(bag, bags[j]) >= threshold:
                parent[root(j)] = root(i)
    groups: dict[int, list[str]] = {}
    for i, memory in enumerate(memories):
        groups.setdefault(root(i), []).append(memory.id)
    found = [tuple(g[:MAX_CLUSTER]) for g in groups.values() if len(g) > 1]
    return sorted(found, key=len, reverse=True)


def proposals_from(answer: Any, memories: Sequence[Remembered]) -> list[Proposal | str]:
    """The proposer's proposals, each checked (a string says why one is unusable)."""
    raw = answer.get("proposals") if isinstance(answer, dict) else answer
    if not isinstance(raw, list):
        return ["the proposer answered no list of proposals"]
    known = {m.id: m for m in memories}
    return [_proposal(item, memories, known) for item in raw]


def _proposal(item: Any, memories: Sequence[Remembered], known: Mapping[str, Remembered]) -> Proposal | str:
    if not isinstance(item, dict) or item.get("action") not in ACTIONS:
        return "a proposal needs an action: merge, supersede or prune"
    action = str(item["action"])
    if isinstance(item.get("match"), str) and item["match"]:
        try:
            pattern = re.compile(item["match"])
        except re.error as exc:
            return f"match is not a valid regular expression: {exc}"
        ids = [m.id for m in memories if pattern.search(m.content)]
    else:
        listed = item.get("memory_ids")
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            return f"{action}: memory_ids must be a list of memory ids"
        unknown = [i for i in listed if i not in known]
        if unknown:
            return f"{action}: unknown or inactive memories {', '.join(unknown)}"
        ids = list(dict.fromkeys(listed))
    content = item.get("content")
    if content is not None and (not isinstance(content, str) or not content.strip()):
        return f"{action}: content must be a non-empty string"
    if action in ("merge", "supersede") and len(ids) < 2:
        return f"{action} needs two or more memories, found {len(ids)}"
    if action == "merge" and content is None:
        return "merge needs the merged content"
    if not ids:
        return "prune names no memory"
    reason = item.get("reason")
    reason = reason.strip() if isinstance(reason, str) and reason.strip() else f"proposed {action}"
    return Proposal(action, tuple(ids), content.strip() if content else None, reason)


def decide(
    groups: Sequence[tuple[str, ...]],
    proposals: Sequence[Proposal | str],
    objections: Mapping[int, str],
    verdicts: Mapping[int, tuple[bool, str]],
    created: Mapping[str, datetime],
) -> list[Decision]:
    """The decisions, in proposal order, then ``keep`` for every cluster nobody changed."""
    decisions: list[Decision] = []
    changed: set[str] = set()
    for index, proposal in enumerate(proposals):
        if isinstance(proposal, str):
            decisions.append(Decision("keep", (), f"unusable proposal: {proposal}"))
            continue
        accepted, judged = verdicts.get(index, (False, "the judge gave no verdict"))
        objection = objections.get(index)
        why = f"{proposal.reason}; adversary: {objection or 'no objection'}; judge: {judged}"
        if not accepted:
            decisions.append(Decision("keep", proposal.memory_ids, f"rejected: {why}"))
            continue
        if changed.intersection(proposal.memory_ids):
            decisions.append(Decision("keep", proposal.memory_ids, "overlaps an earlier decision"))
            continue
        changed.update(proposal.memory_ids)
        keeper = None
        if proposal.action == "supersede":
            keeper = max(proposal.memory_ids, key=lambda i: (created[i], i))
        decisions.append(Decision(proposal.action, proposal.memory_ids, why, proposal.content, keeper))
    for group in groups:
        untouched = tuple(i for i in group if i not in changed)
        if len(untouched) == len(group):
            decisions.append(Decision("keep", group, "similar, but no change was accepted"))
    return decisions


def objections_from(answer: Any) -> dict[int, str]:
    """The adversary's objections by proposal index (anything malformed is ignored)."""
    raw = answer.get("objections") if isinstance(answer, dict) else answer
    found: dict[int, str] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("proposal"), int):
            found[item["proposal"]] = str(item.get("reason") or "objected")
    return found


def verdicts_from(answer: Any) -> dict[int, tuple[bool, str]]:
    """The judge's verdicts by proposal index; a proposal without one is rejected."""
    raw = answer.get("verdicts") if isinstance(answer, dict) else answer
    found: dict[int, tuple[bool, str]] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("proposal"), int):
            accept = item.get("accept") is True
            reason = item.get("reason") or ("accepted" if accept else "rejected")
            found[item["proposal"]] = (accept, str(reason))
    return found
