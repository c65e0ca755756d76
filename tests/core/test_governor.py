"""core.governor: which queued triggers the governor retires (DESIGN §7), as a table and a property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from openbot.core.governor import Mail, govern, run_time_limit, stale_bound
from openbot.core.scheduling import ItemKind


def _mail(
    i: int, *, channel: bool, mentioned: bool = True, age: float = 0.0, kind: ItemKind = ItemKind.MESSAGE
) -> Mail:
    return Mail(f"i{i}", kind, "c" if channel else "t", channel, mentioned, age)


def test_the_oldest_channel_triggers_go_first_then_unaddressed_task_mail_never_mentions() -> None:
    queue = [
        _mail(0, channel=False),  # a task mention: kept
        _mail(1, channel=True),
        _mail(2, channel=False, mentioned=False),
        _mail(3, channel=True),
        _mail(4, channel=False, kind=ItemKind.RESUME),
    ]
    assert [m.id for m in govern(queue, max_queued=3, stale_after=300).shed] == ["i1", "i3"]
    assert [m.id for m in govern(queue, max_queued=2, stale_after=300).shed] == ["i1", "i3", "i2"]
    assert [m.id for m in govern(queue, max_queued=1, stale_after=300).shed] == ["i1", "i3", "i2"]
    assert govern(queue, max_queued=5, stale_after=300).dropped == frozenset()


def test_only_channel_triggers_past_the_bound_go_stale_and_the_bound_is_never_below_its_floor() -> None:
    queue = [
        _mail(0, channel=True, age=301),
        _mail(1, channel=False, age=9999),
        _mail(2, channel=True, age=300),
    ]
    verdict = govern(queue, max_queued=200, stale_after=300)
    assert [m.id for m in verdict.stale] == ["i0"] and verdict.depth == 3
    assert stale_bound(300, 900) == 900 and stale_bound(300, 60) == 300
    assert run_time_limit(600, {"run_timeout_seconds": 30}) == 30
    assert run_time_limit(600, {"run_timeout_seconds": "soon"}) == 600 and run_time_limit(600, None) == 600


mails = st.lists(
    st.tuples(st.booleans(), st.booleans(), st.sampled_from(list(ItemKind)), st.floats(0, 2000)),
    max_size=30,
).map(lambda rows: [Mail(f"i{n}", k, "c" if c else "t", c, m, a) for n, (c, m, k, a) in enumerate(rows)])


@given(queue=mails, bound=st.integers(1, 10), stale_after=st.floats(1, 1000))
def test_the_governor_never_drops_what_it_must_keep_and_keeps_the_bound_when_it_can(
    queue: list[Mail], bound: int, stale_after: float
) -> None:
    verdict = govern(queue, max_queued=bound, stale_after=stale_after)
    ids = {m.id for m in queue}
    assert verdict.dropped <= ids and not {m.id for m in verdict.stale} & {m.id for m in verdict.shed}
    for m in verdict.stale:
        assert m.channel and m.kind is ItemKind.MESSAGE and m.age_s > stale_after
    for m in verdict.shed:
        assert m.kind is ItemKind.MESSAGE and (m.channel or not m.mentioned)
    kept = [m for m in queue if m.id not in verdict.dropped]
    assert len(kept) <= bound or all(not m.sheddable for m in kept)  # only what may never be shed
    if verdict.shed:  # and no more than needed, oldest channel mail first
        assert len(kept) == bound or all(not m.sheddable for m in kept)
        channel_kept = [m for m in kept if m.sheddable and m.channel]
        assert not channel_kept or all(m.channel for m in verdict.shed)
