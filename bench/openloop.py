"""Open-loop load: requests sent at fixed intended times, whatever the server does.

wrk is closed-loop: each connection sends its next request when the last one answers,
so a slow server is sent less and its queue never shows (coordinated omission; at
saturation wrk's p99 is the queue length over throughput). Here, as in wrk2, request
``i`` has an intended send time fixed before the run, ``start + i / rate`` (evenly
spaced) or, with ``arrivals="poisson"``, the sum of ``i`` exponential gaps of mean
``1 / rate``; its latency runs from that intended time to the end of its response. A
request whose time has come waits for a free connection of the pool (opened before the
run, HTTP/1.1 keep-alive, one request in flight each) and that wait counts too.

The generator runs in a process of its own (``measure`` starts one), on uvloop, woken
by a Linux timerfd (the loop's own timers round to the millisecond). It checks itself:
if more than 1 % of the requests were issued over 1 ms behind schedule, or it used more
than 90 % of a core, the run is marked invalid (``Result.invalid`` says why) rather
than read as the server's latency. Requests are prebuilt bytes, one per template,
picked round-robin or at random; responses are read as far as the status line,
``Content-Length`` and chunked framing need.

Standalone: ``python bench/openloop.py http://127.0.0.1:8000/v1/bench/ping --rate 1000
--duration 5 -H 'Authorization: Bearer ...'`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import gc
import math
import os
import random
import subprocess
import sys
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

import msgspec
from loadgen import LoadError, loop_factory

LAG_LIMIT = 0.001
"""Seconds behind its intended time a request may be issued and still count as on time."""
LATE_LIMIT = 0.01
"""The share of requests that may be late before the run is invalid."""
CPU_LIMIT = 0.9
"""The generator's CPU time over wall time above which it cannot be trusted to keep up."""
ERROR_SAMPLES = 5
START_DELAY = 0.05
"""Seconds between opening the pool and the first intended send."""


class Template(msgspec.Struct, frozen=True):
    """One request the generator may send."""

    path: str
    method: str = "GET"
    headers: dict[str, str] = {}
    body: str = ""


class Load(msgspec.Struct, frozen=True):
    """What to send, where, and how fast."""

    host: str
    port: int
    templates: list[Template]
    rate: float
    """Offered requests per second."""
    duration: float
    """Seconds measured, after the warm-up."""
    warmup: float = 0.0
    """Seconds of load at the same rate before the measured window, not recorded."""
    connections: int = 64
    arrivals: Literal["even", "poisson"] = "even"
    order: Literal["round-robin", "random"] = "round-robin"
    seed: int = 0
    timeout: float = 10.0
    """Seconds after the last intended send that unanswered requests are given."""
    expected: int = 2
    """The class of the answers that count as success: 2 (2xx), 3 for redirects."""


class Result(msgspec.Struct, frozen=True):
    """One run, over the requests intended within the measured window."""

    rate: float
    requests: int
    completed: int
    achieved_rps: float
    """Completed requests over the measured duration, or over the time from its start to
    the last completion if that is longer."""
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    """Latency percentiles; a failed or unanswered request counts as infinitely slow."""
    unexpected: int
    """Answers outside the load's ``expected`` class (2xx unless said)."""
    errors: int
    error_samples: list[str]
    late: float
    """Share of requests issued more than ``LAG_LIMIT`` behind their intended time."""
    max_lag_ms: float
    cpu: float
    """The generator's CPU time over wall time while it was sending."""
    waited: int
    """Requests that found every connection busy and waited for one."""
    invalid: str | None
    """Why the generator could not keep the offered rate; ``None`` if it did."""


# --- waking on time ----------------------------------------------------------------

_CLOCK_MONOTONIC = 1  # time.monotonic's clock on Linux
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class Alarm:
    """A one-shot Linux timerfd on ``time.monotonic``'s clock, for the event loop to
    watch: it wakes the loop within microseconds of the time set, where the loop's own
    timers (libuv's) round to milliseconds, and costs no spinning."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.timerfd_create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed (the generator needs Linux)")
        self._spec = _Itimerspec()

    def at(self, when: float) -> None:
        """Fire at ``when`` (``time.monotonic()`` seconds; at once if already past)."""
        seconds = math.floor(when)
        self._spec.it_value.tv_sec = seconds
        self._spec.it_value.tv_nsec = max(1, int((when - seconds) * 1e9))  # 0 would disarm
        if self._libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None):
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def clear(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 8)

    def close(self) -> None:
        os.close(self.fd)


# --- HTTP/1.1 ------------------------------------------------------------------------


def request_bytes(template: Template, host: str, port: int) -> bytes:
    body = template.body.encode()
    head = [f"{template.method} {template.path} HTTP/1.1", f"Host: {host}:{port}"]
    head += [f"{name}: {value}" for name, value in template.headers.items()]
    if body or template.method in {"POST", "PUT", "PATCH"}:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class ProtocolError(Exception):
    """A response this reader does not understand."""


_HEAD = -1
_CHUNKED = -2


class ResponseReader:
    """Finds where each response ends in a keep-alive stream: the status line, then
    ``Content-Length`` or chunked framing; nothing else is parsed."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._status = 0
        self._close = False
        self._remaining = _HEAD
        """Body bytes still to come, or ``_HEAD`` / ``_CHUNKED`` while reading those."""

    def feed(self, data: bytes) -> list[tuple[int, bool]]:
        """The status of every response that ``data`` completes, and whether the
        connection may carry another request (no ``Connection: close``)."""
        self._buffer += data
        responses = []
        while (status := self._step()) is not None:
            if status:
                responses.append((status, not self._close))
        return responses

    def _step(self) -> int | None:
        """Consume what the buffer allows; a status when a response ends, 0 when there
        is more to read in the buffer, ``None`` when it needs more data."""
        buffer = self._buffer
        if self._remaining == _HEAD:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return None
            self._head(bytes(buffer[:end]))
            del buffer[: end + 4]
            return self._finish() if self._remaining == 0 else 0
        if self._remaining >= 0:
            if len(buffer) < self._remaining:
                self._remaining -= len(buffer)
                buffer.clear()
                return None
            del buffer[: self._remaining]
            return self._finish()
        return self._chunk()

    def _head(self, head: bytes) -> None:
        status_line, *lines = head.split(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"bad status line {status_line[:80]!r}")
        self._status = int(parts[1])
        self._close = False
        length: int | None = None
        for line in lines:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                length = _CHUNKED
            elif name == b"connection" and b"close" in value.lower():
                self._close = True
        if length is None:
            if self._status not in (204, 304) and self._status >= 200:
                raise ProtocolError(f"a {self._status} response without a length")
            length = 0
        self._remaining = length

    def _chunk(self) -> int | None:
        """One step of chunked framing: a size line, a chunk, or the trailer."""
        buffer = self._buffer
        end = buffer.find(b"\r\n")
        if end < 0:
            return None
        size = int(bytes(buffer[:end]).split(b";")[0], 16)
        if size:
            if len(buffer) < end + 2 + size + 2:
                return None
            del buffer[: end + 2 + size + 2]
            return 0
        trailer = buffer.find(b"\r\n\r\n", end)  # the last chunk, any trailer, a blank line
        if trailer < 0:
            return None
        del buffer[: trailer + 4]
        return self._finish()

    def _finish(self) -> int:
        self._remaining = _HEAD
        return self._status


class Connection(asyncio.Protocol):
    """One keep-alive connection of the pool, one request in flight at a time."""

    def __init__(self, generator: Generator) -> None:
        self.generator = generator
        self.transport: asyncio.Transport | None = None
        self.reader = ResponseReader()
        self.request = -1
        """The index of the request in flight; -1 when idle."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.generator.joined(self)

    def send(self, index: int, data: bytes) -> None:
        assert self.transport is not None
        self.request = index
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        try:
            responses = self.reader.feed(data)
        except (ProtocolError, ValueError) as error:
            self.generator.failed(self, str(error))
            self.transport.close()
            return
        for status, reusable in responses:
            if self.request < 0:
                self.generator.failed(self, f"a {status} response nobody asked for")
                continue
            self.generator.answered(self, status, reusable)
            if not reusable:
                self.transport.close()  # connection_lost opens another

    def connection_lost(self, exc: Exception | None) -> None:
        self.generator.lost(self, exc)


# --- the generator -----------------------------------------------------------------


class Generator:
    """Sends ``load``'s schedule over a pool of connections and records, per request,
    when it was intended, issued and answered."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.loop = asyncio.get_running_loop()
        self.requests = [request_bytes(t, load.host, load.port) for t in load.templates]
        rng = random.Random(load.seed)
        self.offsets = _offsets(load, rng)
        if not self.offsets:
            raise LoadError("no request falls within the run: raise the rate or the duration")
        count = len(self.offsets)
        self.measured = range(
            next((i for i, offset in enumerate(self.offsets) if offset >= load.warmup), count),
            count,
        )
        if load.order == "random":
            self.choices = [rng.randrange(len(self.requests)) for _ in range(count)]
        else:
            self.choices = [i % len(self.requests) for i in range(count)]
        nan = float("nan")
        self.intended = array("d", [nan]) * count
        self.lag = array("d", [nan]) * count
        self.answered_at = array("d", [nan]) * count
        self.status = array("H", [0]) * count
        """0 until answered: failed and unanswered requests keep it."""
        self.errors: list[str] = []
        self.connections: set[Connection] = set()
        self.idle: list[Connection] = []
        self.waiting: collections.deque[int] = collections.deque()
        self.waited = 0
        self.next = 0
        """The next request to issue."""
        self.finished = 0
        self.closing = False
        self.done = self.loop.create_future()
        self.tasks: set[asyncio.Task[None]] = set()
        self.alarm = Alarm()
        self.start = self.sent_at = math.nan
        self.cpu = self.sent_cpu = math.nan

    async def run(self) -> Result:
        await asyncio.gather(*(self._connect() for _ in range(self.load.connections)))
        if not self.idle:
            raise LoadError(f"no connection to {self.load.host}:{self.load.port}: {self.errors}")
        self.start = time.monotonic() + START_DELAY
        for index, offset in enumerate(self.offsets):
            self.intended[index] = self.start + offset
        cpu = time.process_time()
        self.loop.add_reader(self.alarm.fd, self._due)
        self.alarm.at(self.start)
        deadline = self.start + self.offsets[-1] + self.load.timeout
        try:
            await asyncio.wait_for(self.done, max(1.0, deadline - time.monotonic()))
        except TimeoutError:
            unanswered = self.next - self.finished
            self.errors.insert(0, f"{unanswered} requests unanswered after the timeout")
        finally:
            self.closing = True
            self.loop.remove_reader(self.alarm.fd)
            self.alarm.close()
            for connection in list(self.connections):
                assert connection.transport is not None
                connection.transport.close()
            await asyncio.sleep(0)  # let the transports report their closing
        self.cpu = (self.sent_cpu - cpu) / (self.sent_at - self.start)
        return self._result()

    async def _connect(self) -> None:
        try:
            await self.loop.create_connection(
                lambda: Connection(self), self.load.host, self.load.port
            )
        except OSError as error:
            self._error(f"connect: {error}")

    def _due(self) -> None:
        """The alarm fired: issue every request whose time has come, then set it for
        the next one."""
        self.alarm.clear()
        count = len(self.offsets)
        intended = self.intended
        while self.next < count and intended[self.next] <= (now := time.monotonic()):
            index = self.next
            self.next += 1
            self.lag[index] = now - intended[index]
            if self.idle:
                self.idle.pop().send(index, self.requests[self.choices[index]])
            else:
                self.waiting.append(index)
                if index in self.measured:
                    self.waited += 1
        if self.next < count:
            self.alarm.at(intended[self.next])
        else:
            self.sent_at, self.sent_cpu = time.monotonic(), time.process_time()
            self.loop.remove_reader(self.alarm.fd)
            self._check_done()

    # --- what the connections report ---

    def joined(self, connection: Connection) -> None:
        self.connections.add(connection)
        self._release(connection)

    def answered(self, connection: Connection, status: int, reusable: bool) -> None:
        index = connection.request
        self.answered_at[index] = time.monotonic()
        self.status[index] = status
        self.finished += 1
        if reusable:
            self._release(connection)
        else:
            connection.request = -1
            self._check_done()

    def failed(self, connection: Connection, reason: str) -> None:
        if connection.request >= 0:
            self.finished += 1
            connection.request = -1
        self._error(reason)

    def lost(self, connection: Connection, error: Exception | None) -> None:
        """A connection closed: fail its request, if any, and open another."""
        self.connections.discard(connection)
        if connection in self.idle:
            self.idle.remove(connection)
        if connection.request >= 0:
            self.failed(connection, f"connection lost: {error or 'closed by the server'}")
        if not self.closing:
            task = self.loop.create_task(self._connect())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        self._check_done()

    def _release(self, connection: Connection) -> None:
        connection.request = -1
        if self.waiting:
            index = self.waiting.popleft()
            connection.send(index, self.requests[self.choices[index]])
        else:
            self.idle.append(connection)
        self._check_done()

    def _error(self, reason: str) -> None:
        if len(self.errors) < ERROR_SAMPLES:
            self.errors.append(reason)

    def _check_done(self) -> None:
        if self.next == len(self.offsets) and self.finished == self.next and not self.done.done():
            self.done.set_result(None)

    # --- the result ---

    def _result(self) -> Result:
        answered = [i for i in self.measured if self.status[i]]
        latencies = sorted(self.answered_at[i] - self.intended[i] for i in answered)
        latencies += [math.inf] * (len(self.measured) - len(answered))  # failed, unanswered
        first = self.start + self.load.warmup
        last = max((self.answered_at[i] for i in answered), default=first)
        # Over the measured duration, or longer if the answers took longer to come.
        window = max(self.load.duration, last - first)
        lags = self.lag[self.measured.start :]
        late = sum(1 for lag in lags if lag > LAG_LIMIT) / max(1, len(lags))
        return Result(
            rate=self.load.rate,
            requests=len(latencies),
            completed=len(answered),
            achieved_rps=len(answered) / window,
            p50_ms=_percentile(latencies, 0.5) * 1e3,
            p99_ms=_percentile(latencies, 0.99) * 1e3,
            p999_ms=_percentile(latencies, 0.999) * 1e3,
            max_ms=_percentile(latencies, 1.0) * 1e3,
            unexpected=sum(1 for i in answered if self.status[i] // 100 != self.load.expected),
            errors=len(latencies) - len(answered),
            error_samples=self.errors,
            late=late,
            max_lag_ms=max(lags, default=0.0) * 1e3,
            cpu=self.cpu,
            waited=self.waited,
            invalid=self._invalid(late, len(latencies)),
        )

    def _invalid(self, late: float, requests: int) -> str | None:
        if not requests:
            return "no request in the measured window"
        if late > LATE_LIMIT:
            return f"the generator lagged: {late:.1%} of sends over {LAG_LIMIT * 1e3:g} ms late"
        if self.cpu > CPU_LIMIT:
            return f"the generator's CPU was saturated ({self.cpu:.0%} of a core)"
        return None


def _offsets(load: Load, rng: random.Random) -> list[float]:
    """Each request's intended send time, in seconds from the start."""
    end = load.warmup + load.duration
    if load.arrivals == "even":
        return [i / load.rate for i in range(math.ceil(end * load.rate))]
    offsets, offset = [], rng.expovariate(load.rate)
    while offset < end:
        offsets.append(offset)
        offset += rng.expovariate(load.rate)
    return offsets


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest rank: the smallest value with at least ``fraction`` of them at or below."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


# --- running it in its own process -------------------------------------------------


GENERATOR_NICE = -10
"""The generator's niceness where it may not run real-time but may raise its priority.
On two cores shared by the server, PostgreSQL and Redis, it must wake on time to send on
time. It uses a few per cent of a core, so the server loses next to nothing by it."""


def _scheduled_first() -> None:
    """Real-time scheduling (``SCHED_FIFO``, lowest priority) where allowed, else a
    higher priority, else as it is. The kernel's real-time throttling still leaves the
    other tasks 5 % of every second, should the generator ever spin."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (PermissionError, AttributeError, OSError):
        with contextlib.suppress(PermissionError):
            os.nice(GENERATOR_NICE)


def measure(load: Load) -> Result:
    """Run ``load`` in a generator process of its own (this interpreter) and return its
    result; :class:`LoadError` if the generator fails."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--load", "-"],
        input=msgspec.json.encode(load),
        capture_output=True,
        timeout=load.warmup + load.duration + load.timeout + 60,
        check=False,
        preexec_fn=_scheduled_first,
    )
    if done.returncode != 0:
        raise LoadError(f"the generator exited with {done.returncode}: {done.stderr.decode()}")
    return msgspec.json.decode(done.stdout, type=Result)


def generate(load: Load) -> Result:
    """Run ``load`` in this process, on uvloop if installed."""
    if load.rate <= 0 or load.duration <= 0 or load.connections < 1 or not load.templates:
        raise LoadError("a load needs a positive rate and duration, connections and templates")

    async def main() -> Result:
        return await Generator(load).run()

    gc.disable()  # a collection is a pause in sending; a run is short and makes no cycles
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(main())
    finally:
        gc.enable()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/openloop.py",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("url", nargs="?", help="http://host:port/path")
    parser.add_argument("--rate", type=float, default=1000, help="requests per second (1000)")
    parser.add_argument("--duration", type=float, default=5, help="seconds measured (5)")
    parser.add_argument("--warmup", type=float, default=1, help="seconds before that (1)")
    parser.add_argument("--connections", type=int, default=64, help="pool size (64)")
    parser.add_argument("--poisson", action="store_true", help="Poisson arrivals, not even")
    parser.add_argument("-X", "--method", default="GET")
    parser.add_argument("-H", "--header", action="append", default=[], help="'Name: value'")
    parser.add_argument("-d", "--body", default="")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--load", help="a Load as JSON in this file ('-': stdin); prints JSON")
    args = parser.parse_args(argv)
    if args.load is None and args.url is None:
        parser.error("give a URL (or --load)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.load is not None:
        source = sys.stdin.buffer.read() if args.load == "-" else Path(args.load).read_bytes()
        load = msgspec.json.decode(source, type=Load)
    else:
        url = urlsplit(args.url)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        headers = {
            name.strip(): value.strip()
            for name, _, value in (header.partition(":") for header in args.header)
        }
        load = Load(
            host=url.hostname or "127.0.0.1",
            port=url.port or 80,
            templates=[Template(path, args.method.upper(), headers, args.body)],
            rate=args.rate,
            duration=args.duration,
            warmup=args.warmup,
            connections=args.connections,
            arrivals="poisson" if args.poisson else "even",
        )
    try:
        result = generate(load)
    except LoadError as error:
        print(f"openloop: {error}", file=sys.stderr)
        return 1
    if args.load is not None or args.json:
        sys.stdout.buffer.write(msgspec.json.encode(result) + b"\n")
    else:
        print(summary(result))
    return 0


def summary(result: Result) -> str:
    """One line: rate, latencies, failures, and the generator's own health."""
    verdict = f"INVALID: {result.invalid}" if result.invalid else "valid"
    return (
        f"offered {result.rate:,.0f}/s achieved {result.achieved_rps:,.0f}/s; "
        f"p50 {result.p50_ms:.2f} p99 {result.p99_ms:.2f} p99.9 {result.p999_ms:.2f} "
        f"max {result.max_ms:.2f} ms; {result.requests:,} requests, {result.unexpected} "
        "unexpected, "
        f"{result.errors} errors {result.error_samples or ''}; waited for a connection "
        f"{result.waited}; late sends {result.late:.2%} (max {result.max_lag_ms:.2f} ms), "
        f"CPU {result.cpu:.0%}; {verdict}"
    )


if __name__ == "__main__":
    sys.exit(main())
