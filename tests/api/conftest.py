"""Schemathesis's tests under pytest-xdist."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest 9 every operation Schemathesis generates has the function's node id: it sets
    the operation on ``_nodeid``, which pytest 9 no longer reads (it builds ``nodeid`` from
    ``_id``). pytest-xdist's file scheduler keys tests by node id, so all but one of the operations
    were dropped without a word. Each gets the operation in its id, as its name has it
    (``test_every_operation_conforms[POST /api/v1/threads]``)."""
    for item in items:
        if "[" in item.name and "[" not in item.nodeid:
            item._id = item._id.with_params(item.name.split("[", 1)[1].removesuffix("]"))
