"""The bus's contract, and the bus of one process.

A topic is a name a product makes up (``chat:<account>:<contact>``,
``pos:<account>:inventory``); a payload is bytes the bus never reads. Subscribers get
a queue of their own: one that fills up because its reader stopped reading loses what
does not fit (with a warning) rather than holding up the publisher or the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

log = logging.getLogger("tollway.live")

QUEUE_SIZE = 1000
"""Payloads a subscriber's queue holds before the next ones are dropped."""


class LiveBus(Protocol):
    """Publish/subscribe on topics, for every gateway process of a deployment. A bus
    subclasses it to inherit :meth:`subscription`."""

    async def start(self) -> None:
        """Called once when the gateway starts."""
        ...

    async def stop(self) -> None:
        """Called once when the gateway stops: release the connections."""
        ...

    async def subscribe(self, topic: str) -> asyncio.Queue[bytes]:
        """A queue receiving the payloads published on ``topic`` until
        :meth:`unsubscribe`. The subscription is in effect when this returns: a payload
        published afterwards, by any process, reaches the queue. Raises
        :class:`~tollway.ServiceUnavailable` when the bus cannot subscribe."""
        ...

    async def unsubscribe(self, topic: str, queue: asyncio.Queue[bytes]) -> None:
        """Stop delivering ``topic``'s payloads to ``queue``."""
        ...

    async def publish(self, topic: str, payload: bytes) -> int:
        """Send ``payload`` to ``topic``'s subscribers; how many received it: queues of
        this process on the local bus, processes on Redis (0: nobody is listening)."""
        ...

    def listeners(self, topic: str) -> int:
        """The queues subscribed to ``topic`` in this process."""
        ...

    @asynccontextmanager
    async def subscription(self, topic: str) -> AsyncIterator[asyncio.Queue[bytes]]:
        """``async with bus.subscription(topic) as queue``: :meth:`subscribe` on entry,
        :meth:`unsubscribe` on exit however the block ends, cancellation included."""
        queue = await self.subscribe(topic)
        try:
            yield queue
        finally:
            # Shielded: a stream is cancelled when its client goes away, and a Redis
            # UNSUBSCRIBE cut short would leave this process counted as a receiver.
            await asyncio.shield(self.unsubscribe(topic, queue))


class LocalLiveBus(LiveBus):
    """The subscribers of this process: the embedded default (no ``redis_url``), where
    there is no other process to reach."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[bytes]]] = defaultdict(set)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def add(self, topic: str) -> asyncio.Queue[bytes]:
        """A new queue subscribed to ``topic``."""
        queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._queues[topic].add(queue)
        return queue

    def remove(self, topic: str, queue: asyncio.Queue[bytes]) -> bool:
        """Forget ``queue``; True when it was the topic's last one."""
        self._queues[topic].discard(queue)
        if self._queues[topic]:
            return False
        del self._queues[topic]
        return True

    def put(self, topic: str, payload: bytes) -> int:
        """Hand ``payload`` to each of ``topic``'s queues; how many took it."""
        delivered = 0
        for queue in list(self._queues.get(topic, ())):
            try:
                queue.put_nowait(payload)
                delivered += 1
            except asyncio.QueueFull:
                log.warning("a subscriber of %s is not reading; dropped", topic)
        return delivered

    async def subscribe(self, topic: str) -> asyncio.Queue[bytes]:
        return self.add(topic)

    async def unsubscribe(self, topic: str, queue: asyncio.Queue[bytes]) -> None:
        self.remove(topic, queue)

    async def publish(self, topic: str, payload: bytes) -> int:
        return self.put(topic, payload)

    def listeners(self, topic: str) -> int:
        return len(self._queues.get(topic, ()))
