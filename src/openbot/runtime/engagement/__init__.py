"""Engagement: dispositions recorded with every post, the channel gate's tier 2, and ``why``."""
