"""``OPENBOT_TOOLS_DIR``: Python modules of LangChain tools, loaded once at start.

Every ``*.py`` file (not starting with ``_``) of the directory is imported as its own module; its
tools are the names listed in its ``TOOLS`` when it has one, else every module-level
``BaseTool`` (what ``@tool`` makes). They are listed with source "plugin" and the module's name
as their ``server``. A module that fails to import is logged and skipped, never the start.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

from langchain_core.tools import BaseTool

from openbot.runtime.tools.registry import StaticSource, ToolEntry

log = logging.getLogger(__name__)


def load_tools_dir(directory: Path) -> StaticSource:
    entries: list[ToolEntry] = []
    for path in sorted(directory.glob("*.py")) if directory.is_dir() else []:
        if path.name.startswith("_"):
            continue
        try:
            tools = _module_tools(path)
        except Exception:
            log.exception("tools module %s could not be loaded; its tools are left out", path)
            continue
        entries.extend(ToolEntry(t, "plugin", server=path.stem) for t in tools)
    if not directory.is_dir():
        log.warning("OPENBOT_TOOLS_DIR %s is not a directory; no tools loaded from it", directory)
    return StaticSource(entries)


def _module_tools(path: Path) -> list[BaseTool]:
    name = f"openbot_tools_dir.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    listed = getattr(module, "TOOLS", None)
    values = list(listed) if listed is not None else list(vars(module).values())
    return [v for v in values if isinstance(v, BaseTool)]
