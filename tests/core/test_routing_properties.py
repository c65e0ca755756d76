"""Property tests for the routing plan (DESIGN §5, §2 invariants 8, 9, 11).

Random actor sets (bots, humans, externals; enabled or not), random ``to`` and mention lists,
random senders (including the system) and hop states: ``plan_route`` must follow the rules.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from openbot.core.mentions import parse_mentions
from openbot.core.routing import ActorKind, ActorRef, RouteInput, RoutePlan, plan_route

KNOWN = ("aa", "bb", "cc", "dd", "ee", "ff", "chief_of_staff")
UNKNOWN = ("zz", "nobody")
FALLBACK = "chief_of_staff"


ANY = "any"


@st.composite
def route_inputs(draw: st.DrawFn, sender_kind: ActorKind | str | None = ANY) -> RouteInput:
    """A routing problem; ``sender_kind`` forces the sender's kind (None: the system)."""
    handles = draw(st.lists(st.sampled_from(KNOWN), min_size=1, max_size=len(KNOWN), unique=True))
    actors = {h: ActorRef(h, draw(st.sampled_from(list(ActorKind))), draw(st.booleans())) for h in handles}
    sender: ActorRef | None = None
    if sender_kind == ANY:
        sender_handle = draw(st.one_of(st.none(), st.sampled_from(handles)))
        sender = actors[sender_handle] if sender_handle else None
    elif sender_kind is not None:
        sender_handle = draw(st.sampled_from(handles))
        sender = actors[sender_handle] = ActorRef(sender_handle, ActorKind(sender_kind), draw(st.booleans()))
    pool = st.sampled_from(KNOWN + UNKNOWN)
    mentions = tuple(draw(st.lists(pool, max_size=6)))
    # Explicit ``to`` handles are validated by delivery (known only); mentions may name anyone.
    to = tuple(draw(st.lists(st.sampled_from(handles), max_size=3)))
    participants = tuple(draw(st.lists(st.sampled_from(handles), max_size=len(handles), unique=True)))
    default_bot = draw(st.one_of(st.none(), st.sampled_from(KNOWN)))
    max_hops = draw(st.integers(1, 6))
    return RouteInput(
        sender=sender,
        mentions=mentions,
        to=to,
        actors=actors,
        participants=participants,
        default_bot=default_bot,
        fallback_bot=FALLBACK,
        sender_has_queued_mail=draw(st.booleans()),
        hop=draw(st.integers(0, max_hops + 2)),
        max_hops=max_hops,
        hop_limit_notified=draw(st.booleans()),
    )


def _is_bot(data: RouteInput, handle: str) -> bool:
    return handle in data.actors and data.actors[handle].kind is ActorKind.BOT


def _actionable(data: RouteInput, handle: str) -> bool:
    """Enabled bot, known, and not the sender (seed §4.1)."""
    sender = data.sender.handle if data.sender else None
    return _is_bot(data, handle) and data.actors[handle].enabled and handle != sender


def _known_targets(data: RouteInput) -> list[str]:
    """``to`` then mentions, in order, deduplicated, known actors only."""
    return [h for h in dict.fromkeys((*data.to, *data.mentions)) if h in data.actors]


def _sender_kind(data: RouteInput) -> ActorKind | None:
    return data.sender.kind if data.sender else None


def _all_dispatched(plan: RoutePlan) -> tuple[str, ...]:
    return (*plan.wake, *plan.held, *plan.hop_limited)


@given(route_inputs())
def test_every_list_is_deduplicated(data: RouteInput) -> None:
    plan = plan_route(data)
    lists = ("mentions", "wake", "held", "recorded_only", "new_participants", "notify", "hop_limited")
    for name in (*lists, "unknown"):
        values = getattr(plan, name)
        assert len(values) == len(set(values)), (name, values)


@given(route_inputs())
def test_recorded_mentions_are_the_known_targets_in_order(data: RouteInput) -> None:
    assert list(plan_route(data).mentions) == _known_targets(data)


@given(route_inputs())
def test_sender_is_never_woken_held_notified_or_joined(data: RouteInput) -> None:
    plan = plan_route(data)
    if data.sender is None:
        return
    me = data.sender.handle
    for name in ("wake", "held", "recorded_only", "notify", "new_participants", "hop_limited"):
        assert me not in getattr(plan, name), name


@given(route_inputs())
def test_only_enabled_known_bots_are_woken_or_held(data: RouteInput) -> None:
    plan = plan_route(data)
    for handle in (*_all_dispatched(plan), *plan.recorded_only):
        assert _actionable(data, handle), handle
    # Woken, held, dropped and recorded-only are disjoint.
    dispatched = [*_all_dispatched(plan), *plan.recorded_only]
    assert len(dispatched) == len(set(dispatched))


@given(route_inputs(sender_kind=None))
def test_system_messages_wake_nobody(data: RouteInput) -> None:
    plan = plan_route(data)
    assert plan.wake == () and plan.held == () and plan.hop_limited == ()
    assert not plan.post_hop_notice and not plan.reset_hop_notice


@given(route_inputs(sender_kind=ActorKind.BOT))
def test_a_bot_message_dispatches_at_most_its_first_actionable_mention(data: RouteInput) -> None:
    plan = plan_route(data)
    actionable = [h for h in _known_targets(data) if _actionable(data, h)]
    dispatched = _all_dispatched(plan)
    assert len(plan.wake) <= 1 and len(dispatched) <= 1
    assert list(dispatched) == actionable[:1]  # no mention: the exchange ends, no default bot
    assert list(plan.recorded_only) == actionable[1:]
    assert not plan.reset_hop_notice


@given(route_inputs(sender_kind=ActorKind.BOT))
def test_a_bot_hand_off_is_held_exactly_when_the_sender_has_queued_mail(data: RouteInput) -> None:
    plan = plan_route(data)
    if plan.held:
        assert data.sender_has_queued_mail
    if plan.wake:
        assert not data.sender_has_queued_mail
    first = [h for h in _known_targets(data) if _actionable(data, h)][:1]
    if first and data.hop < data.max_hops:
        assert (plan.held if data.sender_has_queued_mail else plan.wake) == tuple(first)


@given(route_inputs())
def test_the_hop_limit_drops_the_hand_off_and_flags_the_notice_once(data: RouteInput) -> None:
    plan = plan_route(data)
    if plan.post_hop_notice or plan.hop_limited:
        assert _sender_kind(data) is ActorKind.BOT and data.hop >= data.max_hops
    if plan.post_hop_notice:
        assert plan.hop_limited and not data.hop_limit_notified
    if _sender_kind(data) is not ActorKind.BOT:
        assert plan.hop_limited == ()
        return
    actionable = [h for h in _known_targets(data) if _actionable(data, h)]
    if data.hop >= data.max_hops:
        assert plan.wake == () and plan.held == ()
        assert list(plan.hop_limited) == actionable[:1]
        assert plan.post_hop_notice == (bool(actionable) and not data.hop_limit_notified)
    else:
        assert plan.hop_limited == () and not plan.post_hop_notice


@given(route_inputs(sender_kind=ActorKind.HUMAN))
def test_a_human_message_fans_out_and_resets_the_hop_notice(data: RouteInput) -> None:
    plan = plan_route(data)
    assert plan.held == () and plan.hop_limited == () and plan.recorded_only == ()
    assert plan.reset_hop_notice == data.hop_limit_notified
    targets = _known_targets(data)
    if targets:
        # Every actionable target, in order, whatever the hop (hops only brake bot-to-bot).
        assert list(plan.wake) == [h for h in targets if _actionable(data, h)]
    else:
        assert len(plan.wake) <= 1  # who, exactly: the unaddressed-message tests below


@given(route_inputs(sender_kind=ActorKind.EXTERNAL))
def test_an_external_message_fans_out_but_does_not_reset_the_hop_notice(data: RouteInput) -> None:
    plan = plan_route(data)
    targets = _known_targets(data)
    assert plan.held == () and plan.hop_limited == ()
    if targets:
        assert list(plan.wake) == [h for h in targets if _actionable(data, h)]
    assert not plan.reset_hop_notice  # "reset by any human message" (invariant 11)


@given(route_inputs())
def test_new_participants_are_targets_not_yet_in_the_thread(data: RouteInput) -> None:
    plan = plan_route(data)
    participants = set(data.participants)
    sender = data.sender.handle if data.sender else None
    expected = [h for h in _known_targets(data) if h not in participants and h != sender]
    expected += [h for h in plan.wake if h not in participants and h not in expected]
    assert list(plan.new_participants) == expected
    # Everyone woken or held ends up a participant.
    for handle in (*plan.wake, *plan.held):
        assert handle in participants or handle in plan.new_participants


@given(route_inputs())
def test_notify_is_every_non_bot_participant_except_the_sender(data: RouteInput) -> None:
    plan = plan_route(data)
    sender = data.sender.handle if data.sender else None
    everyone = [*data.participants, *plan.new_participants]
    expected = [h for h in dict.fromkeys(everyone) if not _is_bot(data, h) and h != sender]
    assert list(plan.notify) == expected
    assert not set(plan.notify) & set(plan.wake)


# ── a human message that addresses nobody (DESIGN §5): the thread's default bot, else ───────────
# the thread's only bot, else @chief_of_staff, else nobody. Each clause is its own property, on
# inputs built so that the clause applies, plus hand-worked examples.


def _unaddressed(data: RouteInput) -> RouteInput:
    """The same message without a mention or a ``to`` (a mention of an unknown handle is no longer
    "no mention": it is reported and never rerouted, see the property after these)."""
    return replace(data, to=(), mentions=())


unaddressed_human_messages = route_inputs(sender_kind=ActorKind.HUMAN).map(_unaddressed)
CANNOT_ACT = ("unset", "unknown", "disabled", ActorKind.HUMAN, ActorKind.EXTERNAL)


def _with_actor(data: RouteInput, handle: str, kind: ActorKind, *, enabled: bool = True) -> RouteInput:
    """The same input with ``handle`` known as this actor (the message still addresses nobody)."""
    assert data.sender is not None and handle != data.sender.handle
    actors = {**data.actors, handle: ActorRef(handle, kind, enabled)}
    return replace(data, actors=actors, mentions=tuple(h for h in data.mentions if h != handle))


def _default_that_cannot_act(data: RouteInput, why: str) -> RouteInput:
    """The thread's default bot is unset, unknown, disabled, or not a bot."""
    if why == "unset":
        return replace(data, default_bot=None)
    if why == "unknown":
        return replace(data, default_bot="nobody")
    kind = ActorKind.BOT if why == "disabled" else ActorKind(why)
    return replace(_with_actor(data, "dflt", kind, enabled=why != "disabled"), default_bot="dflt")


def _chief_that_cannot_act(data: RouteInput, why: str) -> RouteInput:
    """@chief_of_staff is disabled or not a bot (or is the human who posts)."""
    assert data.sender is not None
    if data.sender.handle == FALLBACK:
        return data
    kind = ActorKind.BOT if why == "disabled" else ActorKind(why)
    return _with_actor(data, FALLBACK, kind, enabled=why != "disabled")


def _thread_bots(data: RouteInput) -> list[str]:
    """The enabled bots among the thread's participants."""
    return [h for h in data.participants if data.actors[h].kind is ActorKind.BOT and data.actors[h].enabled]


@given(unaddressed_human_messages)
def test_an_unaddressed_human_message_wakes_at_most_one_actionable_bot(data: RouteInput) -> None:
    plan = plan_route(data)
    assert len(plan.wake) <= 1
    for handle in plan.wake:
        assert _actionable(data, handle)
        assert handle in (data.default_bot, FALLBACK) or handle in data.participants
        assert handle in data.participants or handle in plan.new_participants  # it joins the thread


@given(unaddressed_human_messages, st.sampled_from(KNOWN))
def test_an_unaddressed_human_message_wakes_the_default_bot_when_it_can_act(
    data: RouteInput, default: str
) -> None:
    assert data.sender is not None
    assume(default != data.sender.handle)
    data = replace(_with_actor(data, default, ActorKind.BOT), default_bot=default)
    assert plan_route(data).wake == (default,)  # whoever else is in the thread, the chief included


@given(unaddressed_human_messages, st.sampled_from(CANNOT_ACT))
def test_without_a_default_the_thread_s_only_bot_is_woken_else_the_chief_of_staff(
    data: RouteInput, why: str
) -> None:
    assert data.sender is not None
    assume(data.sender.handle != FALLBACK)
    data = _with_actor(_default_that_cannot_act(data, why), FALLBACK, ActorKind.BOT)
    bots = _thread_bots(data)
    plan = plan_route(data)
    if len(bots) == 1:
        assert plan.wake == (bots[0],)  # the only bot, even with a chief of staff on the team
    else:
        assert plan.wake == (FALLBACK,)
        assert (FALLBACK in plan.new_participants) == (FALLBACK not in data.participants)


@given(
    unaddressed_human_messages,
    st.sampled_from(CANNOT_ACT),
    st.sampled_from(CANNOT_ACT[2:]),
    st.lists(st.sampled_from(("joined1", "joined2")), unique=True),
)
def test_without_a_default_or_a_chief_the_thread_s_only_bot_is_woken_else_nobody(
    data: RouteInput, why_default: str, why_chief: str, joined: list[str]
) -> None:
    data = _chief_that_cannot_act(_default_that_cannot_act(data, why_default), why_chief)
    for handle in joined:  # zero, one or two more enabled bots in the thread
        data = replace(_with_actor(data, handle, ActorKind.BOT), participants=(*data.participants, handle))
    bots = _thread_bots(data)
    assert plan_route(data).wake == (tuple(bots) if len(bots) == 1 else ())


@given(unaddressed_human_messages, st.lists(st.sampled_from(UNKNOWN), min_size=1))
def test_a_human_message_that_mentions_only_unknown_handles_wakes_nobody(
    data: RouteInput, unknown: list[str]
) -> None:
    """Not the default bot, nor the chief: "@enginer" is reported, never silently rerouted."""
    plan = plan_route(replace(data, mentions=tuple(unknown)))
    assert plan.wake == () and plan.mentions == ()
    assert plan.unknown == tuple(dict.fromkeys(unknown))
    assert plan.new_participants == ()


@given(route_inputs())
def test_unknown_mentions_are_the_mentions_that_name_no_actor(data: RouteInput) -> None:
    assert plan_route(data).unknown == tuple(dict.fromkeys(h for h in data.mentions if h not in data.actors))


@given(unaddressed_human_messages)
def test_a_bot_outside_the_thread_never_counts_as_its_only_bot(data: RouteInput) -> None:
    with_outsider = _with_actor(data, "outsider", ActorKind.BOT)
    assert plan_route(with_outsider).wake == plan_route(data).wake


def _human_posts_to_nobody(bots: str, participants: str, default: str | None) -> RouteInput:
    """@you posts without a mention. ``bots``: handles, ``-handle`` for a disabled bot; @you and @pat
    are humans."""
    actors = {h: ActorRef(h, ActorKind.HUMAN) for h in ("you", "pat")}
    for spec in bots.split():
        handle = spec.removeprefix("-")
        actors[handle] = ActorRef(handle, ActorKind.BOT, enabled=not spec.startswith("-"))
    return RouteInput(
        sender=actors["you"],
        mentions=(),
        to=(),
        actors=actors,
        participants=tuple(participants.split()),
        default_bot=default,
        fallback_bot=FALLBACK,
    )


@pytest.mark.parametrize(
    ("bots", "participants", "default", "woken"),
    [
        ("aa bb chief_of_staff", "aa", "bb", "bb"),  # the default bot, even from outside the thread
        ("-aa bb chief_of_staff", "aa bb", "aa", "bb"),  # a disabled default: the only bot left
        ("-aa bb cc chief_of_staff", "aa bb cc", "aa", "chief_of_staff"),  # two left: the chief
        ("aa chief_of_staff", "aa", "pat", "aa"),  # a human is no default bot: the only bot
        ("aa chief_of_staff", "aa", "zz", "aa"),  # nor is an unknown handle
        ("engineer chief_of_staff", "you engineer", None, "engineer"),  # not the chief from outside
        ("aa bb chief_of_staff", "you aa bb", None, "chief_of_staff"),  # two bots: the chief decides
        ("aa chief_of_staff", "you", None, "chief_of_staff"),  # no bot in the thread: the chief
        ("aa bb", "you aa", None, "aa"),  # no chief: the only bot in the thread
        ("aa bb -chief_of_staff", "aa chief_of_staff", "zz", "aa"),  # a disabled chief is no chief
        ("aa -bb", "aa bb pat", None, "aa"),  # a disabled bot does not count
        ("aa bb", "aa bb", None, ""),  # two bots in the thread: nobody is guessed
        ("aa bb", "you pat", None, ""),  # bots outside the thread do not count
        ("-aa -chief_of_staff", "aa", "aa", ""),  # nothing can act
    ],
)
def test_who_an_unaddressed_human_message_wakes(
    bots: str, participants: str, default: str | None, woken: str
) -> None:
    plan = plan_route(_human_posts_to_nobody(bots, participants, default))
    assert plan.wake == tuple(woken.split())
    assert plan.notify == (() if "pat" not in participants else ("pat",))


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["@", "(@", "", "x@", "@@", ".@", "me@mail."]),
            st.sampled_from(["qa", "Engineer", "reviewer", "a", "chief_of_staff", "x" * 33]),
            st.sampled_from([" ", ", ", ") ", "!\n", "? ", "'s "]),
        ),
        max_size=8,
    )
)
def test_parse_mentions_is_ordered_lowercased_and_deduplicated(parts: list[tuple[str, str, str]]) -> None:
    text = "".join(prefix + handle + suffix for prefix, handle, suffix in parts)
    # Tokens are separated, so "@handle" is a mention exactly when the "@" starts the token (or
    # follows "(") and the handle has a valid length; e-mail addresses, "@@x" and "a.@b" are not.
    expected = [
        handle.lower() for prefix, handle, _ in parts if prefix in ("@", "(@") and 2 <= len(handle) <= 32
    ]
    assert parse_mentions(text) == list(dict.fromkeys(expected))
