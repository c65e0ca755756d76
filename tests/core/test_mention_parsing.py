"""Mention parsing outside code, and the suggestion for a mistyped handle (pure)."""

from __future__ import annotations

import pytest

from openbot.core.mentions import parse_mentions, suggest_handle

TEAM = ("you", "chief_of_staff", "engineer", "reviewer", "qa")


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("`@qa` is code, @reviewer is not", ["reviewer"]),
        ("```\n@dataclass\nclass X: ...\n```\nthen @qa", ["qa"]),
        ("~~~\n@qa\n~~~", []),
        ("```\nan unclosed fence runs to the end @qa", []),
        ("`` a `@tick` inside `` and @qa", ["qa"]),
        ("a lone ` backtick and @qa", ["qa"]),
    ],
)
def test_mentions_inside_backticks_are_code(text: str, mentions: list[str]) -> None:
    assert parse_mentions(text) == mentions


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("enginer", "engineer"),
        ("reviwer", "reviewer"),
        ("cheif_of_staff", "chief_of_staff"),
        ("engineers", "engineer"),
        ("qe", None),  # two letters, one wrong: too far to guess
        ("dataclass", None),
        ("zzyzx", None),
    ],
)
def test_a_suggestion_is_the_closest_handle_only_when_close(typed: str, meant: str | None) -> None:
    assert suggest_handle(typed, TEAM) == meant


def test_a_handle_or_a_tool_source_name_is_the_whole_string() -> None:
    from openbot.core.mentions import is_valid_handle
    from openbot.runtime.tools.mcp_config import SERVER_NAME
    from openbot.runtime.tools.skills import _NAME as SKILL_NAME

    assert is_valid_handle("cd") and not is_valid_handle("cd\n")
    assert SERVER_NAME.match("files") and not SERVER_NAME.match("files\n")
    assert SKILL_NAME.match("pdf") and not SKILL_NAME.match("pdf\n")
