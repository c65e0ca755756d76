"""The response side of the OpenAPI schema: the shapes routes return around the runtime's views,
the error envelope, and which error statuses each operation documents.

Every shape is closed (``extra="forbid"``, so ``additionalProperties: false`` in the schema): a
field a route returns without declaring it fails the response check (a 500 in tests and in the
schema test) instead of reaching clients undocumented.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from openbot.core.errors import ErrorCode
from openbot.runtime.views import ActivityView, ActorView, BotView, ItemView, MessageView, RunView, ThreadView

CLOSED = ConfigDict(extra="forbid")


@with_config(CLOSED)
class ErrorBody(TypedDict):
    code: ErrorCode
    message: str
    details: NotRequired[dict[str, Any]]


@with_config(CLOSED)
class ErrorEnvelope(TypedDict):
    """Every error: ``{"error": {"code", "message", "details"?}}``."""

    error: ErrorBody


@with_config(CLOSED)
class Info(TypedDict):
    name: Literal["openbot"]
    version: str
    protocol_version: int


@with_config(CLOSED)
class Health(TypedDict):
    ok: bool


@with_config(CLOSED)
class RunCounts(TypedDict):
    queued: int
    running: int
    waiting_human: int


@with_config(CLOSED)
class MailboxCounts(TypedDict):
    queued: int
    processing: int
    parked: int


@with_config(CLOSED)
class GateCounts(TypedDict):
    """Channel messages whose tier-2 gate decision is still owed (also counted in mailboxes.queued)."""

    pending: int


@with_config(CLOSED)
class MemoryIndex(TypedDict):
    """Which relevance index ranks memories (with the embeddings model when it is ``embeddings``)."""

    index: Literal["lexical", "embeddings"]
    model: NotRequired[str]
    embeddings: NotRequired[str]


@with_config(CLOSED)
class Status(TypedDict):
    runs: RunCounts
    mailboxes: MailboxCounts
    gate: GateCounts
    workers: int
    backend: str
    memory: MemoryIndex


@with_config(CLOSED)
class BotList(TypedDict):
    items: list[BotView]


@with_config(CLOSED)
class ActorList(TypedDict):
    items: list[ActorView]


@with_config(CLOSED)
class ThreadList(TypedDict):
    items: list[ThreadView]


@with_config(CLOSED)
class MessagePage(TypedDict):
    """Oldest first. ``next``: pass as ``after`` for the following page (forward paging);
    ``previous``: pass as ``before`` for the page before (with ``before`` or ``latest``)."""

    items: list[MessageView]
    next: str | None
    previous: str | None


@with_config(CLOSED)
class ItemList(TypedDict):
    items: list[ItemView]


@with_config(CLOSED)
class Acked(TypedDict):
    acked: int


@with_config(CLOSED)
class RunList(TypedDict):
    items: list[RunView]


@with_config(CLOSED)
class ActivityList(TypedDict):
    items: list[ActivityView]


# -- errors per operation ---------------------------------------------------------------------------

_WHY = {
    400: "`invalid_argument`: the request's `Host` is not an allowed name (OPENBOT_ALLOWED_HOSTS)",
    401: "`unauthorized`: a valid bearer token is required (when OPENBOT_API_TOKEN is set)",
    403: "`forbidden`: a cross-origin write from an origin that is not allowed (OPENBOT_CORS_ORIGINS)",
    404: "`not_found`: a resource named in the path or the body does not exist",
    409: "`conflict`: the resource is not in a state that allows this",
    413: "`payload_too_large`: the body exceeds the cap (OPENBOT_MAX_BODY_BYTES, 1 MiB)",
    422: "`invalid_argument`: the body, a path or a query parameter is invalid (`details` says where)",
    500: "`internal`: the server broke one of its own rules (see the server log)",
}
EVERY_OPERATION = (400, 413, 422, 500)  # Host, body size, the URL checks (NUL, 64-bit integers), bugs
WRITES = frozenset({"post", "put", "patch", "delete"})  # may be refused for their Origin (403)
ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for the errors particular to an operation (404, 409, ...); :func:`document`
    adds those every operation shares."""
    return {status: {"model": ErrorEnvelope, "description": _WHY[status]} for status in statuses}


def document(schema: dict[str, Any], *, public: set[str], query_token: set[str]) -> dict[str, Any]:
    """Complete the generated schema: the bearer token (``public`` paths need none; ``query_token``
    paths also take ``?token=``) and the error envelope under every status any operation can answer
    with (the Host and URL checks, the body cap, the token, the Origin check for writes)."""
    components = schema.setdefault("components", {})
    components.setdefault("schemas", {}).update(_envelope_schemas())
    components["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "OPENBOT_API_TOKEN"},
        "query_token": {"type": "apiKey", "in": "query", "name": "token"},
    }
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            statuses = set(EVERY_OPERATION) | ({403} if method in WRITES else set())
            if path in public:
                operation["security"] = []
            else:
                statuses.add(401)
                both = path in query_token
                operation["security"] = [{"bearer": []}, *([{"query_token": []}] if both else [])]
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)  # FastAPI's own validation shape; ours is the envelope
            for status in sorted(statuses):
                responses.setdefault(str(status), _error_response(status))
            for status, response in responses.items():
                if status.startswith(("4", "5")):
                    response.update(_error_response(int(status)))
    components["schemas"].pop("HTTPValidationError", None)
    components["schemas"].pop("ValidationError", None)
    return schema


def _error_response(status: int) -> dict[str, Any]:
    return {"description": _WHY[status], "content": {"application/json": {"schema": ENVELOPE_REF}}}


def _envelope_schemas() -> dict[str, Any]:
    from pydantic import TypeAdapter

    defs = TypeAdapter(ErrorEnvelope).json_schema(ref_template="#/components/schemas/{model}")
    nested = defs.pop("$defs", {})
    return {**nested, "ErrorEnvelope": defs}
