"""The automation tools: a bot schedules a reminder to itself, and manages its own automations."""

from __future__ import annotations

from conftest import Team
from openbot.core.clock import FakeClock
from openbot.runtime.automations.commands import AutomationCreate
from openbot.runtime.engine import Runtime

MANAGE = ["create_automation", "list_automations", "toggle_automation", "delete_automation"]


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "args": args}


async def test_schedule_message_wakes_the_bot_later_in_its_thread_as_the_person_who_asked(
    rt: Runtime, team: Team, clock: FakeClock
) -> None:
    rule = {
        "match": "remind",
        "reply": "{tool_result}",
        "tool_calls": [call("schedule_message", content="check CI", in_seconds=30)],
    }
    await team.script("engineer", [rule, {"match": "check CI", "reply": "CI is green"}])
    thread = await team.thread("ci")
    await team.post(thread, "@engineer remind me to check CI in 30 s")
    await team.idle()
    [made] = await rt.automations.list_automations(bot="engineer")
    assert made["owner"] == "you" and made["thread_id"] == thread
    assert made["at"] == "2026-01-01T00:00:30+00:00" and made["content"] == "check CI"
    assert (await team.messages(thread))[-1]["content"].startswith(f"Scheduled {made['id']}: at ")
    clock.advance(30)
    await rt.automations.fire_due()
    await team.idle()
    contents = [(m["sender"] or {}).get("handle") for m in await team.messages(thread)][-2:]
    assert contents == ["you", "engineer"]
    assert (await team.messages(thread))[-1]["content"] == "CI is green"


async def test_the_manage_tools_see_only_the_bots_own_automations(rt: Runtime, team: Team) -> None:
    other = await rt.automations.create(
        AutomationCreate(bot="qa", content="qa's", cron="0 9 * * *"), owner="you"
    )
    rules = [
        {
            "match": "make",
            "reply": "{tool_result}",
            "tool_calls": [
                call("create_automation", content="standup", cron="0 9 * * 1-5", timezone="Europe/Berlin")
            ],
        },
        {
            "match": "bad",
            "reply": "{tool_result}",
            "tool_calls": [call("create_automation", content="x", cron="every day")],
        },
        {"match": "list", "reply": "{tool_result}", "tool_calls": [call("list_automations")]},
        {
            "match": "steal",
            "reply": "{tool_result}",
            "tool_calls": [call("toggle_automation", automation_id=other["id"], enabled=False)],
        },
    ]
    await team.script("engineer", rules, tools=MANAGE)
    thread = await team.thread("ops")
    for text in ("make", "bad", "list", "steal"):
        await team.post(thread, f"@engineer {text}")
        await team.idle()
    replies = [
        m["content"] for m in await team.messages(thread) if (m["sender"] or {}).get("handle") == "engineer"
    ]
    [mine] = await rt.automations.list_automations(bot="engineer")
    assert (
        mine["cron"] == "0 9 * * 1-5" and mine["timezone"] == "Europe/Berlin" and mine["thread_id"] == thread
    )
    assert replies[0].startswith(f"Scheduled {mine['id']}: cron '0 9 * * 1-5' Europe/Berlin")
    assert replies[1].startswith("Refused: 'every day' is not a 5-field cron expression")
    assert replies[2].startswith(f"{mine['id']}: ") and other["id"] not in replies[2]
    assert replies[3] == f"Refused: you have no automation {other['id']}."
    assert (await rt.automations.get(other["id"]))["enabled"] is True

    rules = [
        {
            "match": "off",
            "reply": "{tool_result}",
            "tool_calls": [call("toggle_automation", automation_id=mine["id"], enabled=False)],
        },
        {
            "match": "drop",
            "reply": "{tool_result}",
            "tool_calls": [call("delete_automation", automation_id=mine["id"])],
        },
    ]
    await team.script("engineer", rules, tools=MANAGE)
    await team.post(thread, "@engineer off")
    await team.idle()
    assert (await rt.automations.get(mine["id"]))["enabled"] is False
    await team.post(thread, "@engineer drop")
    await team.idle()
    assert await rt.automations.list_automations(bot="engineer") == []
