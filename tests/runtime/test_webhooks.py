"""Webhooks to external actors against a real HTTP receiver on 127.0.0.1 (API.md, external actors).

Signed deliveries, the retry schedule on the runtime's clock, failed then retried, a restart in the
middle of the schedule, and the SSRF rule at creation and at delivery time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select, update

from conftest import Boot, Team
from openbot.config import Settings
from openbot.core import signing
from openbot.core.clock import FakeClock
from openbot.core.errors import InvalidArgument
from openbot.runtime.commands import ActorCreate
from openbot.runtime.engine import Runtime
from openbot.store.models import ExternalProfile, WebhookDelivery
from webhook_receiver import Receiver, receiving

pytestmark = pytest.mark.asyncio
SECRET = "whsec_test"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving(Receiver()) as r:
        yield r


async def _external(rt: Runtime, url: str, handle: str = "hook") -> None:
    await rt.team.create_actor(
        ActorCreate(kind="external", handle=handle, webhook_url=url, webhook_secret=SECRET)
    )


async def _deliveries(rt: Runtime) -> list[WebhookDelivery]:
    async with rt.db.read() as s:
        return list(await s.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))


async def _post_to_hook(team: Team, content: str = "hello @hook") -> str:
    thread_id = await team.thread(participants=["hook"])
    await team.post(thread_id, content)
    return thread_id


async def test_a_delivery_is_signed_with_the_secret_and_carries_the_message(
    rt: Runtime, team: Team, receiver: Receiver
) -> None:
    await _external(rt, receiver.url)
    # Addressed to @hook only: no bot wakes (the thread's default bot would answer "deploy done",
    # and its reply would be a second delivery racing this one).
    thread_id = await _post_to_hook(team, "@hook deploy done")
    await rt.webhooks.deliver_due()  # the loop may have sent it already: either way, once
    (request,) = receiver.requests
    (row,) = await _deliveries(rt)
    assert row.status == "delivered" and row.attempts == 1 and row.last_error is None
    timestamp, sent = request.headers["x-openbot-timestamp"], request.headers["x-openbot-signature"]
    assert signing.verify(SECRET, timestamp, request.body, sent)
    assert not signing.verify("another secret", timestamp, request.body, sent)
    assert not signing.verify(SECRET, str(int(timestamp) + 1), request.body, sent)
    body = request.json
    assert request.headers["x-openbot-delivery"] == body["delivery_id"] == row.id
    assert body["type"] == "message.created"
    assert body["thread"]["id"] == thread_id and body["message"]["content"] == "@hook deploy done"
    assert body["message"]["sender"]["handle"] == "you"
    assert int(timestamp) == int(rt.clock.now().timestamp())


async def test_a_receiver_that_fails_twice_gets_three_attempts_and_one_delivery(
    rt: Runtime, team: Team, receiver: Receiver, clock: FakeClock
) -> None:
    receiver.statuses = [500, 503]
    await _external(rt, receiver.url)
    await _post_to_hook(team)
    await rt.webhooks.deliver_due()
    (row,) = await _deliveries(rt)
    assert (row.status, row.attempts, row.last_error) == ("pending", 1, "HTTP 500: answered 500")
    clock.advance(4.9)
    await rt.webhooks.deliver_due()
    assert len(receiver.requests) == 1  # not due before its 5 s
    clock.advance(0.1)
    await rt.webhooks.deliver_due()
    clock.advance(30)
    await rt.webhooks.deliver_due()
    (row,) = await _deliveries(rt)
    assert (row.status, row.attempts, row.last_error, row.next_attempt_at) == ("delivered", 3, None, None)
    assert len(receiver.requests) == 3
    assert {r.headers["x-openbot-delivery"] for r in receiver.requests} == {row.id}
    clock.advance(600)
    await rt.webhooks.deliver_due()
    assert len(receiver.requests) == 3


async def test_a_receiver_that_always_fails_ends_failed_and_retry_redelivers(
    rt: Runtime, team: Team, receiver: Receiver, clock: FakeClock
) -> None:
    receiver.default = 500
    await _external(rt, receiver.url)
    await _post_to_hook(team)
    await rt.webhooks.deliver_due()
    for wait in (5, 30, 120):
        clock.advance(wait)
        await rt.webhooks.deliver_due()
    (row,) = await _deliveries(rt)
    assert (row.status, row.attempts, row.next_attempt_at) == ("failed", 4, None)
    assert len(receiver.requests) == 4
    clock.advance(3600)
    await rt.webhooks.deliver_due()
    assert len(receiver.requests) == 4  # failed stays failed
    receiver.default = 204
    view = await rt.webhooks.retry(row.id)
    assert view["status"] == "pending"
    await rt.webhooks.deliver_due()
    (row,) = await _deliveries(rt)
    assert (row.status, row.attempts) == ("delivered", 5)
    assert len(receiver.requests) == 5


async def test_a_retry_asked_for_while_an_attempt_is_in_flight_is_one_more_attempt(
    rt: Runtime, team: Team, receiver: Receiver, clock: FakeClock
) -> None:
    """The failing attempt's outcome must not schedule the retry away (to the backoff, or to failed)."""
    receiver.statuses, receiver.default = [500], 204  # the attempt in flight fails, the next one lands
    receiver.hold = asyncio.Event()
    await _external(rt, receiver.url)
    await _post_to_hook(team)
    delivering = asyncio.create_task(rt.webhooks.deliver_due())
    await receiver.arrived.wait()  # the attempt is in flight
    (row,) = await _deliveries(rt)
    assert (await rt.webhooks.retry(row.id))["status"] == "pending"
    receiver.hold.set()
    await delivering
    await rt.webhooks.deliver_due()  # the clock has not moved: only a retry due now is attempted
    (row,) = await _deliveries(rt)
    assert (row.status, row.attempts) == ("delivered", 2)
    assert len(receiver.requests) == 2


async def test_a_restart_in_the_middle_of_the_schedule_loses_nothing(
    boot: Boot, receiver: Receiver, clock: FakeClock
) -> None:
    receiver.statuses = [500]
    async with boot() as rt:
        await _external(rt, receiver.url)
        await _post_to_hook(Team(rt))
        await rt.webhooks.deliver_due()
        (row,) = await _deliveries(rt)
        assert (row.status, row.attempts) == ("pending", 1)
        rt.system.pause()
    async with boot() as rt:
        clock.advance(5)
        await rt.webhooks.deliver_due()
        (row,) = await _deliveries(rt)
        assert (row.status, row.attempts) == ("delivered", 2)
    assert len(receiver.requests) == 2


async def test_an_attempt_cut_off_by_a_crash_is_due_again_after_its_claim(
    boot: Boot, receiver: Receiver, clock: FakeClock
) -> None:
    async with boot() as rt:
        rt.webhooks.deliver_due = rt.webhooks._claim_due  # type: ignore[assignment,method-assign]
        await _external(rt, receiver.url)
        await _post_to_hook(Team(rt))
        await rt.webhooks._claim_due()  # claimed, then the process "dies" before sending
    async with boot() as rt:
        await rt.webhooks.deliver_due()
        assert receiver.requests == []  # still claimed by the dead attempt
        clock.advance(120)
        await rt.webhooks.deliver_due()
        (row,) = await _deliveries(rt)
        assert (row.status, row.attempts) == ("delivered", 2)
    assert len(receiver.requests) == 1


async def test_a_question_reaches_the_external_actor_and_its_token_answer_resumes_the_run(
    rt: Runtime, team: Team, receiver: Receiver
) -> None:
    await _external(rt, receiver.url)
    await team.asks("engineer", "Ship it?")
    thread_id = await _post_to_hook(team, "@engineer ship the release?")
    await team.idle()
    await rt.webhooks.deliver_due()
    types = sorted(r.json["type"] for r in receiver.requests)
    assert types == ["message.created", "question.created"]
    (question,) = [r.json for r in receiver.requests if r.json["type"] == "question.created"]
    assert question["run"]["status"] == "waiting_human"
    assert question["run"]["interrupt"] == {"kind": "question", "question": "Ship it?"}
    assert question["message"]["content"] == "@engineer ship the release?"
    assert question["thread"]["id"] == thread_id
    # The delivery row names the message its body carries, as a message delivery's does.
    rows = {r.type: r for r in await _deliveries(rt)}
    assert rows["question.created"].message_id == question["message"]["id"]


@pytest.mark.parametrize(
    ("url", "private_ok"),
    [
        ("http://169.254.169.254/latest/meta-data", False),
        ("http://169.254.169.254.:80/", False),  # a final dot still spells the address
        ("http://[fe80::1]:8080/hook", False),
        ("http://100.100.100.200/", False),
        ("http://10.1.2.3/hook", True),
        ("http://192.168.0.7:9000/hook", True),
        ("http://127.0.0.1:9/hook", True),
        ("http://localhost:9/hook", True),
        ("ftp://example.com/hook", False),
    ],
)
async def test_webhook_urls_follow_the_ssrf_rule_at_creation(url: str, private_ok: bool, rt: Runtime) -> None:
    rt.team.settings.webhook_allow_private = False
    with pytest.raises(InvalidArgument) as refused:
        await _external(rt, url, "strict")
    assert refused.value.details["field"] == "webhook_url"
    rt.team.settings.webhook_allow_private = True
    if private_ok:
        await _external(rt, url, "lenient")
    else:
        with pytest.raises(InvalidArgument):
            await _external(rt, url, "lenient")


async def test_a_url_changed_to_link_local_is_refused_at_delivery(
    rt: Runtime, team: Team, receiver: Receiver
) -> None:
    await _external(rt, receiver.url)
    async with rt.db.transaction() as s:
        await s.execute(update(ExternalProfile).values(webhook_url="http://169.254.169.254/latest"))
    await _post_to_hook(team)
    await rt.webhooks.deliver_due()
    (row,) = await _deliveries(rt)
    assert row.status == "pending" and row.attempts == 1
    assert row.last_error is not None and row.last_error.startswith("refused: 169.254.169.254")
    assert receiver.requests == []


async def test_two_runtimes_on_one_database_send_each_attempt_once(
    boot: Boot, settings: Settings, receiver: Receiver, clock: FakeClock
) -> None:
    receiver.statuses = [500]
    async with boot() as first, Runtime(settings, clock=clock) as second:
        await _external(first, receiver.url)
        team = Team(first)
        thread_id = await team.thread(participants=["hook"])
        for n in range(5):
            await team.post(thread_id, f"@hook update {n}")  # no bot wakes: five deliveries
        for _ in range(3):
            await asyncio.gather(first.webhooks.deliver_due(), second.webhooks.deliver_due())
            clock.advance(5)
        rows = await _deliveries(first)
    assert [r.status for r in rows] == ["delivered"] * 5
    sent = [r.headers["x-openbot-delivery"] for r in receiver.requests]
    assert len(sent) == 6 and sorted(set(sent)) == sorted(r.id for r in rows)  # one retry after the 500
    assert sum(r.attempts for r in rows) == 6
