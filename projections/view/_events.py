"""`/api/events`: the ledger's head pushed to a page as Server-Sent Events.

A page that can open an `EventSource` learns that a run appended within `interval` of it,
without polling `/api/head` (it polls only while the stream is down). The server side is
still a poll, of one indexed `MAX(seq)` per `interval`, but one per open page instead of
one request per page every 2 s, and it sends nothing while the ledger does not move but
a comment every `keepalive` seconds: a write that fails is how a closed tab is noticed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import msgspec

from ledger import Ledger, SweclError

EVENTS_PATH = "/api/events"
EVENT_STREAM = "text/event-stream; charset=utf-8"
RETRY_MS = 2000
"""How long a browser waits before it opens the stream again after it broke."""


def head_events(
    open_ledger: Callable[[], AbstractContextManager[Ledger]],
    *,
    interval: float = 0.5,
    keepalive: float = 15.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[bytes]:
    """The stream's chunks, forever: `head` events `{"head": seq, "ledger_id": id}`, the first
    at once, then one each time the head changes. The ledger is opened afresh for each look
    (as every request is), so a results folder replaced meanwhile is seen too."""
    yield f"retry: {RETRY_MS}\n\n".encode()
    last: tuple[int, str] | None = None
    said = clock()
    while True:
        try:
            with open_ledger() as ledger:
                now = (ledger.head(), ledger.ledger_id)
        except SweclError as exc:
            # No ledger (yet, or any more): say so once, as an event the page can show.
            now = (-1, "")
            if last != now:
                last, said = now, clock()
                yield _event("unavailable", {"error": str(exc)})
        else:
            if now != last:
                last, said = now, clock()
                yield _event("head", {"head": now[0], "ledger_id": now[1]})
        if clock() - said >= keepalive:
            said = clock()
            yield b": keep-alive\n\n"
        sleep(interval)


def _event(name: str, data: object) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + msgspec.json.encode(data) + b"\n\n"
