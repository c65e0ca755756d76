"""Webhooks to external actors: the outbox rows (``outbox``), the HTTP side (``sender``) and the
clock-driven loop that delivers and retries them (``deliverer``)."""
