"""Explanations: who saw a message and "why didn't @x answer?" (DESIGN §7, invariant 13)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import errors
from openbot.runtime.engagement.explain import DispositionView, WhyView
from openbot.runtime.service.engagement import EngagementService

router = APIRouter()


class DispositionList(TypedDict):
    items: list[DispositionView]


@router.get("/messages/{message_id}/dispositions", response_model=DispositionList, responses=errors(404))
async def message_dispositions(rt: RuntimeDep, principal: PrincipalDep, message_id: str) -> dict[str, Any]:
    """One per bot that saw the message: engage | observe | ignore, the tier, the signal, the reason."""
    return {"items": await EngagementService(rt.db).dispositions(message_id, actor=principal.actor)}


@router.get("/why", response_model=WhyView, responses=errors(404))
async def why(
    rt: RuntimeDep,
    principal: PrincipalDep,
    message_id: str = Query(description="the message that went unanswered"),
    bot: str = Query(description="the bot's handle"),
) -> dict[str, Any]:
    """One answer to "why didn't @bot answer this?" (answered, observed, held, disposed, …)."""
    return dict(await EngagementService(rt.db).why(message_id, bot, actor=principal.actor))
