"""Thread unrolling: scoped view, budgets, (new) markers, merging, the left-out note."""

from __future__ import annotations

from openbot.core.history import HistoryMessage, Role, is_scoped, unroll
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
