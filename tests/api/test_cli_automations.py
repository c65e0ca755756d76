"""``openbot automations`` against a real server: the table, --run, --history."""

from __future__ import annotations

from test_cli import invoke

from conftest import Team
from openbot.runtime.automations.commands import AutomationCreate
from openbot.runtime.engine import Runtime
from openbot.thread_refs import short_id


async def test_automations_lists_fires_and_shows_history(server: str, team: Team, rt: Runtime) -> None:
    thread = await team.thread("standup")
    body = AutomationCreate(
        bot="engineer",
        content="daily standup notes",
        cron="0 9 * * 1-5",
        timezone="Europe/Paris",
        thread_id=thread,
    )
    made = await rt.automations.create(body, owner="you")
    once = await rt.automations.create(
        AutomationCreate(bot="qa", content="one reminder", at="2026-03-01T12:00:00Z"), owner="you"
    )
    listing = await invoke("automations", "--server", server, columns=80)
    assert listing.exit_code == 0, listing.output
    lines = listing.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    [row] = [line for line in lines if short_id(made["id"]) in line]
    assert (
        "@engineer" in row and "0 9 * * 1-5 Europe/Paris" in row and "01-01 08:00" in row and "daily" in row
    )
    [row] = [line for line in lines if short_id(once["id"]) in line]
    assert "@qa" in row and "at 2026-03-01 12:00 UTC" in row and "03-01 12:00" in row

    fired = await invoke("automations", "--run", short_id(made["id"]), "--server", server)
    assert fired.exit_code == 0, fired.output
    assert fired.stdout.strip() == f"fired {short_id(made['id'])}: fired in thread {thread}"
    await team.idle()
    assert "daily standup notes" in [m["content"] for m in await team.messages(thread)]
    history = await invoke("automations", "--history", made["id"], "--server", server)
    assert history.exit_code == 0 and "fired" in history.stdout and thread in history.stdout

    missing = await invoke("automations", "--run", "nope", "--server", server)
    assert missing.exit_code == 1 and "no automation matches 'nope'" in missing.output
