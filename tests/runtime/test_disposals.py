"""Disposals: the record of triggers admitted and then dropped (DESIGN §7, invariant 13)."""

from __future__ import annotations

from sqlalchemy import select

from conftest import Team
from openbot.runtime.engine import Runtime
from openbot.runtime.governor.disposals import (
    DisposalFilter,
    Reason,
    disposal_of,
    list_disposals,
    record_disposal,
)
from openbot.runtime.team import get_actor
from openbot.store.models import ActivityLog


async def test_a_recorded_disposal_is_listed_filtered_and_in_the_activity_log(
    rt: Runtime, team: Team
) -> None:
    thread_id = await team.thread()
    message = (await team.post(thread_id, "hello @qa")).message
    async with rt.db.transaction() as s:
        qa = await get_actor(s, "qa")
        record_disposal(
            s,
            bot=qa,
            thread_id=thread_id,
            reason=Reason.SHED,
            message_ids=[message.id],
            queue_depth=201,
            bound=200,
        )
    async with rt.db.read() as s:
        qa = await get_actor(s, "qa")
        shed = await list_disposals(s, DisposalFilter(bot_id=qa.id, reason="shed"))
        stale = await list_disposals(s, DisposalFilter(thread_id=thread_id, reason="stale"))
        found = await disposal_of(s, qa.id, thread_id, message.id)
        logged = list(await s.scalars(select(ActivityLog).where(ActivityLog.event == "disposal.shed")))
    assert [(d["bot"], d["message_ids"], d["queue_depth"], d["bound"]) for d in shed] == [
        ("qa", [message.id], 201, 200)
    ]
    assert stale == []
    assert found is not None and found.reason == "shed"
    assert len(logged) == 1 and logged[0].thread_id == thread_id and "mailbox was full" in logged[0].summary
