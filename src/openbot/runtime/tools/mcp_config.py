"""Reading ``OPENBOT_MCP_CONFIG``: the ``.mcp.json`` shape into langchain-mcp-adapters connections.

``{"mcpServers": {name: {"command", "args"?, "env"?, "cwd"?} | {"url", "headers"?, "transport"?}}}``
with ``${VAR}`` (and ``${VAR:-default}``) expanded from the environment in every string. A server
with a ``command`` is stdio; one with a ``url`` is streamable HTTP (``"transport": "sse"`` also
works). A server whose entry is wrong is kept with its error (listed as failed), never started.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the MCP client stack costs ~0.5 s to import: only servers that use it load it
    from langchain_mcp_adapters.sessions import Connection

SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}\Z")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerConfig:
    name: str
    transport: str  # "stdio" | "streamable_http" | "sse"
    connection: Connection | None
    error: str | None = None


def expand(value: Any, environ: dict[str, str]) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` in every string of a JSON value (unset: the default or "")."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: environ.get(m.group(1), m.group(2) or ""), value)
    if isinstance(value, list):
        return [expand(v, environ) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, environ) for k, v in value.items()}
    return value


def load_config(path: Path, environ: dict[str, str] | None = None) -> list[ServerConfig]:
    """The servers of a config file; a file that cannot be read or parsed raises ValueError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read MCP config {path}: {exc}") from exc
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f'MCP config {path}: expected {{"mcpServers": {{name: {{...}}}}}}')
    env = dict(os.environ) if environ is None else environ
    return [parse_server(str(name), expand(entry, env)) for name, entry in servers.items()]


def parse_server(name: str, entry: Any) -> ServerConfig:
    if not SERVER_NAME.match(name) or "__" in name:
        return ServerConfig(name, "stdio", None, "a server name is letters, digits, - and _ (no __)")
    if not isinstance(entry, dict):
        return ServerConfig(name, "stdio", None, "a server is an object with a command or a url")
    if "command" in entry:
        return _stdio(name, entry)
    if "url" in entry:
        return _http(name, entry)
    return ServerConfig(name, "stdio", None, "a server needs a command (stdio) or a url (HTTP)")


def _stdio(name: str, entry: dict[str, Any]) -> ServerConfig:
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env")
    if not isinstance(command, str) or not command:
        return ServerConfig(name, "stdio", None, "command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return ServerConfig(name, "stdio", None, "args must be a list of strings")
    if env is not None and not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        return ServerConfig(name, "stdio", None, "env must be an object of strings")
    connection: dict[str, Any] = {"transport": "stdio", "command": command, "args": args, "env": env}
    if isinstance(entry.get("cwd"), str):
        connection["cwd"] = entry["cwd"]
    return ServerConfig(name, "stdio", connection)  # type: ignore[arg-type]


def _http(name: str, entry: dict[str, Any]) -> ServerConfig:
    url, headers = entry.get("url"), entry.get("headers")
    transport = {"http": "streamable_http", "streamable-http": "streamable_http"}.get(
        str(entry.get("transport") or entry.get("type") or "streamable_http"),
        str(entry.get("transport") or entry.get("type") or "streamable_http"),
    )
    if transport not in ("streamable_http", "sse"):
        return ServerConfig(name, "streamable_http", None, f"unknown transport {transport!r}")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return ServerConfig(name, transport, None, "url must be an http(s) URL")
    if headers is not None and not isinstance(headers, dict):
        return ServerConfig(name, transport, None, "headers must be an object")
    connection: dict[str, Any] = {"transport": transport, "url": url}
    if headers:
        connection["headers"] = {str(k): str(v) for k, v in headers.items()}
    return ServerConfig(name, transport, connection)  # type: ignore[arg-type]
