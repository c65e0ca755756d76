"""Schemathesis against the ASGI app (SQLite, the API token on): every operation in /openapi.json is
called with generated requests, and no answer may be a 5xx, undocumented, or unlike its schema.

The app runs in Schemathesis's own event-loop thread (its ASGI transport), so it owns its runtime
through its lifespan, on a ``FakeClock``. Before the first operation a small scenario gives the
generator real ids to draw from (a thread with messages, a run waiting for a human, inbox items):
random ids alone would only ever reach the 404s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.python import asgi

from openbot.api.app import create_app
from openbot.config import Settings
from openbot.core.clock import FakeClock

TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 25  # per operation; the whole module takes ~30 s on a loaded 2-core machine
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "ignored_auth",
]

SETTINGS = Settings(api_token=TOKEN, heartbeat_seconds=0.05, poll_seconds=0.5)
APP = create_app(SETTINGS, clock=FakeClock())  # started by the first request (lifespan)
KNOWN: dict[str, list[str]] = {}  # path parameter -> real values, filled by the scenario
CLIENT: list[asgi.ASGIClient] = []  # the module's client, while its app runs

schema = schemathesis.openapi.from_dict(APP.openapi())
schema.app = APP
schema.config.generation.update(max_examples=EXAMPLES, deterministic=True)
# Generous for every request (a loaded machine must not fail a normal answer); the event stream never
# ends, so its calls keep what came within STREAM_SECONDS.
schema.config.update(request_timeout=60)
STREAM_SECONDS = 0.5
schema.config.checks.update(included_check_names=CHECKS)


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> st.SearchStrategy[Any]:
    """Often a real id instead of a generated one (never for a DELETE: the scenario's thread and
    bots must outlive the operations after it)."""
    options: dict[str, st.SearchStrategy[Any]] = {}
    deletes = context.operation is not None and context.operation.method.lower() == "delete"
    for name, value in (path_parameters or {}).items():
        real = [] if deletes else KNOWN.get(name, [])
        options[name] = st.sampled_from([value, *real]) if real else st.just(value)
    return st.fixed_dictionaries(options) if options else st.just(path_parameters)


def _idle(status: dict[str, Any]) -> bool:
    mail = status["mailboxes"]
    return status["runs"]["running"] == 0 and mail["queued"] == 0 and mail["processing"] == 0


def _settle(client: asgi.ASGIClient) -> None:
    """Let the runs a call started finish before the next example is generated: a run in the app's
    thread during generation would draw from ``random`` (LangGraph's checkpoint ids), which
    Hypothesis rightly reports as a strategy that is not reproducible."""
    for _ in range(1000):  # each call lets the app's loop run
        if _idle(client.request("GET", "/api/v1/status", headers=AUTH).json()):
            return
    raise AssertionError("the app did not become idle")


def _scenario(client: asgi.ASGIClient) -> None:
    """A thread where @engineer answered and @qa waits for a human: real ids for every path."""

    def call(method: str, path: str, **kwargs: Any) -> Any:
        response = client.request(method, f"/api/v1{path}", headers=AUTH, **kwargs)
        assert response.status_code < 300, response.text
        return response.json()

    ask = {"match": ".", "reply": "ok", "tool_calls": [{"name": "ask_human", "args": {"question": "?"}}]}
    call("PATCH", "/bots/qa", json={"model_settings": {"script": [ask]}})
    thread = call("POST", "/threads", json={"title": "schemathesis", "participants": ["engineer", "qa"]})
    call("POST", f"/threads/{thread['id']}/messages", json={"content": "@engineer @qa hello"})
    _settle(client)
    runs = call("GET", "/runs", params={"thread_id": thread["id"]})["items"]
    assert {r["status"] for r in runs} == {"completed", "waiting_human"}, runs
    items = call("GET", "/actors/you/inbox")["items"]
    automation = call("POST", "/automations", json={"bot": "engineer", "content": "hi", "cron": "0 9 * * *"})
    KNOWN.update(
        thread_id=[thread["id"]],
        run_id=[r["id"] for r in runs],
        item_id=[i["id"] for i in items],
        handle=["you", "engineer", "qa", "chief_of_staff"],
        automation_id=[automation["id"]],
    )


@pytest.fixture(scope="module", autouse=True)
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    SETTINGS.data_dir = tmp_path_factory.mktemp("schemathesis") / "data"
    with asgi.get_client(APP) as client:  # starts the lifespan: migrations, seed, workers
        _scenario(client)
        CLIENT.append(client)
        yield
        CLIENT.clear()
    asgi.shutdown_lifespans()


@schema.parametrize()
def test_every_operation_conforms(case: schemathesis.Case) -> None:
    streaming = case.operation.path.endswith("/events")
    case.call_and_validate(headers=AUTH, **({"timeout": STREAM_SECONDS} if streaming else {}))
    _settle(CLIENT[0])
