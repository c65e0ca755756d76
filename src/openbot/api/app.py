"""The FastAPI application: REST under /api/v1, SSE, the web UI at /."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from openbot import __version__
from openbot.api import errors
from openbot.api.exposure import PUBLIC_ENDPOINTS, QUERY_TOKEN_ENDPOINTS, Exposure
from openbot.api.limits import BodyLimit
from openbot.api.principal import authenticate
from openbot.api.routes import (
    automations,
    disposals,
    drafts,
    engagement,
    memories,
    memory_upkeep,
    observability,
    runs,
    team,
    threads,
    tokens,
    tools,
    webhooks,
)
from openbot.api.schemas import document
from openbot.config import Settings
from openbot.core.clock import Clock
from openbot.runtime import heap
from openbot.runtime.engine import Runtime

WEB = Path(__file__).resolve().parent.parent / "web"


def create_app(
    settings: Settings | None = None,
    runtime: Runtime | None = None,
    *,
    clock: Clock | None = None,
    settle_heap: bool = False,
) -> FastAPI:
    """Build the app. With ``runtime`` given, the caller owns its lifecycle (tests do this);
    otherwise the app's lifespan starts one on ``settings`` (and ``clock``, for tests).
    ``settle_heap``: tune the garbage collector once the runtime is up (``runtime.heap``), for a
    process that serves nothing else (``openbot serve``)."""
    settings = settings or (runtime.settings if runtime else Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if runtime is not None:
            app.state.runtime = runtime
            yield
            return
        async with Runtime(settings, clock=clock) as rt:
            app.state.runtime = rt
            if settle_heap:
                heap.settle()
            yield

    app = FastAPI(
        title="OpenBot",
        version=__version__,
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    if runtime is not None:
        app.state.runtime = runtime
    errors.install(app)
    protected = [Depends(authenticate)]
    # FastAPI tries routes in order, so the busiest (posting and reading threads, runs) come first.
    for module in (
        threads,
        runs,
        observability,
        team,
        tokens,
        automations,
        memory_upkeep,
        webhooks,
        memories,
        drafts,
        disposals,
        tools,
        engagement,
    ):
        app.include_router(module.router, prefix="/api/v1", dependencies=protected)
    _document(app)

    @app.get("/", include_in_schema=False, response_model=None)
    async def index() -> FileResponse | JSONResponse:
        page = WEB / "index.html"
        if not page.exists():
            return JSONResponse({"name": "openbot", "web": "not built"})
        return FileResponse(page, headers={"Cache-Control": "no-cache"})

    if WEB.exists():
        app.mount("/web", StaticFiles(directory=WEB), name="web")
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:  # browsers on those sites may call the API (preflight, response headers)
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "Idempotency-Key"],
        )
    app.add_middleware(Exposure, settings=settings)  # outermost: Host and Origin before anything else
    return app


def _document(app: FastAPI) -> None:
    """``/openapi.json`` with the token and the error envelope on every operation (``api.schemas``)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            public = {app.url_path_for(endpoint.__name__) for endpoint in PUBLIC_ENDPOINTS}
            by_query = {app.url_path_for(endpoint.__name__) for endpoint in QUERY_TOKEN_ENDPOINTS}
            app.openapi_schema = document(generate(), public=public, query_token=by_query)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
