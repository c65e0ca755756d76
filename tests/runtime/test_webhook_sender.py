"""One webhook POST (runtime.webhooks.sender) against real receivers on 127.0.0.1: a redirect is
not followed, an endless answer is read up to the cap, a slow receiver times out, and the request
goes to the checked address with the URL's name in ``Host``."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest

from openbot.core.errors import InvalidArgument
from openbot.core.ssrf import IPAddress
from openbot.runtime.webhooks.sender import Sender
from webhook_receiver import Receiver, receiving

pytestmark = pytest.mark.asyncio


class Redirecting(Receiver):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests.append(scope)  # type: ignore[arg-type]
        location = (b"location", b"http://169.254.169.254/latest/meta-data")
        await send({"type": "http.response.start", "status": 307, "headers": [location]})
        await send({"type": "http.response.body", "body": b""})


class Endless(Receiver):
    """Answers 500 with a body that never ends (until told to stop)."""

    stop = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 500, "headers": []})
        while not self.stop:
            await send({"type": "http.response.body", "body": b"x" * 16384, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b""})


class Slow(Receiver):
    """Answers only when told to (after the sender gave up)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await self.arrived.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"too late"})


async def test_a_redirect_is_a_failed_attempt_and_is_not_followed() -> None:
    async with receiving(Redirecting()) as r:
        error = await Sender(allow_private=True).send(r.url, {}, b"{}")
    assert error == "HTTP 307: redirect to http://169.254.169.254/latest/meta-data not followed"
    assert len(r.requests) == 1


async def test_an_endless_answer_is_read_up_to_the_cap() -> None:
    async with receiving(Endless()) as r:
        sender = Sender(allow_private=True, timeout=30, max_response_bytes=64 * 1024)
        error = await sender.send(r.url, {}, b"{}")  # without the cap: "timed out after 30s"
        r.stop = True
    assert error is not None and error.startswith("HTTP 500: xxxx")


async def test_a_receiver_that_never_answers_times_out() -> None:
    async with receiving(Slow()) as r:
        error = await Sender(allow_private=True, timeout=0.2).send(r.url, {}, b"{}")
        r.arrived.set()  # let it answer, so the server can stop
    assert error == "timed out after 0.2s" or (error or "").startswith("ReadTimeout")


async def test_the_request_goes_to_the_checked_address_with_the_name_in_host() -> None:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        assert host == "hooks.example.test"
        return [ipaddress.ip_address("127.0.0.1")]

    async with receiving(Receiver()) as r:
        port = r.url.split(":")[2].split("/")[0]
        sender = Sender(allow_private=True, resolve=resolve)
        error = await sender.send(f"http://hooks.example.test:{port}/hook", {"X-Test": "1"}, b"{}")
    assert error is None
    (request,) = r.requests
    assert request.headers["host"] == f"hooks.example.test:{port}" and request.headers["x-test"] == "1"


async def test_a_name_that_resolves_to_a_refused_address_is_not_contacted() -> None:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("169.254.169.254")]

    error = await Sender(allow_private=True, resolve=resolve).send(
        "https://rebinding.example.test/", {}, b"{}"
    )
    assert error == "refused: 169.254.169.254 is a cloud metadata address"


async def test_a_name_that_does_not_resolve_is_accepted_on_the_actor_and_refused_at_delivery() -> None:
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[IPAddress]:
        asked.append(host)
        raise OSError(-2, "Name or service not known")

    sender = Sender(resolve=resolve)
    await sender.check_url("https://hooks.example.test/in")  # no InvalidArgument: it may resolve later
    error = await sender.send("https://hooks.example.test/in", {}, b"{}")
    assert error == "refused: cannot resolve hooks.example.test: [Errno -2] Name or service not known"
    assert asked == ["hooks.example.test", "hooks.example.test"]


async def test_a_url_that_names_a_metadata_address_is_refused_on_the_actor() -> None:
    with pytest.raises(InvalidArgument) as refused:
        await Sender().check_url("http://169.254.169.254/latest/meta-data")
    assert refused.value.details == {
        "field": "webhook_url",
        "reason": "169.254.169.254 is a cloud metadata address",
    }
