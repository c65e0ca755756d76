"""The engagement gate's tiers 0 and 1, the conversation shape and tier 2's bounded input
(DESIGN §7): one test per tier-0 signal and per tier-1 case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openbot.core.gate import (
    Decision,
    GateBot,
    GateMessage,
    Shape,
    Signal,
    Verdict,
    decide,
    matcher,
    shape_of,
    within_one_edit,
)
from openbot.core.gate_input import BODY_CHARS, MARKER, TOTAL_CHARS, Line, bounded, clip

QA = GateBot("qa", matcher(("QA", "qa")))
LYRA = GateBot("lyra", matcher(("Lyra", "lyra", "lyra-bot", "the oracle")))
ENGINEER = GateBot("engineer", matcher(("Engineer", "engineer", "eng")))


def human(text: str, **kw: object) -> GateMessage:
    return GateMessage(sender="ana", sender_is_bot=False, text=text, **kw)  # type: ignore[arg-type]


def check(decision: Decision, verdict: Verdict, tier: int, signal: Signal) -> None:
    assert (decision.verdict, decision.tier, decision.signal) == (verdict, tier, signal), decision


def test_shape_is_derived_from_the_participant_counts() -> None:
    assert shape_of(1, 1) is Shape.DIRECT
    assert shape_of(2, 1) is Shape.SMALL_GROUP
    assert shape_of(1, 3) is Shape.SMALL_GROUP
    assert shape_of(3, 2) is Shape.CHANNEL
    assert shape_of(3, 2, small_group_size=5) is Shape.SMALL_GROUP
    assert shape_of(0, 2) is Shape.SMALL_GROUP


# ── tier 0 ──────────────────────────────────────────────────────────────────────────────────
def test_tier0_mention_engages_even_when_a_mention_is_required() -> None:
    check(
        decide(human("@qa run it", mentions=frozenset({"qa"}), require_mention=True), QA),
        Verdict.ENGAGE,
        0,
        Signal.MENTION,
    )


def test_tier0_own_message_is_ignored() -> None:
    message = GateMessage(sender="qa", sender_is_bot=True, text="done, QA out")
    check(decide(message, QA), Verdict.IGNORE, 0, Signal.OWN_MESSAGE)


def test_tier0_system_notice_is_ignored() -> None:
    check(
        decide(GateMessage(sender=None, sender_is_bot=False, text="qa failed"), QA),
        Verdict.IGNORE,
        0,
        Signal.SYSTEM,
    )


def test_tier0_another_bots_message_is_observed_even_when_it_names_the_bot() -> None:
    message = GateMessage(sender="engineer", sender_is_bot=True, text="QA should look", shape=Shape.DIRECT)
    check(decide(message, QA), Verdict.OBSERVE, 0, Signal.NOT_ADDRESSED)


def test_tier0_a_handoff_engages_and_held_or_hop_limited_ones_observe() -> None:
    base = dict(sender="engineer", sender_is_bot=True, text="@qa please", mentions=frozenset({"qa"}))
    check(decide(GateMessage(**base, handoff="qa"), QA), Verdict.ENGAGE, 0, Signal.HANDOFF)  # type: ignore[arg-type]
    check(decide(GateMessage(**base, held="qa"), QA), Verdict.OBSERVE, 0, Signal.HELD)  # type: ignore[arg-type]
    check(decide(GateMessage(**base, hop_limited="qa"), QA), Verdict.OBSERVE, 0, Signal.HOP_LIMIT)  # type: ignore[arg-type]
    check(decide(GateMessage(**base), QA), Verdict.OBSERVE, 0, Signal.MENTION)  # type: ignore[arg-type]


def test_tier0_direct_shape_engages() -> None:
    check(decide(human("what now?", shape=Shape.DIRECT), QA), Verdict.ENGAGE, 0, Signal.DIRECT)


def test_tier0_small_group_reply_engages_only_the_bot_that_spoke_last() -> None:
    message = human("and the retry budget?", shape=Shape.SMALL_GROUP)
    spoke = GateBot("qa", QA.names, spoke_last=True)
    check(decide(message, spoke), Verdict.ENGAGE, 0, Signal.SMALL_GROUP_REPLY)
    check(decide(message, QA), Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED)
    in_channel = human("and the retry budget?", shape=Shape.CHANNEL)
    check(decide(in_channel, spoke), Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED)


def test_tier0_shape_signals_do_not_fire_for_a_message_addressed_to_someone_else() -> None:
    spoke = GateBot("qa", QA.names, spoke_last=True)
    to_other = human("@bea what do you think?", shape=Shape.SMALL_GROUP, mentions=frozenset({"bea"}))
    check(decide(to_other, spoke), Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED)
    assert decide(to_other, spoke).reason == "addressed to @bea"
    direct = human("@bea see this", shape=Shape.DIRECT, mentions=frozenset({"bea"}))
    check(decide(direct, QA), Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED)
    named = human("@bea ask QA", shape=Shape.SMALL_GROUP, mentions=frozenset({"bea"}))
    check(decide(named, spoke), Verdict.OBSERVE, 1, Signal.ALIAS)


def test_tier0_require_mention_turns_off_shape_and_names() -> None:
    message = human("Lyra, what do you think?", shape=Shape.DIRECT, require_mention=True)
    check(decide(message, LYRA), Verdict.OBSERVE, 0, Signal.REQUIRE_MENTION)


# ── tier 1 ──────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("text", "bot"),
    [
        ("hey Lyra, what do you think", LYRA),  # display name, any case
        ("the oracle should know", LYRA),  # an alias of several words
        ("ask LYRA-BOT then", LYRA),  # an alias with a hyphen
        ("is Lyra's answer final?", LYRA),  # possessive
        ("the engineer’s plan", ENGINEER),  # curly possessive
        ("eng: can you check", ENGINEER),  # a short alias
        ("can the enginer check this", ENGINEER),  # one typo, name of 8 letters
        ("the engineers disagree", ENGINEER),  # one letter more
        ("QA?", QA),
    ],
)
def test_tier1_name_or_alias_makes_a_candidate(text: str, bot: GateBot) -> None:
    decision = decide(human(text), bot)
    check(decision, Verdict.OBSERVE, 1, Signal.ALIAS)
    assert decision.candidate


@pytest.mark.parametrize(
    ("text", "bot"),
    [
        ("the aqua paint", QA),  # inside a word
        ("reengineering the loop", ENGINEER),  # inside a word, and more than one edit away
        ("Lyre music", LYRA),  # a typo in a 4-letter name is not tolerated
        ("qat is a plant", QA),
        ("mail lyra@example.com", LYRA),  # an address, not a name
        ("engagement is up", ENGINEER),
    ],
)
def test_tier1_no_match_observes(text: str, bot: GateBot) -> None:
    decision = decide(human(text), bot)
    check(decision, Verdict.OBSERVE, 1, Signal.NOT_ADDRESSED)
    assert not decision.candidate


@given(st.text(max_size=12), st.text(max_size=12))
def test_within_one_edit_agrees_with_levenshtein(a: str, b: str) -> None:
    def distance(x: str, y: str) -> int:
        row = list(range(len(y) + 1))
        for i, cx in enumerate(x, 1):
            prev, row[0] = row[0], i
            for j, cy in enumerate(y, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (cx != cy))
        return row[-1]

    assert within_one_edit(a, b) == (distance(a, b) <= 1)


# ── tier 2's input ──────────────────────────────────────────────────────────────────────────
def test_clip_keeps_head_and_tail() -> None:
    body = "A" * 3000 + "Z" * 3000
    clipped = clip(body)
    assert len(clipped) == BODY_CHARS and MARKER in clipped
    assert clipped.startswith("A") and clipped.endswith("Z")
    assert clip("short") == "short"


def test_bounded_keeps_30_newest_within_32000_chars_and_the_current_message_once() -> None:
    history = [Line(f"u{i}", i % 2 == 0, f"message {i} " + "x" * 1500) for i in range(50)]
    lines, now = bounded(history, Line("ana", False, "Lyra?"))
    assert len(lines) <= 30
    assert lines[-1].startswith("@u49")  # the newest kept, in order
    assert sum(len(line) + 1 for line in lines) + len(now) <= TOTAL_CHARS
    assert now == "@ana: Lyra?" and all("Lyra?" not in line for line in lines)
    big = [Line("u", False, "y" * 5000) for _ in range(30)]
    lines, _ = bounded(big, Line("ana", False, "hi"))
    assert 0 < len(lines) < 30  # the oldest dropped first
    assert sum(len(line) + 1 for line in lines) <= TOTAL_CHARS
