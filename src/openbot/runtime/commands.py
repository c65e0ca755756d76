"""Typed commands: the validated request bodies the API hands the runtime (XCreate / XUpdate).

Every field of every body is checked by :mod:`openbot.core.json_limits` before its type is: no NUL
character or lone surrogate in any string, no NaN or Infinity, nothing nested deeper than 32
levels. Free JSON objects (``model_settings``, resume ``decisions``) are also capped at 64 KiB,
and strings bound for sized columns are capped at the column's size, so SQLite and PostgreSQL
refuse the same input with the same 422.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from openbot.core.json_limits import json_size_problem, value_problem

NAME_MAX = 200  # actors.name
MODEL_MAX = 200  # bot_profiles.model


_T = TypeVar("_T")


def _free_json(value: _T) -> _T:
    problem = json_size_problem(value)
    if problem:
        raise PydanticCustomError("json_too_large", problem)
    return value


FreeObject = Annotated[dict[str, Any], AfterValidator(_free_json)]
"""A JSON object the server stores as given: at most 64 KiB serialised (and see ``Body``)."""


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _storable(cls, value: object) -> object:
        problem = value_problem(value)
        if problem:
            raise PydanticCustomError("invalid_value", problem)
        return value


Alias = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]


class BotCreate(Body):
    handle: str
    name: str | None = Field(None, max_length=NAME_MAX)
    description: str = ""
    instructions: str = ""
    model: str | None = Field(None, max_length=MODEL_MAX)
    model_settings: FreeObject = Field(default_factory=dict)
    tools: list[str] = Field(default_factory=list)
    approval_tools: list[str] = Field(default_factory=list)
    memory_enabled: bool = True
    enabled: bool = True
    max_parallel_threads: int = Field(1, ge=1, le=64)
    max_queued: int = Field(200, ge=1, le=1000)  # the mailbox bound (runtime.governor)
    workspace_access: Literal["none", "read", "write"] = "read"
    aliases: list[Alias] = Field(default_factory=list, max_length=20)  # the channel gate's tier 1 matches


class BotUpdate(Body):
    name: str | None = Field(None, max_length=NAME_MAX)
    description: str | None = None
    instructions: str | None = None
    model: str | None = Field(None, max_length=MODEL_MAX)
    model_settings: FreeObject | None = None
    tools: list[str] | None = None
    approval_tools: list[str] | None = None
    memory_enabled: bool | None = None
    enabled: bool | None = None
    max_parallel_threads: int | None = Field(None, ge=1, le=64)
    max_queued: int | None = Field(None, ge=1, le=1000)
    workspace_access: Literal["none", "read", "write"] | None = None
    aliases: list[Alias] | None = Field(None, max_length=20)


class ActorCreate(Body):
    kind: Literal["human", "external"]
    handle: str
    name: str | None = Field(None, max_length=NAME_MAX)
    webhook_url: str | None = None
    webhook_secret: str | None = None


class ActorUpdate(Body):
    """Partial: a person's or external system's name; an external actor's webhook (null clears it)."""

    name: str | None = Field(None, max_length=NAME_MAX)
    webhook_url: str | None = None
    webhook_secret: str | None = None


class ThreadCreate(Body):
    title: str | None = Field(None, max_length=500)
    participants: list[str] = Field(default_factory=list)
    default_bot: str | None = None
    kind: Literal["task", "channel"] = "task"
    working_directory: str | None = None
    require_mention: bool = False


class ThreadUpdate(Body):
    title: str | None = Field(None, max_length=500)
    default_bot: str | None = None
    require_mention: bool | None = None
    working_directory: str | None = None  # "" clears it


class DraftApprove(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    content: str | None = Field(None, min_length=1, max_length=200_000)
    from_: str | None = Field(None, alias="from")  # the admin may decide as another person


class DraftReject(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    reason: str | None = Field(None, max_length=10_000)
    from_: str | None = Field(None, alias="from")


class MessageCreate(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    content: str = Field(min_length=1, max_length=200_000)
    from_: str = Field("you", alias="from")
    to: list[str] = Field(default_factory=list)


class ResumeBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    answer: str | None = Field(None, max_length=200_000)  # as long as a message may be
    decisions: Annotated[list[dict[str, Any]], AfterValidator(_free_json)] | None = None
    # Who answers: the admin may name any actor (default @you); an actor token answers as itself.
    from_: str | None = Field(None, alias="from")


class InboxAck(Body):
    actor: str = "you"
    thread_id: str
