"""Explanations as the API uses them: a message's dispositions and ``why`` (invariant 13)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import NotFound
from openbot.runtime.engagement import explain
from openbot.runtime.scope import is_member
from openbot.store.db import Database
from openbot.store.models import Message


@dataclass(frozen=True)
class EngagementService:
    db: Database

    async def dispositions(
        self, message_id: str, *, actor: str | None = None
    ) -> list[explain.DispositionView]:
        """``actor``: an actor token's handle, which sees only messages of its threads (404)."""
        async with self.db.read() as s:
            await _visible(s, message_id, actor)
            return await explain.dispositions(s, message_id)

    async def why(self, message_id: str, bot: str, *, actor: str | None = None) -> explain.WhyView:
        async with self.db.read() as s:
            await _visible(s, message_id, actor)
            return await explain.why(s, message_id, bot)


async def _visible(session: AsyncSession, message_id: str, actor: str | None) -> None:
    message = await session.get(Message, message_id)
    if message is None or (actor is not None and not await is_member(session, actor, message.thread_id)):
        raise NotFound(f"message {message_id} not found", {"message_id": message_id})
