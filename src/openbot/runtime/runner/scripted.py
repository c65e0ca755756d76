"""The scripted chat model: offline, deterministic, tool calling included (DESIGN §11).

A bot whose model is ``"scripted"`` answers from ``model_settings.script``, a list of rules tried
in order against the run's trigger text (the trigger messages' contents joined with newlines)::

    {"match": "regex", "reply": "text; may use {trigger} {handle} {tool_result}",
     "tool_calls": [{"name": "ask_human", "args": {"question": "Ship it?"}}]}

- The first rule whose ``match`` is found (``re.search``) in the trigger text wins. Rules see
  the first :data:`MAX_MATCH_CHARS` characters of it only.
- When the last input message is a tool result, the answer is the rule's ``reply`` (the default
  reply when no rule matched) with ``{tool_result}`` set to that tool result's text.
- Otherwise a rule with ``tool_calls`` answers with those calls (ids ``call_<n>``, numbered after
  the calls already in the transcript) and, beside them, the rule's optional ``say`` text (as real
  providers often do; no text without it); a rule without them answers ``reply`` at once.
- No rule matched: ``(scripted) <handle> received N message(s).`` — never with an ``@``, so the
  default reply never hands off to another bot.

Placeholders are filled in one pass, so braces elsewhere in the text (JSON, code) are left alone
and a trigger that itself contains ``{handle}`` is not expanded again. ``delay_ms`` adds a fixed
latency to every model call (for load tests); usage counters report zero tokens.

Scripts are checked with :func:`validate_script`; the API uses it to reject bad scripts and the
model refuses to be built from one, so a broken rule is never silently skipped.

Rules are matched on the event loop, and Python's ``re`` can neither be interrupted nor release the
GIL, so a pattern that backtracks catastrophically would freeze the whole server. Two guards: a
pattern that nests a quantifier which can match different lengths inside one that repeats without
bound (or more than :data:`_MANY` times), the classic ``(a+)+$``, is refused (rewrite it with a
possessive quantifier ``a++`` or an atomic group ``(?>…)``, which do not backtrack); and the text
matched is capped at :data:`MAX_MATCH_CHARS`, bounding the polynomial cases. Overlapping
alternatives under a quantifier (``(a|aa)+$``) are not detected.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ToolCall,
    ToolMessage,
    UsageMetadata,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field, model_validator

__all__ = ["MAX_MATCH_CHARS", "ScriptedChatModel", "default_reply", "validate_script"]

_RULE_KEYS = ("match", "reply", "tool_calls", "say")
_TOOL_CALL_KEYS = ("name", "args")
_PLACEHOLDER = re.compile(r"\{(trigger|handle|tool_result)\}")
_CHUNK = re.compile(r"\S+\s*|\s+")  # a word and the whitespace after it (or leading whitespace)

MAX_MATCH_CHARS = 10_000
"""Rules are matched against at most this many characters from the start of the trigger text."""
_MANY = 10  # a quantifier allowing more repetitions than this counts as unbounded
_parser: Any = importlib.import_module("re._parser")  # the stdlib's own regex parser (no stubs)
_c: Any = importlib.import_module("re._constants")


def _zero_usage() -> UsageMetadata:
    return UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)


def validate_script(script: object) -> list[str]:
    """Return the problems with ``script`` as human-readable sentences; empty when it is valid.

    Problems are located JSON-path style (``script[1].match``) so an API client can find them.
    """
    if not isinstance(script, list):
        return [f"script must be a list of rules, got {type(script).__name__}"]
    problems: list[str] = []
    for index, rule in enumerate(script):
        where = f"script[{index}]"
        if not isinstance(rule, dict):
            problems.append(f"{where} must be an object with 'match' and 'reply', got {type(rule).__name__}")
            continue
        unknown = sorted(str(key) for key in rule if key not in _RULE_KEYS)
        if unknown:
            problems.append(
                f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(_RULE_KEYS)}"
            )
        match = rule.get("match")
        if not isinstance(match, str):
            problems.append(f"{where}.match is required and must be a regular expression string")
        else:
            problem = _pattern_problem(match)
            if problem:
                problems.append(f"{where}.match {problem}")
        if not isinstance(rule.get("reply"), str):
            problems.append(f"{where}.reply is required and must be a string")
        if "tool_calls" in rule:
            problems.extend(_tool_call_problems(f"{where}.tool_calls", rule["tool_calls"]))
        if "say" in rule and (not isinstance(rule["say"], str) or "tool_calls" not in rule):
            problems.append(f"{where}.say must be a string, and only goes with tool_calls")
    return problems


def _pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a rule's ``match``: invalid, or liable to stall the server."""
    try:
        re.compile(pattern)
        tree = _parser.parse(pattern)
        nested = _nested_quantifier(tree, inside=False)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    except (OverflowError, RecursionError, ValueError) as exc:
        return f"is not a usable regular expression: {exc}"
    if nested is not None:
        return (
            f"could backtrack catastrophically and stall the server: a {nested!r} quantifier inside a "
            "repeated group; use a possessive quantifier (a++) or an atomic group ((?>...)) instead"
        )
    return None


def _nested_quantifier(items: Any, *, inside: bool) -> str | None:
    """The first backtracking quantifier that can match different lengths (``+ * {m,n}``) inside
    one that repeats many times, as text; None when there is none."""
    for op, av in items:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            low, high, body = av
            if inside and high != low and high > 1:
                return _quantifier_text(low, high)
            many = high == _c.MAXREPEAT or high > _MANY
            found = _nested_quantifier(body, inside=inside or many)
        elif op is _c.POSSESSIVE_REPEAT:  # gives nothing back, so it is no backtracking point
            found = _nested_quantifier(av[2], inside=False)
        elif op is _c.ATOMIC_GROUP:
            found = _nested_quantifier(av, inside=False)
        elif op is _c.SUBPATTERN:
            found = _nested_quantifier(av[3], inside=inside)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _nested_quantifier(av[1], inside=inside)
        elif op is _c.BRANCH:
            found = next((f for b in av[1] if (f := _nested_quantifier(b, inside=inside))), None)
        elif op is _c.GROUPREF_EXISTS:
            branches = [b for b in av[1:] if b is not None]
            found = next((f for b in branches if (f := _nested_quantifier(b, inside=inside))), None)
        else:
            found = None
        if found is not None:
            return found
    return None


def _quantifier_text(low: int, high: int) -> str:
    if high == _c.MAXREPEAT:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    return f"{{{low},{high}}}"


def _tool_call_problems(where: str, tool_calls: object) -> list[str]:
    if not isinstance(tool_calls, list) or not tool_calls:
        return [f"{where} must be a non-empty list of {{'name', 'args'}} objects"]
    problems: list[str] = []
    for index, call in enumerate(tool_calls):
        at = f"{where}[{index}]"
        if not isinstance(call, dict):
            problems.append(f"{at} must be an object with 'name' and 'args', got {type(call).__name__}")
            continue
        unknown = sorted(str(key) for key in call if key not in _TOOL_CALL_KEYS)
        if unknown:
            problems.append(f"{at} has unknown key(s) {', '.join(map(repr, unknown))}; allowed: name, args")
        name = call.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{at}.name is required and must be a non-empty string")
        if "args" in call and not isinstance(call["args"], dict):
            problems.append(f"{at}.args must be an object")
    return problems


MAX_DELAY_MS = 3_600_000  # ``delay_ms``: at most an hour a model call


def delay_problem(value: object) -> str | None:
    """What is wrong with a ``delay_ms`` setting (None: nothing)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DELAY_MS:
        return f"delay_ms must be a whole number of milliseconds from 0 to {MAX_DELAY_MS}, got {value!r}"
    return None


def default_reply(handle: str, trigger_count: int) -> str:
    """The reply when no rule matches. It never contains ``@``, so it never hands off."""
    name = handle.replace("@", "")
    return f"(scripted) {name} received {trigger_count} message(s)."


class Scripted(BaseChatModel):
    """A chat model whose answer is :meth:`respond` (pure), after ``delay_ms`` of simulated latency."""

    delay_ms: int = Field(default=0, ge=0)
    """Fixed simulated latency added to every model call."""

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)  # simulated model latency, not waiting for work
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay_ms:
            await asyncio.sleep(self.delay_ms / 1000)
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])


class ScriptedChatModel(Scripted):
    """A real chat model whose answers come from a script (see the module docstring)."""

    handle: str
    """The bot's handle, written without ``@``."""
    script: list[dict[str, Any]] = Field(default_factory=list)
    """Rules ``{"match", "reply", "tool_calls"?}`` tried in order."""
    trigger_text: str = ""
    """The run's trigger messages' contents joined with newlines; rules match against it."""
    trigger_count: int = 1
    """How many trigger messages the run has (for the default reply)."""

    def __repr__(self) -> str:
        # LangChain's callbacks put repr(model) into every model-start event: keep it cheap.
        return f"ScriptedChatModel(handle={self.handle!r}, rules={len(self.script)})"

    @model_validator(mode="after")
    def _check_script(self) -> ScriptedChatModel:
        problems = validate_script(self.script)
        if problems:
            raise ValueError("invalid script: " + "; ".join(problems))
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"handle": self.handle, "rules": len(self.script), "delay_ms": self.delay_ms}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept tools the way provider models do; the script decides which ones get called."""
        # The script decides the calls, so only the names matter: no schema conversion per call.
        names = [
            getattr(tool, "name", None) or (tool.get("name") if isinstance(tool, dict) else None) or str(tool)
            for tool in tools
        ]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=names, **kwargs)

    # -- deciding the answer -------------------------------------------------------------------

    def _matched_rule(self) -> dict[str, Any] | None:
        text = self.trigger_text[:MAX_MATCH_CHARS]
        for rule in self.script:
            if re.search(rule["match"], text):
                return rule
        return None

    def _fill(self, text: str, tool_result: str) -> str:
        values = {
            "trigger": self.trigger_text,
            "handle": self.handle.replace("@", ""),
            "tool_result": tool_result,
        }
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The answer to ``messages`` (pure: no latency, no callbacks)."""
        rule = self._matched_rule()
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            if rule is None:
                return _text_message(default_reply(self.handle, self.trigger_count))
            return _text_message(self._fill(rule["reply"], tool_result=last.text))
        if rule is None:
            return _text_message(default_reply(self.handle, self.trigger_count))
        if rule.get("tool_calls"):
            already = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
            calls = [
                ToolCall(
                    name=call["name"],
                    args=copy.deepcopy(call.get("args", {})),
                    id=f"call_{already + offset}",
                    type="tool_call",
                )
                for offset, call in enumerate(rule["tool_calls"], start=1)
            ]
            said = self._fill(rule.get("say", ""), tool_result="")
            return AIMessage(content=said, tool_calls=calls, usage_metadata=_zero_usage())
        return _text_message(self._fill(rule["reply"], tool_result=""))

    # -- the BaseChatModel hooks ---------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # BaseChatModel reports each yielded chunk to the callbacks (on_llm_new_token) itself.
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        yield from _chunks(self.respond(messages))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.delay_ms:
            await asyncio.sleep(self.delay_ms / 1000)
        for chunk in _chunks(self.respond(messages)):
            yield chunk


def _text_message(text: str) -> AIMessage:
    return AIMessage(content=text, usage_metadata=_zero_usage())


def _chunks(message: AIMessage) -> list[ChatGenerationChunk]:
    """Split an answer into stream chunks: one per word of its text, then one carrying all its tool
    calls (if any).

    The last chunk carries the (zero) usage and ``chunk_position="last"``, so the merged message
    equals :meth:`ScriptedChatModel.respond`'s answer.
    """
    pieces = _CHUNK.findall(message.text) or ([] if message.tool_calls else [""])
    messages = [AIMessageChunk(content=piece) for piece in pieces]
    if message.tool_calls:
        calls = [
            tool_call_chunk(name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index)
            for index, call in enumerate(message.tool_calls)
        ]
        messages.append(AIMessageChunk(content="", tool_call_chunks=calls))
    last = messages[-1]
    last.usage_metadata = _zero_usage()
    last.chunk_position = "last"
    return [ChatGenerationChunk(message=m) for m in messages]
