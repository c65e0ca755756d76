"""Several tables' rows in one statement (``store.fast``): each ORM class's columns under a prefix,
taken back out of the joined row as a record with the class's own attribute names."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect as sa_inspect

from openbot.store.fast import Record, record_type


class Columns:
    """An ORM class's columns under a prefix, to read several tables' rows in one statement and
    take each back out as a record with the class's own attribute names."""

    def __init__(self, entity: Any, prefix: str) -> None:
        mapper = sa_inspect(entity)
        props = list(mapper.column_attrs)
        self.prefix = prefix
        self.columns = [p.columns[0].label(f"{prefix}{p.key}") for p in props]
        self.keys = [p.key for p in props]
        self._record = record_type(self.keys)

    def of(self, row: Record) -> Any:
        """This class's part of ``row``, as a record (None when an outer join found nothing)."""
        values = self._part(row)
        return None if all(v is None for v in values) else self._record(values)

    def values(self, row: Record) -> dict[str, Any]:
        return dict(zip(self.keys, self._part(row), strict=True))

    def _part(self, row: Record) -> tuple[Any, ...]:
        start = row._index[self.prefix + self.keys[0]]
        return row[start : start + len(self.keys)]
