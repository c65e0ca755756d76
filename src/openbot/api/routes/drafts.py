"""Drafts: what bots staged for a person to send or reject."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import errors
from openbot.runtime.commands import DraftApprove, DraftReject
from openbot.runtime.drafts import DraftView

router = APIRouter()


class DraftList(TypedDict):
    items: list[DraftView]


@router.get("/drafts", responses=errors(404))
async def list_drafts(
    rt: RuntimeDep,
    principal: PrincipalDep,
    status: Literal["pending", "sent", "rejected"] | None = None,
    bot: str | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> DraftList:
    """Newest last; ``status=pending`` is what waits for a person. An actor token sees the drafts
    of its threads only."""
    return {"items": await rt.drafts.list_drafts(status=status, bot=bot, limit=limit, principal=principal)}


@router.get("/drafts/{draft_id}", responses=errors(404))
async def get_draft(rt: RuntimeDep, principal: PrincipalDep, draft_id: str) -> DraftView:
    return await rt.drafts.get(draft_id, principal)


@router.post("/drafts/{draft_id}/approve", responses=errors(403, 404, 409))
async def approve_draft(
    rt: RuntimeDep, principal: PrincipalDep, draft_id: str, body: DraftApprove | None = None
) -> DraftView:
    """Send it as its bot, with ``content`` instead when given; 409 unless it is pending."""
    return await rt.drafts.approve(draft_id, body or DraftApprove(), principal)


@router.post("/drafts/{draft_id}/reject", responses=errors(403, 404, 409))
async def reject_draft(
    rt: RuntimeDep, principal: PrincipalDep, draft_id: str, body: DraftReject | None = None
) -> DraftView:
    """The reason is posted in the draft's thread, where the bot reads it next run; 409 unless pending."""
    return await rt.drafts.reject(draft_id, body or DraftReject(), principal)
