"""The engagement gate's deterministic tiers and the conversation shape (DESIGN §7).

Pure: the delivery transaction gathers one :class:`GateMessage` per posted message and one
:class:`GateBot` per bot that sees it, and :func:`decide` returns that bot's :class:`Decision`.
Tier 0 settles what is certain (a mention, the bot's own message, another bot's message, the
direct and small-group shapes); tier 1 only nominates a *candidate* (the bot's name or an alias
appears, perhaps as a third-person reference) for the one cheap model call of tier 2, which the
runtime makes outside the transaction. Absence of evidence is not address: the default is observe.

Cost matters here: a busy channel asks this question for every bot on every message, so the
message's words are read once (:class:`GateMessage`) and each bot's names are compiled once
(:func:`matcher`), leaving a decision a few dictionary and regex lookups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

SMALL_GROUP_SIZE = 4
TYPO_MIN_LENGTH = 5  # names this long tolerate one typo (edit distance 1)


class Shape(StrEnum):
    DIRECT = "direct"  # one human and one bot
    SMALL_GROUP = "small_group"  # up to SMALL_GROUP_SIZE actors
    CHANNEL = "channel"  # more


class Verdict(StrEnum):
    ENGAGE = "engage"
    OBSERVE = "observe"
    IGNORE = "ignore"


class Signal(StrEnum):
    MENTION = "mention"
    HANDOFF = "handoff"
    OWN_MESSAGE = "own_message"
    DIRECT = "direct"
    SMALL_GROUP_REPLY = "small_group_reply"
    ALIAS = "alias"
    MODEL = "model"
    REQUIRE_MENTION = "require_mention"
    DEFAULT_BOT = "default_bot"
    ONLY_BOT = "only_bot"
    HOP_LIMIT = "hop_limit"
    HELD = "held"
    SYSTEM = "system"
    NOT_ADDRESSED = "not_addressed"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    tier: int
    signal: Signal
    reason: str
    candidate: bool = False  # tier 1 matched: tier 2 decides (until it does, the bot observes)


def shape_of(humans: int, bots: int, small_group_size: int = SMALL_GROUP_SIZE) -> Shape:
    """The conversation's shape from its participant counts (derived per message, never stored)."""
    if humans == 1 and bots == 1:
        return Shape.DIRECT
    return Shape.SMALL_GROUP if humans + bots <= small_group_size else Shape.CHANNEL


_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


@dataclass(frozen=True)
class GateMessage:
    """What every bot's decision shares about one message."""

    sender: str | None  # handle; None: the system
    sender_is_bot: bool
    text: str
    mentions: frozenset[str] = frozenset()
    handoff: str | None = None  # the bot a bot message wakes (the routing plan's first target)
    held: str | None = None  # the bot whose hand-off is held until the sender's mail drains
    hop_limited: str | None = None  # the bot a hand-off did not reach: the hop limit
    shape: Shape = Shape.CHANNEL
    require_mention: bool = False
    lowered: str = field(init=False, repr=False)
    words: dict[int, frozenset[str]] = field(init=False, repr=False)  # by length, for typo checks

    def __post_init__(self) -> None:
        lowered = self.text.lower()
        by_length: dict[int, set[str]] = {}
        for word in _WORD_RE.findall(lowered):
            word = _strip_possessive(word)
            by_length.setdefault(len(word), set()).add(word)
        object.__setattr__(self, "lowered", lowered)
        object.__setattr__(self, "words", {n: frozenset(w) for n, w in by_length.items()})


@dataclass(frozen=True)
class NameMatcher:
    """A bot's names compiled for tier 1: an exact pattern and the single words that allow a typo."""

    pattern: re.Pattern[str] | None
    typo_words: tuple[str, ...]

    def find(self, message: GateMessage) -> str | None:
        """The name as it appears in the message (exact, possessive or one typo away), or None."""
        if self.pattern is not None:
            found = self.pattern.search(message.lowered)
            if found is not None:
                return found.group(1)
        for name in self.typo_words:
            size = len(name)
            for length in (size - 1, size, size + 1):
                for word in message.words.get(length, ()):
                    if word != name and within_one_edit(word, name):
                        return word
        return None


@lru_cache(maxsize=4096)
def matcher(names: tuple[str, ...]) -> NameMatcher:
    """Compile a bot's display name, handle and aliases (case-insensitive, at word boundaries,
    possessives allowed; ``chief_of_staff`` also matches "chief of staff")."""
    variants: dict[str, None] = {}
    for name in names:
        cleaned = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
        if cleaned:
            variants.setdefault(cleaned, None)
        if name.strip():
            variants.setdefault(name.strip().lower(), None)
    if not variants:
        return NameMatcher(None, ())
    ordered = sorted(variants, key=len, reverse=True)
    body = "|".join(re.escape(v).replace(r"\ ", r"\s+") for v in ordered)
    pattern = re.compile(rf"(?<![\w@])({body})(?:['’]s?)?(?![\w@])")
    typo_words = tuple(v for v in ordered if " " not in v and len(v) >= TYPO_MIN_LENGTH and v.isalpha())
    return NameMatcher(pattern, typo_words)


@dataclass(frozen=True)
class GateBot:
    handle: str
    names: NameMatcher
    spoke_last: bool = False  # the thread's previous message is this bot's


def decide(message: GateMessage, bot: GateBot) -> Decision:
    """Tiers 0 and 1 for one bot and one channel message."""
    if message.sender is None:
        return Decision(Verdict.IGNORE, 0, Signal.SYSTEM, "a system notice wakes nobody")
    if message.sender == bot.handle:
        return Decision(Verdict.IGNORE, 0, Signal.OWN_MESSAGE, "its own message")
    if message.sender_is_bot:
        return _from_bot(message, bot.handle)
    if bot.handle in message.mentions:
        return Decision(Verdict.ENGAGE, 0, Signal.MENTION, f"@{message.sender} mentioned @{bot.handle}")
    if message.require_mention:
        return Decision(
            Verdict.OBSERVE, 0, Signal.REQUIRE_MENTION, "this thread requires a mention and there was none"
        )
    if message.mentions:  # addressed to someone else by mention: the shape signals do not apply
        return _named(message, bot, f"addressed to {', '.join('@' + h for h in sorted(message.mentions))}")
    if message.shape is Shape.DIRECT:
        return Decision(Verdict.ENGAGE, 0, Signal.DIRECT, "a direct conversation: one person and this bot")
    if message.shape is Shape.SMALL_GROUP and bot.spoke_last:
        return Decision(
            Verdict.ENGAGE, 0, Signal.SMALL_GROUP_REPLY, "a reply in a small group where this bot spoke last"
        )
    return _named(message, bot, "not addressed to this bot")


def _named(message: GateMessage, bot: GateBot, otherwise: str) -> Decision:
    """Tier 1: a name or alias makes a candidate for tier 2; else observe."""
    named = bot.names.find(message)
    if named is not None:
        return Decision(Verdict.OBSERVE, 1, Signal.ALIAS, f"its name appears ({named!r})", candidate=True)
    return Decision(Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED, otherwise)


def _from_bot(message: GateMessage, handle: str) -> Decision:
    """Bots read each other but trigger each other only by a hand-off (the hop rules apply)."""
    sender = message.sender
    if message.handoff == handle:
        return Decision(Verdict.ENGAGE, 0, Signal.HANDOFF, f"@{sender} handed off to @{handle}")
    if message.held == handle:
        return Decision(
            Verdict.OBSERVE, 0, Signal.HELD, f"@{sender}'s hand-off is held until its queued mail is handled"
        )
    if message.hop_limited == handle:
        return Decision(Verdict.OBSERVE, 0, Signal.HOP_LIMIT, "the bot-to-bot hop limit was reached")
    if handle in message.mentions:
        return Decision(
            Verdict.OBSERVE,
            0,
            Signal.MENTION,
            f"@{sender} mentioned it after its first hand-off",
        )
    return Decision(Verdict.OBSERVE, 0, Signal.NOT_ADDRESSED, f"another bot's message (@{sender})")


def within_one_edit(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by at most one insertion, deletion or substitution."""
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la > lb:
        a, b, la, lb = b, a, lb, la
    i = 0
    while i < la and a[i] == b[i]:
        i += 1
    if la == lb:
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def _strip_possessive(word: str) -> str:
    if word.endswith(("'s", "’s")):
        return word[:-2]
    return word
