"""One test per invariant of DESIGN §2 (1–12), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from conftest import Boot, Team
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.core.ids import new_id
from openbot.runtime import threads
from openbot.runtime.commands import ResumeBody
from openbot.runtime.engagement import explain
from openbot.runtime.team import get_actor
from openbot.store.models import HeldHandoff, InboxItem, Message, Run


async def _bot_id(team: Team, handle: str) -> str:
    async with team.rt.db.read() as s:
        return (await get_actor(s, handle)).id


def _queued_item(team: Team, actor_id: str, **fields: Any) -> InboxItem:
    """A queued inbox item row, written past the runtime (the schema alone must refuse a bad one)."""
    now = team.rt.clock.now()
    return InboxItem(
        id=new_id("item"),
        actor_id=actor_id,
        kind="message",
        status="queued",
        attempts=0,
        created_at=now,
        updated_at=now,
        **fields,
    )


async def _refused_by_the_schema(team: Team, row: object) -> None:
    with pytest.raises(IntegrityError):
        async with team.rt.db.transaction() as s:
            s.add(row)


async def test_invariant_1_every_inbox_item_belongs_to_exactly_one_thread(team: Team) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer @qa go")
    await team.idle()
    async with team.rt.db.read() as s:
        items = list(await s.scalars(select(InboxItem)))
    assert items and all(i.thread_id == thread for i in items)
    engineer = await _bot_id(team, "engineer")
    message_id = (await team.messages(thread))[0]["id"]
    await _refused_by_the_schema(team, _queued_item(team, engineer, thread_id=None, message_id=message_id))


async def test_invariant_2_an_inbox_item_points_at_a_message_or_a_run_and_carries_no_content(
    team: Team,
) -> None:
    await team.asks("engineer", "Which branch?", reply="ok")
    thread = await team.thread()
    await team.post(thread, "@engineer deploy")
    await team.idle()
    async with team.rt.db.read() as s:
        items = list(await s.scalars(select(InboxItem)))
    kinds = {i.kind for i in items}
    assert {"message", "question"} <= kinds
    for item in items:
        if item.kind == "message":
            assert item.message_id and item.run_id is None
        else:
            assert item.run_id and item.message_id is None
    assert not hasattr(InboxItem, "content") and not hasattr(InboxItem, "payload")
    engineer = await _bot_id(team, "engineer")
    both = _queued_item(
        team, engineer, thread_id=thread, message_id=items[0].message_id, run_id=items[-1].run_id
    )
    await _refused_by_the_schema(team, both)  # both a message and a run


async def test_invariant_3_a_bot_has_at_most_max_parallel_threads_runs_and_never_two_in_one_thread(
    team: Team,
) -> None:
    rt = team.rt
    engineer = await _bot_id(team, "engineer")
    thread_ids = [await team.thread(f"t{i}") for i in range(4)]
    # Queue mail in four threads without starting runs, then let many claimers race for it.
    rt.system.pause()
    async with rt.db.transaction() as s:
        you = await get_actor(s, "you")
        for thread_id in thread_ids:
            thread = await threads.get_thread(s, thread_id)
            await rt.delivery.post(s, thread, "@engineer work", sender=you)

    async def claims(n: int) -> list[Any]:
        return await asyncio.gather(*(rt.system.claim(engineer) for _ in range(n)))

    got = [c for c in await claims(6) if c is not None]
    assert len(got) == 1  # max_parallel_threads defaults to 1, whatever the number of claimers
    async with rt.db.transaction() as s:
        await s.execute(update(Run).where(Run.id == got[0].run_id).values(status="completed"))
    await team.script("engineer", [], max_parallel_threads=2)
    more = [c for c in await claims(6) if c is not None]
    assert len(more) == 2 and len({c.thread_id for c in more}) == 2
    # Never two runs of one bot in flight in one thread: the database refuses it.
    second = Run(
        id=new_id("run"),
        bot_id=engineer,
        thread_id=more[0].thread_id,
        status="queued",
        trigger_message_ids=[],
        hop=0,
        input_tokens=0,
        output_tokens=0,
        model_calls=0,
        lease_token=0,
        created_at=team.rt.clock.now(),
    )
    await _refused_by_the_schema(team, second)


async def test_invariant_3_holds_across_two_processes_sharing_one_database(boot: Boot) -> None:
    async with boot() as one, boot() as two:
        team = Team(one)
        engineer = await _bot_id(team, "engineer")
        one.system.pause()  # both systems stop claiming by themselves: the race below is the only one
        two.system.pause()
        for i in range(3):
            await team.post(await team.thread(f"t{i}"), "@engineer work")
        racers = [system.claim(engineer) for system in (one.system, two.system) for _ in range(3)]
        won = [c for c in await asyncio.gather(*racers) if c is not None]
        assert len(won) == 1  # the ceiling (1) holds whichever process claims
        await team.script("engineer", [], max_parallel_threads=2)
        racers = [system.claim(engineer) for system in (two.system, one.system) for _ in range(3)]
        more = [c for c in await asyncio.gather(*racers) if c is not None]
        assert len(more) == 1 and more[0].thread_id != won[0].thread_id  # one free thread left
        async with one.db.read() as s:
            active = list(await s.scalars(select(Run).where(Run.bot_id == engineer, Run.status == "running")))
        assert len(active) == 2 and len({r.thread_id for r in active}) == 2


async def test_invariant_4_a_run_belongs_to_one_bot_and_one_thread(team: Team) -> None:
    first, second = await team.thread("a"), await team.thread("b")
    await team.post(first, "@engineer one")
    await team.post(second, "@engineer two")
    await team.idle()
    runs = await team.runs()
    assert len(runs) == 2
    async with team.rt.db.read() as s:
        for run in runs:
            assert run.bot_id and run.thread_id
            threads_of_triggers = set(
                await s.scalars(select(Message.thread_id).where(Message.id.in_(run.trigger_message_ids)))
            )
            assert threads_of_triggers == {run.thread_id}


async def test_invariant_5_queued_messages_of_a_thread_coalesce_into_one_run(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    async with rt.db.transaction() as s:  # three messages land before the worker wakes
        you = await get_actor(s, "you")
        row = await threads.get_thread(s, thread)
        for text in ("@engineer a", "@engineer b", "@engineer c"):
            await rt.delivery.post(s, row, text, sender=you)
    await team.idle()
    runs = await team.runs(thread)
    assert len(runs) == 1 and len(runs[0].trigger_message_ids) == 3
    assert (await team.messages(thread))[-1]["content"] == "(scripted) engineer received 3 message(s)."


async def test_invariant_5_backlog_collapses_after_a_restart(boot: Boot) -> None:
    async with boot() as rt:
        team = Team(rt)
        rt.system.pause()  # nothing runs: the mail piles up until the process stops
        thread_ids = [await team.thread(f"t{i}") for i in range(2)]
        for thread_id in thread_ids:
            for i in range(3):
                await team.post(thread_id, f"@engineer {i}")
        assert not await team.runs()
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        runs = await team.runs()
        assert sorted(len(r.trigger_message_ids) for r in runs) == [3, 3]
        assert {r.thread_id for r in runs} == set(thread_ids)


async def test_invariant_6_a_thread_is_parked_while_the_bot_waits_for_a_human(
    team: Team, client: Any
) -> None:
    await team.asks("engineer", match="deploy", reply="deployed: {tool_result}")
    parked, other = await team.thread("parked"), await team.thread("other")
    await team.post(parked, "@engineer deploy")
    await team.idle()
    await team.post(parked, "@engineer also this")
    await team.post(other, "@engineer elsewhere")
    await team.idle()
    status = (await client.get("/api/v1/status")).json()
    assert status["mailboxes"]["parked"] == 1 and status["runs"]["waiting_human"] == 1
    assert [r.status for r in await team.runs(other)] == ["completed"]  # other threads go on
    waiting = (await team.runs(parked))[0]
    assert waiting.status == "waiting_human"
    response = await client.post(f"/api/v1/runs/{waiting.id}/resume", json={"answer": "yes"})
    assert response.status_code == 202
    await team.idle()
    runs = await team.runs(parked)
    assert [r.status for r in runs] == ["completed", "completed"]
    contents = [m["content"] for m in await team.messages(parked)]
    assert "deployed: yes" in contents and contents[-1] == "(scripted) engineer received 1 message(s)."


async def test_invariant_7_a_run_reads_the_thread_only_when_prepared(team: Team) -> None:
    thread = await team.thread()
    posted = team.post_when_prepared(thread, "@engineer late")  # lands mid-run
    await team.post(thread, "@engineer early")
    await team.idle()
    runs = await team.runs(thread)
    assert len(runs) == 2
    assert posted[0] not in runs[0].trigger_message_ids and runs[1].trigger_message_ids == posted
    replies = [m for m in await team.messages(thread) if m["sender"] and m["sender"]["handle"] == "engineer"]
    assert [m["content"] for m in replies] == ["(scripted) engineer received 1 message(s)."] * 2
    assert all(m["run_id"] for m in replies)  # the only thread writes a run makes are its messages


async def test_invariant_8_a_bot_reply_wakes_only_its_first_actionable_mention(team: Team) -> None:
    await team.script("engineer", [{"match": ".", "reply": "done. @reviewer please review, then @qa test"}])
    thread = await team.thread()
    await team.post(thread, "@engineer build")
    await team.idle()
    runs = await team.runs(thread)
    assert [r.bot_id for r in runs] == [await _bot_id(team, "engineer"), await _bot_id(team, "reviewer")]
    reply = (await team.messages(thread))[1]
    assert reply["mentions"] == ["reviewer", "qa"]  # recorded, but only @reviewer woke
    assert not await team.items("qa")


async def test_invariant_8_a_hand_off_is_held_while_the_sender_has_mail_and_released_after(
    team: Team,
) -> None:
    rt = team.rt
    await team.script("engineer", [{"match": "first", "reply": "PR ready @reviewer"}])
    thread = await team.thread()
    team.post_when_prepared(thread, "@engineer one more thing")  # lands mid-run
    await team.post(thread, "@engineer first")
    await team.idle()
    messages = await team.messages(thread)
    reply = next(m for m in messages if m["content"] == "PR ready @reviewer")
    assert reply["metadata"]["held_handoff"] == ["reviewer"]
    notice = next(m for m in messages if m["metadata"].get("kind") == "handoff_held")
    assert notice["sender"] is None and set(notice["mentions"]) == {"engineer", "reviewer"}
    # The engineer's second run drained its mail; the held hand-off was then delivered, once.
    reviewer_items = await team.items("reviewer", kind="message")
    assert [i.message_id for i in reviewer_items] == [reply["id"]]
    async with rt.db.read() as s:
        assert [h.status for h in await s.scalars(select(HeldHandoff))] == ["released"]


async def test_invariant_8_a_held_hand_off_is_superseded_by_a_real_one(team: Team) -> None:
    rt = team.rt
    await team.script("engineer", [{"match": ".", "reply": "over to @reviewer"}])
    thread = await team.thread()
    team.post_when_prepared(thread, "@engineer and this")  # lands mid-run
    await team.post(thread, "@engineer go")
    await team.idle()
    reviewer_items = await team.items("reviewer", kind="message")
    assert len(reviewer_items) == 1  # the second reply handed off for real; the hold was dropped
    async with rt.db.read() as s:
        [hold] = list(await s.scalars(select(HeldHandoff)))
        assert hold.status == "superseded"
        why = await explain.why(s, hold.message_id, "reviewer")
    assert why["answer"] == "held" and "superseded by a later hand-off" in why["summary"]


async def test_invariant_8_a_bot_reply_without_a_mention_ends_the_exchange(team: Team) -> None:
    thread = await team.thread()
    await team.post(thread, "@engineer hi")
    await team.idle()
    assert len(await team.runs(thread)) == 1
    assert not [i for i in await team.items("chief_of_staff")]


async def test_invariant_9_a_system_message_wakes_nobody(team: Team) -> None:
    rt = team.rt
    thread = await team.thread()
    async with rt.db.transaction() as s:
        row = await threads.get_thread(s, thread)
        result = await rt.delivery.post(s, row, "@engineer @qa restart notice", sender=None)
    assert result.addressed == []
    await team.idle()
    assert not await team.runs(thread)
    for bot in ("engineer", "qa", "chief_of_staff"):
        assert not await team.items(bot)
    assert [i.kind for i in await team.items("you")] == ["message"]  # humans still see it


async def test_invariant_10_bots_carry_nothing_from_one_thread_into_another(team: Team) -> None:
    """Bots are stateless per thread: a run's context is its own thread (memory is a later issue)."""
    prepared = team.prepared()
    first, second = await team.thread("alpha"), await team.thread("beta")
    await team.post(first, "@engineer the secret codename is PLUTO")
    await team.idle()
    await team.post(second, "@engineer what is the codename?")
    await team.idle()
    seen = [p.system_prompt + "\n".join(str(m.content) for m in p.messages) for p in prepared]
    assert "PLUTO" in seen[0] and "PLUTO" not in seen[1]


async def test_invariant_11_bot_hops_are_bounded_and_reset_by_a_human(settings: Settings, boot: Boot) -> None:
    settings.max_bot_hops = 3
    async with boot() as rt:
        team = Team(rt)
        await team.script("engineer", [{"match": ".", "reply": "@reviewer your turn"}])
        await team.script("reviewer", [{"match": ".", "reply": "@engineer your turn"}])
        thread = await team.thread()
        await team.post(thread, "@engineer start")
        await team.idle()
        messages = await team.messages(thread)
        bot_replies = [m for m in messages if m["sender"] and m["sender"]["kind"] == "bot"]
        assert [m["hop"] for m in bot_replies] == [1, 2, 3]
        assert bot_replies[-1]["metadata"]["hop_limited"] == ["reviewer"]
        notices = [m for m in messages if m["metadata"].get("kind") == "hop_limit"]
        assert len(notices) == 1 and (await team.thread_row(thread)).hop_limit_notified
        await team.post(thread, "@engineer again")  # a human resets the count and the notice
        await team.idle()
        notices = [m for m in await team.messages(thread) if m["metadata"].get("kind") == "hop_limit"]
        assert len(notices) == 2  # one per limit reached: the human message cleared the flag
        replies = [m for m in await team.messages(thread) if m["sender"] and m["sender"]["kind"] == "bot"]
        assert [m["hop"] for m in replies] == [1, 2, 3, 1, 2, 3]


async def test_invariant_12_a_restart_loses_no_message_question_or_held_hand_off(
    settings: Settings, clock: FakeClock, boot: Boot
) -> None:
    async with boot() as rt:
        team = Team(rt)
        await team.asks("qa", reply="answer was {tool_result}")
        asking, crashing = await team.thread("asking"), await team.thread("crashing")
        await team.post(asking, "@qa check")
        await team.idle()
        engineer = await _bot_id(team, "engineer")
        rt.system.pause()
        await team.post(crashing, "@engineer in flight")
        claim = await rt.system.claim(engineer)  # a run is in flight when the process stops
        assert claim is not None
        # A held hand-off that was never released before the stop.
        async with rt.db.transaction() as s:
            reviewer = await get_actor(s, "reviewer")
            msg = Message(
                id=new_id("msg"),
                thread_id=asking,
                sender_id=engineer,
                content="@reviewer look",
                mentions=["reviewer"],
                hop=1,
                metadata_={"held_handoff": ["reviewer"]},
                created_at=team.rt.clock.now(),
            )
            s.add(msg)
            await s.flush()
            s.add(
                HeldHandoff(
                    id=new_id("hold"),
                    thread_id=asking,
                    sender_id=engineer,
                    target_id=reviewer.id,
                    message_id=msg.id,
                    status="pending",
                    created_at=team.rt.clock.now(),
                )
            )
    clock.advance(settings.lease_seconds + 1)  # PostgreSQL takes over a run once its owner's lease lapses
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        crashed = next(r for r in await team.runs(crashing) if r.id == claim.run_id)
        assert crashed.status == "failed"
        notice = [m for m in await team.messages(crashing) if m["metadata"].get("kind") == "run_failed"]
        assert len(notice) == 1 and notice[0]["sender"] is None
        replies = [
            m for m in await team.messages(crashing) if m["sender"] and m["sender"]["handle"] == "engineer"
        ]
        assert len(replies) == 1  # the interrupted message was queued again and answered
        assert [i.kind for i in await team.items("reviewer")] == ["message"]  # the hold was delivered
        waiting = next(r for r in await team.runs(asking) if r.status == "waiting_human")
        assert [i.status for i in await team.items("you", kind="question")] == ["queued"]
        await rt.runs.resume(waiting.id, ResumeBody(answer="yes"))
        await team.idle()
        assert "answer was yes" in [m["content"] for m in await team.messages(asking)]


async def test_invariant_12_a_run_cut_off_while_resuming_resumes_again_with_the_answer(
    settings: Settings, clock: FakeClock, boot: Boot
) -> None:
    """The human's answer is not lost with the process that was applying it: the run waits again,
    its resume item is queued again, and the next process resumes it with the same answer."""
    async with boot() as rt:
        team = Team(rt)
        await team.asks("qa", reply="answer was {tool_result}")
        thread = await team.thread("asking")
        await team.post(thread, "@qa check")
        await team.idle()
        (waiting,) = await team.runs(thread)
        assert waiting.status == "waiting_human"
        rt.system.pause()
        await rt.runs.resume(waiting.id, ResumeBody(answer="ship it"))
        claim = await rt.system.claim(await _bot_id(team, "qa"))  # resuming when the process stops
        assert claim is not None and claim.resume and claim.run_id == waiting.id
    clock.advance(settings.lease_seconds + 1)  # PostgreSQL takes over a run once its owner's lease lapses
    async with boot() as rt:
        team = Team(rt)
        await team.idle()
        (run,) = await team.runs(thread)
        assert run.status == "completed"
        messages = await team.messages(thread)
        assert [m["content"] for m in messages if m["sender"] and m["sender"]["handle"] == "qa"] == [
            "answer was ship it"
        ]
        kinds = [m["metadata"].get("kind") for m in messages if m["sender"] is None]
        assert kinds.count("run_resumed_again") == 1 and "run_failed" not in kinds
        resumes = await team.items("qa", kind="resume")
        assert [(i.status, i.attempts) for i in resumes] == [("done", 2)]


async def test_invariant_8_a_held_hand_off_is_released_when_the_sender_s_last_run_is_cancelled(
    team: Team,
) -> None:
    ask = {"name": "ask_human", "args": {"question": "Which branch?"}}
    await team.script(
        "engineer",
        [
            {"match": "first", "reply": "PR ready @reviewer"},
            {"match": "one more", "reply": "ok", "tool_calls": [ask]},
        ],
    )
    thread = await team.thread()
    team.post_when_prepared(thread, "@engineer one more thing")  # lands mid-run: the hand-off is held
    await team.post(thread, "@engineer first")
    await team.idle()
    _first, waiting = await team.runs(thread)
    assert waiting.status == "waiting_human" and not await team.items("reviewer", kind="message")
    await team.rt.system.recover(expired_only=True)  # a maintenance pass: the engineer is not done here
    assert not await team.items("reviewer", kind="message")
    await team.rt.runs.cancel(waiting.id)  # the engineer's last mail here is handled: cancelled
    reply = next(m for m in await team.messages(thread) if m["content"] == "PR ready @reviewer")
    assert [i.message_id for i in await team.items("reviewer", kind="message")] == [reply["id"]]
    async with team.rt.db.read() as s:
        assert [h.status for h in await s.scalars(select(HeldHandoff))] == ["released"]
    await team.idle()
    assert [r.bot_id for r in await team.runs(thread)][2:] == [await _bot_id(team, "reviewer")]


async def test_invariant_8_a_held_hand_off_is_released_when_the_sender_s_last_mail_goes_stale(
    team: Team, clock: FakeClock
) -> None:
    await team.script("engineer", [{"match": "first", "reply": "PR ready @reviewer"}])
    channel = await team.thread("room", kind="channel", participants=["engineer", "reviewer"])
    bound = max(team.rt.settings.stale_trigger_seconds, team.rt.settings.run_time_limit_seconds)
    late: list[str] = []
    mid_run = asyncio.Event()

    async def late_mail(_claim: Any, _prepared: Any) -> None:
        if not late:  # mail that lands mid-run, and no run starts after this one for now
            late.append((await team.post(channel, "@engineer one more thing")).message.id)
            team.rt.system.pause()
            mid_run.set()

    team.on_prepared(late_mail)
    await team.post(channel, "@engineer first")
    await asyncio.wait_for(mid_run.wait(), 30)
    assert await team.rt.system.settle(30)
    reply = next(m for m in await team.messages(channel) if m["content"] == "PR ready @reviewer")
    assert reply["metadata"]["held_handoff"] == ["reviewer"]
    clock.advance(bound + 1)  # the engineer's last mail here goes stale before it is taken
    team.rt.system.unpause()
    await team.idle()
    engineer_items = await team.items("engineer", kind="message")
    assert [(i.message_id, i.status) for i in engineer_items][1:] == [(late[0], "cancelled")]
    assert [i.message_id for i in await team.items("reviewer", kind="message")] == [reply["id"]]
    async with team.rt.db.read() as s:
        assert [h.status for h in await s.scalars(select(HeldHandoff))] == ["released"]
