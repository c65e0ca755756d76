"""Who a request acts as: the admin (the server's token, or loopback without one) or one actor.

An actor token acts as its actor only: ``from`` defaults to it and naming anyone else is refused;
it answers only the questions that reached it and acks only its own mail. The admin may act for
any actor (``from``) and acts as ``@you`` when it names nobody. Tokens are stored as their SHA-256
and shown once, when issued.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from openbot.core.errors import Forbidden
from openbot.core.ids import new_id
from openbot.store.db import now
from openbot.store.journal import append_event
from openbot.store.models import Actor, ActorToken

TOKEN_PREFIX = "obt_"
TOKENS_REVOKED = "actor.tokens_revoked"  # the journal row that ends the actor's open event streams
DEFAULT_SPEAKER = "you"


@dataclass(frozen=True)
class Principal:
    """The caller: ``actor`` is the handle an actor token acts as, ``None`` for the admin."""

    actor: str | None = None

    @property
    def admin(self) -> bool:
        return self.actor is None

    def speaker(self, requested: str | None) -> str:
        """The handle a request acts as, given the ``from`` (or ``actor``) it named, if any."""
        if self.actor is None:  # "" is a handle nobody has (refused as unknown), not "none named"
            return DEFAULT_SPEAKER if requested is None else requested
        if requested is not None and requested != self.actor:
            raise Forbidden(
                f"this token acts as @{self.actor} only, not @{requested}",
                {"actor": self.actor, "requested": requested},
            )
        return self.actor

    def require_admin(self, what: str) -> None:
        if self.actor is not None:
            raise Forbidden(f"{what} needs the admin token", {"actor": self.actor})


ADMIN = Principal()


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


async def issue_token(session: AsyncSession, actor: Actor) -> str:
    """A new token for ``actor``; only its digest is kept."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ActorToken(id=new_id("tok"), actor_id=actor.id, token_hash=digest(token), created_at=now(session))
    session.add(row)
    return token


async def revoke_tokens(session: AsyncSession, actor: Actor) -> int:
    result = await session.execute(delete(ActorToken).where(ActorToken.actor_id == actor.id))
    revoked = int(getattr(result, "rowcount", 0) or 0)
    if revoked:  # open event streams of the actor end on this row, in every API process
        append_event(session, TOKENS_REVOKED, {"actor": actor.handle}, None)
    return revoked


async def actor_of_token(session: AsyncSession, token: str) -> str | None:
    """The handle a token acts as, or None when it is no (longer a) token of a live actor."""
    return await session.scalar(
        select(Actor.handle)
        .join(ActorToken, ActorToken.actor_id == Actor.id)
        .where(ActorToken.token_hash == digest(token), Actor.deleted.is_(False))
    )
