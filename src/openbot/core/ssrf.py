"""Which addresses a webhook may reach (the SSRF rule of the HTTP contract), as pure functions.

A webhook URL is chosen by whoever creates an external actor, and the server POSTs to it: without
a rule, that is a way to make the server call its own admin ports or the cloud's metadata service.

- Link-local addresses (``169.254.0.0/16``, ``fe80::/10``) and the metadata endpoints are always
  refused, as is anything that is not one unicast host (unspecified, multicast, reserved).
- Loopback and private ranges (every address that is not globally routable: RFC 1918, ``fc00::/7``,
  shared ``100.64.0.0/10``, documentation ranges) only with ``allow_private``
  (``OPENBOT_WEBHOOK_ALLOW_PRIVATE=1``).

The rule applies to every address a host name resolves to (``runtime.webhooks.sender`` checks
them, then connects to one it checked); an IPv4-mapped IPv6 address is judged as its IPv4 address.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean…
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
    )
)


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart: what to resolve and connect to."""

    scheme: str
    host: str
    port: int
    parts: SplitResult


def parse_url(url: str) -> Target | str:
    """The URL's target, or why it cannot be a webhook URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "the URL has no host"
    if literal_address(parts.hostname) is None:
        try:  # what a resolver is given: labels of 1-63 characters
            parts.hostname.encode("idna")
        except UnicodeError:
            return f"{parts.hostname!r} is not a valid host name"
    if parts.username is not None or parts.password is not None:
        return "credentials in the URL are not allowed (sign with webhook_secret instead)"
    default = 443 if parts.scheme == "https" else 80
    return Target(parts.scheme, parts.hostname, port or default, parts)


def literal_address(host: str) -> IPAddress | None:
    """The address a host name spells, if it is an IP literal (``169.254.169.254.``, with the final
    dot of a fully qualified name, spells one too: resolvers read it as the address)."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare[:-1] if bare.endswith(".") else bare)
    except ValueError:
        return None


def refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why the rule refuses ``address``, or None when a webhook may connect to it."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA:
        return f"{address} is a cloud metadata address"
    if address.is_link_local:
        return f"{address} is link-local"
    if address.is_unspecified or address.is_multicast:
        return f"{address} is not a unicast host address"
    if address.is_reserved and not address.is_loopback:  # (Python counts ::1 as reserved)
        return f"{address} is a reserved address"
    if not allow_private and (address.is_loopback or not address.is_global):
        return f"{address} is a loopback or private address (allowed with OPENBOT_WEBHOOK_ALLOW_PRIVATE=1)"
    return None


def first_refusal(addresses: list[IPAddress], *, allow_private: bool) -> str | None:
    """The first refusal among every address a host resolved to (one bad answer refuses them all:
    a resolver may hand out any of them)."""
    if not addresses:
        return "the host resolved to no address"
    for address in addresses:
        reason = refusal(address, allow_private=allow_private)
        if reason is not None:
            return reason
    return None
