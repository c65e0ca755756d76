"""The turn governor's mailbox policy: what a bot's queue drops before a run is admitted (DESIGN §7).

Admission happens at claim time, before a run exists. Two rules retire triggers there, each with a
disposal (invariant 13):

- staleness: a channel trigger that waited longer than the bound (``STALE_TRIGGER_SECONDS``,
  raised to the bot's own run time limit when that is longer: a bot tuned for long runs makes the
  mail behind it wait longer, so it may lengthen the window, never shorten it) is demoted to
  context — the message stays in the thread, it just no longer asks for a turn;
- the bounded mailbox: above ``max_queued`` the oldest channel triggers are shed first, then task
  mail that did not mention the bot; task mail addressed to the bot by mention, and resumes, are
  never shed (a person asked this bot by name; dropping that would be the silent failure the
  governor exists to prevent).

Pure: the runtime reads the queue, this decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openbot.core.errors import InvalidArgument
from openbot.core.scheduling import ItemKind

RUN_TIMEOUT_KEY = "run_timeout_seconds"  # a bot's own wall-clock limit, in its model_settings


@dataclass(frozen=True)
class Mail:
    """One queued item as the governor sees it, oldest first in the sequence it is given."""

    id: str
    kind: ItemKind
    thread_id: str
    channel: bool  # the thread is a channel
    mentioned: bool  # the message names this bot by @mention
    age_s: float  # seconds since it entered the mailbox

    @property
    def sheddable(self) -> bool:
        return self.kind is ItemKind.MESSAGE and (self.channel or not self.mentioned)


@dataclass(frozen=True)
class Verdict:
    stale: tuple[Mail, ...] = ()
    shed: tuple[Mail, ...] = ()
    depth: int = 0  # queued items before anything was dropped

    @property
    def dropped(self) -> frozenset[str]:
        return frozenset(m.id for m in (*self.stale, *self.shed))


def stale_bound(stale_seconds: float, run_limit: float) -> float:
    """The age past which a channel trigger is demoted: the floor, or the bot's run limit if longer."""
    return max(stale_seconds, run_limit)


def govern(mail: Sequence[Mail], *, max_queued: int, stale_after: float) -> Verdict:
    """Which queued items to retire before picking: stale channel triggers, then the overflow."""
    stale = tuple(m for m in mail if m.kind is ItemKind.MESSAGE and m.channel and m.age_s > stale_after)
    gone = {m.id for m in stale}
    kept = [m for m in mail if m.id not in gone]
    over = len(kept) - max(1, max_queued)
    shed: tuple[Mail, ...] = ()
    if over > 0:
        channel = [m for m in kept if m.kind is ItemKind.MESSAGE and m.channel]
        unaddressed = [m for m in kept if m.sheddable and not m.channel]
        shed = tuple((channel + unaddressed)[:over])
    return Verdict(stale=stale, shed=shed, depth=len(mail))


def run_time_limit(default: float, model_settings: Mapping[str, Any] | None) -> float:
    """A bot's wall-clock limit per run: ``model_settings.run_timeout_seconds`` or the install's."""
    value = (model_settings or {}).get(RUN_TIMEOUT_KEY)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return default  # refused when the bot is saved (check_run_timeout); an old row falls back
    return float(value)


def check_run_timeout(model_settings: Mapping[str, Any] | None) -> None:
    """Refuse a ``run_timeout_seconds`` that is not a positive number of seconds."""
    value = (model_settings or {}).get(RUN_TIMEOUT_KEY)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 86_400:
        raise InvalidArgument(
            f"model_settings.{RUN_TIMEOUT_KEY} must be a number of seconds from 1 to 86400, got {value!r}",
            {"field": f"model_settings.{RUN_TIMEOUT_KEY}"},
        )
