"""Request dependencies: the runtime. (The bearer-token check is in ``api.exposure``.)"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from openbot.runtime.engine import Runtime


async def get_runtime(request: Request) -> Runtime:
    """Async, as every dependency here: FastAPI runs a plain ``def`` dependency on a worker thread,
    a thread hop per request for one attribute read."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
# Handlers call the runtime's services, which commit before they return: a response is never
# sent for a change that is not durable yet.
