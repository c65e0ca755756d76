"""Request dependencies: the runtime and the bearer-token check."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request

from openbot.core.errors import Unauthorized
from openbot.runtime.engine import Runtime


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
# Handlers call the runtime's services, which commit before they return: a response is never
# sent for a change that is not durable yet.


def require_token(request: Request) -> None:
    token = request.app.state.runtime.settings.api_token
    if not token:
        return
    header = request.headers.get("authorization", "")
    given = header[7:] if header.lower().startswith("bearer ") else request.query_params.get("token", "")
    if not given or not secrets.compare_digest(given, token):
        raise Unauthorized("a valid bearer token is required (Authorization: Bearer <token>)")
