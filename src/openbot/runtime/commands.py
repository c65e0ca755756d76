"""Typed commands: the validated request bodies the API hands the runtime (XCreate / XUpdate)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class BotCreate(Body):
    handle: str
    name: str | None = None
    description: str = ""
    instructions: str = ""
    model: str | None = None
    model_settings: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] = Field(default_factory=list)
    approval_tools: list[str] = Field(default_factory=list)
    memory_enabled: bool = True
    enabled: bool = True
    max_parallel_threads: int = Field(1, ge=1, le=64)


class BotUpdate(Body):
    name: str | None = None
    description: str | None = None
    instructions: str | None = None
    model: str | None = None
    model_settings: dict[str, Any] | None = None
    tools: list[str] | None = None
    approval_tools: list[str] | None = None
    memory_enabled: bool | None = None
    enabled: bool | None = None
    max_parallel_threads: int | None = Field(None, ge=1, le=64)


class ActorCreate(Body):
    kind: Literal["human", "external"]
    handle: str
    name: str | None = None
    webhook_url: str | None = None
    webhook_secret: str | None = None


class ThreadCreate(Body):
    title: str | None = Field(None, max_length=500)
    participants: list[str] = Field(default_factory=list)
    default_bot: str | None = None
    kind: Literal["task", "channel"] = "task"
    working_directory: str | None = None


class MessageCreate(Body):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    content: str = Field(min_length=1, max_length=200_000)
    from_: str = Field("you", alias="from")
    to: list[str] = Field(default_factory=list)


class ResumeBody(Body):
    answer: str | None = None
    decisions: list[dict[str, Any]] | None = None


class InboxAck(Body):
    actor: str = "you"
    thread_id: str
