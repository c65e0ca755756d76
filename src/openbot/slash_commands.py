"""The slash commands of ``openbot chat`` (``/answer``, ``/approve``, ``/threads``…).

Each acts on the chat's current thread through ``openbot.client``; what it did is printed before
its request returns, since the answer's effects may already arrive over the event stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from openbot.client import OPEN_STATUSES, ApiError, Run
from openbot.tables import print_thread_table
from openbot.thread_refs import ThreadRefError, resolve_thread

if TYPE_CHECKING:
    from openbot.chat import Chat, ChatState

HELP = """\
Type a message and press Enter to send it (mention bots with @handle).
  /answer TEXT     answer the open question
  /approve         approve every pending action
  /reject REASON   reject every pending action (or the question) with a reason
  /cancel          cancel the open runs in this thread
  /threads         list threads            /switch ID|N   switch thread (id, number or title)
  /new TITLE       start a new thread      /help          this help
  /quit            leave (Ctrl-D works too)"""

QUIT = {"quit", "exit", "q"}


class Commands:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.api = chat.api
        self.say = chat.screen.line
        self.table: dict[str, Callable[[str], None]] = {
            "help": lambda _: self.say(escape(HELP)),
            "threads": self.threads,
            "switch": self.switch,
            "new": self.new,
            "answer": self.answer,
            "approve": lambda arg: self.decide("approve", arg),
            "reject": lambda arg: self.decide("reject", arg),
            "cancel": self.cancel,
        }

    @property
    def state(self) -> ChatState:
        assert self.chat.state is not None
        return self.chat.state

    def run(self, line: str) -> bool:
        """Run one slash command; False means quit."""
        name, _, arg = line[1:].partition(" ")
        if name in QUIT:
            return False
        command = self.table.get(name)
        if command is None:
            self.say(f"[red]Unknown command /{escape(name)}.[/] Type /help.")
        else:
            command(arg.strip())
        return True

    def waiting(self) -> Run | None:
        waiting = self.api.runs(thread_id=self.state.thread_id, status="waiting_human")
        return waiting[0] if waiting else None

    def threads(self, _: str) -> None:
        threads = print_thread_table(self.api, self.chat.console)
        self.state.listing = [t["id"] for t in threads]

    def switch(self, arg: str) -> None:
        try:
            found = resolve_thread(self.api, arg, self.state.listing)
        except ThreadRefError as error:
            self.say(f"[red]{escape(str(error))}.[/] Try /threads.")
        else:
            self.chat.enter(found["id"], found.get("title") or "")

    def new(self, arg: str) -> None:
        created = self.api.create_thread(title=arg or "Chat", participants=[self.chat.me])
        self.chat.enter(created["id"], created.get("title") or arg)

    def answer(self, arg: str) -> None:
        run = self.waiting()
        if not arg:
            self.say("[red]Usage: /answer TEXT[/]")
        elif run is None or (run.get("interrupt") or {}).get("kind") != "question":
            self.say("[red]No open question in this thread.[/]")
        else:
            self.say(f"[green]answered @{run['bot']}[/]")  # before: the reply may race it
            self.api.answer(run["id"], arg)

    def decide(self, verb: str, arg: str) -> None:
        """``/approve`` or ``/reject REASON`` every pending action (a rejected question: "No.")."""
        run = self.waiting()
        interrupt = (run or {}).get("interrupt") or {}
        if run is None:
            self.say("[red]Nothing is waiting for a decision in this thread.[/]")
        elif interrupt.get("kind") == "question":
            if verb == "reject":
                self.say(f"[green]answered @{run['bot']}[/]")
                self.api.answer(run["id"], f"No. {arg}".strip())
            else:
                self.say("[red]That is a question: use /answer TEXT.[/]")
        else:
            decision: dict[str, Any] = {"type": verb}
            if verb == "reject" and arg:
                decision["message"] = arg
            actions = interrupt.get("actions") or []
            done = "approved" if verb == "approve" else "rejected"
            self.say(f"[green]{done} {len(actions)} action(s) of @{run['bot']}[/]")
            self.api.decide(run["id"], [dict(decision) for _ in actions])

    def cancel(self, _: str) -> None:
        runs = self.api.runs(thread_id=self.state.thread_id)
        open_runs = [r for r in runs if r.get("status") in OPEN_STATUSES]
        if not open_runs:
            self.say("[dim]No open run in this thread.[/]")
        for run in open_runs:
            try:
                # Said before the request: the run's "cancelled" notice may arrive over the
                # event stream before the request returns.
                self.say(f"[yellow]cancelling @{run['bot']}'s run[/]")
                self.api.cancel(run["id"])
            except ApiError as error:
                self.say(f"[red]{escape(error.message)}[/]")
