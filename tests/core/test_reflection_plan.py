"""Reflection answers checked before anything is written (core.reflection): ids or matches, the
field rules, and the scope rule (invariant 10)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openbot.core.reflection import Change, Known, parse_json_answer, plan_reflection, thread_specific

MEMORIES = [Known("mem_1", "Deploys go through CI first"), Known("mem_2", "The team uses squash merges")]


def test_create_update_delete_by_id_and_by_match() -> None:
    plan = plan_reflection(
        {
            "operations": [
                {"op": "create", "content": "Prefer short status updates", "segment": "preference"},
                {"op": "update", "match": "squash", "content": "The team uses rebase merges"},
                {"op": "delete", "id": "mem_1"},
            ]
        },
        MEMORIES,
    )
    assert plan.refused == ()
    assert plan.changes == (
        Change("create", content="Prefer short status updates", segment="preference"),
        Change("update", id="mem_2", content="The team uses rebase merges"),
        Change("delete", id="mem_1"),
    )


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        ({"op": "create", "content": "  "}, "content must be a non-empty string"),
        ({"op": "create", "content": "x", "segment": "gossip"}, "segment must be one of"),
        ({"op": "create", "content": "x", "tier": "forever"}, "tier must be one of"),
        ({"op": "create", "content": "x", "importance": 1.5}, "importance must be a number"),
        ({"op": "update", "id": "mem_9", "content": "x"}, "no active memory"),
        ({"op": "delete", "match": "nothing like this"}, "matches no memory"),
        ({"op": "delete", "match": "("}, "not a valid regular expression"),
        ({"op": "forget", "id": "mem_1"}, "op must be"),
    ],
)
def test_bad_operations_are_refused_with_a_reason(operation: dict[str, object], reason: str) -> None:
    plan = plan_reflection([operation], MEMORIES)
    assert plan.changes == ()
    assert len(plan.refused) == 1 and reason in plan.refused[0]["reason"]


def test_thread_specific_content_is_refused() -> None:
    thread = "thr_0001234567890abcdef012"
    plan = plan_reflection(
        [
            {"op": "create", "content": f"In {thread} use camelCase"},
            {"op": "create", "content": "Release notes for v2.3 rollout are due"},
            {"op": "create", "content": "See msg_0001234567890abcdef012 for the answer"},
            {"op": "create", "content": "Always wait for CI before merging"},
        ],
        MEMORIES,
        thread_id=thread,
        thread_title="Release notes for v2.3 rollout",
    )
    assert [c.content for c in plan.changes] == ["Always wait for CI before merging"]
    assert [r["reason"] for r in plan.refused] == [
        "names the thread's id",
        "names the thread's title",
        "names a thread-scoped id (msg_0001234567890abcdef012)",
    ]
    assert thread_specific("Use squash merges", thread, "t") is None


def test_a_memory_is_changed_once_per_reflection() -> None:
    plan = plan_reflection(
        [{"op": "update", "match": "CI", "content": "a"}, {"op": "delete", "match": "CI"}], MEMORIES
    )
    assert [c.op for c in plan.changes] == ["update"]
    assert plan.refused[0]["reason"] == "matches no memory it may change"


def test_json_is_found_in_fences_and_prose() -> None:
    assert parse_json_answer('{"operations": []}') == {"operations": []}
    assert parse_json_answer('Here:\n```json\n{"operations": [1]}\n```') == {"operations": [1]}
    assert parse_json_answer('Sure. {"operations": [2]} Done.') == {"operations": [2]}
    with pytest.raises(ValueError):
        parse_json_answer("nothing to see")


_OPS = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["create", "update", "delete", "forget"]),
        "content": st.one_of(
            st.none(), st.sampled_from(["", "Use squash merges", "In thr_0001234567890abcdef0 do x"])
        ),
        "match": st.one_of(st.none(), st.sampled_from(["CI", "squash", "(", ".", "nothing"])),
        "id": st.one_of(st.none(), st.sampled_from(["mem_1", "mem_2", "mem_9"])),
        "importance": st.one_of(st.none(), st.floats(-1, 2, allow_nan=False)),
    }
).map(lambda op: {k: v for k, v in op.items() if v is not None})


@given(st.lists(_OPS, max_size=25))
def test_every_operation_is_applied_or_refused_and_each_memory_changes_once(
    ops: list[dict[str, object]],
) -> None:
    plan = plan_reflection(ops, MEMORIES, thread_id="thr_0001234567890abcdef0")
    known = {m.id for m in MEMORIES}
    targeted = [c.id for c in plan.changes if c.id is not None]
    assert len(targeted) == len(set(targeted)) and set(targeted) <= known
    assert all(c.content and "thr_" not in c.content for c in plan.changes if c.op == "create")
    assert all(0 <= c.importance <= 1 for c in plan.changes if c.importance is not None)
    assert len(plan.refused) <= len(ops) and (not ops or plan.changes or plan.refused)
