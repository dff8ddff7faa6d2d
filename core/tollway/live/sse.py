"""A topic of the live bus as a Server-Sent Events response.

What every live stream does is here; what differs is the product's: the topic, the
events sent first (the document as it is now, or what a reconnecting client missed),
and how a published payload becomes an event. The stream subscribes before it reads
what it sends first, so a change made in between arrives after it and is never lost
(the product's ``frame`` may skip what it has already sent). Both happen before the
response starts: a bus that cannot subscribe is a 503, a document that is not there
the product's own error. The stream then sends each event, a comment line every
:data:`HEARTBEAT` seconds of silence (proxies close idle connections), and ends after
``max_seconds`` (clients reconnect) or once ``end_after`` says so; it unsubscribes
when it ends and when the client goes away.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack

import msgspec
from litestar.response import Stream

from tollway.live.bus import LiveBus

log = logging.getLogger("tollway.live")

HEARTBEAT = 15.0
"""Seconds of silence after which a stream sends a comment line."""

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_KEEP_ALIVE = b": keep-alive\n\n"


class LiveEvent(msgspec.Struct, frozen=True):
    """One Server-Sent Event: ``data`` (any bytes, line breaks included), and the
    optional ``event`` type and ``id`` (which a reconnecting ``EventSource`` sends back
    as ``Last-Event-ID``)."""

    data: bytes
    event: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        for name, value in (("event", self.event), ("id", self.id)):
            if value is not None and ("\n" in value or "\r" in value or "\0" in value):
                raise ValueError(f"a Server-Sent Event's {name} must be one line without NUL")

    def encode(self) -> bytes:
        """The event as it goes on the wire: a ``data`` line per line of ``data``."""
        lines = []
        if self.id is not None:
            lines.append(b"id: " + self.id.encode())
        if self.event is not None:
            lines.append(b"event: " + self.event.encode())
        lines += [b"data: " + line for line in _LINE_BREAK.split(self.data)]
        return b"\n".join(lines) + b"\n\n"


async def live_stream(
    bus: LiveBus,
    topic: str,
    frame: Callable[[bytes], LiveEvent | None],
    *,
    first: Callable[[], Awaitable[Iterable[LiveEvent]]] | None = None,
    max_seconds: float,
    end_after: Callable[[LiveEvent], bool] | None = None,
    heartbeat: float = HEARTBEAT,
) -> Stream:
    """A ``text/event-stream`` response of ``topic``: the events ``first`` returns
    (awaited once subscribed), then ``frame(payload)`` for each payload published on
    it (``None`` skips the payload, as does a ``msgspec.DecodeError``, with a warning),
    for ``max_seconds`` at most, or until an event (from ``first`` or ``frame``) for
    which ``end_after`` is true has been sent. Raises :class:`~tollway.ServiceUnavailable` when the
    bus cannot subscribe, and whatever ``first`` raises."""
    subscribed = AsyncExitStack()
    queue = await subscribed.enter_async_context(bus.subscription(topic))
    try:
        opening = list(await first()) if first is not None else []
    except BaseException:
        await subscribed.aclose()
        raise
    ends = end_after or _never

    async def events() -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        async with subscribed:
            for event in opening:
                yield event.encode()
                if ends(event):
                    return
            while (remaining := deadline - loop.time()) > 0:
                try:
                    payload = await asyncio.wait_for(queue.get(), min(remaining, heartbeat))
                except TimeoutError:
                    if deadline - loop.time() > 0:
                        yield _KEEP_ALIVE
                    continue
                if (framed := _framed(frame, topic, payload)) is None:
                    continue
                yield framed.encode()
                if ends(framed):
                    return

    return Stream(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _never(event: LiveEvent) -> bool:
    return False


def _framed(
    frame: Callable[[bytes], LiveEvent | None], topic: str, payload: bytes
) -> LiveEvent | None:
    try:
        return frame(payload)
    except msgspec.DecodeError:
        log.warning("undecodable payload on %s; dropped", topic)
        return None
