"""Webhook signatures (HTTP contract, external actors): ``X-OpenBot-Signature: sha256=<hex>``, the
HMAC-SHA256 of ``"<timestamp>.<body>"`` with the actor's ``webhook_secret``.

The timestamp is signed with the body so a receiver can refuse replays of old deliveries; the
receiver verifies with :func:`verify` (or the same three lines in its own language).
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-OpenBot-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, header: str) -> bool:
    """Whether ``header`` is the signature of ``body`` at ``timestamp`` (constant-time)."""
    return hmac.compare_digest(signature(secret, timestamp, body), header)


def headers(secret: str | None, delivery_id: str, timestamp: str, body: bytes) -> dict[str, str]:
    """Every header a delivery carries (no signature without a secret)."""
    out = {
        "Content-Type": "application/json",
        "User-Agent": "openbot-webhooks",
        "X-OpenBot-Delivery": delivery_id,
        "X-OpenBot-Timestamp": timestamp,
    }
    if secret:
        out["X-OpenBot-Signature"] = signature(secret, timestamp, body)
    return out
