"""Consolidation (core.consolidation): lexical clusters, proposals checked, and the judge's word
turned into decisions, each with a reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from openbot.core.consolidation import (
    Decision,
    Remembered,
    clusters,
    decide,
    objections_from,
    proposals_from,
    verdicts_from,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MEMORIES = [
    Remembered("a", "Deploys go through CI first", T0),
    Remembered("b", "Deploys always go through CI first", T0 + timedelta(days=1)),
    Remembered("c", "The human prefers short status updates", T0),
    Remembered("d", "Status updates should be short, the human prefers", T0 + timedelta(days=2)),
    Remembered("e", "Python 3.11 is the minimum version", T0),
]
CREATED = {m.id: m.created_at for m in MEMORIES}


def test_near_duplicates_cluster_and_unrelated_memories_do_not() -> None:
    assert sorted(clusters(MEMORIES)) == [("a", "b"), ("c", "d")]
    assert clusters(MEMORIES[4:]) == []


def test_accepted_proposals_become_decisions_and_untouched_clusters_are_kept() -> None:
    proposals = proposals_from(
        {"proposals": [{"action": "merge", "match": "CI", "content": "Deploys go through CI"}]}, MEMORIES
    )
    decisions = decide(clusters(MEMORIES), proposals, {}, {0: (True, "same fact")}, CREATED)
    merge, keep = decisions
    assert (merge.action, merge.memory_ids, merge.content) == ("merge", ("a", "b"), "Deploys go through CI")
    assert "judge: same fact" in merge.reason
    assert keep == Decision("keep", ("c", "d"), "similar, but no change was accepted")


def test_supersede_keeps_the_newest_and_rejections_are_kept_with_the_objection() -> None:
    proposals = proposals_from(
        [
            {"action": "supersede", "memory_ids": ["c", "d"], "reason": "same preference"},
            {"action": "prune", "memory_ids": ["e"]},
        ],
        MEMORIES,
    )
    objections = objections_from({"objections": [{"proposal": 1, "reason": "still true"}]})
    verdicts = verdicts_from(
        {"verdicts": [{"proposal": 0, "accept": True}, {"proposal": 1, "accept": False, "reason": "keep"}]}
    )
    supersede, rejected, kept = decide(clusters(MEMORIES), proposals, objections, verdicts, CREATED)
    assert (supersede.action, supersede.keeper) == ("supersede", "d")
    assert rejected.action == "keep" and "adversary: still true" in rejected.reason
    assert kept.memory_ids == ("a", "b")


def test_unusable_and_overlapping_proposals_change_nothing() -> None:
    proposals = proposals_from(
        [
            {"action": "merge", "memory_ids": ["a", "zzz"], "content": "x"},
            {"action": "merge", "memory_ids": ["a", "b"]},
            {"action": "prune", "memory_ids": ["a"]},
            {"action": "supersede", "memory_ids": ["a", "b"]},
            {"action": "explode"},
        ],
        MEMORIES,
    )
    assert isinstance(proposals[0], str) and "unknown" in proposals[0]
    assert isinstance(proposals[1], str) and "merged content" in proposals[1]
    verdicts = {i: (True, "ok") for i in range(5)}
    decisions = decide([("a", "b")], proposals, {}, verdicts, CREATED)
    assert [d.action for d in decisions] == ["keep", "keep", "prune", "keep", "keep"]
    assert decisions[3].reason == "overlaps an earlier decision"
    assert all(d.reason for d in decisions)


def test_a_proposal_without_a_verdict_is_rejected() -> None:
    proposals = proposals_from([{"action": "prune", "memory_ids": ["e"]}], MEMORIES)
    (decision,) = decide([], proposals, {}, {}, CREATED)
    assert decision.action == "keep" and "no verdict" in decision.reason
