"""What the app's OpenAPI schema says about a URL, for checks made outside the router.

Middleware runs before routing, and the router's own 405 names only the first route it found
for a path; the schema (public, and what clients see) answers both: which query parameters of an
operation are integers, and which methods a path takes.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

_cache: weakref.WeakKeyDictionary[Any, Operations] = weakref.WeakKeyDictionary()


class Operations:
    def __init__(self, schema: dict[str, Any]) -> None:
        self._paths: list[tuple[re.Pattern[str], dict[str, frozenset[str]]]] = []
        for path, operations in schema.get("paths", {}).items():
            template = re.compile(re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(path)))
            by_method = {
                method.upper(): frozenset(
                    p["name"]
                    for p in operation.get("parameters", [])
                    if p.get("in") == "query" and _is_integer(p.get("schema", {}))
                )
                for method, operation in operations.items()
                if isinstance(operation, dict)
            }
            self._paths.append((template, by_method))

    def _matching(self, path: str) -> list[dict[str, frozenset[str]]]:
        return [by_method for template, by_method in self._paths if template.fullmatch(path)]

    def int_query_params(self, path: str, method: str) -> frozenset[str]:
        """The query parameters that ``method`` on ``path`` declares as integers."""
        names: set[str] = set()
        for by_method in self._matching(path):
            names |= by_method.get(method.upper(), frozenset())
        return frozenset(names)

    def methods(self, path: str) -> set[str]:
        """Every method some operation on ``path`` takes."""
        return {method for by_method in self._matching(path) for method in by_method}


def operations(app: Any) -> Operations | None:
    """The (cached) index of ``app``'s schema; None for an app without one."""
    openapi = getattr(app, "openapi", None)
    if not callable(openapi):
        return None
    if app not in _cache:
        _cache[app] = Operations(openapi())
    return _cache[app]


def _is_integer(schema: dict[str, Any]) -> bool:
    options = [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]
    return any(option.get("type") == "integer" for option in options)
