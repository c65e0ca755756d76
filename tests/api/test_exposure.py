"""Who may reach the API: Host names (DNS rebinding), cross-origin writes, and the bearer token."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from conftest import Team
from openbot.config import Settings
from openbot.runtime.engine import Runtime

# The `client` fixture talks to the app as http://test: the ASGI transport reports that name as the
# server's own address (scope["server"]), which is allowed like the address a real socket is bound to.


def _forbidden(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 403, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == "forbidden" and body["error"]["message"]
    return dict(body["error"])


def _bad_host(response: httpx.Response) -> dict[str, Any]:
    """A Host that is not allowed is a 400 (the HTTP contract), in the error envelope."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == "invalid_argument" and body["error"]["message"]
    return dict(body["error"])


def _unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "unauthorized"


# --- DNS rebinding: only configured host names -----------------------------------------------------


@pytest.mark.parametrize(
    "host", ["evil.example", "attacker.example:8000", "localhost.evil.example", "127.0.0.1.nip.io", "a b"]
)
async def test_a_host_that_is_not_allowed_is_refused(client: httpx.AsyncClient, host: str) -> None:
    error = _bad_host(await client.get("/api/v1/bots", headers={"Host": host}))
    assert error["details"] == {"host": host}
    _bad_host(await client.get("/", headers={"Host": host}))
    _bad_host(await client.post("/api/v1/threads", json={"title": "x"}, headers={"Host": host}))
    _bad_host(await client.patch("/api/v1/bots/engineer", json={"model": "x:y"}, headers={"Host": host}))
    assert (await client.get("/api/v1/threads")).json()["items"] == []
    assert (await client.get("/api/v1/bots/engineer")).json()["model"] == "scripted"


@pytest.mark.parametrize(
    "host", ["localhost", "localhost:5173", "LOCALHOST:8000", "127.0.0.1:1", "[::1]", "[::1]:8000", "test"]
)
async def test_loopback_names_on_any_port_are_allowed_by_default(
    client: httpx.AsyncClient, host: str
) -> None:
    assert (await client.get("/api/v1/bots", headers={"Host": host})).status_code == 200


def test_allowed_hosts_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().allowed_hosts == ["localhost", "127.0.0.1", "::1", "[::1]"]
    assert Settings().cors_origins == []
    monkeypatch.setenv("OPENBOT_ALLOWED_HOSTS", "openbot.lan, 10.0.0.5 ,")
    monkeypatch.setenv("OPENBOT_CORS_ORIGINS", "https://app.example")
    settings = Settings()
    assert settings.allowed_hosts == ["openbot.lan", "10.0.0.5"]
    assert settings.cors_origins == ["https://app.example"]


async def test_configured_hosts_replace_the_default_and_star_allows_any(
    client: httpx.AsyncClient, rt: Runtime
) -> None:
    rt.settings.allowed_hosts = ["openbot.lan", "::1"]
    assert (await client.get("/api/v1/bots", headers={"Host": "OpenBot.lan:8443"})).status_code == 200
    assert (await client.get("/api/v1/bots", headers={"Host": "[::1]:80"})).status_code == 200
    _bad_host(await client.get("/api/v1/bots", headers={"Host": "localhost:8000"}))
    _bad_host(await client.get("/api/v1/bots", headers={"Host": "evil.example"}))
    rt.settings.allowed_hosts = ["*"]
    assert (await client.get("/api/v1/bots", headers={"Host": "evil.example"})).status_code == 200


async def test_a_real_server_refuses_a_rebound_host_name(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    async with httpx.AsyncClient(base_url=server, timeout=10) as c:
        assert (await c.get("/api/v1/bots")).status_code == 200  # Host: 127.0.0.1:PORT
        assert (await c.get("/api/v1/bots", headers={"Host": f"localhost:{port}"})).status_code == 200
        _bad_host(await c.get("/api/v1/bots", headers={"Host": f"rebind.evil.example:{port}"}))
        _bad_host(
            await c.post("/api/v1/threads", json={"title": "x"}, headers={"Host": "rebind.evil.example"})
        )


# --- cross-origin writes ---------------------------------------------------------------------------


async def test_a_cross_origin_write_is_forbidden(client: httpx.AsyncClient, team: Team) -> None:
    evil = {"Origin": "http://evil.example"}
    error = _forbidden(await client.post("/api/v1/threads", json={"title": "x"}, headers=evil))
    assert error["details"] == {"origin": "http://evil.example"}
    _forbidden(await client.patch("/api/v1/bots/engineer", json={"model": "x:y"}, headers=evil))
    _forbidden(await client.delete("/api/v1/bots/engineer", headers=evil))
    _forbidden(await client.post("/api/v1/threads", json={"title": "x"}, headers={"Origin": "null"}))
    # A body-less POST is a "simple" request a page can send anywhere without a preflight.
    thread = await team.thread()
    await team.asks("engineer")
    await team.post(thread, "@engineer go")
    await team.idle()
    run = (await team.runs(thread))[0]
    assert run.status == "waiting_human"
    _forbidden(await client.post(f"/api/v1/runs/{run.id}/cancel", headers=evil))
    _forbidden(await client.post(f"/api/v1/runs/{run.id}/cancel", headers={"Origin": "http://test:8080"}))
    assert (await team.runs(thread))[0].status == "waiting_human"
    assert (await client.get("/api/v1/threads")).json()["items"][0]["id"] == thread  # only mine
    # Reads are left to the browser's same-origin policy (and the Host check).
    assert (await client.get("/api/v1/bots", headers=evil)).status_code == 200


async def test_same_origin_and_configured_origins_may_write(client: httpx.AsyncClient, rt: Runtime) -> None:
    same = await client.post("/api/v1/threads", json={"title": "a"}, headers={"Origin": "http://test"})
    assert same.status_code == 201
    assert (await client.post("/api/v1/threads", json={"title": "b"})).status_code == 201  # no Origin
    rt.settings.cors_origins = ["https://app.example", "http://localhost:3000/"]
    for origin in ("https://app.example", "HTTPS://App.Example:443", "http://localhost:3000"):
        ok = await client.post("/api/v1/threads", json={"title": "c"}, headers={"Origin": origin})
        assert ok.status_code == 201, origin
    _forbidden(
        await client.post("/api/v1/threads", json={"title": "d"}, headers={"Origin": "http://app.example"})
    )
    rt.settings.cors_origins = ["*"]
    ok = await client.post("/api/v1/threads", json={"title": "e"}, headers={"Origin": "http://evil.example"})
    assert ok.status_code == 201


async def test_configured_origins_get_cors_headers(rt: Runtime) -> None:
    from openbot.api.app import create_app

    settings = rt.settings.model_copy(update={"cors_origins": ["https://app.example"]})
    app = create_app(settings, runtime=rt)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        preflight = await c.options(
            "/api/v1/threads",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
            },
        )
        assert preflight.status_code == 200, preflight.text  # every request header the API reads
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert "idempotency-key" in preflight.headers["access-control-allow-headers"].lower()
        listed = await c.get("/api/v1/bots", headers={"Origin": "https://app.example"})
        assert listed.headers["access-control-allow-origin"] == "https://app.example"
        other = await c.get("/api/v1/bots", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# --- the bearer token ------------------------------------------------------------------------------


async def test_health_needs_no_token(client: httpx.AsyncClient, rt: Runtime) -> None:
    rt.settings.api_token = "s3cret"
    assert (await client.get("/api/v1/health")).json() == {"ok": True}
    _unauthorized(await client.get("/api/v1/status"))
    _unauthorized(await client.get("/api/v1"))


async def test_query_token_is_accepted_only_on_the_event_stream(
    client: httpx.AsyncClient, rt: Runtime, server: str
) -> None:
    rt.settings.api_token = "s3cret"
    _unauthorized(await client.get("/api/v1/bots", params={"token": "s3cret"}))
    _unauthorized(await client.post("/api/v1/threads", params={"token": "s3cret"}, json={"title": "x"}))
    assert (await client.get("/api/v1/bots", headers={"Authorization": "Bearer s3cret"})).status_code == 200
    async with httpx.AsyncClient(base_url=server, timeout=10) as c:
        _unauthorized(await c.get("/api/v1/events", params={"token": "wrong"}))
        async with c.stream("GET", "/api/v1/events", params={"token": "s3cret"}) as stream:
            assert stream.status_code == 200
            assert await stream.aiter_lines().__anext__() == ": connected"


async def test_a_non_ascii_token_is_unauthorized_not_an_error(
    client: httpx.AsyncClient, rt: Runtime, server: str
) -> None:
    rt.settings.api_token = "s3cret"
    _unauthorized(await client.get("/api/v1/bots", headers={"Authorization": "Bearer sécret".encode()}))
    async with httpx.AsyncClient(base_url=server, timeout=10) as c:
        _unauthorized(await c.get("/api/v1/events", params={"token": "sécret"}))
    rt.settings.api_token = "pässwort"  # a non-ASCII token works when sent as UTF-8
    ok = await client.get("/api/v1/bots", headers={"Authorization": "Bearer pässwort".encode()})
    assert ok.status_code == 200
    _unauthorized(await client.get("/api/v1/bots", headers={"Authorization": "Bearer passwort"}))
