"""The real-time bus: live documents and streams, on every gateway process.

A stream (a chat contact's messages, a point-of-sale order as it changes) is held open
by one process; the change it waits for may be made by another. The gateway's one bus,
``gateway.live``, joins them: a product publishes a change's payload on a topic of its
own after the change commits, and each stream subscribed to that topic, on any
process, receives it. :func:`live_stream` turns a topic into a Server-Sent Events
response.

Without ``redis_url`` the bus is :class:`LocalLiveBus`, this process's subscribers
(all there are with one process); with it, :class:`RedisLiveBus`, Redis
publish/subscribe on channels named ``<live_channel_prefix><topic>``. Delivery is at
most once, to the subscribers listening at the time: a product that must not lose a
change keeps it in the database and sends a reconnecting stream what it missed.
"""

from tollway.live.bus import QUEUE_SIZE, LiveBus, LocalLiveBus
from tollway.live.redis import RedisLiveBus
from tollway.live.sse import HEARTBEAT, LiveEvent, live_stream
from tollway.settings import Settings


def live_bus(settings: Settings) -> LiveBus:
    """The gateway's bus: Redis when the deployment has a ``redis_url``, else
    in-process."""
    if settings.redis_url:
        return RedisLiveBus(settings.redis_url, prefix=settings.live_channel_prefix)
    return LocalLiveBus()


__all__ = [
    "HEARTBEAT",
    "QUEUE_SIZE",
    "LiveBus",
    "LiveEvent",
    "LocalLiveBus",
    "RedisLiveBus",
    "live_bus",
    "live_stream",
]
