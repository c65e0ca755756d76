"""The client's calls of the features beyond the spine: actor tokens, automations, memories, tools,
drafts, explanations and webhook deliveries (mixed into :class:`openbot.client.Client`)."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import quote

JSON = dict[str, Any]


def seg(value: object) -> str:
    """``value`` as one path segment: a handle or id typed on the command line never reaches
    another route (``/``, ``..``, ``?`` and ``#`` are sent escaped, so nothing normalises them)."""
    return quote(str(value), safe="")


class FeatureCalls:
    """Calls that need only :meth:`_request` and :meth:`_items`, which the client provides."""

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _items(self, path: str, **params: Any) -> list[JSON]:
        raise NotImplementedError

    # -- actor tokens -----------------------------------------------------------------------

    def issue_token(self, handle: str) -> JSON:
        return cast(JSON, self._request("POST", f"/actors/{seg(handle)}/tokens"))

    def revoke_tokens(self, handle: str) -> None:
        self._request("DELETE", f"/actors/{seg(handle)}/tokens")

    # -- automations ------------------------------------------------------------------------

    def automations(self, bot: str | None = None) -> list[JSON]:
        return self._items("/automations", bot=bot)

    def create_automation(self, **fields: Any) -> JSON:
        return cast(JSON, self._request("POST", "/automations", json=fields))

    def update_automation(self, automation_id: str, **fields: Any) -> JSON:
        return cast(JSON, self._request("PATCH", f"/automations/{seg(automation_id)}", json=fields))

    def run_automation(self, automation_id: str) -> JSON:
        return cast(JSON, self._request("POST", f"/automations/{seg(automation_id)}/run"))

    def occurrences(self, automation_id: str, limit: int = 20) -> list[JSON]:
        return self._items(f"/automations/{seg(automation_id)}/occurrences", limit=limit)

    # -- memory upkeep ----------------------------------------------------------------------

    def maintain_memories(self, bot: str) -> JSON:
        return cast(JSON, self._request("POST", f"/bots/{seg(bot.lstrip('@'))}/memories/maintain"))

    def consolidate_memories(self, bot: str) -> JSON:
        return cast(JSON, self._request("POST", f"/bots/{seg(bot.lstrip('@'))}/memories/consolidate"))

    def memories(
        self, bot: str, q: str | None = None, lifecycle: str = "active", limit: int = 50
    ) -> list[JSON]:
        return self._items(f"/bots/{seg(bot.lstrip('@'))}/memories", q=q, lifecycle=lifecycle, limit=limit)

    # -- tools ------------------------------------------------------------------------------

    def tools(self) -> list[JSON]:
        return self._items("/tools")

    def mcp_servers(self) -> list[JSON]:
        return self._items("/mcp")

    # -- drafts and explanations ------------------------------------------------------------

    def drafts(self, status: str | None = None, bot: str | None = None) -> list[JSON]:
        return self._items("/drafts", status=status, bot=bot)

    def approve_draft(self, draft_id: str, content: str | None = None) -> JSON:
        body = {"content": content} if content is not None else {}
        return cast(JSON, self._request("POST", f"/drafts/{seg(draft_id)}/approve", json=body))

    def reject_draft(self, draft_id: str, reason: str | None = None) -> JSON:
        body = {"reason": reason} if reason else {}
        return cast(JSON, self._request("POST", f"/drafts/{seg(draft_id)}/reject", json=body))

    def why(self, message_id: str, bot: str) -> JSON:
        return cast(
            JSON, self._request("GET", "/why", params={"message_id": message_id, "bot": bot.lstrip("@")})
        )

    def dispositions(self, message_id: str) -> list[JSON]:
        return self._items(f"/messages/{seg(message_id)}/dispositions")

    # -- webhook deliveries -----------------------------------------------------------------

    def deliveries(self, actor: str | None = None, status: str | None = None) -> list[JSON]:
        return self._items("/webhooks/deliveries", actor=actor, status=status)

    def retry_delivery(self, delivery_id: str) -> JSON:
        return cast(JSON, self._request("POST", f"/webhooks/deliveries/{seg(delivery_id)}/retry"))
