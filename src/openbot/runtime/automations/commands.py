"""The validated bodies of the automation routes (``POST`` and ``PATCH /api/v1/automations``).

``at`` is an ISO 8601 instant kept as text here: :mod:`.definitions` parses it, so a bad one is the
same 422 from the API and from a bot's tool.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from openbot.runtime.commands import Body

CONTENT_MAX = 200_000


class AutomationCreate(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    bot: str
    content: str = Field("", max_length=CONTENT_MAX)
    cron: str | None = Field(None, max_length=200)
    at: str | None = Field(None, max_length=64)
    timezone: str = Field("UTC", max_length=64)
    thread_id: str | None = Field(None, max_length=40)
    title: str | None = Field(None, max_length=200)
    enabled: bool = True
    catch_up: Literal["once", "skip"] = "once"
    kind: Literal["message", "heartbeat"] = "message"
    # The actor the firings post as: the admin may name one (default @you); an actor token owns
    # what it creates.
    owner: str | None = None


class AutomationUpdate(Body):
    """Partial: only the fields given change. Giving ``cron`` drops ``at`` and the other way round."""

    content: str | None = Field(None, max_length=CONTENT_MAX)
    cron: str | None = Field(None, max_length=200)
    at: str | None = Field(None, max_length=64)
    timezone: str | None = Field(None, max_length=64)
    thread_id: str | None = Field(None, max_length=40)
    title: str | None = Field(None, max_length=200)
    enabled: bool | None = None
    catch_up: Literal["once", "skip"] | None = None
