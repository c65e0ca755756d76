"""/openapi.json: every success response typed, every error status listed with the envelope, the
token described as the server enforces it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openbot.api.app import create_app

SCHEMA = create_app().openapi()
OPERATIONS = [
    (method, path, operation)
    for path, operations in SCHEMA["paths"].items()
    for method, operation in operations.items()
]
ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


@pytest.mark.parametrize(
    ("method", "path", "operation"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_every_success_response_has_a_real_schema(method: str, path: str, operation: dict[str, Any]) -> None:
    successes = {s: r for s, r in operation["responses"].items() if s.startswith("2")}
    assert successes, (method, path)
    for status, response in successes.items():
        if status == "204":
            assert not response.get("content")
            continue
        (media_type, content), *_ = response["content"].items()
        schema = _resolve(content["schema"])
        if media_type == "text/event-stream":
            assert path == "/api/v1/events" and schema == {"type": "string"}
            continue
        assert media_type == "application/json"
        assert schema.get("type") == "object" and schema.get("properties"), (method, path, schema)


@pytest.mark.parametrize(
    ("method", "path", "operation"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_every_error_status_is_listed_with_the_envelope(
    method: str, path: str, operation: dict[str, Any]
) -> None:
    errors = {s: r for s, r in operation["responses"].items() if s[0] in "45"}
    expected = {"400", "413", "422", "500"}
    expected |= {"403"} if method in ("post", "patch", "delete") else set()
    expected |= set() if path == "/api/v1/health" else {"401"}
    if "{" in path:
        expected.add("404")
    assert expected <= set(errors), (method, path, sorted(errors))
    for response in errors.values():
        assert response["content"] == {"application/json": {"schema": ENVELOPE}}
    assert "HTTPValidationError" not in SCHEMA["components"]["schemas"]


def test_the_token_is_described_where_it_is_enforced() -> None:
    paths = SCHEMA["paths"]
    assert paths["/api/v1/health"]["get"]["security"] == []
    assert paths["/api/v1/events"]["get"]["security"] == [{"bearer": []}, {"query_token": []}]
    assert paths["/api/v1/bots"]["get"]["security"] == [{"bearer": []}]
    assert SCHEMA["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "OPENBOT_API_TOKEN",
    }


def test_the_envelope_schema_names_every_stable_code() -> None:
    body = _resolve(SCHEMA["components"]["schemas"]["ErrorEnvelope"]["properties"]["error"])
    codes = _resolve(body["properties"]["code"])["enum"]
    assert {"not_found", "conflict", "invalid_argument", "unauthorized", "forbidden"} <= set(codes)
    assert {"payload_too_large", "method_not_allowed", "rate_limited", "internal"} <= set(codes)
    assert body["required"] == ["code", "message"] and body["additionalProperties"] is False


async def test_status_is_served_in_its_documented_shape(client: httpx.AsyncClient) -> None:
    """The status route's answer passes through its closed model: every key it returns is declared."""
    status = (await client.get("/api/v1/status")).json()
    assert set(status) == {"runs", "mailboxes", "gate", "workers", "backend", "memory"}
    assert status["backend"] in ("sqlite", "postgresql")
    assert status["memory"] == {"index": "lexical"}
    assert status["runs"] == {"queued": 0, "running": 0, "waiting_human": 0}


async def test_served_schema_is_the_documented_one(client: httpx.AsyncClient) -> None:
    served = (await client.get("/openapi.json")).json()
    assert served["paths"].keys() == SCHEMA["paths"].keys()
    assert (
        served["components"]["schemas"]["ErrorEnvelope"] == SCHEMA["components"]["schemas"]["ErrorEnvelope"]
    )
