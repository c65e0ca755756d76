"""The terminal of ``openbot chat``: lines and a streamed reply from two threads, around the prompt.

The keyboard thread sits in ``input(PROMPT)`` while the event thread prints; ``Screen`` clears the
prompt line, prints, and redraws the prompt with what has been typed so far (``readline``'s
buffer), so output never lands in the middle of a half-typed message.

readline edits that buffer on the main thread without holding the GIL, so the event thread must
not read it (glibc aborts when the line grows while it is being decoded). Instead it signals the
main thread (``SIGUSR1``): the signal ends readline's wait for the next key, Python runs the
handler right there, between two keystrokes, and the handler redraws the prompt.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from rich.console import Console

try:  # line editing and history for input(), and the typed text to redraw, when available
    import readline
except ImportError:  # pragma: no cover - not on every platform
    readline = None  # type: ignore[assignment]

PROMPT = "› "


def _gnu_readline() -> bool:
    """GNU readline calls the pre-input hook once the prompt is drawn; libedit (macOS, some
    builds) never does, and the lock it releases would be held until Enter."""
    if readline is None:
        return False
    backend = getattr(readline, "backend", "readline")  # Python 3.13+ says; before, the doc does
    return backend == "readline" and "libedit" not in (readline.__doc__ or "")


class Screen:
    """Serialises output from both threads and keeps the prompt line intact."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.lock = threading.RLock()
        self.at_prompt = False
        self.in_stream = False
        self.keyboard: threading.Thread | None = None  # the thread in input(), once it can be signalled
        self.redraw_pending = False
        self._holding = False  # the keyboard thread holds the lock while readline draws the prompt

    def _clear_prompt(self) -> None:
        if self.at_prompt and not self.in_stream:
            self.console.file.write("\r\x1b[K")

    def _redraw_prompt(self) -> None:
        if not self.at_prompt or self.in_stream:
            return
        keyboard = self.keyboard
        if keyboard is None or keyboard is threading.current_thread():
            self._draw_prompt()
        else:
            self.redraw_pending = True
            signal.pthread_kill(keyboard.ident or 0, signal.SIGUSR1)

    def _draw_prompt(self) -> None:
        buffer = readline.get_line_buffer() if readline else ""
        self.console.file.write(PROMPT + buffer)
        self.console.file.flush()

    def _on_redraw_signal(self, signum: int, frame: FrameType | None) -> None:
        with self.lock:
            if self.redraw_pending and self.at_prompt and not self.in_stream:
                self._draw_prompt()
            self.redraw_pending = False

    def _listen_for_redraws(self) -> None:
        """Take redraw requests on this thread (the main one, where signal handlers run)."""
        if self.keyboard is not None or readline is None or not hasattr(signal, "pthread_kill"):
            return
        if threading.current_thread() is not threading.main_thread():
            return
        signal.signal(signal.SIGUSR1, self._on_redraw_signal)
        self.keyboard = threading.current_thread()

    def line(self, markup: str) -> None:
        with self.lock:
            self.end_stream()
            self._clear_prompt()
            self.console.print(markup, highlight=False, soft_wrap=True)
            self._redraw_prompt()

    def stream(self, header: str | None, text: str) -> None:
        with self.lock:
            if header is not None:
                self.end_stream()
                self._clear_prompt()
                self.console.print(header, end="", highlight=False)
                self.in_stream = True
            self.console.file.write(text)
            self.console.file.flush()

    def end_stream(self) -> None:
        with self.lock:
            if self.in_stream:
                self.console.file.write("\n")
                self.in_stream = False
                self._redraw_prompt()

    def prompt(self) -> str:
        """Read one line at the prompt (``EOFError`` on Ctrl-D).

        readline draws the prompt itself, from C and without the lock, so the event thread must not
        print while it does: the lock is held from here until readline's pre-input hook says the
        prompt is on screen (else a reply's line and the prompt interleave, down to the bytes of a
        character). Without readline, or off a terminal, ``input`` does not use it: no hook."""
        self._listen_for_redraws()
        hooked = _gnu_readline() and sys.stdin.isatty() and sys.stdout.isatty()
        self.lock.acquire()
        self.at_prompt = True
        self._holding = True
        if hooked:
            readline.set_pre_input_hook(self._prompt_drawn)
        else:
            self._prompt_drawn()
        try:
            return input(PROMPT)
        finally:
            if hooked:
                readline.set_pre_input_hook()
            self._prompt_drawn()  # when input() ended before readline drew the prompt
            with self.lock:
                self.at_prompt = False

    def _prompt_drawn(self) -> None:
        if self._holding:
            self._holding = False
            self.lock.release()
