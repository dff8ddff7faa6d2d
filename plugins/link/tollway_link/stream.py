"""The scale-out profile's click stream: gateways append, writers store, Redis keeps.

With ``redis_url`` set, a gateway's :class:`~tollway_link.clicks.Clicks` sends each
flushed batch to the Redis stream ``click_stream`` as one entry (the batch's
:class:`~tollway_link.capture.RawClick` list in MessagePack; several batches in one
pipelined round trip), instead of writing to the database. Every gateway process with
``run_jobs`` and every ``tollway worker`` is a writer: a consumer of the group
:data:`GROUP`, reading entries (``XREADGROUP``), storing their clicks
(:func:`tollway_link.store.store`) and acknowledging and deleting them (``XACK``,
``XDEL``) only after that transaction committed.

Exactly once is at-least-once delivery plus the idempotent insert: an entry read by a
writer that dies before acknowledging stays pending on it, and after
:data:`CLAIM_IDLE` seconds another writer takes it over (``XAUTOCLAIM``) and stores
it; clicks already stored are recognised by id and neither stored nor counted again.

The stream has no ``MAXLEN``: trimming would drop clicks not yet stored. Stored
entries are deleted, so the stream holds only what waits for a writer; while no
writer runs it grows in Redis memory (run Redis with ``maxmemory-policy noeviction``:
an evicted stream is lost clicks). Once Redis refuses, gateways keep their batches in
memory up to their own bound (:data:`tollway_link.clicks.BUFFERED_CLICKS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from tollway_link.capture import RawClick

log = logging.getLogger("tollway.link.clicks")

GROUP = "tollway-link-writers"
FIELD = b"clicks"
READ_COUNT = 20
"""Entries read at once (each a batch of up to ``click_batch_size`` clicks)."""
BLOCK = 5.0
"""Seconds a read waits for entries before the writer looks for abandoned ones."""
GATHER = 1.0
"""Seconds a writer lets entries gather after reading fewer than it can take at once
(:data:`READ_COUNT`), before it stores them: a transaction of thousands of clicks costs
a writer about half as much per click as one of a few hundred (fewer rows of the
pre-aggregates, fewer statements), and the entries are safe in the stream meanwhile.
Clicks reach the analytics that much later."""
CLAIM_IDLE = 60.0
"""Seconds an entry may stay read and unacknowledged before another writer takes it
over: a writer stores a read batch in well under a second, and keeps retrying it
while the database is down (a take-over then is harmless: storing is idempotent)."""
CLAIM_EVERY = 15.0
"""Seconds between a writer's looks for entries to take over."""
RETRY_FIRST, RETRY_MAX = 0.1, 10.0
"""Seconds before a failed write or read is tried again: doubled each time, capped."""

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[RawClick]).decode

Entry = tuple[bytes, dict[bytes, bytes]]
Write = Callable[[Sequence[RawClick]], Awaitable[int]]


def consumer_name() -> str:
    """This process's name in the group: unique across hosts, restarts and gateways."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class ClickStream:
    """One process's end of the stream ``name``: it publishes, and as the consumer
    ``consumer`` it stores entries through ``write`` in batches of at most
    ``batch_size`` clicks."""

    def __init__(
        self,
        redis_url: str,
        name: str,
        write: Write,
        *,
        batch_size: int,
        consumer: str | None = None,
    ) -> None:
        import redis.asyncio as redis

        self.redis = redis.Redis.from_url(redis_url, socket_connect_timeout=2)
        self.name = name
        self.write = write
        self.batch_size = batch_size
        self.consumer = consumer or consumer_name()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._reading = False
        self._storing = asyncio.Lock()

    async def publish(self, batches: Sequence[Sequence[RawClick]]) -> None:
        """Append each batch as an entry, all in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for batch in batches:
                pipe.xadd(self.name, {FIELD: _encode(batch)})
            await pipe.execute()

    async def create_group(self) -> None:
        """The writers' group, reading from the stream's first entry (entries added
        before any writer ever started are stored too)."""
        from redis.exceptions import ResponseError

        try:
            await self.redis.xgroup_create(self.name, GROUP, id="0", mkstream=True)
        except ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    async def read(self, *, block: float | None = None, pending: bool = False) -> list[Entry]:
        """Entries for this consumer: new ones (waiting up to ``block`` seconds for
        one), or with ``pending`` those it read before and has not acknowledged."""
        answer: Any = await self.redis.xreadgroup(
            GROUP,
            self.consumer,
            {self.name: "0" if pending else ">"},
            count=READ_COUNT,
            block=None if block is None else int(block * 1000),
        )
        return [(entry_id, fields) for _, entries in answer or () for entry_id, fields in entries]

    async def claim(self, min_idle: float = CLAIM_IDLE) -> int:
        """Take over the entries read by any consumer and left unacknowledged for
        ``min_idle`` seconds, and store them; the clicks stored."""
        stored = 0
        start: Any = "0-0"
        while True:
            cursor, entries, *_ = await self.redis.xautoclaim(
                self.name, GROUP, self.consumer, int(min_idle * 1000), start, count=READ_COUNT
            )
            stored += await self.store(entries)
            if cursor in (b"0-0", "0-0"):
                await self._forget_idle(min_idle)
                return stored
            start = cursor

    async def _forget_idle(self, min_idle: float) -> None:
        """Remove from the group the other consumers that hold nothing and have not read
        for ``min_idle`` seconds: processes that stopped or died (each start joins under
        a new name, so the group would grow with every restart). A live writer reads
        every :data:`BLOCK` seconds, far within the idle time, and one removed anyway
        joins again at its next read."""
        consumers: Any = await self.redis.xinfo_consumers(self.name, GROUP)
        for consumer in consumers:
            name = consumer["name"]
            name = name.decode() if isinstance(name, bytes) else name
            idle = consumer["idle"] >= min_idle * 1000
            if name != self.consumer and consumer["pending"] == 0 and idle:
                await self.redis.xgroup_delconsumer(self.name, GROUP, name)

    async def store(self, entries: Sequence[Entry]) -> int:
        """Store the entries' clicks, then acknowledge and delete the entries; the
        clicks that were new. A write that fails raises, the entries left pending."""
        if not entries:
            return 0
        stored = 0
        async with self._storing:
            for group, clicks in _batches(entries, self.batch_size):
                stored += await self.write(clicks) if clicks else 0
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.xack(self.name, GROUP, *group)
                    pipe.xdel(self.name, *group)
                    await pipe.execute()
        return stored

    async def drain(self) -> int:
        """Store what this consumer holds and everything waiting now; the clicks
        stored. (Entries another process has read are that process's to store.)"""
        await self.create_group()
        stored = 0
        for pending in (True, False):
            while entries := await self.read(pending=pending):
                stored += await self.store(entries)
        return stored

    # Running as a writer -------------------------------------------------------------

    def start(self) -> None:
        """Be a writer until :meth:`stop`."""
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name="tollway-link-click-writer")

    async def stop(self) -> None:
        """Stop reading; a batch being stored is finished first. Entries read and not
        yet stored stay pending, taken over by another writer after :data:`CLAIM_IDLE`."""
        if self._task is not None:
            self._stopping.set()
            if self._reading:
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def close(self) -> None:
        await self.redis.aclose()

    async def _run(self) -> None:
        await self._retrying("creating the click writers' group", self.create_group)
        claimed_at = -CLAIM_EVERY
        while not self._stopping.is_set():
            if time.monotonic() - claimed_at >= CLAIM_EVERY:
                await self._retrying("taking over abandoned clicks", self.claim)
                claimed_at = time.monotonic()
            if self._stopping.is_set():
                return
            self._reading = True
            try:
                entries = await self._retrying("reading clicks", self.read, block=BLOCK)
            finally:
                self._reading = False
            if entries and len(entries) < READ_COUNT:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), GATHER)
                entries += await self._retrying("reading clicks", self.read) or []
            if entries:
                await self._retrying("storing clicks", self.store, entries)

    async def _retrying(
        self, what: str, step: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> Any:
        """``step``, again after each failure (waits doubling up to :data:`RETRY_MAX`)
        until it succeeds or the writer stops (``None`` then)."""
        delay = RETRY_FIRST
        while True:
            try:
                return await step(*args, **kwargs)
            except Exception:
                log.exception("%s failed; trying again in %.1f s", what, delay)
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
            except TimeoutError:
                delay = min(delay * 2, RETRY_MAX)
                continue
            return None


def _batches(entries: Sequence[Entry], size: int) -> list[tuple[list[bytes], list[RawClick]]]:
    """The entries in groups of at most ``size`` clicks (an entry is never split), each
    with its clicks. An entry that does not decode is logged and its group stores
    nothing for it: it can never be stored, and is deleted with the rest."""
    groups: list[tuple[list[bytes], list[RawClick]]] = []
    for entry_id, fields in entries:
        try:
            clicks = _decode(fields[FIELD])
        except (KeyError, msgspec.DecodeError):
            log.error("click stream entry %r is not a batch of clicks; dropped", entry_id)
            clicks = []
        if groups and len(groups[-1][1]) + len(clicks) <= size:
            groups[-1][0].append(entry_id)
            groups[-1][1].extend(clicks)
        else:
            groups.append(([entry_id], list(clicks)))
    return groups
