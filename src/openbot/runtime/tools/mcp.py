"""MCP servers as a tool source: each supervised in the background, its tools ``<server>__<tool>``.

Every server of ``OPENBOT_MCP_CONFIG`` gets a task (started by :meth:`McpServers.running`, which
returns at once: the server is usable before any MCP server is up) that opens a session through
langchain-mcp-adapters' ``create_session``, lists its tools with ``load_mcp_tools`` and holds the
session until it breaks: a call failing on the transport, or a keep-alive ping failing. Then the
session is closed and opened again after a backoff (0.5 s doubling to 30 s, reset once up).

The registry's tools for a server are stable proxies (they outlive restarts, so compiled agents
need no rebuild when a server restarts with the same tools). A call on a server that is not up,
that dies under it (at once: the supervisor ends the calls waiting on a session it saw end) or
that takes longer than ``OPENBOT_MCP_CALL_TIMEOUT_SECONDS`` is a ``ToolException``: the model
reads a clear error, the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

import anyio
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from openbot.runtime.tools.mcp_config import ServerConfig
from openbot.runtime.tools.registry import ToolEntry, ToolRegistry

if TYPE_CHECKING:
    from mcp import ClientSession

log = logging.getLogger(__name__)

BACKOFF = (0.5, 30.0)  # first delay, cap (seconds); doubles after each failed start
START_TIMEOUT = 30.0
KEEPALIVE_SECONDS = 15.0


class McpServer:
    """One configured server: its state for ``GET /mcp``, its tools, its supervising loop."""

    def __init__(self, config: ServerConfig, registry: ToolRegistry, call_timeout: float) -> None:
        self.name = config.name
        self.transport = config.transport
        self.config = config
        self.registry = registry
        self.call_timeout = call_timeout
        self.status = "failed" if config.error else "stopped"  # starting | running | failed | stopped
        self.error: str | None = config.error
        self.restarts = 0
        self.proxies: dict[str, BaseTool] = {}  # registry name -> stable proxy
        self._live: dict[str, BaseTool] = {}  # MCP tool name -> the adapter's tool on this session
        self._session: ClientSession | None = None
        self._broken = False
        self._calls: set[asyncio.Task[Any]] = set()  # tasks inside a call on the live session
        self._cut: set[asyncio.Task[Any]] = set()  # of those, the ones the session's end cut off
        self._wake = asyncio.Event()  # set: check the session now
        self.tried = asyncio.Event()  # set once the first start is over (up or failed)
        if config.error:
            self.tried.set()

    def view(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "status": self.status,
            "error": self.error,
            "tools": len(self.proxies),
            "tool_names": sorted(self.proxies),
            "restarts": self.restarts,
        }

    def entries(self) -> Iterable[ToolEntry]:
        status = "available" if self.status == "running" else self.status
        for tool in self.proxies.values():
            yield ToolEntry(tool, "mcp", server=self.name, groups=(f"mcp:{self.name}",), status=status)

    async def supervise(self) -> None:
        """Start the server, hold it while it works, restart it with backoff when it breaks."""
        if self.config.connection is None:
            return  # a configuration error: listed as failed, never started
        delay = BACKOFF[0]
        while True:
            self.status = "starting"
            try:
                await self._session_once()
                delay = BACKOFF[0]  # it was up: the next restart is quick
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio task groups raise BaseExceptionGroups
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # a stop that anyio wrapped in a group: never swallow it, never restart
                self.error = describe(exc)
                log.warning("MCP server %s failed: %s", self.name, self.error)
            self._session, self._live, self.status = None, {}, "failed"
            self._end_calls()
            self.tried.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF[1])
            self.restarts += 1

    async def _session_once(self) -> None:
        # The MCP client stack is imported by the first server that starts (~0.5 s of start-up
        # every other server would pay for nothing).
        from langchain_mcp_adapters.sessions import create_session
        from langchain_mcp_adapters.tools import load_mcp_tools

        assert self.config.connection is not None
        async with create_session(self.config.connection) as session:
            # asyncio.timeout, not wait_for: the latter runs the call in another task, which
            # anyio's cancel scopes inside the session do not expect (a stop could hang there).
            async with asyncio.timeout(START_TIMEOUT):
                await session.initialize()
                tools = await load_mcp_tools(session, server_name=self.name)
            self._up(session, tools)
            await self._hold(session)

    def _up(self, session: ClientSession, tools: list[BaseTool]) -> None:
        self._live = {t.name: t for t in tools}
        if {f"{self.name}__{t.name}" for t in tools} != set(self.proxies):
            self.proxies = {f"{self.name}__{t.name}": _proxy(self, t) for t in tools}
            self.registry.changed()  # the same tools after a restart keep their proxies: no rebuild
        self._session, self.status = session, "running"  # error stays: the last one, for GET /mcp
        self.tried.set()
        self._broken = False
        self._wake.clear()
        log.info("MCP server %s is up with %d tool(s)", self.name, len(tools))

    async def _hold(self, session: ClientSession) -> None:
        """Until a call reports the session broken or a ping fails: every KEEPALIVE_SECONDS, and
        at once after a call timed out (slow, or dead with the request lost: the ping tells)."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(KEEPALIVE_SECONDS):
                    await self._wake.wait()
            self._wake.clear()
            if self._broken:
                raise ConnectionError(self.error or "the session broke")
            try:
                async with asyncio.timeout(self.call_timeout):
                    await session.send_ping()
            except Exception as exc:
                raise ConnectionError(f"keep-alive ping failed: {describe(exc)}") from exc

    def _end_calls(self) -> None:
        """The session is gone: the MCP client leaves a request whose answer can no longer come
        waiting until its timeout; end every call still waiting now (``call`` says why)."""
        for task in self._calls - self._cut:
            self._cut.add(task)
            task.cancel()

    async def call(self, tool_name: str, args: dict[str, Any]) -> Any:
        """Call a tool on the live session; every failure is a ToolException the model reads."""
        tool = self._live.get(tool_name)
        if self.status != "running" or not isinstance(tool, StructuredTool) or tool.coroutine is None:
            why = f": {self.error}" if self.error else ""
            raise ToolException(f"MCP server '{self.name}' is {self.status}{why}; try again later")
        task = asyncio.current_task()
        assert task is not None
        base = task.cancelling()
        self._calls.add(task)
        try:
            async with asyncio.timeout(self.call_timeout):
                return await tool.coroutine(**args)
        except asyncio.CancelledError:
            # Not ours, or ours and a real one (the run's, the process's) in the same step: the
            # real cancellation goes on.
            if task not in self._cut or task.uncancel() > base:
                raise
            raise ToolException(
                f"MCP server '{self.name}' failed during {tool_name} ({self.error or 'its session ended'}); "
                "it is being restarted, try again later"
            ) from None
        except ToolException:
            raise  # the tool itself answered with an error (isError): the server is fine
        except TimeoutError:
            self._wake.set()  # ping it: a dead server is restarted, a slow one kept
            raise ToolException(
                f"MCP server '{self.name}' did not answer {tool_name} within {self.call_timeout:g} s"
            ) from None
        except Exception as exc:
            self.error = f"{tool_name}: {describe(exc)}"
            self.status = "failed"
            self._broken = True  # the supervisor closes this session and starts another
            self._wake.set()
            raise ToolException(
                f"MCP server '{self.name}' failed during {tool_name} ({describe(exc)}); "
                "it is being restarted, try again later"
            ) from exc
        finally:
            self._calls.discard(task)
            self._cut.discard(task)


def _proxy(server: McpServer, tool: BaseTool) -> BaseTool:
    mcp_name, name = tool.name, f"{server.name}__{tool.name}"

    async def call(**args: Any) -> Any:
        return await server.call(mcp_name, args)

    return StructuredTool(
        name=name,
        description=tool.description or f"{mcp_name} (MCP server {server.name})",
        args_schema=tool.args_schema,
        coroutine=call,
        response_format="content_and_artifact",
        handle_tool_error=True,
        metadata={"mcp_server": server.name, "mcp_tool": mcp_name},
    )


# What the MCP client answers the requests still waiting when its connection closes
# (``mcp.types.CONNECTION_CLOSED``; the client stack is imported only when a server starts).
CONNECTION_CLOSED = -32000
CLOSED = "connection closed (the server process exited?)"


def describe(exc: BaseException) -> str:
    """A one-line reason, unwrapping exception groups to their first leaf.

    A closed connection reads the same however it showed: a request sent after it closed fails on
    the closed stream, one sent before is answered "Connection closed" by the client (which of the
    two a keep-alive ping meets is a race with the client's reading of the end of the stream)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        return CLOSED
    if (
        type(exc).__name__ == "McpError"
        and getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED
    ):
        return CLOSED
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


class McpServers:
    """Every configured server: the registry's ``mcp`` source and their supervision."""

    def __init__(self, configs: list[ServerConfig], registry: ToolRegistry, call_timeout: float) -> None:
        self.servers = {c.name: McpServer(c, registry, call_timeout) for c in configs}
        self.ready_timeout = 10.0  # how long a run waits for a server still in its first start
        self._tasks: list[asyncio.Task[None]] = []

    def entries(self) -> Iterable[ToolEntry]:
        for server in self.servers.values():
            yield from server.entries()

    def views(self) -> list[dict[str, Any]]:
        return [s.view() for s in self.servers.values()]

    async def ready(self, names: list[str]) -> None:
        """Wait until the servers these names use (``mcp:<server>``, ``<server>__<tool>``) have
        had their first start (up, or failed), at most ``ready_timeout``; at once when they have."""
        wanted = {n[4:] for n in names if n.startswith("mcp:")} | {n.split("__", 1)[0] for n in names}
        waiting = [s for name, s in self.servers.items() if name in wanted and not s.tried.is_set()]
        if waiting:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.ready_timeout):
                    await asyncio.gather(*(s.tried.wait() for s in waiting))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[McpServers]:
        """Supervise every server in the background; stop them (their processes too) on exit."""
        for server in self.servers.values():
            if server.config.connection is not None:
                server.status = "starting"
        self._tasks = [
            asyncio.create_task(s.supervise(), name=f"openbot-mcp-{s.name}") for s in self.servers.values()
        ]
        try:
            yield self
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for server in self.servers.values():
                if server.status != "failed" or server.config.connection is not None:
                    server.status, server._session = "stopped", None
