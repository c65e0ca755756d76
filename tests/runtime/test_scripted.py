"""The scripted chat model (DESIGN §11) and how ``build_chat_model`` builds models."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import ValidationError

from openbot.core.errors import InvalidArgument, ModelAuthError
from openbot.runtime.runner import models
from openbot.runtime.runner import scripted as scripted_module
from openbot.runtime.runner.models import (
    FORBID_ENV,
    OPENAI_BASE_URL_ENV,
    build_chat_model,
    forbid_real_models,
)
from openbot.runtime.runner.scripted import ScriptedChatModel, default_reply, validate_script

ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}

SHIP_SCRIPT: list[dict[str, Any]] = [
    {
        "match": r"(?i)\bship\b",
        "reply": "Deploy says: {tool_result}",
        "tool_calls": [{"name": "deploy", "args": {"target": "prod"}}],
    },
    {"match": "hello", "reply": "hi from {handle}, you said {trigger}"},
]


def scripted(trigger: str, script: list[dict[str, Any]] | None = None, **fields: Any) -> ScriptedChatModel:
    return ScriptedChatModel(
        handle="ops", script=SHIP_SCRIPT if script is None else script, trigger_text=trigger, **fields
    )


@tool
def deploy(target: str) -> str:
    """Deploy the service to a target environment."""
    return f"deployed to {target}"


# -- answers ------------------------------------------------------------------------------------


async def test_rule_without_tool_calls_replies_at_once_with_placeholders() -> None:
    model = scripted("well hello there")

    answer = await model.ainvoke([HumanMessage("well hello there")])

    assert answer.content == "hi from ops, you said well hello there"
    assert answer.tool_calls == []
    assert answer.usage_metadata == ZERO_USAGE


async def test_rules_are_tried_in_order_and_the_first_match_wins() -> None:
    model = scripted(
        "alpha beta",
        script=[
            {"match": "gamma", "reply": "gamma rule"},
            {"match": "beta", "reply": "beta rule"},
            {"match": "alpha", "reply": "alpha rule"},
        ],
    )

    assert (await model.ainvoke("alpha beta")).content == "beta rule"


async def test_rules_match_the_trigger_text_not_the_transcript() -> None:
    model = scripted("nothing relevant", script=[{"match": "hello", "reply": "matched"}])

    answer = await model.ainvoke([HumanMessage("hello (but this is history)")])

    assert answer.content == "(scripted) ops received 1 message(s)."


async def test_placeholders_leave_other_braces_alone_and_are_filled_once() -> None:
    model = scripted(
        "say {handle} please",
        script=[{"match": "say", "reply": 'json {"a": {1}} {unknown} {handle}/{trigger}'}],
    )

    answer = await model.ainvoke("x")

    assert answer.content == 'json {"a": {1}} {unknown} ops/say {handle} please'


async def test_a_tool_rule_first_returns_its_calls_with_deterministic_ids() -> None:
    model = scripted(
        "ship it",
        script=[
            {
                "match": "ship",
                "reply": "done",
                "tool_calls": [
                    {"name": "deploy", "args": {"target": "prod"}},
                    {"name": "notify"},
                ],
            }
        ],
    )

    answer = await model.ainvoke([HumanMessage("ship it")])

    assert answer.content == ""
    assert answer.tool_calls == [
        {"name": "deploy", "args": {"target": "prod"}, "id": "call_1", "type": "tool_call"},
        {"name": "notify", "args": {}, "id": "call_2", "type": "tool_call"},
    ]
    assert answer.usage_metadata == ZERO_USAGE


async def test_after_a_tool_result_the_reply_carries_the_last_tool_result() -> None:
    model = scripted("ship it")
    calls = (await model.ainvoke([HumanMessage("ship it")])).tool_calls
    transcript = [
        HumanMessage("ship it"),
        AIMessage(content="", tool_calls=calls),
        ToolMessage("first result", tool_call_id="call_0"),
        ToolMessage("deployed {handle} to prod", tool_call_id=calls[0]["id"]),
    ]

    answer = await model.ainvoke(transcript)

    # {tool_result} is filled last-in: braces inside the tool result are not expanded.
    assert answer.content == "Deploy says: deployed {handle} to prod"
    assert answer.tool_calls == []


async def test_tool_call_ids_continue_after_the_calls_already_in_the_transcript() -> None:
    model = scripted("ship it")
    transcript = [
        HumanMessage("earlier"),
        AIMessage(content="", tool_calls=[{"name": "deploy", "args": {}, "id": "call_1"}]),
        ToolMessage("ok", tool_call_id="call_1"),
        HumanMessage("ship it"),
    ]

    answer = await model.ainvoke(transcript)

    assert [call["id"] for call in answer.tool_calls] == ["call_2"]


async def test_tool_call_args_are_copies_of_the_script() -> None:
    script = [{"match": "x", "reply": "r", "tool_calls": [{"name": "t", "args": {"nested": {"n": 1}}}]}]
    model = scripted("x", script=script)

    answer = await model.ainvoke("x")
    answer.tool_calls[0]["args"]["nested"]["n"] = 2

    assert script[0]["tool_calls"][0]["args"] == {"nested": {"n": 1}}


async def test_no_matching_rule_gives_the_default_reply_counting_trigger_messages() -> None:
    model = ScriptedChatModel(handle="@ops", script=[], trigger_text="a\nb", trigger_count=2)

    answer = await model.ainvoke("a\nb")

    assert answer.content == "(scripted) ops received 2 message(s)."
    assert "@" not in answer.text


async def test_default_reply_after_a_tool_result_when_no_rule_matches() -> None:
    model = scripted("unmatched")

    answer = await model.ainvoke([HumanMessage("x"), ToolMessage("r @bob", tool_call_id="call_1")])

    assert answer.content == "(scripted) ops received 1 message(s)."


@given(handle=st.text(max_size=30), count=st.integers(min_value=0, max_value=10_000))
def test_default_reply_never_contains_an_at_sign(handle: str, count: int) -> None:
    reply = default_reply(handle, count)

    assert "@" not in reply
    assert reply.startswith("(scripted) ")
    assert reply.endswith(f" {count} message(s).")


def test_sync_invoke_gives_the_same_answer() -> None:
    model = scripted("hello")

    assert model.invoke("hello").content == "hi from ops, you said hello"


def test_llm_type_is_scripted() -> None:
    """The model type LangChain reports to callbacks and tracers."""
    reported: list[str] = []

    class Recorder(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            reported.append(kwargs["invocation_params"]["_type"])

    scripted("x").invoke("x", config={"callbacks": [Recorder()]})

    assert reported == ["scripted"]


# -- with a LangChain agent ---------------------------------------------------------------------


async def test_create_agent_runs_the_tool_then_replies_with_its_result() -> None:
    agent = create_agent(scripted("please ship it"), tools=[deploy])

    result = await agent.ainvoke({"messages": [HumanMessage("please ship it")]})

    messages = result["messages"]
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert messages[1].tool_calls[0]["name"] == "deploy"
    assert messages[2].content == "deployed to prod"
    assert messages[-1].content == "Deploy says: deployed to prod"


def test_create_agent_works_on_the_sync_path_too() -> None:
    agent = create_agent(scripted("ship"), tools=[deploy])

    result = agent.invoke({"messages": [HumanMessage("ship")]})

    assert result["messages"][-1].content == "Deploy says: deployed to prod"


async def test_bind_tools_returns_a_runnable_that_still_answers_from_the_script() -> None:
    bound = scripted("ship").bind_tools([deploy], tool_choice="auto")

    answer = await bound.ainvoke([HumanMessage("ship")])

    assert answer.tool_calls[0]["name"] == "deploy"


# -- streaming ----------------------------------------------------------------------------------


async def test_astream_yields_the_reply_in_several_word_chunks() -> None:
    model = scripted("hello", script=[{"match": "hello", "reply": "one two three four five"}])

    chunks = [chunk async for chunk in model.astream("hello")]

    assert len(chunks) >= 5
    assert all(isinstance(chunk, AIMessageChunk) for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks) == "one two three four five"
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.usage_metadata == ZERO_USAGE


def test_sync_stream_yields_word_chunks() -> None:
    model = scripted("hello", script=[{"match": "hello", "reply": "alpha beta gamma"}])

    pieces = [chunk.text for chunk in model.stream("hello")]

    assert [p for p in pieces if p] == ["alpha ", "beta ", "gamma"]


async def test_astream_sends_tool_calls_as_one_chunk() -> None:
    chunks = [chunk async for chunk in scripted("ship").astream("ship")]

    with_calls = [chunk for chunk in chunks if chunk.tool_call_chunks]
    assert len(with_calls) == 1
    assert with_calls[0].tool_calls == [
        {"name": "deploy", "args": {"target": "prod"}, "id": "call_1", "type": "tool_call"}
    ]


async def test_agent_token_stream_yields_several_chunks_from_the_model_node() -> None:
    script = [{"match": "hello", "reply": "a reply of several words"}]
    agent = create_agent(scripted("hello", script=script), tools=[deploy])

    tokens = [
        message.text
        async for message, metadata in agent.astream(
            {"messages": [HumanMessage("hello")]}, stream_mode="messages"
        )
        if isinstance(message, AIMessageChunk) and metadata["langgraph_node"] == "model"
    ]

    assert len([t for t in tokens if t]) >= 5
    assert "".join(tokens) == "a reply of several words"


# -- script validation --------------------------------------------------------------------------


def test_a_valid_script_has_no_problems() -> None:
    assert validate_script(SHIP_SCRIPT) == []
    assert validate_script([]) == []


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("not a list", "script must be a list of rules"),
        ([["match", "reply"]], "script[0] must be an object"),
        ([{"reply": "x"}], "script[0].match is required"),
        ([{"match": 3, "reply": "x"}], "script[0].match is required"),
        (
            [{"match": "ok", "reply": "x"}, {"match": "(unclosed", "reply": "x"}],
            "script[1].match is not a valid",
        ),
        ([{"match": "[z-a]", "reply": "x"}], "script[0].match is not a valid regular expression"),
        ([{"match": "x"}], "script[0].reply is required"),
        ([{"match": "x", "reply": None}], "script[0].reply is required"),
        ([{"match": "x", "reply": "y", "tool_call": []}], "script[0] has unknown key(s) 'tool_call'"),
        ([{"match": "x", "reply": "y", "tool_calls": []}], "script[0].tool_calls must be a non-empty list"),
        ([{"match": "x", "reply": "y", "tool_calls": {"name": "t"}}], "script[0].tool_calls must be"),
        ([{"match": "x", "reply": "y", "tool_calls": ["t"]}], "script[0].tool_calls[0] must be an object"),
        (
            [{"match": "x", "reply": "y", "tool_calls": [{"args": {}}]}],
            "script[0].tool_calls[0].name is required",
        ),
        (
            [{"match": "x", "reply": "y", "tool_calls": [{"name": " "}]}],
            "script[0].tool_calls[0].name is required",
        ),
        (
            [{"match": "x", "reply": "y", "tool_calls": [{"name": "t", "args": [1]}]}],
            "script[0].tool_calls[0].args must be an object",
        ),
        (
            [{"match": "x", "reply": "y", "tool_calls": [{"name": "t", "arguments": {}}]}],
            "script[0].tool_calls[0] has unknown key(s) 'arguments'",
        ),
    ],
)
def test_validate_script_reports_each_problem_readably(script: object, expected: str) -> None:
    problems = validate_script(script)

    assert len(problems) == 1, problems
    assert problems[0].startswith(expected)


def test_validate_script_reports_every_problem_not_just_the_first() -> None:
    problems = validate_script([{"match": "(", "reply": 1}, {"match": "ok", "reply": "fine"}, "x"])

    assert len(problems) == 3
    assert [p.split(" ", 1)[0].split(".")[0] for p in problems] == ["script[0]", "script[0]", "script[2]"]


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a*)*b", r"(?:\w+\s?)*!", "((ab)*c?)+x", "(a+){20}", "(?:x|y+)+", "(?>(a+)+$)", "(?=(a+)+)b"],
)
def test_validate_script_refuses_nested_quantifiers_that_could_stall_the_server(pattern: str) -> None:
    problems = validate_script([{"match": "ok", "reply": "x"}, {"match": pattern, "reply": "x"}])

    assert len(problems) == 1, problems
    assert problems[0].startswith("script[1].match could backtrack catastrophically")


@pytest.mark.parametrize(
    "pattern", [r"(?i)\bship\b", "a+b+", "(ab)+", "(a{2})+", "(?:a++)+", "(?>a+)+", r"(\d+\.){3}\d+", "(a?)+"]
)
def test_validate_script_keeps_patterns_without_nested_quantifiers(pattern: str) -> None:
    assert validate_script([{"match": pattern, "reply": "x"}]) == []


@pytest.mark.parametrize(
    ("pattern", "expected"), [("(" * 3000 + ")" * 3000, "recursion"), ("a{99999999999}", "too large")]
)
def test_validate_script_reports_unbuildable_patterns_instead_of_raising(pattern: str, expected: str) -> None:
    problems = validate_script([{"match": pattern, "reply": "x"}])

    assert len(problems) == 1 and problems[0].startswith("script[0].match is not a usable regular expression")
    assert expected in problems[0]


def test_rules_see_only_the_start_of_a_long_trigger() -> None:
    filler = "x" * scripted_module.MAX_MATCH_CHARS

    late = scripted(filler + " hello").respond([HumanMessage("long")])
    early = scripted("hello " + filler).respond([HumanMessage("long")])

    assert late.content == default_reply("ops", 1)
    assert str(early.content).startswith("hi from ops")


def test_the_model_refuses_an_invalid_script_instead_of_skipping_the_rule() -> None:
    with pytest.raises(ValidationError, match=r"script\[0\]\.match is not a valid regular expression"):
        ScriptedChatModel(handle="ops", script=[{"match": "(", "reply": "x"}])


def test_delay_must_not_be_negative() -> None:
    with pytest.raises(ValidationError):
        ScriptedChatModel(handle="ops", delay_ms=-1)


# -- build_chat_model ---------------------------------------------------------------------------


@pytest.fixture
def real_models_allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(FORBID_ENV, raising=False)
    previous = forbid_real_models(False)
    yield
    forbid_real_models(previous)


@pytest.fixture
def real_models_disallowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(FORBID_ENV, raising=False)
    previous = forbid_real_models(True)
    yield
    forbid_real_models(previous)


def test_build_scripted_model_from_settings() -> None:
    model = build_chat_model(
        "scripted",
        {"script": SHIP_SCRIPT, "delay_ms": 5},
        handle="@ops",
        trigger_text="hello",
        trigger_count=3,
    )

    assert isinstance(model, ScriptedChatModel)
    assert (model.handle, model.trigger_text, model.trigger_count, model.delay_ms) == ("ops", "hello", 3, 5)
    assert model.script == SHIP_SCRIPT


def test_build_scripted_model_defaults_to_an_empty_script() -> None:
    model = build_chat_model("scripted", {}, handle="ops", trigger_text="x", trigger_count=1)

    assert model.invoke("x").content == "(scripted) ops received 1 message(s)."


def test_build_scripted_model_rejects_a_bad_script_with_every_problem() -> None:
    with pytest.raises(InvalidArgument) as caught:
        build_chat_model(
            "scripted",
            {"script": [{"match": "(", "reply": "x"}, {"match": "y"}]},
            handle="ops",
            trigger_text="",
            trigger_count=1,
        )

    assert len(caught.value.details["problems"]) == 2
    assert "script[0].match" in caught.value.message


@pytest.mark.parametrize("delay", [-1, "10", 1.5, True])
def test_build_scripted_model_rejects_a_bad_delay(delay: object) -> None:
    with pytest.raises(InvalidArgument, match="delay_ms"):
        build_chat_model("scripted", {"delay_ms": delay}, handle="ops", trigger_text="", trigger_count=1)


@pytest.mark.usefixtures("real_models_disallowed")
def test_real_models_can_be_forbidden_for_the_process() -> None:
    with pytest.raises(ModelAuthError, match="disabled"):
        build_chat_model("anthropic:claude-sonnet-4-5", {}, handle="ops", trigger_text="", trigger_count=1)

    # The scripted model is always allowed.
    assert build_chat_model("scripted", {}, handle="ops", trigger_text="", trigger_count=1)


@pytest.mark.usefixtures("real_models_allowed")
def test_the_environment_variable_forbids_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORBID_ENV, "1")

    with pytest.raises(ModelAuthError):
        build_chat_model("openai:gpt-4.1", {}, handle="ops", trigger_text="", trigger_count=1)


@pytest.mark.usefixtures("real_models_allowed")
def test_a_missing_provider_package_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # importing it now fails

    with pytest.raises(InvalidArgument, match=r"pip install 'openbot\[anthropic\]'"):
        build_chat_model("anthropic:claude-sonnet-4-5", {}, handle="ops", trigger_text="", trigger_count=1)


@pytest.mark.usefixtures("real_models_allowed")
def test_an_unknown_provider_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument, match="provider:model"):
        build_chat_model("nosuchprovider:model-x", {}, handle="ops", trigger_text="", trigger_count=1)


@pytest.mark.usefixtures("real_models_allowed")
@pytest.mark.parametrize(
    ("model", "base_url", "expected_base_url"),
    [
        ("openai:gpt-4.1", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("openai:gpt-4.1", "", None),
        ("anthropic:claude-sonnet-4-5", "http://127.0.0.1:8000/v1", None),
    ],
)
def test_real_models_get_settings_and_the_openai_base_url(
    monkeypatch: pytest.MonkeyPatch, model: str, base_url: str, expected_base_url: str | None
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake_init_chat_model(name: str, **kwargs: Any) -> ScriptedChatModel:
        calls.append((name, kwargs))
        return ScriptedChatModel(handle="fake")

    monkeypatch.setattr(models, "init_chat_model", fake_init_chat_model)
    monkeypatch.setenv(OPENAI_BASE_URL_ENV, base_url)

    build_chat_model(
        model,
        {"temperature": 0.2, "max_tokens": 512, "timeout": 30, "script": "ignored", "top_k": 3},
        handle="ops",
        trigger_text="",
        trigger_count=1,
    )

    expected: dict[str, Any] = {"temperature": 0.2, "max_tokens": 512, "timeout": 30}
    if expected_base_url:
        expected["base_url"] = expected_base_url
    assert calls == [(model, expected)]
