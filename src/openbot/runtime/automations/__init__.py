"""Automations: scheduled posts with durable occurrences (cron maths in ``core.cron``)."""
