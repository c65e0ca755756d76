"""Automations: scheduled posts to a bot, their occurrences, and firing one now."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from pydantic import with_config
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import CLOSED, errors
from openbot.runtime.automations.commands import AutomationCreate, AutomationUpdate
from openbot.runtime.automations.views import AutomationView, OccurrenceView

router = APIRouter()


@with_config(CLOSED)
class AutomationList(TypedDict):
    items: list[AutomationView]


@with_config(CLOSED)
class OccurrenceList(TypedDict):
    """Newest first."""

    items: list[OccurrenceView]


@router.post("/automations", status_code=201, response_model=AutomationView, responses=errors(403))
async def create_automation(
    rt: RuntimeDep, principal: PrincipalDep, body: AutomationCreate
) -> dict[str, Any]:
    """A cron (in `timezone`) or one-shot (`at`) post of `content` to `bot`, as `owner`."""
    owner = principal.speaker(body.owner if "owner" in body.model_fields_set else None)
    return dict(await rt.automations.create(body, owner=owner, actor=principal.actor))


@router.get("/automations", response_model=AutomationList)
async def list_automations(rt: RuntimeDep, principal: PrincipalDep, bot: str | None = None) -> dict[str, Any]:
    """Every automation (an actor token: those it owns)."""
    return {"items": await rt.automations.list_automations(bot=bot, actor=principal.actor)}


@router.get("/automations/{automation_id}", response_model=AutomationView, responses=errors(404))
async def get_automation(rt: RuntimeDep, principal: PrincipalDep, automation_id: str) -> dict[str, Any]:
    return dict(await rt.automations.get(automation_id, actor=principal.actor))


@router.patch("/automations/{automation_id}", response_model=AutomationView, responses=errors(404))
async def update_automation(
    rt: RuntimeDep, principal: PrincipalDep, automation_id: str, body: AutomationUpdate
) -> dict[str, Any]:
    """Partial; changing the schedule or enabling re-arms `next_run_at` from now."""
    return dict(await rt.automations.update(automation_id, body, actor=principal.actor))


@router.delete("/automations/{automation_id}", status_code=204, responses=errors(404))
async def delete_automation(rt: RuntimeDep, principal: PrincipalDep, automation_id: str) -> Response:
    await rt.automations.delete(automation_id, actor=principal.actor)
    return Response(status_code=204)


@router.post(
    "/automations/{automation_id}/run",
    status_code=201,
    response_model=OccurrenceView,
    responses=errors(404, 409),
)
async def run_automation(rt: RuntimeDep, principal: PrincipalDep, automation_id: str) -> dict[str, Any]:
    """Fire now (the schedule does not move): the new occurrence."""
    return dict(await rt.automations.run_now(automation_id, actor=principal.actor))


@router.get("/automations/{automation_id}/occurrences", response_model=OccurrenceList, responses=errors(404))
async def list_occurrences(
    rt: RuntimeDep, principal: PrincipalDep, automation_id: str, limit: int = Query(100, ge=1, le=1000)
) -> dict[str, Any]:
    return {"items": await rt.automations.occurrences(automation_id, limit=limit, actor=principal.actor)}
