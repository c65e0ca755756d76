"""Who saw a message and what each bot decided: the dispositions of one post (DESIGN §7).

Pure. Every bot participant of the thread (and every bot the message mentions) gets exactly one
:class:`~openbot.core.gate.Decision`. In a task thread the routing plan decides and its reason is
recorded as the signal (mention, hand-off, default bot, only bot, held, hop limit…); in a channel
the gate's tiers decide (:func:`openbot.core.gate.decide`), with the routing plan's hand-off facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from openbot.core.gate import Decision, GateBot, GateMessage, Shape, Signal, Verdict, decide
from openbot.core.routing import ActorKind, RouteInput, RoutePlan


def seen_by(data: RouteInput, plan: RoutePlan) -> list[str]:
    """The bots that see the message: participants (before and joining) and mentioned bots."""
    handles = (*data.participants, *plan.new_participants, *plan.mentions)
    return [
        h
        for h in dict.fromkeys(handles)
        if (actor := data.actors.get(h)) is not None and actor.kind is ActorKind.BOT
    ]


def task_decisions(data: RouteInput, plan: RoutePlan, bots: Sequence[str]) -> dict[str, Decision]:
    """A task thread: the routing rules decided; record which rule, for each bot."""
    return {h: _task_decision(data, plan, h) for h in bots}


def _task_decision(data: RouteInput, plan: RoutePlan, handle: str) -> Decision:
    sender = data.sender
    if sender is None:
        return Decision(Verdict.IGNORE, 0, Signal.SYSTEM, "a system notice wakes nobody")
    if sender.handle == handle:
        return Decision(Verdict.IGNORE, 0, Signal.OWN_MESSAGE, "its own message")
    if handle in plan.wake:
        return _woken(data, plan, handle)
    if handle in plan.held:
        return Decision(
            Verdict.OBSERVE,
            0,
            Signal.HELD,
            f"@{sender.handle}'s hand-off is held until its queued mail is handled",
        )
    if handle in plan.hop_limited:
        return Decision(
            Verdict.OBSERVE, 0, Signal.HOP_LIMIT, f"the bot-to-bot hop limit ({data.max_hops}) was reached"
        )
    if not data.actors[handle].enabled:
        return Decision(Verdict.OBSERVE, 0, Signal.NOT_ADDRESSED, f"@{handle} is disabled")
    if handle in plan.mentions:
        return Decision(
            Verdict.OBSERVE, 0, Signal.MENTION, "a bot's message wakes only the first bot it mentions"
        )
    if sender.kind is ActorKind.BOT:
        return Decision(
            Verdict.OBSERVE, 0, Signal.NOT_ADDRESSED, "a bot's message that does not hand off to it"
        )
    woken = ", ".join(f"@{h}" for h in plan.wake) or "nobody"
    return Decision(Verdict.OBSERVE, 0, Signal.NOT_ADDRESSED, f"addressed to {woken}")


def _woken(data: RouteInput, plan: RoutePlan, handle: str) -> Decision:
    sender = data.sender
    assert sender is not None  # system messages wake nobody
    if sender.kind is ActorKind.BOT:
        return Decision(Verdict.ENGAGE, 0, Signal.HANDOFF, f"@{sender.handle} handed off to @{handle}")
    if handle in plan.mentions:
        return Decision(Verdict.ENGAGE, 0, Signal.MENTION, f"@{sender.handle} mentioned @{handle}")
    if handle == data.default_bot:
        return Decision(Verdict.ENGAGE, 0, Signal.DEFAULT_BOT, "no mention: the thread's default bot")
    if handle in data.participants:
        return Decision(Verdict.ENGAGE, 0, Signal.ONLY_BOT, "no mention: the thread's only bot")
    return Decision(
        Verdict.ENGAGE,
        0,
        Signal.DEFAULT_BOT,
        f"no mention, no default bot, not one bot: @{handle} by default",
    )


def channel_message(
    data: RouteInput, plan: RoutePlan, shape: Shape, require_mention: bool, text: str
) -> GateMessage:
    """The facts every bot's gate decision shares, from the post and its routing plan."""
    sender = data.sender
    is_bot = sender is not None and sender.kind is ActorKind.BOT
    return GateMessage(
        sender=sender.handle if sender else None,
        sender_is_bot=is_bot,
        text=text,
        mentions=frozenset(plan.mentions),
        handoff=plan.wake[0] if is_bot and plan.wake else None,
        held=plan.held[0] if plan.held else None,
        hop_limited=plan.hop_limited[0] if plan.hop_limited else None,
        shape=shape,
        require_mention=require_mention,
    )


def channel_decisions(
    data: RouteInput, message: GateMessage, bots: Mapping[str, GateBot]
) -> dict[str, Decision]:
    """A channel: the gate's tiers 0 and 1 for each bot (a disabled bot never engages)."""
    out: dict[str, Decision] = {}
    for handle, bot in bots.items():
        decision = decide(message, bot)
        if decision.verdict is not Verdict.IGNORE and not data.actors[handle].enabled:
            decision = Decision(Verdict.OBSERVE, decision.tier, decision.signal, f"@{handle} is disabled")
        out[handle] = decision
    return out
