"""The terminal client: ``openbot chat``.

``run_chat`` is a REPL over one thread. The keyboard is read on the main thread (``input`` with
readline editing); a second thread tails ``/api/v1/events`` and prints what happens: messages,
the bot's reply streaming in token by token, run state, tool calls, notices, and questions or
approvals waiting for an answer. Reconnects replay from the last event id, so a server restart
loses nothing. Everything goes through ``openbot.client`` (the HTTP contract only); the output
is in ``openbot.screen``, the slash commands in ``openbot.slash_commands``, the tables in
``openbot.tables``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape

from openbot.client import OPEN_STATUSES, ApiError, Client, Event, Message, Run, unknown_mentions
from openbot.screen import Screen
from openbot.slash_commands import Commands
from openbot.tables import clock
from openbot.thread_refs import resolve_thread

# What a run's status change prints (waiting_human and failed say more: see Chat.show_run).
RUN_LINES = {
    "cancelled": "[dim]■ @{bot}'s run was cancelled[/]",
    "running": "[dim]… @{bot} is working[/]",
    "queued": "[dim]… @{bot} queued[/]",
    "completed": "[dim]✓ @{bot} done[/]",
}


@dataclass
class ChatState:
    thread_id: str
    title: str
    runs: dict[str, Run] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    last_message_id: str | None = None
    streaming: str | None = None  # run id whose tokens are being printed
    streamed: str = ""  # what has been printed of that run's reply so far
    replied: set[str] = field(default_factory=set)  # runs whose reply is shown (late deltas dropped)
    last_event_id: int | None = None
    listing: list[str] = field(default_factory=list)  # thread ids from the last /threads


class Chat:
    def __init__(self, server: str, token: str | None, console: Console | None = None) -> None:
        self.server = server
        self.token = token
        self.api = Client(server, token)
        self.console = console or Console(highlight=False)
        self.screen = Screen(self.console)
        self.commands = Commands(self)
        self.state: ChatState | None = None
        self.stop = threading.Event()
        self.connected = threading.Event()
        self.me = "you"

    # -- startup ------------------------------------------------------------------------------

    def open_thread(self, thread: str | None, new: str | None) -> None:
        if new:
            created = self.api.create_thread(title=new, participants=[self.me])
            self.enter(created["id"], created.get("title") or new)
            self.screen.line(
                f"[green]Created thread[/] [bold]{escape(created.get('title') or new)}[/] ({created['id']})"
            )
            return
        if thread:
            found = resolve_thread(self.api, thread)
            self.enter(found["id"], found.get("title") or "")
            return
        threads = self.api.threads()
        if threads:
            latest = max(threads, key=lambda t: t.get("last_message_at") or t.get("created_at") or "")
            self.enter(latest["id"], latest.get("title") or "")
        else:
            created = self.api.create_thread(title="Chat", participants=[self.me])
            self.enter(created["id"], created.get("title") or "Chat")

    def enter(self, thread_id: str, title: str) -> None:
        keep = self.state.last_event_id if self.state else None
        listing = self.state.listing if self.state else []
        self.state = ChatState(thread_id=thread_id, title=title, last_event_id=keep, listing=listing)
        state = self.state
        self.screen.line(f"[bold reverse] {escape(title or 'Untitled thread')} [/] [dim]{thread_id}[/]")
        history = self.api.messages(thread_id)
        if len(history) > 30:
            self.screen.line(f"[dim]… {len(history) - 30} earlier messages[/]")
        for message in history[-30:]:
            self.show_message(message)
        for message in history[:-30]:
            state.seen.add(message["id"])
        if history:
            state.last_message_id = history[-1]["id"]
        for run in self.api.runs(thread_id=thread_id):
            state.runs[run["id"]] = run
            if run.get("status") in OPEN_STATUSES:
                self.show_run(run)

    # -- rendering ----------------------------------------------------------------------------

    def show_message(self, message: Message) -> None:
        state = self.state
        if state is None or message["id"] in state.seen:
            return
        state.seen.add(message["id"])
        state.last_message_id = message["id"]
        sender = message.get("sender")
        content = escape(message.get("content") or "")
        when = clock(message.get("created_at"))
        if sender is None:
            kind = (message.get("metadata") or {}).get("kind", "notice")
            self.screen.line(f"[yellow]⚠ {escape(str(kind).replace('_', ' '))}[/] [dim]{when}[/] {content}")
            return
        if message.get("run_id"):
            state.replied.add(message["run_id"])
        if state.streaming and message.get("run_id") == state.streaming:
            # Its tokens are (partly) on screen: print what has not streamed yet, close the line.
            full = message.get("content") or ""
            done = state.streamed
            state.streaming, state.streamed = None, ""
            if full.startswith(done):
                self.screen.stream(None, full[len(done) :])
                self.screen.end_stream()
                return
            self.screen.end_stream()
            if full.strip() and full.strip() in done:
                return  # streamed already (after text it said first, or with whitespace trimmed)
        hop = f" [dim]hop {message['hop']}[/]" if message.get("hop") else ""
        style = "cyan" if sender.get("kind") == "bot" else "green"
        self.screen.line(f"[dim]{when}[/] [bold {style}]@{sender['handle']}[/]{hop}: {content}")

    def show_run(self, run: Run) -> None:
        bot = run.get("bot", "?")
        status = run.get("status")
        if status == "waiting_human":
            self.show_interrupt(bot, run.get("interrupt") or {})
        elif status == "failed":
            error = run.get("error")
            detail = error.get("message") if isinstance(error, dict) else error
            self.screen.line(f"[red]✗ @{bot}'s run failed[/] {escape(str(detail or ''))}")
        elif status in RUN_LINES:
            self.screen.line(RUN_LINES[status].format(bot=bot))

    def show_interrupt(self, bot: str, interrupt: dict[str, Any]) -> None:
        if interrupt.get("kind") == "approval":
            self.screen.line(f"[bold yellow]? @{bot} asks for approval:[/]")
            for action in interrupt.get("actions") or []:
                args = escape(json.dumps(action.get("args"), ensure_ascii=False))
                self.screen.line(f"    [bold]{escape(str(action.get('name')))}[/] {args}")
            self.screen.line("  [dim]/approve  or  /reject REASON[/]")
        else:
            question = escape(str(interrupt.get("question", "")))
            self.screen.line(f"[bold yellow]? @{bot} asks:[/] {question}  [dim](/answer TEXT)[/]")

    # -- the event stream ---------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        state = self.state
        if state is None:
            return
        if event.id is not None:
            state.last_event_id = event.id
        data = event.data if isinstance(event.data, dict) else {}
        if event.event == "reset":
            self.catch_up()
            return
        thread_id = data.get("thread_id") or (data.get("message") or {}).get("thread_id")
        if event.event == "thread.updated" or thread_id != state.thread_id:
            return
        if event.event == "message.created":
            self.show_message(data)  # type: ignore[arg-type]
        elif event.event == "text.delta":
            self.on_delta(state, data)
        elif event.event == "run.updated":
            self.on_run_updated(state, data)
        elif event.event == "run.event" and data.get("type") == "tool_call":
            payload = data.get("payload") or {}
            args = json.dumps(payload.get("args", {}), ensure_ascii=False)
            if len(args) > 120:
                args = args[:117] + "..."
            name = payload.get("name", "tool")
            self.screen.line(f"[dim]  ↳ calls {escape(str(name))} {escape(args)}[/]")

    def on_delta(self, state: ChatState, data: dict[str, Any]) -> None:
        run_id = data.get("run_id")
        if run_id in state.replied:
            return
        header = None
        if state.streaming != run_id:
            state.streaming, state.streamed = run_id, ""
            now = clock(datetime.now().astimezone().isoformat())
            header = f"[dim]{now}[/] [bold cyan]@{data.get('bot', '?')}[/]: "
        delta = str(data.get("delta", ""))
        state.streamed += delta
        self.screen.stream(header, delta)

    def on_run_updated(self, state: ChatState, data: dict[str, Any]) -> None:
        previous = state.runs.get(data["id"])
        state.runs[data["id"]] = data  # type: ignore[assignment]
        changed = previous is None or previous.get("status") != data.get("status")
        if changed and data.get("status") != "completed":
            if state.streaming == data["id"] and data.get("status") != "running":
                state.streaming = None
            self.show_run(data)  # type: ignore[arg-type]

    def catch_up(self) -> None:
        state = self.state
        if state is None:
            return
        for message in self.api.messages(state.thread_id, after=state.last_message_id):
            self.show_message(message)
        for run in self.api.runs(thread_id=state.thread_id):
            previous = state.runs.get(run["id"])
            state.runs[run["id"]] = run
            if previous is not None and previous.get("status") != run.get("status"):
                self.show_run(run)

    def tail(self) -> None:
        client = Client(self.server, self.token)
        delay = 0.5
        lost = False
        while not self.stop.is_set():
            try:
                since = self.state.last_event_id if self.state else None
                with client.subscribe(since=since) as stream:
                    self.connected.set()  # subscribed: nothing that happens from now on is missed
                    delay = 0.5
                    if lost:
                        lost = False
                        self.screen.line("[green]reconnected[/]")
                        self.catch_up()
                    for event in stream:
                        if self.stop.is_set():
                            return
                        self.handle(event)
            except (httpx.TransportError, ApiError) as error:
                if self.stop.is_set():
                    return
                if isinstance(error, ApiError) and error.status == 401:  # revoked: retrying cannot help
                    self.screen.line(
                        "[red]the server refuses this token now (revoked?): live updates stopped; "
                        "start openbot chat again with a valid --token[/]"
                    )
                    return
                if not lost:
                    lost = True
                    self.screen.line(f"[red]connection lost ({type(error).__name__}); reconnecting…[/]")
            self.stop.wait(delay)  # back-off between reconnect attempts
            delay = min(delay * 2, 5.0)

    # -- the keyboard -------------------------------------------------------------------------

    def send(self, text: str) -> None:
        state = self.state
        assert state is not None
        result = self.api.post_message(state.thread_id, text, sender=self.me)
        message = result.get("message")
        if message:
            self.show_message(message)
        held = result.get("held") or []
        if held:
            self.screen.line(f"[yellow]hand-off held for {', '.join('@' + h for h in held)}[/]")
        for warning in unknown_mentions(result):
            self.screen.line(f"[yellow]{escape(warning)}[/]")

    def loop(self) -> None:
        while True:
            try:
                line = self.screen.prompt().strip()
            except EOFError:
                self.console.print()
                return
            if not line:
                continue
            try:
                if line.startswith("/") and not line.startswith("//"):
                    if not self.commands.run(line):
                        return
                else:
                    self.send(line[1:] if line.startswith("//") else line)
            except ApiError as error:
                self.screen.line(f"[red]{error.code}: {escape(error.message)}[/]")
            except httpx.TransportError as error:
                self.screen.line(f"[red]server unreachable ({type(error).__name__}); try again[/]")


def run_chat(server: str, token: str | None, thread: str | None, new: str | None) -> None:
    """``openbot chat``: a live REPL on one thread. Failures to connect, or to find the thread,
    propagate (``ApiError``, ``httpx.TransportError``, ``ThreadRefError``): the command reports them."""
    console = Console(highlight=False)
    chat = Chat(server, token, console)
    info = chat.api.info()
    if info.get("name") != "openbot":
        raise ApiError(200, "not_openbot", "GET /api/v1 does not name OpenBot: is this an OpenBot server?")
    console.print(
        f"[dim]Connected to {escape(server)} (openbot {info.get('version', '?')}, protocol "
        f"{info.get('protocol_version', '?')}). /help for commands.[/]"
    )
    tail = threading.Thread(target=chat.tail, name="openbot-events", daemon=True)
    tail.start()
    chat.connected.wait(5.0)  # subscribe before reading history, so nothing falls in between
    try:
        chat.open_thread(thread, new)
        chat.loop()
    except KeyboardInterrupt:
        console.print()
    finally:
        chat.stop.set()
