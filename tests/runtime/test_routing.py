"""One test per routing rule of DESIGN §5, through the real delivery transaction."""

from __future__ import annotations

from conftest import Team
from openbot.core.mentions import parse_mentions


async def test_rule_to_handles_come_first_then_mentions_deduplicated(team: Team) -> None:
    thread = await team.thread()
    result = await team.post(thread, "@engineer and @qa, @engineer again", to=["reviewer", "qa"])
    assert result.addressed == ["reviewer", "qa", "engineer"]
    assert result.message.mentions == ["reviewer", "qa", "engineer"]


async def test_rule_disabled_bots_and_the_sender_are_never_targets(team: Team) -> None:
    await team.script("qa", [], enabled=False)
    await team.script("engineer", [{"match": ".", "reply": "@engineer note to self, @reviewer look"}])
    thread = await team.thread()
    result = await team.post(thread, "@qa @engineer")
    assert result.addressed == ["engineer"]
    await team.idle()
    reviewer_items = await team.items("reviewer")
    assert len(reviewer_items) == 1  # the engineer's self-mention was skipped, not counted as first


async def test_rule_a_human_message_fans_out_to_every_mentioned_bot(team: Team) -> None:
    thread = await team.thread()
    result = await team.post(thread, "@engineer @reviewer @qa all of you")
    assert result.addressed == ["engineer", "reviewer", "qa"]
    await team.idle()
    assert len(await team.runs(thread)) == 3


async def test_rule_a_bot_message_hands_off_to_the_first_actionable_mention_only(team: Team) -> None:
    await team.script("qa", [], enabled=False)
    await team.script(
        "engineer", [{"match": ".", "reply": "@qa (disabled) then @reviewer then @chief_of_staff"}]
    )
    thread = await team.thread()
    await team.post(thread, "@engineer go")
    await team.idle()
    assert len(await team.items("reviewer")) == 1
    assert not await team.items("chief_of_staff")


async def test_rule_no_mention_goes_to_the_threads_default_bot(team: Team) -> None:
    thread = await team.thread(default_bot="reviewer")
    result = await team.post(thread, "please look at this")
    assert result.addressed == ["reviewer"]


async def test_rule_no_mention_and_no_default_falls_back_to_chief_of_staff(team: Team) -> None:
    thread = await team.thread()
    result = await team.post(thread, "what should we do?")
    assert result.addressed == ["chief_of_staff"]
    participants = {p.handle for p in await _participants(team, thread)}
    assert "chief_of_staff" in participants


async def test_rule_no_mention_goes_to_the_thread_s_only_bot_before_the_chief(team: Team) -> None:
    """Found from outside: a thread whose only bot is @engineer (no default bot) woke @chief_of_staff,
    who was not even in the thread. DESIGN §5: default bot, else the only bot, else the chief."""
    thread = await team.thread(participants=["you", "engineer"])
    result = await team.post(thread, "the build is red")
    assert result.addressed == ["engineer"]
    assert "chief_of_staff" not in {p.handle for p in await _participants(team, thread)}


async def test_rule_no_mention_goes_to_the_only_bot_when_there_is_no_chief(team: Team) -> None:
    await team.script("chief_of_staff", [], enabled=False)
    thread = await team.thread(participants=["qa"])
    result = await team.post(thread, "run the suite")
    assert result.addressed == ["qa"]


async def test_rule_a_bot_message_without_a_mention_wakes_nobody(team: Team) -> None:
    thread = await team.thread(default_bot="chief_of_staff")
    await team.post(thread, "@engineer hi")
    await team.idle()
    assert not await team.items("chief_of_staff")  # the reply did not fall back to the default bot


async def test_rule_held_hand_off_gets_a_notice_and_an_activity_entry(team: Team, client: object) -> None:
    await team.script("engineer", [{"match": "first", "reply": "@reviewer ready"}])
    thread = await team.thread()
    team.post_when_prepared(thread, "@engineer second")
    await team.post(thread, "@engineer first")
    await team.idle()
    activity = (await client.get("/api/v1/activity", params={"thread_id": thread})).json()["items"]  # type: ignore[attr-defined]
    events = [a["event"] for a in activity]
    assert "message.handoff_held" in events and "inbox.hold_released" in events
    assert events.index("message.handoff_held") < events.index("inbox.hold_released")


async def test_rule_fan_out_reaches_human_and_external_participants_but_not_the_sender(team: Team) -> None:
    from openbot.runtime.commands import ActorCreate
    from openbot.runtime.team import create_actor

    async with team.rt.db.transaction() as s:
        await create_actor(s, ActorCreate(kind="external", handle="ci", name="CI"))
        await create_actor(s, ActorCreate(kind="human", handle="ann", name="Ann"))
    thread = await team.thread(participants=["ci", "ann"])
    await team.post(thread, "@engineer build")
    assert [i.kind for i in await team.items("ci")] == ["message"]
    assert [i.kind for i in await team.items("ann")] == ["message"]
    assert not await team.items("you")  # the sender gets nothing for their own message
    await team.idle()
    assert len(await team.items("ci")) == 2  # and the bot's reply reaches them too
    assert len(await team.items("you")) == 1


def test_rule_mention_syntax() -> None:
    assert parse_mentions("@qa, (@engineer) and @reviewer.") == ["qa", "engineer", "reviewer"]
    assert parse_mentions("mail me@example.com or @@qa or a.@qa") == []
    assert parse_mentions("@QA then @qa") == ["qa"]
    assert parse_mentions("@a is too short, @x_y-z is fine") == ["x_y-z"]


async def _participants(team: Team, thread: str) -> list:  # type: ignore[type-arg]
    from openbot.runtime.threads import participants

    async with team.rt.db.read() as s:
        return await participants(s, thread)
