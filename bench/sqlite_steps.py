"""What one SQLite statement on aiosqlite's thread costs beside a busy event loop.

A gateway under load keeps its event loop's thread busy; a statement on aiosqlite's
thread needs the GIL back after every step SQLite takes (one per row of an
``executemany``, one per row fetched), and gets it only when the loop's thread lets go.
This inserts the same 5,000 rows three ways while a task keeps the loop busy (20 µs of
work, then a yield, over and over), and reports how long each took and how much of the
loop's time it cost:

* ``executemany``: one step per row;
* ``json_each``: the rows as one JSON document, one statement, one step
  (:mod:`tollway_link.bulk`'s way);
* ``json_each`` + ``RETURNING``: one statement, a step per row returned.

Run with ``python bench/sqlite_steps.py``; figures in docs/benchmarks.md ("SQLite's
writer without thread trips").
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite

ROWS = 5000
BUSY_US = 20
INSERT = "INSERT INTO t SELECT {} FROM json_each(?)".format(
    ", ".join(f"json_extract(value, '$[{at}]')" for at in range(4))
)


def spin(microseconds: float) -> None:
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


async def busy(done: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        spin(BUSY_US)
        done[0] += 1
        await asyncio.sleep(0)


async def loop_rate() -> float:
    done, stop = [0], asyncio.Event()
    task = asyncio.create_task(busy(done, stop))
    await asyncio.sleep(1.0)
    stop.set()
    await task
    return done[0] / 1.0


async def beside_busy_loop(work: Callable[[], Awaitable[None]], rate: float) -> tuple[float, float]:
    """Seconds ``work`` took, and seconds of the loop's work it cost."""
    done, stop = [0], asyncio.Event()
    task = asyncio.create_task(busy(done, stop))
    await asyncio.sleep(0.05)
    before, start = done[0], time.perf_counter()
    await work()
    took = time.perf_counter() - start
    served = done[0] - before
    stop.set()
    await task
    return took, took - served / rate


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = await aiosqlite.connect(Path(directory) / "steps.db")
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, a INT, b TEXT, c INT)")
        batch = [0]

        def rows() -> list[tuple[str, int, str, int]]:
            batch[0] += 1
            return [(f"{batch[0]}-{n}", n, "x" * 20, n % 7) for n in range(ROWS)]

        async def executemany() -> None:
            await db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows())
            await db.commit()

        async def json_each() -> None:
            await db.execute(INSERT, (json.dumps(rows()),))
            await db.commit()

        async def json_each_returning() -> None:
            sql = INSERT + " WHERE true ON CONFLICT DO NOTHING RETURNING id"
            cursor = await db.execute(sql, (json.dumps(rows()),))
            await cursor.fetchall()
            await db.commit()

        rate = await loop_rate()
        print(f"{ROWS:,} rows inserted beside a loop busy in {BUSY_US} µs slices:")
        for name, work in [
            ("executemany", executemany),
            ("json_each", json_each),
            ("json_each + RETURNING", json_each_returning),
        ]:
            took, cost = await beside_busy_loop(work, rate)
            print(f"  {name:<22} {took * 1000:9.1f} ms, the loop's time lost {cost * 1000:7.1f} ms")
        await db.close()


if __name__ == "__main__":
    asyncio.run(main())
