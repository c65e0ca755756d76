"""Webhook deliveries to external actors: list them, retry one."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from typing_extensions import TypedDict

from openbot.api.deps import RuntimeDep
from openbot.api.principal import PrincipalDep
from openbot.api.schemas import errors
from openbot.runtime.webhooks.outbox import DeliveryView

router = APIRouter()


class DeliveryList(TypedDict):
    items: list[DeliveryView]


@router.get("/webhooks/deliveries", responses=errors(403))
async def list_deliveries(
    rt: RuntimeDep,
    principal: PrincipalDep,
    actor: str | None = None,
    status: Literal["pending", "delivered", "failed"] | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> DeliveryList:
    """Newest first. An actor token sees its own deliveries only."""
    if principal.actor is not None:
        actor = principal.speaker(actor)
    return {"items": await rt.webhooks.list_deliveries(actor=actor, status=status, limit=limit)}


@router.post("/webhooks/deliveries/{delivery_id}/retry", status_code=202, responses=errors(403, 404, 409))
async def retry_delivery(rt: RuntimeDep, principal: PrincipalDep, delivery_id: str) -> DeliveryView:
    """Attempt the delivery again now (a failed one gets one more attempt); 409 once delivered."""
    principal.require_admin("retrying a delivery")
    return await rt.webhooks.retry(delivery_id)
