"""The bare-agent benchmark's copy of the built-in tools stays a copy: same names, descriptions and
argument schemas the model sees, so ``bare`` keeps measuring what a bot's agent is given."""

from __future__ import annotations

from benchmarks.bare import noop_tools

from openbot.runtime.tools.registry import BUILTIN_TOOLS, build_tools


def test_the_bare_benchmark_tools_match_the_built_ins_the_model_sees() -> None:
    real = {t.name: t for t in build_tools()}
    copies = noop_tools()
    assert tuple(t.name for t in copies) == BUILTIN_TOOLS
    for copy in copies:
        tool = real[copy.name]
        assert copy.description == tool.description, copy.name
        assert copy.tool_call_schema.model_json_schema() == tool.tool_call_schema.model_json_schema(), (
            copy.name
        )
