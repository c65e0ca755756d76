"""``openbot webhooks``: list deliveries (80 columns), filter them, retry one by its short id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from typer.testing import CliRunner, Result

from conftest import Team
from openbot.cli import app
from openbot.config import Settings
from openbot.runtime.commands import ActorCreate
from openbot.thread_refs import short_id
from webhook_receiver import Receiver, receiving


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "80"})


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True, "webhook_retries": []})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving(Receiver(default=502)) as r:
        yield r


async def test_webhooks_command_lists_filters_and_retries(
    server: str, team: Team, receiver: Receiver
) -> None:
    rt = team.rt
    await rt.team.create_actor(ActorCreate(kind="external", handle="hook", webhook_url=receiver.url))
    thread = await team.thread(participants=["hook"])
    await team.post(thread, "@hook build 41 is green")
    await rt.webhooks.deliver_due()
    (failed,) = await rt.webhooks.list_deliveries()

    listed = await invoke("webhooks", "--server", server)
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert not [line for line in lines if len(line) > 80], listed.stdout
    (row,) = [line for line in lines if short_id(failed["id"]) in line]
    assert "@hook" in row and "failed" in row and "HTTP 502" in row
    none = await invoke("webhooks", "--status", "delivered", "--server", server)
    assert short_id(failed["id"]) not in none.stdout
    bad = await invoke("webhooks", "--status", "lost", "--server", server)
    assert bad.exit_code == 1 and "422 invalid_argument" in bad.stderr

    receiver.default = 200
    retried = await invoke("webhooks", "--retry", short_id(failed["id"]), "--server", server)
    assert retried.exit_code == 0, retried.output
    assert retried.stdout.strip() == f"retrying {short_id(failed['id'])} to @hook now"
    await rt.webhooks.deliver_due()
    after = await invoke("webhooks", "--actor", "@hook", "--server", server)
    (row,) = [line for line in after.stdout.splitlines() if short_id(failed["id"]) in line]
    assert "delivered" in row
    unknown = await invoke("webhooks", "--retry", "zzzz", "--server", server)
    assert unknown.exit_code != 0 and "no delivery matches 'zzzz'" in unknown.output
