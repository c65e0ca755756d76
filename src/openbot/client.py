"""A small typed client for the OpenBot HTTP contract (``shared/API.md``).

The terminal client (``openbot chat`` and the table commands) talks to the server only through
this module. It is synchronous on purpose: the REPL reads the keyboard on the main thread and
tails the event stream on a second thread, each with its own ``Client``.

    client = Client("http://127.0.0.1:8000", token=None)
    thread = client.create_thread(title="Release")
    client.post_message(thread["id"], "@engineer ship it")
    for event in client.events(thread_id=thread["id"]):
        ...

Errors follow the server's taxonomy: every non-2xx answer raises ``ApiError`` carrying the
``code``, ``message``, HTTP ``status`` and the request it answered (``where``); an answer that is
not JSON (a server that is not OpenBot) is an ``ApiError`` with code ``not_openbot``; a dropped or
refused connection raises ``httpx.TransportError``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import httpx

from openbot.client_features import FeatureCalls, seg

JSON = dict[str, Any]

PROTOCOL_PREFIX = "/api/v1"


class Actor(TypedDict):
    handle: str
    kind: str


class Thread(TypedDict, total=False):
    id: str
    title: str
    kind: str
    default_bot: str | None
    participants: list[Actor]
    created_at: str
    last_message_at: str | None
    unread: int
    needs_action: int


class Message(TypedDict, total=False):
    id: str
    thread_id: str
    sender: Actor | None
    content: str
    mentions: list[str]
    hop: int
    run_id: str | None
    metadata: JSON
    created_at: str


OPEN_STATUSES = frozenset({"queued", "running", "waiting_human"})
"""The statuses of a run that has not finished."""


class Run(TypedDict, total=False):
    id: str
    bot: str
    thread_id: str
    status: str
    trigger_message_ids: list[str]
    interrupt: JSON | None
    error: Any
    usage: JSON | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    events: list[JSON]


class ApiError(Exception):
    """The server answered with an error body (or a non-JSON error)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None, where: str = "") -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.where = where  # "GET /api/v1/threads": the request this answers


@dataclass(frozen=True)
class Event:
    """One Server-Sent Event: ``id`` is None for live-only events (``text.delta``…)."""

    event: str
    data: Any
    id: int | None = None


class Client(FeatureCalls):
    """Speaks ``/api/v1``. One ``httpx.Client`` per instance; not shared between threads."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        # The banner's "API:" address works too: the client adds /api/v1 itself.
        self.server = server.rstrip("/").removesuffix(PROTOCOL_PREFIX).rstrip("/")
        self.token = token
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.server + PROTOCOL_PREFIX, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        params = kwargs.pop("params", None)
        if params:
            params = {k: v for k, v in params.items() if v is not None and v != ""}
        response = self._http.request(method, path, params=params, **kwargs)
        if response.status_code >= 400:
            raise _error_from(response)
        if 300 <= response.status_code < 400:  # a proxy's http→https, say: say where, never follow
            raise _redirected(response)
        if not response.content:
            return None
        try:
            body = response.json()
        except ValueError:
            raise _not_openbot(response) from None
        if not isinstance(body, dict):  # every OpenBot answer is an object
            raise _not_openbot(response, f"a JSON {type(body).__name__}")
        return body

    def _items(self, path: str, **params: Any) -> list[JSON]:
        body = self._request("GET", path, params=params)
        return cast(list[JSON], body.get("items", []))

    # -- server -----------------------------------------------------------------------------

    def info(self) -> JSON:
        # An absolute URL: httpx would add a trailing slash to the bare base URL.
        return cast(JSON, self._request("GET", self.server + PROTOCOL_PREFIX))

    def health(self) -> bool:
        return bool(self._request("GET", "/health").get("ok"))

    def status(self) -> JSON:
        return cast(JSON, self._request("GET", "/status"))

    # -- actors and bots --------------------------------------------------------------------

    def bots(self) -> list[JSON]:
        return self._items("/bots")

    def bot(self, handle: str) -> JSON:
        return cast(JSON, self._request("GET", f"/bots/{seg(handle)}"))

    def update_bot(self, handle: str, **fields: Any) -> JSON:
        return cast(JSON, self._request("PATCH", f"/bots/{seg(handle)}", json=fields))

    def script_bot(
        self,
        handle: str,
        rules: list[dict[str, Any]],
        *,
        delay_ms: int = 0,
        approval_tools: list[str] | None = None,
    ) -> JSON:
        """Give a bot the offline scripted model with these rules (DESIGN §11)."""
        return self.update_bot(
            handle,
            model="scripted",
            model_settings={"script": rules, "delay_ms": delay_ms},
            approval_tools=approval_tools or [],
        )

    def actors(self) -> list[JSON]:
        return self._items("/actors")

    def inbox(self, actor: str = "you", status: str | None = "queued", kind: str | None = None) -> list[JSON]:
        return self._items(f"/actors/{seg(actor)}/inbox", status=status, kind=kind)

    def ack_thread(self, thread_id: str, actor: str = "you") -> None:
        self._request("POST", "/inbox/ack", json={"actor": actor, "thread_id": thread_id})

    # -- threads and messages ---------------------------------------------------------------

    def threads(self, q: str | None = None) -> list[Thread]:
        return cast(list[Thread], self._items("/threads", q=q))

    def thread(self, thread_id: str) -> Thread:
        return cast(Thread, self._request("GET", f"/threads/{seg(thread_id)}"))

    def create_thread(self, title: str | None = None, **fields: Any) -> Thread:
        body: JSON = {k: v for k, v in fields.items() if v is not None}
        if title is not None:
            body["title"] = title
        return cast(Thread, self._request("POST", "/threads", json=body))

    def messages(self, thread_id: str, after: str | None = None, limit: int = 500) -> list[Message]:
        """Every message of the thread after ``after``, oldest first (follows the pages)."""
        result: list[Message] = []
        while True:
            body = self._request(
                "GET", f"/threads/{seg(thread_id)}/messages", params={"after": after, "limit": limit}
            )
            page = cast(list[Message], body.get("items", []))
            result.extend(page)
            if not page or (not body.get("next") and len(page) < limit):
                return result
            after = page[-1]["id"]

    def post_message(
        self, thread_id: str, content: str, sender: str | None = None, to: list[str] | None = None
    ) -> JSON:
        body: JSON = {"content": content}
        if sender is not None:
            body["from"] = sender
        if to:
            body["to"] = to
        return cast(JSON, self._request("POST", f"/threads/{seg(thread_id)}/messages", json=body))

    # -- runs -------------------------------------------------------------------------------

    def runs(
        self, thread_id: str | None = None, bot: str | None = None, status: str | None = None
    ) -> list[Run]:
        return cast(list[Run], self._items("/runs", thread_id=thread_id, bot=bot, status=status))

    def run(self, run_id: str) -> Run:
        return cast(Run, self._request("GET", f"/runs/{seg(run_id)}"))

    def answer(self, run_id: str, answer: str) -> None:
        self._request("POST", f"/runs/{seg(run_id)}/resume", json={"answer": answer})

    def decide(self, run_id: str, decisions: list[JSON]) -> None:
        self._request("POST", f"/runs/{seg(run_id)}/resume", json={"decisions": decisions})

    def cancel(self, run_id: str) -> None:
        self._request("POST", f"/runs/{seg(run_id)}/cancel")

    # -- observability ----------------------------------------------------------------------

    def activity(self, **filters: Any) -> list[JSON]:
        return self._items("/activity", **filters)

    @contextmanager
    def subscribe(self, thread_id: str | None = None, since: int | None = None) -> Iterator[Iterator[Event]]:
        """Open ``/events`` and return once the server has subscribed the stream (its first bytes,
        the ``: connected`` comment, have arrived): whatever happens after ``with`` is entered
        reaches the iterator, live-only events (``activity.created``, ``text.delta``) included.

        The iterator ends with the connection; reconnecting is the caller's job (pass the last seen
        id as ``since``). Heartbeats are swallowed."""
        params: JSON = {}
        if thread_id:
            params["thread_id"] = thread_id
        if since is not None:
            params["since"] = since
        timeout = httpx.Timeout(10.0, read=60.0)  # heartbeats arrive at least every 15 s
        with self._http.stream(
            "GET", "/events", params=params, headers={"Accept": "text/event-stream"}, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise _error_from(response)
            if 300 <= response.status_code < 400:
                raise _redirected(response)
            kind = response.headers.get("content-type", "").split(";")[0]
            if kind != "text/event-stream":
                raise _not_openbot(response, f"{kind or 'no content type'}, not an event stream")
            lines = response.iter_lines()
            first = next(lines, None)
            yield parse_sse(itertools.chain([] if first is None else [first], lines))

    def events(self, thread_id: str | None = None, since: int | None = None) -> Iterator[Event]:
        """Tail ``/events`` until the connection ends (``subscribe`` without the wait)."""
        with self.subscribe(thread_id, since) as stream:
            yield from stream


def unknown_mentions(posted: JSON) -> list[str]:
    """What to tell the sender about the post's ``@handles`` that name nobody (the answer's
    ``unknown_mentions``, each with an optional ``suggestion``), one line each."""
    lines = []
    for item in posted.get("unknown_mentions") or []:
        line = f"@{item.get('handle')} is not a member of this team"
        if item.get("suggestion"):
            line += f" — did you mean @{item['suggestion']}?"
        lines.append(line)
    return lines


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """Decode a ``text/event-stream`` line by line (comments and ``retry:`` are ignored)."""
    event, data, event_id = "message", [], None
    for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    payload: Any = json.loads(text)
                except ValueError:
                    payload = text
                yield Event(event=event, data=payload, id=event_id)
            event, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            try:
                event_id = int(value)
            except ValueError:
                event_id = None


def _error_from(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
        err = body.get("error", {}) if isinstance(body, dict) else {}
    except ValueError:
        err = {}
    code = err.get("code") or ("unauthorized" if response.status_code == 401 else "http_error")
    message = err.get("message") or response.reason_phrase or "request failed"
    if not err.get("code"):  # OpenBot always answers with {"error": {"code", "message"}}
        message += " (not an OpenBot error: is this an OpenBot server?)"
    return ApiError(response.status_code, code, message, err.get("details"), _where(response))


def _not_openbot(response: httpx.Response, kind: str | None = None) -> ApiError:
    kind = kind or response.headers.get("content-type", "").split(";")[0] or "no content type"
    message = f"the answer is not OpenBot's JSON ({kind}): is this an OpenBot server?"
    return ApiError(response.status_code, "not_openbot", message, where=_where(response))


def _redirected(response: httpx.Response) -> ApiError:
    target = response.headers.get("location", "")
    message = f"redirected to {target or 'another address'}: give the server's own address as --server"
    return ApiError(response.status_code, "redirected", message, where=_where(response))


def _where(response: httpx.Response) -> str:
    return f"{response.request.method} {response.request.url.path}"
