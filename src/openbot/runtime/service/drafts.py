"""Drafts, as the API uses them: list, approve (send), reject."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import InvalidArgument, NotFound
from openbot.runtime import drafts
from openbot.runtime.access import ADMIN, Principal
from openbot.runtime.commands import DraftApprove, DraftReject
from openbot.runtime.delivery.post import Delivery
from openbot.runtime.drafts import DraftView
from openbot.runtime.team import get_actor
from openbot.store.db import Database
from openbot.store.models import Actor


@dataclass(frozen=True)
class DraftService:
    db: Database
    delivery: Delivery

    async def list_drafts(
        self, *, status: str | None, bot: str | None, limit: int, principal: Principal = ADMIN
    ) -> list[DraftView]:
        """Every draft for the admin; an actor token's actor sees those of its threads only."""
        if status is not None and status not in drafts.STATUSES:
            raise InvalidArgument("status must be pending, sent or rejected", {"field": "status"})
        async with self.db.read() as s:
            bot_id = (await get_actor(s, bot, kind="bot")).id if bot else None
            return await drafts.list_drafts(
                s, status=status, bot_id=bot_id, limit=limit, member=principal.actor
            )

    async def get(self, draft_id: str, principal: Principal = ADMIN) -> DraftView:
        async with self.db.read() as s:
            return await drafts.view_of(s, draft_id, member=principal.actor)

    async def approve(self, draft_id: str, body: DraftApprove, principal: Principal = ADMIN) -> DraftView:
        """Send it as its bot (edited when ``content`` is given); the recipients wake at commit."""
        async with self.db.transaction() as s:
            decider = await _decider(s, principal, body.from_)
            await drafts.view_of(s, draft_id, member=principal.actor)  # 404 outside its threads
            await drafts.approve(s, self.delivery, draft_id, decider, body.content)
            return await drafts.view_of(s, draft_id)

    async def reject(self, draft_id: str, body: DraftReject, principal: Principal = ADMIN) -> DraftView:
        async with self.db.transaction() as s:
            decider = await _decider(s, principal, body.from_)
            await drafts.view_of(s, draft_id, member=principal.actor)
            await drafts.reject(s, self.delivery, draft_id, decider, body.reason)
            return await drafts.view_of(s, draft_id)


async def _decider(session: AsyncSession, principal: Principal, requested: str | None) -> Actor:
    speaker = principal.speaker(requested)
    try:
        return await get_actor(session, speaker)
    except NotFound as exc:
        raise InvalidArgument(f"unknown actor @{speaker}", {"field": "from"}) from exc
