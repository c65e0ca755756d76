from conftest import Team


async def test_a_mention_wakes_the_bot_and_it_replies(team: Team) -> None:
    thread = await team.thread()
    result = await team.post(thread, "@engineer hello")
    assert result.addressed == ["engineer"]
    await team.idle()
    messages = await team.messages(thread)
    assert [m["sender"]["handle"] for m in messages] == ["you", "engineer"]
    assert messages[1]["content"] == "(scripted) engineer received 1 message(s)."
    assert messages[1]["hop"] == 1
