"""An in-process rate limiter: exact within one process, shared with no other."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

from tollway.ratelimit.base import Algorithm, Decision, Quota, decide

# Stale keys dropped per new entry: more than one, so cleanup outpaces growth.
_PRUNE_BUDGET = 2


class Tally:
    """The count of one key in one fixed window, as the limiter keeps it.

    :meth:`MemoryRateLimiter.tally` hands out the live object, so a caller on the event
    loop may count on it directly, as :meth:`MemoryRateLimiter.hit_now` would: while
    ``index`` is the index of the window the limiter's clock is in, a request is
    admitted when ``used < limit`` and counted by ``used += 1``. A window that ends is
    never reopened (the next one gets a new tally), and a tally the limiter drops for
    any other reason (:meth:`MemoryRateLimiter.close`) gets ``index = -1`` first.
    """

    __slots__ = ("index", "used")

    def __init__(self, index: int, used: int = 0) -> None:
        self.index = index
        self.used = used


class MemoryRateLimiter:
    """Keeps counters and sliding logs in process memory.

    Nothing here awaits, so each call runs to completion on the event loop and needs
    no lock. State lives in one ordered dict per window length, in the order entries
    were last extended; since every entry there expires a fixed time after that, the
    oldest entries expire first and pruning only ever looks at the front.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        """Epoch seconds, as the limiter reads them (replaceable for tests)."""
        # window -> key -> the key's tally in its latest window
        self._counters: dict[int, OrderedDict[str, Tally]] = {}
        # window -> key -> timestamps of admitted requests, oldest first
        self._logs: dict[int, OrderedDict[str, deque[float]]] = {}

    async def hit(self, key: str, quota: Quota) -> Decision:
        """Count one request for ``key`` if the quota allows it, and say whether it does."""
        return self.hit_now(key, quota)

    def hit_now(self, key: str, quota: Quota) -> Decision:
        """:meth:`hit` without a coroutine: the request path calls this when the
        limiter has it (:class:`~tollway.ratelimit.base.RateLimiter`)."""
        if quota.algorithm is Algorithm.FIXED_WINDOW:
            return self._fixed(key, quota, self.clock(), count=True)
        return self._sliding(key, quota, self.clock(), count=True)

    def tally(self, key: str, quota: Quota) -> Tally | None:
        """The live :class:`Tally` of ``key`` in the current window of a fixed-window
        ``quota``, if it has one (after a hit in this window); ``None`` otherwise."""
        if quota.algorithm is not Algorithm.FIXED_WINDOW:
            return None
        counters = self._counters.get(quota.window)
        stored = counters.get(key) if counters is not None else None
        if stored is None or stored.index != int(self.clock() // quota.window):
            return None
        return stored

    async def peek(self, key: str, quota: Quota) -> Decision:
        """The state of ``key`` without counting anything."""
        if quota.algorithm is Algorithm.FIXED_WINDOW:
            return self._fixed(key, quota, self.clock(), count=False)
        return self._sliding(key, quota, self.clock(), count=False)

    async def close(self) -> None:
        """Forget all state; tallies handed out stop counting (``index = -1``)."""
        for counters in self._counters.values():
            for stored in counters.values():
                stored.index = -1
        self._counters.clear()
        self._logs.clear()

    def __len__(self) -> int:
        """How many keys have state held, for tests and metrics."""
        return sum(map(len, self._counters.values())) + sum(map(len, self._logs.values()))

    def _fixed(self, key: str, quota: Quota, now: float, *, count: bool) -> Decision:
        window = quota.window
        index = int(now // window)
        counters = self._counters.get(window)
        if counters is None:
            counters = self._counters[window] = OrderedDict()
        stored = counters.get(key)
        counter = stored if stored is not None and stored.index == index else Tally(index)
        # Denied requests are not counted, so the count never exceeds the limit.
        used = counter.used
        allowed = used < quota.limit
        if allowed and count:
            counter.used = used = used + 1
            if counter is not stored:
                counters[key] = counter
                counters.move_to_end(key)
                _prune_counters(counters, index)
        return decide(quota, allowed=allowed, used=used, reset=(index + 1) * window, now=now)

    def _sliding(self, key: str, quota: Quota, now: float, *, count: bool) -> Decision:
        window = quota.window
        horizon = now - window
        logs = self._logs.get(window)
        if logs is None:
            logs = self._logs[window] = OrderedDict()
        log = logs.get(key)
        if log is None:
            log = deque()
        while log and log[0] <= horizon:
            log.popleft()
        allowed = len(log) < quota.limit
        if allowed and count:
            log.append(now)
            logs[key] = log
            logs.move_to_end(key)
            _prune_logs(logs, horizon)
        reset = log[0] + window if log else now + window
        return decide(quota, allowed=allowed, used=len(log), reset=reset, now=now)


def _prune_counters(counters: OrderedDict[str, Tally], index: int) -> None:
    for _ in range(_PRUNE_BUDGET):
        key, counter = next(iter(counters.items()))
        if counter.index >= index:
            return
        del counters[key]


def _prune_logs(logs: OrderedDict[str, deque[float]], horizon: float) -> None:
    for _ in range(_PRUNE_BUDGET):
        key, log = next(iter(logs.items()))
        # peek() may have emptied a log in place; an empty log is as stale as an old one.
        if log and log[-1] > horizon:
            return
        del logs[key]
