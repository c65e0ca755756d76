"""Skills: ``<dir>/SKILL.md`` bundles compiled into sub-agents, each a tool ``skill__<name>``.

A ``SKILL.md`` starts with YAML front matter between ``---`` lines: ``name`` (letters, digits,
``-`` and ``_``; the directory's name when absent), ``description`` (required: the only text of the
skill the calling bot sees, as the tool's description) and ``allowed-tools`` (a list, or a string
separated by commas or spaces). The body is the sub-agent's instructions. Calling the tool runs a
sub-agent (runtime.tools.subagents) on the given task with the skill's instructions and the
allowed tools the calling bot itself has and may delegate (allowed-tools ∩ the bot's tools, minus
``ask_human``, ``spawn_agent``, skills and tools behind approval); other names are ignored.

A bot is given a skill by naming its tool in ``tools`` (or ``skill:<name>`` for the tool of that
skill, the registry's group). A directory that is not a valid skill is skipped with a problem
logged and listed; it never stops the server.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # comes with langchain-core
from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from openbot.runtime.tools.context import RunContext
from openbot.runtime.tools.subagents import SKILL_PREFIX, SubagentHost, run_subagent

log = logging.getLogger(__name__)

# Short enough that skill__<plugin>__<name> fits providers' 64-character tool names; no "__".
_NAME = re.compile(r"^(?!.*__)[A-Za-z0-9][A-Za-z0-9_-]{0,26}\Z")
_MAX_BYTES = 256 * 1024


class SkillError(ValueError):
    """A ``SKILL.md`` that cannot be loaded, and why."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    allowed_tools: tuple[str, ...]
    instructions: str
    path: Path
    plugin: str | None = None

    @property
    def tool_name(self) -> str:
        """``skill__<name>``, or ``skill__<plugin>__<name>`` for a plugin's skill."""
        return f"{SKILL_PREFIX}{self.plugin}__{self.name}" if self.plugin else f"{SKILL_PREFIX}{self.name}"


def parse_skill(path: Path, *, plugin: str | None = None) -> Skill:
    """The skill of one ``SKILL.md`` file. Raises :class:`SkillError`."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise SkillError(f"{path}: larger than {_MAX_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"{path}: cannot be read ({exc})") from exc
    meta, body = _front_matter(path, text)
    name = str(meta.get("name") or path.parent.name).strip()
    if not _NAME.match(name):
        raise SkillError(f"{path}: name {name!r} must be letters, digits, '-' or '_' (at most 27, no '__')")
    description = str(meta.get("description") or "").strip()
    if not description:
        raise SkillError(f"{path}: the front matter needs a description")
    return Skill(name, description, _allowed(meta.get("allowed-tools")), body.strip(), path, plugin)


def _front_matter(path: Path, text: str) -> tuple[dict[str, Any], str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{path}: must start with front matter between '---' lines")
    end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None)
    if end is None:
        raise SkillError(f"{path}: the front matter is not closed with '---'")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"{path}: the front matter is not valid YAML ({exc})") from exc
    if not isinstance(meta, dict):
        raise SkillError(f"{path}: the front matter must be a mapping")
    return meta, "\n".join(lines[end + 1 :])


def _allowed(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else value
    if not isinstance(items, list):
        return ()
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))


def load_skills(directory: Path | None, *, plugin: str | None = None) -> tuple[list[Skill], list[str]]:
    """Every ``<directory>/<name>/SKILL.md``, by directory name; and the problems of those skipped."""
    if directory is None or not directory.is_dir():
        return [], []
    skills: list[Skill] = []
    problems: list[str] = []
    seen: set[str] = set()
    for child in sorted(directory.iterdir()):
        path = child / "SKILL.md"
        if not path.is_file():
            continue
        try:
            skill = parse_skill(path, plugin=plugin)
        except SkillError as exc:
            problems.append(str(exc))
            log.warning("skill skipped: %s", exc)
            continue
        if skill.name in seen:
            problems.append(f"{path}: a skill named {skill.name!r} is already loaded")
            continue
        seen.add(skill.name)
        skills.append(skill)
    return skills, problems


def skill_tool(skill: Skill) -> BaseTool:
    """The tool that runs ``skill`` as a sub-agent on a task."""

    async def run(task: str, runtime: ToolRuntime[RunContext]) -> str:
        host = runtime.context.subagents
        if not isinstance(host, SubagentHost):
            raise ToolException("skills are not available here (a sub-agent cannot call a skill)")
        have = host.delegable()
        tools = [have[name] for name in skill.allowed_tools if name in have]
        return await run_subagent(runtime, task=task, tools=tools, instructions=skill.instructions)

    run.__doc__ = skill.description
    made = StructuredTool.from_function(
        coroutine=run,
        name=skill.tool_name,
        description=f"{skill.description} (skill: give it the whole task; it answers when done)",
    )
    made.handle_tool_error = True
    return made
