"""Thread unrolling: scoped view, budgets, (new) markers, merging, the left-out note."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from hypothesis import given
from hypothesis import strategies as st

from openbot.core.history import (
    HistoryMessage,
    Role,
    in_view,
    is_scoped,
    unroll,
    window_closed,
    window_rows,
)
from openbot.core.prompt import PromptInput, RosterEntry, render_system_prompt


def msg(i: int, sender: str | None, text: str, mentions: tuple[str, ...] = ()) -> HistoryMessage:
    return HistoryMessage(
        id=f"m{i:03d}",
        sender=sender,
        sender_name=f"@{sender}" if sender else "system",
        content=text,
        mentions=mentions,
    )


THREAD = [
    msg(1, "you", "@chief plan it", ("chief",)),
    msg(2, "chief", "@engineer build X", ("engineer",)),
    msg(3, "engineer", "built"),
    msg(4, "chief", "@qa test X", ("qa",)),
    msg(5, "you", "also Y"),
    msg(6, "chief", "@engineer build Y too", ("engineer",)),
]


def test_the_default_bot_and_the_only_bot_see_everything() -> None:
    assert not is_scoped("chief", "chief", ["chief", "engineer"])
    assert not is_scoped("engineer", "chief", ["engineer"])
    assert is_scoped("engineer", "chief", ["chief", "engineer"])


def test_a_delegate_sees_what_mentions_it_its_own_replies_and_its_triggers() -> None:
    history = unroll(THREAD, bot="engineer", triggers=frozenset({"m006"}), scoped=True)
    texts = [t.text for t in history.turns]
    assert texts == ["[@chief]: @engineer build X", "built", "[@chief] (new): @engineer build Y too"]
    assert [t.role for t in history.turns] == [Role.HUMAN, Role.AI, Role.HUMAN]
    assert history.left_out == 3
    note = history.note()
    assert note is not None and "read_history" in note and "recall_messages" in note


def test_foreign_messages_merge_into_one_turn_and_triggers_are_marked_new() -> None:
    history = unroll(THREAD, bot="chief", triggers=frozenset({"m005"}), scoped=False)
    assert history.turns[0] == history.turns[0].__class__(Role.HUMAN, "[@you]: @chief plan it")
    assert history.turns[2].text == "[@engineer]: built"
    merged = unroll(
        [msg(1, "you", "a"), msg(2, "engineer", "b"), msg(3, "chief", "c")],
        bot="chief",
        triggers=frozenset(),
        scoped=False,
    )
    assert [t.text for t in merged.turns] == ["[@you]: a\n\n[@engineer]: b", "c"]
    assert "[@you] (new): also Y" in [t.text for t in history.turns]
    assert history.left_out == 0 and history.note() is None


def test_budget_and_max_messages_keep_the_newest_and_always_the_triggers() -> None:
    long = [msg(i, "you", "word " * 400) for i in range(10)]
    history = unroll(long, bot="chief", triggers=frozenset({"m009"}), scoped=False, token_budget=1200)
    assert history.shown == 2 and history.left_out == 8
    capped = unroll(long, bot="chief", triggers=frozenset(), scoped=False, max_messages=3)
    assert capped.shown == 3
    tiny = unroll(long, bot="chief", triggers=frozenset({"m009"}), scoped=False, token_budget=10)
    assert tiny.shown == 1 and "(new)" in tiny.turns[0].text


def test_a_count_of_the_whole_thread_names_what_was_not_given() -> None:
    newest = THREAD[3:]
    history = unroll(newest, bot="chief", triggers=frozenset(), scoped=False, thread_size=6)
    assert history.shown == 3 and history.left_out == 3
    capped = unroll(newest, bot="chief", triggers=frozenset(), scoped=False, max_messages=1, thread_size=4)
    assert capped.left_out == 3 and capped.at_least is False
    floor = unroll(
        newest, bot="chief", triggers=frozenset(), scoped=False, max_messages=1, thread_size=5, at_least=True
    )
    note = floor.note()
    assert note is not None and note.startswith("At least 4 other message(s)") and "read_history" in note
    assert replace(floor, at_least=False).note() == note.replace("At least 4", "4")


def test_the_window_closes_at_the_first_message_that_does_not_fit() -> None:
    long = [msg(i, "you", "word " * 400) for i in range(10)]
    assert window_closed(long, bot="chief", triggers=frozenset(), scoped=False, token_budget=1200)
    assert not window_closed(long[-2:], bot="chief", triggers=frozenset(), scoped=False, token_budget=1200)
    assert window_closed(long[-3:], bot="chief", triggers=frozenset(), scoped=False, token_budget=1200)
    # Out of view is not in the window: the engineer's three messages all fit.
    assert not window_closed(THREAD, bot="engineer", triggers=frozenset(), scoped=True, max_messages=3)
    assert window_closed(THREAD, bot="engineer", triggers=frozenset(), scoped=True, max_messages=2)
    assert window_rows(triggers=frozenset({"a", "b"}), max_messages=80) == 83


HANDLES = ("chief", "engineer", "qa", None)


@st.composite
def threads(draw: st.DrawFn) -> list[HistoryMessage]:
    size = draw(st.integers(0, 40))
    return [
        msg(
            i,
            draw(st.sampled_from(HANDLES)),
            "x" * draw(st.integers(0, 120)),
            tuple(draw(st.lists(st.sampled_from(HANDLES[:3]), max_size=2))),
        )
        for i in range(size)
    ]


@given(
    threads(),
    st.sampled_from(HANDLES[:3]),
    st.booleans(),
    st.sets(st.integers(0, 45), max_size=4),
    st.integers(10, 400),
    st.integers(1, 8),
    st.integers(1, 5),
)
def test_the_newest_messages_in_view_unroll_as_the_whole_thread(
    thread: list[HistoryMessage], bot: str, scoped: bool, picks: set[int], budget: int, cap: int, page: int
) -> None:
    """What prepare relies on: the newest window_rows messages in view, or the newest read a page
    at a time until the window closes, give the same turns — and with the thread's size, the same
    note — as the whole thread."""
    triggers = frozenset(f"m{i:03d}" for i in picks)
    limits = {"bot": bot, "triggers": triggers, "scoped": scoped, "token_budget": budget, "max_messages": cap}
    whole = partial(unroll, **limits)(thread)
    view = [m for m in thread if in_view(m, bot=bot, triggers=triggers, scoped=scoped)]
    newest = view[-window_rows(triggers=triggers, max_messages=cap) :]
    assert partial(unroll, **limits)(newest, thread_size=len(thread)) == whole
    paged: list[HistoryMessage] = []
    while len(paged) < len(thread) and not partial(window_closed, **limits)(paged):
        paged = thread[-len(paged) - page :]  # out of view too, as when nothing is filtered
    assert partial(unroll, **limits)(paged, thread_size=len(thread)) == whole


def test_system_notices_render_as_system() -> None:
    history = unroll([msg(1, None, "restarted")], bot="chief", triggers=frozenset(), scoped=False)
    assert history.turns[0].text == "[system]: restarted"


def test_system_prompt_has_identity_rules_roster_and_todos_in_order() -> None:
    prompt = render_system_prompt(
        PromptInput(
            handle="engineer",
            name="Engineer",
            description="Writes code.",
            instructions="Be precise.",
            thread_title="Release",
            participants=(RosterEntry("you", "You", "", "human"),),
            default_bot="chief_of_staff",
            roster=(RosterEntry("qa", "QA", "Tests things."),),
            scoped=True,
            trigger_count=2,
            tools=("ask_human", "todo_write"),
            approval_tools=("todo_write",),
            todos=(("pending", "write tests"),),
            history_note="3 other message(s) are not shown.",
        )
    )
    order = [
        "You are Engineer (@engineer)",
        "Be precise.",
        "@you (human",
        "(new)",
        "delegate",
        "3 other message(s)",
        "todo_write",
        "@qa (bot, QA): Tests things.",
        "[pending] write tests",
    ]
    positions = [prompt.index(part) for part in order]
    assert positions == sorted(positions)
