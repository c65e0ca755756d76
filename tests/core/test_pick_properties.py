"""Property tests for the pick policy (DESIGN §6, §2 invariants 3, 5, 6).

Random queues of message, resume and question items across a few threads, with random parked and
busy threads: ``pick`` takes the oldest eligible item, a resume alone, and otherwise every message
item of that thread; never a parked thread's message item, never a busy thread.
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from openbot.core.scheduling import Batch, ItemKind, QueuedItem, pick

THREADS = ("t1", "t2", "t3", "t4")


@st.composite
def queues(draw: st.DrawFn) -> list[QueuedItem]:
    count = draw(st.integers(0, 12))
    items = []
    for index in range(count):
        kind = draw(st.sampled_from(list(ItemKind)))
        thread = draw(st.sampled_from(THREADS))
        items.append(
            QueuedItem(
                id=f"item_{index:03d}",
                kind=kind,
                thread_id=thread,
                created_at=float(draw(st.integers(0, 5))),  # ties on purpose: broken by id
                run_id=None if kind is ItemKind.MESSAGE else f"run_{thread}",
            )
        )
    return draw(st.permutations(items))


thread_sets = st.frozensets(st.sampled_from(THREADS))


def _order(item: QueuedItem) -> tuple[float, str]:
    return (item.created_at, item.id)


def _eligible(item: QueuedItem, parked: frozenset[str], busy: frozenset[str]) -> bool:
    if item.thread_id in busy:
        return False
    if item.kind is ItemKind.RESUME:
        return True  # the resume is what un-parks its thread
    return item.kind is ItemKind.MESSAGE and item.thread_id not in parked


@given(queues(), thread_sets, thread_sets)
def test_pick_takes_the_oldest_eligible_item(
    queued: list[QueuedItem], parked: frozenset[str], busy: frozenset[str]
) -> None:
    batch = pick(queued, parked, busy)
    eligible = sorted((i for i in queued if _eligible(i, parked, busy)), key=_order)
    if not eligible:
        assert batch is None
        return
    assert batch is not None
    assert batch.items[0] == eligible[0]
    assert batch.thread_id == eligible[0].thread_id


@given(queues(), thread_sets, thread_sets)
def test_a_resume_runs_alone(queued: list[QueuedItem], parked: frozenset[str], busy: frozenset[str]) -> None:
    batch = pick(queued, parked, busy)
    if batch is None:
        return
    kinds = {i.kind for i in batch.items}
    assert ItemKind.QUESTION not in kinds  # questions are for humans, never a bot's run
    if batch.is_resume:
        assert len(batch.items) == 1
    else:
        assert kinds == {ItemKind.MESSAGE}


@given(queues(), thread_sets, thread_sets)
def test_message_items_of_the_thread_coalesce_into_one_batch(
    queued: list[QueuedItem], parked: frozenset[str], busy: frozenset[str]
) -> None:
    batch = pick(queued, parked, busy)
    if batch is None or batch.is_resume:
        return
    same_thread = sorted(
        (i for i in queued if i.thread_id == batch.thread_id and i.kind is ItemKind.MESSAGE), key=_order
    )
    assert list(batch.items) == same_thread  # all of them, oldest first, each once


@given(queues(), thread_sets, thread_sets)
def test_never_a_parked_threads_message_nor_a_busy_thread(
    queued: list[QueuedItem], parked: frozenset[str], busy: frozenset[str]
) -> None:
    batch = pick(queued, parked, busy)
    if batch is None:
        return
    assert batch.thread_id not in busy
    assert all(i.thread_id == batch.thread_id for i in batch.items)
    if batch.thread_id in parked:
        assert batch.is_resume


@given(queues(), thread_sets, thread_sets, st.randoms(use_true_random=False))
def test_pick_does_not_depend_on_the_input_order(
    queued: list[QueuedItem], parked: frozenset[str], busy: frozenset[str], rnd: random.Random
) -> None:
    shuffled = list(queued)
    rnd.shuffle(shuffled)
    assert pick(queued, parked, busy) == pick(shuffled, parked, busy)


@given(queues(), thread_sets)
def test_draining_serves_every_item_once_and_each_threads_backlog_in_one_run(
    queued: list[QueuedItem], parked: frozenset[str]
) -> None:
    """A worker that picks until nothing is left: a backlog collapses to one run per thread."""
    remaining = list(queued)
    parked_now = set(parked)
    batches: list[Batch] = []
    while (batch := pick(remaining, frozenset(parked_now))) is not None:
        batches.append(batch)
        taken = {i.id for i in batch.items}
        remaining = [i for i in remaining if i.id not in taken]
        if batch.is_resume:
            parked_now.discard(batch.thread_id)  # the resumed run completes and un-parks
        assert len(batches) <= len(queued)
    served = [i.id for b in batches for i in b.items]
    assert len(served) == len(set(served))
    # Left over: only questions (for humans) and the mail of threads still parked.
    assert all(i.kind is ItemKind.QUESTION or i.thread_id in parked_now for i in remaining)
    assert all(i.kind is not ItemKind.RESUME for i in remaining)
    message_runs = [b.thread_id for b in batches if not b.is_resume]
    resumed = {b.thread_id for b in batches if b.is_resume}
    for thread in THREADS:
        # All of a thread's mail in one run; a parked thread's mail waits for its resume.
        assert message_runs.count(thread) <= 1, (thread, batches)
        if thread in parked and thread not in resumed:
            assert thread not in message_runs
