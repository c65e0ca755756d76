"""The scripted model's answer to tier 2 of the channel gate (DESIGN §11), and its checks.

``model_settings.gate``: ``[{"match": regex, "verdict": "engage" | "observe"}]``; the first rule
whose pattern finds the message decides, none observes. ``model_settings.gate_model`` names a
cheaper model for the gate than the bot's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Verdict:
    engage: bool
    reason: str


def scripted_verdict(rules: list[dict[str, Any]], text: str) -> Verdict:
    """``model_settings.gate``: the first rule whose ``match`` finds ``text`` decides."""
    for index, rule in enumerate(rules):
        if re.search(str(rule.get("match", "")), text, re.IGNORECASE):
            verdict = rule.get("verdict")
            return Verdict(verdict == "engage", f"the gate model said {verdict} (gate[{index}])")
    return Verdict(False, "the gate model found it not addressed")


def validate_gate(model_settings: dict[str, Any]) -> list[str]:
    """The problems with ``model_settings.gate`` (and ``gate_model``); empty when valid."""
    rules = model_settings.get("gate")
    problems: list[str] = []
    if rules is not None and not isinstance(rules, list):
        problems.append("gate must be a list")
    for index, rule in enumerate(rules or []):
        if not isinstance(rule, dict) or rule.get("verdict") not in ("engage", "observe"):
            problems.append(f"gate[{index}].verdict must be engage or observe")
            continue
        try:
            re.compile(str(rule.get("match", "")))
        except re.error as exc:
            problems.append(f"gate[{index}].match is not a valid pattern: {exc}")
    gate_model = model_settings.get("gate_model")
    if gate_model is not None and (not isinstance(gate_model, str) or not gate_model.strip()):
        problems.append("gate_model must be a model name")
    return problems
