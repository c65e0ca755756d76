"""Repeatable performance scenarios for OpenBot; ``python -m benchmarks.run`` prints a JSON report.

See ``docs/benchmarks.md`` for how to run them and what the numbers mean.
"""
