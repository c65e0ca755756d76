"""Tables, one module per concept. Alembic migrations (``store/migrations``) are the only way the
schema changes."""

from __future__ import annotations

from openbot.store.models.automations import Automation, AutomationOccurrence
from openbot.store.models.base import Base, UTCDateTime
from openbot.store.models.engagement import Disposal, Disposition
from openbot.store.models.journal import ActivityLog, Event, Setting
from openbot.store.models.memory import Memory, MemoryVector, PendingReflection, PreparedContext
from openbot.store.models.outbound import Draft, WebhookDelivery
from openbot.store.models.team import Actor, ActorToken, BotProfile, ExternalProfile
from openbot.store.models.threads import IdempotencyKey, Message, Thread, ThreadParticipant, TodoList
from openbot.store.models.work import HeldHandoff, InboxItem, Run, RunEvent

__all__ = [
    "ActivityLog",
    "Actor",
    "ActorToken",
    "Automation",
    "AutomationOccurrence",
    "Base",
    "BotProfile",
    "Disposal",
    "Disposition",
    "Draft",
    "Event",
    "ExternalProfile",
    "HeldHandoff",
    "IdempotencyKey",
    "InboxItem",
    "Memory",
    "MemoryVector",
    "Message",
    "PendingReflection",
    "PreparedContext",
    "Run",
    "RunEvent",
    "Setting",
    "Thread",
    "ThreadParticipant",
    "TodoList",
    "UTCDateTime",
    "WebhookDelivery",
]
