"""Settings from the environment (and an optional ``openbot.toml`` in the data directory)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# Host names a browser can only reach on this machine: no DNS answer can rebind them.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def _env(name: str) -> AliasChoices:
    return AliasChoices(f"OPENBOT_{name}", name)


MODEL_FORM = "expected 'scripted' or 'provider:model'"


def is_model_name(value: str) -> bool:
    """Whether ``value`` names a model as bots and ``OPENBOT_MODEL`` do: ``scripted`` or
    ``provider:model`` (both parts given, no spaces)."""
    provider, _, name = value.partition(":")
    return value == "scripted" or (bool(provider) and bool(name) and not any(c.isspace() for c in value))


class Settings(BaseSettings):
    """Every setting, its environment variable(s) and default. The README's table mirrors this."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    data_dir: Path = Field(Path(".openbot"), validation_alias=_env("DATA_DIR"))
    database_url: str | None = Field(None, validation_alias=AliasChoices("OPENBOT_DATABASE_URL"))
    model: str | None = Field(None, validation_alias=AliasChoices("OPENBOT_MODEL"))
    api_token: str | None = Field(None, validation_alias=AliasChoices("OPENBOT_API_TOKEN"))
    openai_base_url: str | None = Field(None, validation_alias=AliasChoices("OPENBOT_OPENAI_BASE_URL"))
    max_bot_hops: int = Field(20, ge=1, validation_alias=_env("MAX_BOT_HOPS"))
    max_concurrent_runs: int = Field(4, ge=1, validation_alias=_env("MAX_CONCURRENT_RUNS"))
    history_token_budget: int = Field(24_000, ge=100, validation_alias=_env("HISTORY_TOKEN_BUDGET"))
    history_max_messages: int = Field(80, ge=1, validation_alias=_env("HISTORY_MAX_MESSAGES"))
    max_model_calls: int = Field(40, ge=1, validation_alias=_env("MAX_MODEL_CALLS_PER_RUN"))
    context_trigger_tokens: int = Field(60_000, ge=1000, validation_alias=_env("CONTEXT_TRIGGER_TOKENS"))
    max_item_attempts: int = Field(3, ge=1, validation_alias=_env("MAX_ITEM_ATTEMPTS"))
    lease_seconds: float = Field(30.0, gt=0, validation_alias=_env("LEASE_SECONDS"))
    poll_seconds: float = Field(2.0, gt=0, validation_alias=_env("POLL_SECONDS"))
    heartbeat_seconds: float = Field(15.0, gt=0, validation_alias=_env("SSE_HEARTBEAT_SECONDS"))
    journal_retention_days: float = Field(7.0, gt=0, validation_alias=_env("JOURNAL_RETENTION_DAYS"))
    drain_seconds: float = Field(10.0, ge=0, validation_alias=_env("DRAIN_SECONDS"))
    # Memory upkeep (runtime.memory.upkeep): seconds of quiet after a bot's last completed run in
    # a thread before it reflects on them (a burst reflects once), and how often decay and
    # consolidation run on their own (also on demand: POST /bots/{handle}/memories/maintain|consolidate).
    memory_reflection_delay: float = Field(30.0, ge=0, validation_alias=_env("MEMORY_REFLECTION_DELAY"))
    memory_maintenance_interval: float = Field(
        3600.0, gt=0, validation_alias=_env("MEMORY_MAINTENANCE_INTERVAL")
    )
    memory_consolidation_interval: float = Field(
        86_400.0, gt=0, validation_alias=_env("MEMORY_CONSOLIDATION_INTERVAL")
    )
    # Memory relevance by embeddings ("provider:model", or "hashing:<dims>" offline); unset, memories
    # are ranked by the lexical index. A spec that cannot be used stops the start.
    embeddings: str | None = Field(None, validation_alias=_env("EMBEDDINGS"))
    # Automations: the scheduler wakes at the next due time, and at least this often.
    scheduler_poll_seconds: float = Field(1.0, gt=0, validation_alias=_env("SCHEDULER_POLL_SECONDS"))
    # A run still running this long after it started is reaped (failed with a notice): the
    # heartbeat for stuck runs whose lease keeps being renewed (runtime.scheduler.reaper). A bot's
    # model_settings.run_timeout_seconds overrides it. RUN_TIME_LIMIT_SECONDS is the older name.
    run_time_limit_seconds: float = Field(
        600.0,
        gt=0,
        validation_alias=AliasChoices(
            "OPENBOT_RUN_TIMEOUT_SECONDS",
            "RUN_TIMEOUT_SECONDS",
            "OPENBOT_RUN_TIME_LIMIT_SECONDS",
            "RUN_TIME_LIMIT_SECONDS",
        ),
    )
    # The turn governor (runtime.governor): a channel trigger queued longer than this (or than the
    # bot's run time limit, if longer) is demoted to context; one tool call's time and output bounds.
    stale_trigger_seconds: float = Field(300.0, gt=0, validation_alias=_env("STALE_TRIGGER_SECONDS"))
    tool_timeout_seconds: float = Field(120.0, gt=0, validation_alias=_env("TOOL_TIMEOUT_SECONDS"))
    tool_output_max_chars: int = Field(16_000, ge=200, validation_alias=_env("TOOL_OUTPUT_MAX_CHARS"))
    # This process's name as a run lease owner (DESIGN §6): stable across restarts, so a restarted
    # process takes its own runs back at once. Unset: derived from the host name and the data dir
    # (runtime.scheduler.node); one live process per name.
    node_id: str | None = Field(
        None,
        min_length=1,
        max_length=64,  # runs.lease_owner
        pattern=r"^[A-Za-z0-9._-]+$",
        validation_alias=AliasChoices("OPENBOT_NODE_ID"),
    )
    # False in an API process whose runs are executed by separate `openbot worker` processes.
    run_workers: bool = Field(True, validation_alias=_env("RUN_WORKERS"))
    max_body_bytes: int = Field(1_048_576, validation_alias=_env("MAX_BODY_BYTES"))
    # Workspaces (DESIGN §9): every thread's working directory is inside this root (default
    # <data-dir>/workspaces); run_shell's bounds, and whom a root OpenBot runs commands as.
    workspaces_root: Path | None = Field(None, validation_alias=AliasChoices("OPENBOT_WORKSPACES_ROOT"))
    shell_timeout_seconds: float = Field(30.0, gt=0, validation_alias=_env("SHELL_TIMEOUT_SECONDS"))
    shell_memory_mb: int = Field(512, ge=16, validation_alias=_env("SHELL_MEMORY_MB"))
    shell_user: str = Field("nobody", validation_alias=_env("SHELL_USER"))
    # Tool sources (runtime.tools): a directory of Python modules of LangChain tools, an
    # .mcp.json-style file of MCP servers, and how long one MCP tool call may take.
    tools_dir: Path | None = Field(None, validation_alias=AliasChoices("OPENBOT_TOOLS_DIR"))
    mcp_config: Path | None = Field(None, validation_alias=AliasChoices("OPENBOT_MCP_CONFIG"))
    mcp_call_timeout_seconds: float = Field(60.0, gt=0, validation_alias=_env("MCP_CALL_TIMEOUT_SECONDS"))
    # Skills (<name>/SKILL.md) and Claude Code-layout plugins, read at start (runtime.tools.extensions).
    skills_dir: Path | None = Field(None, validation_alias=AliasChoices("OPENBOT_SKILLS_DIR"))
    plugins_dir: Path | None = Field(None, validation_alias=AliasChoices("OPENBOT_PLUGINS_DIR"))
    # The channel gate (DESIGN §7): a conversation of up to this many actors is a small group; tier
    # 2's model calls per channel thread per minute (over it: observe) and how long one may take.
    small_group_size: int = Field(4, ge=2, validation_alias=_env("SMALL_GROUP_SIZE"))
    gate_calls_per_minute: int = Field(10, ge=0, validation_alias=_env("GATE_CALLS_PER_MINUTE"))
    gate_timeout_seconds: float = Field(10.0, gt=0, validation_alias=_env("GATE_TIMEOUT_SECONDS"))
    # Comma-separated in the environment. Host names (any port) a request may be addressed to; the
    # address a connection arrived on is always allowed, "*" allows any (api.exposure).
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(LOOPBACK_HOSTS), validation_alias=AliasChoices("OPENBOT_ALLOWED_HOSTS")
    )
    # Origins (scheme://host[:port]) of other sites that may change state; same-origin always may.
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=AliasChoices("OPENBOT_CORS_ORIGINS")
    )

    # Webhooks to external actors (runtime.webhooks): seconds to wait before each retry after a
    # failed attempt (comma-separated; the attempt after the last one's failure marks it failed),
    # and whether webhook URLs may resolve to loopback and private addresses.
    webhook_retries: Annotated[list[float], NoDecode] = Field(
        default_factory=lambda: [5.0, 30.0, 120.0], validation_alias=_env("WEBHOOK_RETRIES")
    )
    webhook_allow_private: bool = Field(False, validation_alias=_env("WEBHOOK_ALLOW_PRIVATE"))
    webhook_timeout_seconds: float = Field(10.0, gt=0, validation_alias=_env("WEBHOOK_TIMEOUT_SECONDS"))

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        # Said at start: a bad name would otherwise stop the server while it seeds the team.
        if value is not None and not is_model_name(value):
            raise ValueError(f"{MODEL_FORM}, e.g. anthropic:claude-sonnet-4-5")
        return value

    @field_validator("allowed_hosts", "cors_origins", "webhook_retries", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'openbot.db').resolve()}"

    def resolved_workspaces_root(self) -> Path:
        return (self.workspaces_root or self.data_dir / "workspaces").resolve()

    def default_model(self) -> str:
        return self.model or "scripted"
