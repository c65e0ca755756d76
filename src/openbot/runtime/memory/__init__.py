"""Bots' durable memory: the store every write path uses, and what injection reads."""
