"""Disposals: triggers a bot's mailbox admitted and then dropped (DESIGN §7, invariant 13)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import errors
from openbot.runtime.governor.disposals import DisposalFilter, DisposalView, list_disposals
from openbot.runtime.team import get_bot

router = APIRouter()

DisposalReason = Literal[
    "shed", "stale", "collapsed", "cancelled", "bot_disabled", "thread_deleted", "attempts_exhausted"
]


class DisposalList(TypedDict):
    items: list[DisposalView]


@router.get("/disposals", responses=errors(404, 422))
async def disposals(
    rt: RuntimeDep,
    principal: PrincipalDep,
    bot: str | None = None,
    thread_id: str | None = None,
    reason: DisposalReason | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> DisposalList:
    """Newest first. ``bot`` is a handle (404 when no bot has it). An actor token sees the
    disposals of its threads only."""
    async with rt.db.read() as s:
        bot_id = (await get_bot(s, bot))[0].id if bot else None
        where = DisposalFilter(bot_id, thread_id, reason, limit, principal.actor)
        return {"items": await list_disposals(s, where)}
