"""Working directories stay inside the workspaces root (422 otherwise); bots' workspace_access."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize("bad", ["..", "../elsewhere", "/etc", "a/../../b", ""])
async def test_a_working_directory_outside_the_root_is_refused(client: httpx.AsyncClient, bad: str) -> None:
    created = await client.post("/api/v1/threads", json={"title": "w", "working_directory": bad})
    assert created.status_code == 422, created.text
    assert created.json()["error"]["code"] == "invalid_argument"
    threads = (await client.get("/api/v1/threads")).json()["items"]
    assert not threads  # nothing partially written


async def test_create_and_patch_keep_it_relative_to_the_root(client: httpx.AsyncClient) -> None:
    created = await client.post("/api/v1/threads", json={"title": "w", "working_directory": "proj/./src/"})
    assert created.status_code == 201
    thread = created.json()
    assert thread["working_directory"] == "proj/src"
    path = f"/api/v1/threads/{thread['id']}"
    refused = await client.patch(path, json={"working_directory": "../../root"})
    assert refused.status_code == 422
    assert (await client.get(path)).json()["working_directory"] == "proj/src"
    patched = await client.patch(path, json={"working_directory": "other", "title": "renamed"})
    assert patched.status_code == 200
    assert (patched.json()["working_directory"], patched.json()["title"]) == ("other", "renamed")
    cleared = await client.patch(path, json={"working_directory": None})
    assert cleared.json()["working_directory"] is None
    assert (await client.patch("/api/v1/threads/thr_nope", json={"title": "x"})).status_code == 404


async def test_bots_have_workspace_access(client: httpx.AsyncClient) -> None:
    engineer = (await client.get("/api/v1/bots/engineer")).json()
    assert engineer["workspace_access"] == "write"
    assert "run_shell" in engineer["tools"] and "run_shell" in engineer["approval_tools"]
    assert (await client.get("/api/v1/bots/reviewer")).json()["workspace_access"] == "read"
    created = await client.post("/api/v1/bots", json={"handle": "scribe", "workspace_access": "none"})
    assert created.json()["workspace_access"] == "none"
    bad = await client.patch("/api/v1/bots/scribe", json={"workspace_access": "admin"})
    assert bad.status_code == 422
    ok = await client.patch("/api/v1/bots/scribe", json={"workspace_access": "write"})
    assert ok.json()["workspace_access"] == "write"
