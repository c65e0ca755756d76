"""One webhook POST, under the SSRF rule (``core.ssrf``), with timeouts and a response-size cap.

The host is resolved here and every address it resolves to is checked; the request then goes to
the first checked address (the URL's name kept in ``Host`` and in TLS SNI), so a DNS answer that
changes between the check and the connection cannot slip a private address in. No redirect is
followed (a 3xx is a failed attempt: a receiver that moved must update its URL), no proxy from the
environment is used, and at most ``max_response_bytes`` of an answer are read.

``transport`` is the seam: tests may pass an ``httpx.MockTransport``; ``resolve`` may be replaced
to stand in for DNS.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from openbot.core.errors import InvalidArgument
from openbot.core.ssrf import IPAddress, Target, first_refusal, literal_address, parse_url

Resolve = Callable[[str, int], Awaitable[list[IPAddress]]]
MAX_RESPONSE_BYTES = 64 * 1024
ERROR_TEXT = 500  # characters of a failure kept as the delivery's last_error


async def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an IP literal is its own answer)."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for *_rest, sockaddr in infos:
        address = literal_address(str(sockaddr[0]).split("%", 1)[0])
        if address is not None and address not in found:
            found.append(address)
    return found


class Refused(Exception):
    """The URL is not one a webhook may reach (its reason is the message)."""


class Unresolved(Refused):
    """The URL's host name does not resolve (now): a delivery fails and is retried."""


@dataclass
class Sender:
    allow_private: bool = False
    timeout: float = 10.0
    max_response_bytes: int = MAX_RESPONSE_BYTES
    transport: httpx.AsyncBaseTransport | None = None
    resolve: Resolve = resolve_host

    async def checked(self, url: str) -> tuple[Target, IPAddress]:
        """The URL's target and the address to connect to, or :class:`Refused`."""
        target = parse_url(url)
        if isinstance(target, str):
            raise Refused(target)
        try:
            addresses = await self.resolve(target.host, target.port)
        except OSError as exc:
            raise Unresolved(f"cannot resolve {target.host}: {exc}") from exc
        except UnicodeError as exc:  # a name the resolver cannot encode (parse_url refuses most)
            raise Refused(f"{target.host!r} is not a valid host name") from exc
        reason = first_refusal(addresses, allow_private=self.allow_private)
        if reason is not None:
            raise Refused(reason)
        return target, addresses[0]

    async def check_url(self, url: str) -> None:
        """Refuse (422) a webhook URL the rule forbids: used when an actor is created or changed.

        A host name that does not resolve now is accepted (DNS may be down, or the name not
        published yet): every delivery resolves it again and is refused then if it leads
        somewhere forbidden."""
        try:
            await self.checked(url)
        except Unresolved:
            return
        except Refused as exc:
            raise InvalidArgument(
                f"webhook_url is not allowed: {exc}", {"field": "webhook_url", "reason": str(exc)}
            ) from exc

    async def send(self, url: str, headers: dict[str, str], body: bytes) -> str | None:
        """POST ``body``; None when the receiver acknowledged it (2xx), else what went wrong."""
        try:
            async with asyncio.timeout(self.timeout * 2):  # a receiver that drips bytes stops here
                return await self._send(url, headers, body)
        except Refused as exc:
            return f"refused: {exc}"
        except TimeoutError:
            return f"timed out after {self.timeout:g}s"
        except httpx.HTTPError as exc:
            return _clip(f"{type(exc).__name__}: {exc}")

    async def _send(self, url: str, headers: dict[str, str], body: bytes) -> str | None:
        target, address = await self.checked(url)
        pinned = target.parts._replace(netloc=_netloc(address, target.port)).geturl()
        host = target.parts.netloc.rpartition("@")[2]
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        async with httpx.AsyncClient(
            transport=self.transport, timeout=self.timeout, follow_redirects=False, trust_env=False
        ) as client:
            request = client.build_request(
                "POST", pinned, content=body, headers={**headers, "Host": host}, extensions=extensions
            )
            response = await client.send(request, stream=True)
            try:
                text = await self._head_of(response)
            finally:
                await response.aclose()
        if response.is_success:
            return None
        if response.is_redirect:
            return _clip(
                f"HTTP {response.status_code}: redirect to {response.headers.get('location')} not followed"
            )
        return _clip(f"HTTP {response.status_code}: {text}".rstrip(": "))

    async def _head_of(self, response: httpx.Response) -> str:
        """The start of the answer (for ``last_error``); reading stops at the size cap."""
        seen = bytearray()
        async for chunk in response.aiter_raw():
            seen.extend(chunk[: self.max_response_bytes - len(seen)])
            if len(seen) >= self.max_response_bytes:
                break
        return seen[:200].decode("utf-8", "replace").strip()


def _netloc(address: IPAddress, port: int) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"{host}:{port}"


def _clip(text: str) -> str:
    return text if len(text) <= ERROR_TEXT else text[: ERROR_TEXT - 1] + "…"
