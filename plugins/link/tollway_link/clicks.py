"""The click queue: a redirect hands its click over and answers; batches are written
off the request path, each click stored and counted exactly once.

:meth:`Clicks.add` appends to the process's buffer and returns: no I/O, no await. A
flusher task takes the buffer as soon as ``click_batch_size`` clicks wait, or
``click_flush_interval`` seconds after the first of them arrived, and in batches of at
most ``click_batch_size`` clicks:

- embedded profile (no ``redis_url``): enriches each batch
  (:meth:`~tollway_link.capture.Enricher.enrich_in_turns`) and stores it in one
  transaction (:func:`tollway_link.store.store`);
- scale-out profile (``redis_url``): sends the batches to the Redis stream
  ``click_stream`` in one round trip (:mod:`tollway_link.stream`), whose writers (every
  gateway with ``run_jobs`` and every ``tollway worker``) enrich and store them.

Writing slower than clicks arrive is not an outage: once :data:`BACKLOG_BATCHES`
batches wait while writing works, :attr:`Clicks.crowded` is true and the redirects
wait for :meth:`Clicks.room` before they answer (at most :data:`ROOM_WAIT` seconds),
so a process that storage cannot keep up with serves only as fast as it stores, and
loses nothing.

A batch that cannot be written (database or Redis down) stays buffered and is tried
again after 0.1 s, doubling up to 10 s; meanwhile clicks keep arriving (redirects do
not wait on a failing writer), up to :data:`BUFFERED_CLICKS`. Past that bound a process
drops new clicks (logged, with their number once writing resumes) rather than run out
of memory or stop redirecting.

What a killed process loses is what it had not yet written or sent: the clicks of its
last ``click_flush_interval`` seconds (0.2 s by default), at most ``click_batch_size``
of them while writing keeps up, and all it buffered during an outage. Once a batch is
in the stream it survives the process that sent it; a writer that dies with entries
read and not acknowledged leaves them to another (see :mod:`tollway_link.stream`).
:meth:`Clicks.stop` writes what is buffered before the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tollway_link.capture import Enricher, RawClick
from tollway_link.settings import LinkSettings
from tollway_link.store import store
from tollway_link.stream import RETRY_FIRST, RETRY_MAX, ClickStream

if TYPE_CHECKING:
    from tollway import Gateway

log = logging.getLogger("tollway.link.clicks")

BACKLOG_BATCHES = 4
"""Batches waiting, while writing works, at which redirects start to wait for the
writer: a writer that keeps up never has more than a batch or two waiting."""
ROOM_WAIT = 1.0
"""Seconds a redirect waits for room at most: a writer that is slow makes room within
a transaction's time, one stuck on a database that neither answers nor fails would
otherwise hold every redirect until the connection times out."""
BUFFERED_CLICKS = 50_000
"""How many clicks a process keeps while it cannot write (some 10 MB): minutes of a
busy gateway's clicks. (At least one ``click_batch_size``, if that is set higher.)"""


class Clicks:
    """The gateway's click queue (a service): ``add`` never waits for storage."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        settings = gateway.product_settings(LinkSettings)
        self.interval = settings.click_flush_interval
        self.batch_size = settings.click_batch_size
        self.limit = max(BUFFERED_CLICKS, settings.click_batch_size)
        self.backlog = min(BACKLOG_BATCHES * settings.click_batch_size, self.limit)
        self.stream: ClickStream | None = None
        """The Redis stream the batches go to, in the scale-out profile."""
        if gateway.settings.redis_url:
            self.stream = ClickStream(
                gateway.settings.redis_url,
                settings.click_stream or f"{gateway.settings.job_queue_name}:link:clicks",
                self.write,
                batch_size=settings.click_batch_size,
            )
        self.dropped = 0
        """Clicks dropped since writing last succeeded, the buffer being full."""
        self._buffer: list[RawClick] = []
        self._writing = True
        """The last write (or send) succeeded, or none failed yet."""
        self._room = asyncio.Event()
        self._since = 0.0
        """When the oldest buffered click arrived, or earlier (monotonic seconds)."""
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()
        self._stopping = asyncio.Event()
        self._sending = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._enricher: Enricher | None = None
        self._enricher_made = asyncio.Lock()

    def add(self, click: RawClick) -> None:
        """Queue ``click`` for writing; returns at once."""
        buffer = self._buffer
        if len(buffer) >= self.limit:
            if not self.dropped:
                log.error("click buffer full (%d clicks): dropping new clicks", len(buffer))
            self.dropped += 1
            return
        if not buffer:
            self._since = time.monotonic()
            self._arrived.set()
        buffer.append(click)
        if len(buffer) >= self.batch_size:
            self._full.set()

    @property
    def crowded(self) -> bool:
        """Writing works but has fallen :data:`BACKLOG_BATCHES` batches behind: the
        caller should wait for :meth:`room` (a redirect does, before it answers)."""
        return self._writing and len(self._buffer) >= self.backlog

    async def room(self) -> None:
        """Wait until the queue is no longer :attr:`crowded`: the writer caught up, or
        failed (an outage is met by buffering, not by holding redirects up); at most
        :data:`ROOM_WAIT` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ROOM_WAIT):
                while self.crowded:
                    self._room.clear()
                    await self._room.wait()

    @property
    def buffered(self) -> int:
        """Clicks waiting in this process."""
        return len(self._buffer)

    async def flush(self) -> None:
        """Write what is buffered now; raises what writing raised (the clicks stay
        buffered). In the scale-out profile the clicks are sent to the stream, and
        stored too when this process is one of its writers."""
        while self._buffer:
            await self._send()
        if self.stream is not None and self.gateway.settings.run_jobs:
            await self.stream.drain()

    async def write(self, clicks: Sequence[RawClick]) -> int:
        """Enrich and store a batch in one transaction; the clicks that were new."""
        enricher = await self._enrich_with()
        rows = await enricher.enrich_in_turns(clicks)
        return await store(self.gateway.database, rows)

    async def start(self) -> None:
        if self.stream is not None and self.gateway.settings.run_jobs:
            self.stream.start()
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name="tollway-link-clicks")

    async def stop(self) -> None:
        """Write what is buffered (one attempt: a process stopping during an outage
        loses it, logged), then stop the stream's writer."""
        if self._task is not None:
            self._stopping.set()
            self._arrived.set()
            self._full.set()
            await self._task
            self._task = None
        if self.stream is not None:
            await self.stream.stop()
            await self.stream.close()

    async def _enrich_with(self) -> Enricher:
        async with self._enricher_made:
            if self._enricher is None:
                self._enricher = await Enricher.for_gateway(self.gateway)
            return self._enricher

    async def _send(self) -> None:
        """Write (or send) the oldest batches; they leave the buffer once written."""
        async with self._sending:
            buffer, size = self._buffer, self.batch_size
            # The clicks arriving while this batch is written are no older than now.
            started = time.monotonic()
            if self.stream is None:
                sent = len(batch := buffer[:size])
                await self.write(batch)
            else:
                sent = len(buffer)
                await self.stream.publish([buffer[n : n + size] for n in range(0, sent, size)])
            del buffer[:sent]
            self._since = started
            self._written(True)
        if self.dropped:
            log.error("click buffer writing again; %d clicks were dropped", self.dropped)
            self.dropped = 0

    def _written(self, succeeded: bool) -> None:
        self._writing = succeeded
        if not self.crowded:
            self._room.set()

    async def _run(self) -> None:
        delay = RETRY_FIRST
        while True:
            await self._arrived.wait()
            due = self._since + self.interval - time.monotonic()
            if not self._stopping.is_set() and due > 0:
                # A batch goes when it is full or its oldest click has waited the
                # interval; not merely because the last write ended. Written as soon
                # as the last ended, a busy process's batches were what arrived
                # during one write, a few hundred clicks each time a write got
                # quicker, and each cost its transaction again.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(due):
                        await self._full.wait()
            try:
                if self._buffer:
                    await self._send()
                delay = RETRY_FIRST
            except Exception:
                self._written(False)
                if self._stopping.is_set():
                    log.exception("stopping: %d clicks could not be written", len(self._buffer))
                    return
                log.exception("writing clicks failed; trying again in %.1f s", delay)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._stopping.wait()
                delay = min(delay * 2, RETRY_MAX)
                continue
            if len(self._buffer) < self.batch_size:
                self._full.clear()
            if not self._buffer:
                self._arrived.clear()
                if self._stopping.is_set():
                    return
