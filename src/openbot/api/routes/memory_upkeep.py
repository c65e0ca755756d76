"""Memory upkeep on demand: decay now, consolidate now (``runtime.memory.upkeep``)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import admin_only
from openbot.api.schemas import errors
from openbot.runtime.memory.consolidation import DecisionView
from openbot.runtime.memory.decay import MaintainView

router = APIRouter()
_ADMIN = admin_only("a bot's memory")


@with_config(ConfigDict(extra="forbid"))
class Consolidated(TypedDict):
    decisions: list[DecisionView]


@router.post("/bots/{handle}/memories/maintain", responses=errors(403, 404), dependencies=[_ADMIN])
async def maintain_memories(rt: RuntimeDep, handle: str) -> MaintainView:
    """Decay the bot's memories now: archive those scoring below 0.15, delete those below 0.05."""
    return await rt.upkeep.maintain(handle)


@router.post("/bots/{handle}/memories/consolidate", responses=errors(403, 404), dependencies=[_ADMIN])
async def consolidate_memories(rt: RuntimeDep, handle: str) -> Consolidated:
    """Consolidate the bot's similar memories now (proposer, adversary, judge): every decision, with
    its reason, as carried out."""
    return {"decisions": await rt.upkeep.consolidate(handle)}
