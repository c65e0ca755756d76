"""Build the chat model a run talks to, from a bot's ``model`` and ``model_settings``.

- ``"scripted"`` is the offline, deterministic :class:`~openbot.runtime.runner.scripted.ScriptedChatModel`
  (``model_settings``: ``script``, ``delay_ms``).
- Anything else is ``"provider:model"`` (``"anthropic:claude-sonnet-4-5"``, ``"openai:gpt-4.1"``,
  ``"ollama:llama3.1:8b"``), built by LangChain's ``init_chat_model``. API keys come from the
  environment, as each provider package expects (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``…).
  For ``openai:`` models, ``OPENBOT_OPENAI_BASE_URL`` points at any OpenAI-compatible server.
  ``model_settings`` keys ``temperature``, ``max_tokens`` and ``timeout`` are passed through.

Tests switch real providers off for the whole process with :func:`forbid_real_models` (or the
environment variable ``OPENBOT_FORBID_REAL_MODELS=1``): building one then raises
:class:`~openbot.core.errors.ModelAuthError`, so no test can reach a paid API by accident.
"""

from __future__ import annotations

import os
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from openbot.core.errors import InvalidArgument, ModelAuthError
from openbot.core.model_errors import classify_model_error
from openbot.runtime.runner.scripted import ScriptedChatModel, delay_problem, validate_script

__all__ = [
    "FORBID_ENV",
    "OPENAI_BASE_URL_ENV",
    "SCRIPTED",
    "build_chat_model",
    "forbid_real_models",
    "real_models_forbidden",
]

SCRIPTED = "scripted"
FORBID_ENV = "OPENBOT_FORBID_REAL_MODELS"
OPENAI_BASE_URL_ENV = "OPENBOT_OPENAI_BASE_URL"

_PASSTHROUGH = ("temperature", "max_tokens", "timeout")
_TRUTHY = frozenset({"1", "true", "yes", "on"})

# Providers OpenBot ships an extra for: ``pip install 'openbot[<extra>]'``.
_EXTRAS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "ollama": "ollama",
    "google_genai": "google-genai",
}

_forbidden = False


def forbid_real_models(flag: bool = True) -> bool:
    """Forbid (or allow again) every model but ``"scripted"`` in this process.

    Returns the previous setting, so a test can restore it. ``OPENBOT_FORBID_REAL_MODELS=1``
    forbids them too; ``forbid_real_models(False)`` does not override the environment variable.
    """
    global _forbidden
    previous, _forbidden = _forbidden, flag
    return previous


def real_models_forbidden() -> bool:
    """Whether building a non-scripted model raises (the switch or the environment says so)."""
    return _forbidden or os.environ.get(FORBID_ENV, "").strip().lower() in _TRUTHY


def build_chat_model(
    model: str,
    model_settings: dict[str, Any],
    *,
    handle: str,
    trigger_text: str,
    trigger_count: int,
) -> BaseChatModel:
    """The chat model for one run of the bot ``handle`` triggered by ``trigger_text``.

    Raises:
        InvalidArgument: bad script or settings, unknown provider, provider package missing.
        ModelAuthError: real models are forbidden here, or the provider refused to start
            without credentials.
    """
    model = model.strip()
    if model == SCRIPTED:
        return _scripted(
            model_settings, handle=handle, trigger_text=trigger_text, trigger_count=trigger_count
        )
    if real_models_forbidden():
        raise ModelAuthError(
            f"Real model providers are disabled in this process, so model {model!r} cannot be used "
            f"(forbid_real_models() or {FORBID_ENV}=1). Use model 'scripted' instead.",
            details={"model": model},
        )
    provider = model.split(":", 1)[0].replace("-", "_").lower() if ":" in model else None
    kwargs: dict[str, Any] = {
        key: model_settings[key] for key in _PASSTHROUGH if model_settings.get(key) is not None
    }
    base_url = os.environ.get(OPENAI_BASE_URL_ENV, "").strip()
    if provider == "openai" and base_url:
        kwargs["base_url"] = base_url
    try:
        chat_model: BaseChatModel = init_chat_model(model, **kwargs)
    except ImportError as exc:
        raise InvalidArgument(
            _missing_package_message(model, provider, exc), details={"model": model}
        ) from exc
    except (ValueError, TypeError) as exc:
        # Unknown provider, a provider rejecting its settings, or a missing API key.
        classified = classify_model_error(exc)
        if isinstance(classified, ModelAuthError):
            raise classified from exc
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgument(
            f"Cannot use model {model!r}: {reason} "
            "(expected 'scripted' or 'provider:model', e.g. 'anthropic:claude-sonnet-4-5')",
            details={"model": model},
        ) from exc
    return chat_model


def _scripted(
    model_settings: dict[str, Any], *, handle: str, trigger_text: str, trigger_count: int
) -> ScriptedChatModel:
    script = model_settings.get("script")
    script = [] if script is None else script
    problems = validate_script(script)
    if problems:
        raise InvalidArgument(
            "The scripted model's script is invalid: " + "; ".join(problems),
            details={"problems": problems},
        )
    delay_ms = model_settings.get("delay_ms", 0) or 0
    problem = delay_problem(delay_ms)
    if problem is not None:
        raise InvalidArgument(f"model_settings.{problem}", details={"problems": [problem]})
    return ScriptedChatModel(
        handle=handle.lstrip("@"),
        script=script,
        trigger_text=trigger_text,
        trigger_count=trigger_count,
        delay_ms=delay_ms,
    )


def _missing_package_message(model: str, provider: str | None, exc: ImportError) -> str:
    """Name the extra to install; ``provider`` is None when ``init_chat_model`` inferred it."""
    if provider is None:
        text = str(exc)
        provider = next((p for p in _EXTRAS if f"langchain-{p.replace('_', '-')}" in text), None)
    extra = _EXTRAS.get(provider or "")
    if extra is not None:
        return (
            f"Model {model!r} needs the {provider} provider package, which is not installed. "
            f"Install it with: pip install 'openbot[{extra}]'"
        )
    return f"Model {model!r} needs a provider package that is not installed: {exc}"
