"""The routing plan: who a posted message wakes, who is held, what is only recorded (DESIGN §5).

Pure: the delivery transaction gathers the facts into a :class:`RouteInput` and carries out the
:class:`RoutePlan` this module returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ActorKind(StrEnum):
    BOT = "bot"
    HUMAN = "human"
    EXTERNAL = "external"


@dataclass(frozen=True)
class ActorRef:
    handle: str
    kind: ActorKind
    enabled: bool = True


@dataclass(frozen=True)
class RouteInput:
    sender: ActorRef | None  # None: the system
    mentions: tuple[str, ...]  # parsed from content, in order
    to: tuple[str, ...]  # explicit targets, in order
    actors: dict[str, ActorRef]  # every known actor by handle
    participants: tuple[str, ...]  # thread participants before this message
    default_bot: str | None  # the thread's default bot handle
    fallback_bot: str = "chief_of_staff"
    sender_has_queued_mail: bool = False  # bot sender: queued message items left in this thread
    hop: int = 0  # hop of the message being posted
    max_hops: int = 20
    hop_limit_notified: bool = False
    gated: bool = False  # a channel: the engagement gate, not the default bot, takes unaddressed posts


@dataclass(frozen=True)
class RoutePlan:
    mentions: tuple[str, ...]  # recorded on the message: known actors, in order
    wake: tuple[str, ...]  # bots that get a message item now
    held: tuple[str, ...]  # bots whose hand-off is held until the sender's queue drains
    recorded_only: tuple[str, ...]  # actionable bots mentioned but not woken (later bot mentions)
    new_participants: tuple[str, ...]  # actors to add to the thread
    notify: tuple[str, ...]  # human/external participants that get a message item
    hop_limited: tuple[str, ...] = field(default=())  # targets dropped by the hop limit
    post_hop_notice: bool = False  # post the one-per-thread hop_limit notice
    reset_hop_notice: bool = False  # a human message clears threads.hop_limit_notified
    unknown: tuple[str, ...] = field(default=())  # mentions that name no live actor, in order


def _ordered_targets(data: RouteInput) -> list[str]:
    seen: dict[str, None] = {}
    for handle in (*data.to, *data.mentions):
        seen.setdefault(handle, None)
    return list(seen)


def _actionable(data: RouteInput, handle: str) -> bool:
    actor = data.actors.get(handle)
    if actor is None or not actor.enabled or actor.kind is not ActorKind.BOT:
        return False
    return data.sender is None or handle != data.sender.handle


def plan_route(data: RouteInput) -> RoutePlan:
    sender = data.sender
    targets = [h for h in _ordered_targets(data) if h in data.actors]
    unknown = tuple(dict.fromkeys(h for h in data.mentions if h not in data.actors))
    recorded = tuple(targets)
    bots = [h for h in targets if _actionable(data, h)]
    participants = set(data.participants)
    new_participants = [
        h for h in targets if h not in participants and (sender is None or h != sender.handle)
    ]

    wake: list[str] = []
    held: list[str] = []
    recorded_only: list[str] = []
    hop_limited: list[str] = []
    post_hop_notice = False

    if sender is None:
        recorded_only = bots  # system messages wake nobody
    elif sender.kind is ActorKind.BOT:
        first, rest = bots[:1], bots[1:]
        recorded_only = rest
        if first and data.hop >= data.max_hops:
            hop_limited = first
            post_hop_notice = not data.hop_limit_notified
        elif first and data.sender_has_queued_mail:
            held = first
        else:
            wake = first
    else:
        wake = bots
        if not targets and not unknown and not data.gated:  # a mention of nobody is never rerouted
            wake = _default_target(data)
            new_participants += [h for h in wake if h not in participants and h not in new_participants]

    notify = [
        h
        for h in (*data.participants, *new_participants)
        if h in data.actors
        and data.actors[h].kind is not ActorKind.BOT
        and (sender is None or h != sender.handle)
    ]
    return RoutePlan(
        mentions=recorded,
        wake=tuple(wake),
        held=tuple(held),
        recorded_only=tuple(recorded_only),
        new_participants=tuple(dict.fromkeys(new_participants)),
        notify=tuple(dict.fromkeys(notify)),
        hop_limited=tuple(hop_limited),
        post_hop_notice=post_hop_notice,
        reset_hop_notice=sender is not None and sender.kind is ActorKind.HUMAN and data.hop_limit_notified,
        unknown=unknown,
    )


def _default_target(data: RouteInput) -> list[str]:
    """A human message with no mention: the thread's default bot if it has one, else its only bot
    if it has exactly one, else @chief_of_staff (DESIGN §5)."""
    if data.default_bot and _actionable(data, data.default_bot):
        return [data.default_bot]
    bots = [h for h in data.participants if _actionable(data, h)]
    if len(bots) == 1:
        return bots
    return [data.fallback_bot] if _actionable(data, data.fallback_bot) else []
