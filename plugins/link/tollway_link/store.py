"""Storing clicks: one transaction per batch, each click once, with its pre-aggregates.

A batch of enriched clicks (:meth:`tollway_link.capture.Enricher.enrich`'s rows) is
written in one transaction:

1. the batch's links are locked (``FOR NO KEY UPDATE`` on PostgreSQL, in id order, so
   two writers never deadlock; on SQLite the transaction takes the database's write
   lock first, :meth:`tollway.Database.lock_for_writing`, so that its few reads run on
   the event loop's thread, and sends its writes to the driver's thread in one trip,
   :meth:`tollway.Database.run_writes`) and the clicks of links deleted meanwhile are
   dropped;
2. the clicks not stored yet are inserted, and only those count (``ON CONFLICT (id) DO
   NOTHING RETURNING id`` on PostgreSQL; looked up first on SQLite): a batch written
   twice (a retry after a lost commit, a Redis entry delivered again) stores and counts
   each click once;
3. from the new clicks only: each link's ``clicks`` counter (bots and ``HEAD`` left
   out) and the pre-aggregates of :mod:`tollway_link.models` the analytics read.

Visitor counts are kept exact by looking at each new (visitor, 15-minute bucket)
pair's neighbours among the visitor's other buckets (:class:`~tollway_link.models.Visit`):
the pair counts with its gap to the visitor's previous bucket, changes the gap of the
visitor's next bucket (:class:`~tollway_link.models.VisitGaps`), and moves the
visitor's first or latest click when it is earlier or later
(:class:`~tollway_link.models.VisitorBounds`). Clicks may arrive in any order. Because
the links are locked for the transaction, no other writer changes a link's visitors in
between.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    BindParameter,
    Integer,
    and_,
    bindparam,
    func,
    select,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from tollway import Database, Write
from tollway_link.bulk import (
    Row,
    Writes,
    document,
    json_rows,
    json_table,
    rows_of,
    table,
    writes,
)
from tollway_link.models import Click, Link, Visit

BUCKET_SECONDS = 900
"""A bucket is 15 minutes: every zone's midnight is on one (offsets of :30 and :45)."""
DAY = 96
"""Buckets in 24 hours."""
LONGEST_DAY = 104
"""Buckets in the longest day whose visitors the gaps count (26 hours: Antarctica/Troll
moves its clocks by two hours); a longer one's are counted from its clicks. A gap is
stored as at most this many buckets."""
DIMENSIONS = ("referrer", "country", "device")


def bucket_of(moment: datetime) -> int:
    """The 15-minute UTC bucket of an aware ``moment``."""
    return int(moment.timestamp()) // BUCKET_SECONDS


VisitorKey = tuple[int, str]
"""``(link_id, visitor)``"""
Bounds = tuple[int, int] | None
"""A visitor's first and last buckets, if any."""


_VISITS = table(Visit).c
_LOW: BindParameter[int] = bindparam("low", type_=Integer)
_HIGH: BindParameter[int] = bindparam("high", type_=Integer)


def _visits_of(keys: Any) -> tuple[Any, Any]:
    """The two reads of the batch's visitors' buckets, ``keys`` a table of the batch's
    ``(link_id, visitor)``: those within a day of the batch's buckets (``low`` to
    ``high``), and each visitor's first and last, of all its buckets and of those with
    a click of a person."""
    visits = select(_VISITS.link_id, _VISITS.visitor).select_from(
        keys.join(
            table(Visit),
            and_(_VISITS.link_id == keys.c.link_id, _VISITS.visitor == keys.c.visitor),
        )
    )
    nearby = visits.add_columns(_VISITS.bucket, _VISITS.bot).where(
        _VISITS.bucket.between(_LOW, _HIGH)
    )
    person = ~_VISITS.bot
    bounds = visits.add_columns(
        func.min(_VISITS.bucket),
        func.max(_VISITS.bucket),
        func.min(_VISITS.bucket).filter(person),
        func.max(_VISITS.bucket).filter(person),
    ).group_by(_VISITS.link_id, _VISITS.visitor)
    return nearby, bounds


@dataclass(frozen=True, slots=True)
class _Reads:
    """A batch's reads: their keys from one JSON parameter (as :mod:`tollway_link.bulk`
    writes), so each statement is compiled and prepared once whatever the batch's size
    and each key is looked up by the primary key; their rows back as one
    :func:`~tollway_link.bulk.document`."""

    live_links: Any
    """The batch's links that still exist, locked in id order on PostgreSQL (``FOR NO
    KEY UPDATE``, so two writers never deadlock; SQLite has one writer anyway)."""
    nearby_visits: Any
    visit_bounds: Any


@functools.cache
def _reads(dialect: str) -> _Reads:
    ids = json_table("ids", {"id": "integer"}, dialect)
    live = (
        select(Link.id)
        .where(Link.id.in_(select(ids.c.id)))
        .order_by(Link.id)
        .with_for_update(key_share=True)
    )
    keys = json_table("keys", {"link_id": "integer", "visitor": "text"}, dialect)
    nearby, bounds = _visits_of(keys)
    return _Reads(
        live_links=document(live, dialect),
        nearby_visits=document(nearby, dialect),
        visit_bounds=document(bounds, dialect),
    )


async def _read(connection: AsyncConnection, query: Any, parameters: dict[str, Any]) -> list[Any]:
    return rows_of((await connection.execute(query, parameters)).scalar_one())


async def store(database: Database, rows: Sequence[dict[str, Any]]) -> int:
    """Store a batch of enriched clicks in one transaction; how many were new."""
    unique = list({row["id"]: row for row in reversed(rows)}.values())
    if not unique:
        return 0
    dialect = database.engine.dialect
    batch, reads = writes(dialect), _reads(dialect.name)
    async with database.transaction() as session:
        # On SQLite: the write lock first, so the reads below run on the loop.
        await database.lock_for_writing(session)
        connection = await session.connection()
        links = json_rows([[link] for link in {row["link_id"] for row in unique}])
        live = {link for (link,) in await _read(connection, reads.live_links, {"ids": links})}
        kept = [row for row in unique if row["link_id"] in live]
        if not kept:
            return 0
        inserted, clicks = await batch.new_clicks(connection, _clicks(kept, dialect))
        new = [row for row in kept if row["id"] in inserted]
        if not new:
            return 0
        aggregates = _Aggregates()
        aggregates.count(new)
        await aggregates.count_visitors(connection, reads, new)
        # On SQLite in one trip to the driver's thread: SQLite's part of storing a
        # batch (the indexes and upserts) then runs beside the redirects, not on their
        # thread.
        await database.run_writes(connection, clicks + aggregates.writes(batch))
        return len(new)


_CLICK_COLUMNS = itemgetter(*table(Click).c.keys())


def _clicks(rows: Sequence[dict[str, Any]], dialect: Dialect) -> list[Row]:
    """The ``link_clicks`` rows of enriched clicks, ``clicked_at`` as ``dialect`` takes it."""
    stored = table(Click).c.clicked_at.type.dialect_impl(dialect).bind_processor(dialect)
    assert stored is not None, "UTCDateTime processes every value"
    return [_CLICK_COLUMNS(row | {"clicked_at": stored(row["clicked_at"])}) for row in rows]


def _gap(before: int | None, bucket: int) -> int:
    """The gap stored for a visit in ``bucket`` after the visitor's previous one in
    ``before`` (``None``: none within :data:`LONGEST_DAY`)."""
    return LONGEST_DAY if before is None else min(bucket - before, LONGEST_DAY)


class _Aggregates:
    """What one batch's new clicks add to the pre-aggregates."""

    def __init__(self) -> None:
        self.clicks: Counter[int] = Counter()
        self.traffic: Counter[tuple[int, int, bool]] = Counter()
        self.breakdown: Counter[tuple[int, int, int, str, str, bool]] = Counter()
        self.gaps: Counter[tuple[int, bool, int, int]] = Counter()
        """Visits added (or, as a visitor's next visit gets a shorter gap, moved) per
        (link, include_bots, bucket, gap)."""
        self.bounds: Counter[tuple[int, bool, str, int]] = Counter()
        self.visits: list[Row] = []
        """New ``link_visits`` rows."""
        self.counted_visits: list[Row] = []
        """``(link, visitor, bucket)`` where the visitor had only bots' clicks and now
        has a person's."""

    def count(self, rows: Sequence[dict[str, Any]]) -> None:
        # Counter.update counts an iterable in C: a row costs a key, not a call.
        clicks = [(row, bucket_of(row["clicked_at"])) for row in rows]
        self.clicks.update(row["link_id"] for row in rows if not row["bot"])
        self.traffic.update((row["link_id"], bucket, row["bot"]) for row, bucket in clicks)
        for dimension in DIMENSIONS:
            for buckets in (1, DAY):
                self.breakdown.update(
                    (
                        row["link_id"],
                        buckets,
                        bucket - bucket % buckets,
                        dimension,
                        row[dimension],
                        row["bot"],
                    )
                    for row, bucket in clicks
                )

    async def count_visitors(
        self, connection: AsyncConnection, reads: _Reads, rows: Sequence[dict[str, Any]]
    ) -> None:
        """Add the batch's new (visitor, bucket) pairs to both counts: every click's
        (``include_bots``), and the counted clicks' (no bot)."""
        pairs: dict[VisitorKey, dict[int, bool]] = {}
        for row in rows:
            buckets = pairs.setdefault((row["link_id"], row["visitor"]), {})
            bucket = bucket_of(row["clicked_at"])
            buckets[bucket] = buckets.get(bucket, True) and row["bot"]
        spread = [bucket for found in pairs.values() for bucket in found]
        keys = {"keys": json_rows(list(pairs))}
        nearby: dict[VisitorKey, dict[int, bool]] = {}
        window = {"low": min(spread) - LONGEST_DAY, "high": max(spread) + LONGEST_DAY}
        for link, visitor, bucket, bot in await _read(
            connection, reads.nearby_visits, keys | window
        ):
            nearby.setdefault((link, visitor), {})[bucket] = bool(bot)
        bounds: dict[VisitorKey, tuple[Bounds, Bounds]] = {
            (link, visitor): (
                (first, last),
                None if first_counted is None else (first_counted, last_counted),
            )
            for link, visitor, first, last, first_counted, last_counted in await _read(
                connection, reads.visit_bounds, keys
            )
        }
        for key, new in pairs.items():
            self._add_visits(key, nearby.get(key, {}), bounds.get(key, (None, None)), new)

    def _add_visits(
        self,
        key: VisitorKey,
        known: dict[int, bool],
        bounds: tuple[Bounds, Bounds],
        new: dict[int, bool],
    ) -> None:
        """Add the visitor's ``new`` buckets (each: whether only bots clicked), given
        its buckets ``known`` within :data:`LONGEST_DAY` of the batch's (the same) and
        the ``bounds`` of all it has, with bots and without."""
        link, visitor = key
        every = sorted(known)
        counted = sorted(bucket for bucket, bot in known.items() if not bot)
        every_bounds, counted_bounds = bounds
        for bucket, bot in sorted(new.items()):
            was = known.get(bucket)
            if was is None:
                every_bounds = self._enter(link, True, every, every_bounds, bucket)
                self.visits.append((link, visitor, bucket, bot))
            if not bot and was is not False:
                counted_bounds = self._enter(link, False, counted, counted_bounds, bucket)
                if was:
                    self.counted_visits.append((link, visitor, bucket))
            known[bucket] = bot and was is not False

    def _enter(
        self, link: int, include_bots: bool, known: list[int], bounds: Bounds, bucket: int
    ) -> Bounds:
        """A visitor's new ``bucket`` in one count, ``known`` its buckets within
        :data:`LONGEST_DAY` of the batch's there (kept sorted, the new one added); its
        bounds there afterwards."""
        at = bisect_left(known, bucket)
        # A visitor with no bucket known before this one had none within LONGEST_DAY.
        before = known[at - 1] if at else None
        self.gaps[link, include_bots, bucket, _gap(before, bucket)] += 1
        if at < len(known):
            after = known[at]
            self.gaps[link, include_bots, after, _gap(before, after)] -= 1
            self.gaps[link, include_bots, after, _gap(bucket, after)] += 1
        known.insert(at, bucket)
        if bounds is None:
            self.bounds[link, include_bots, "first", bucket] += 1
            self.bounds[link, include_bots, "last", bucket] += 1
            return bucket, bucket
        if bucket < bounds[0]:
            self.bounds[link, include_bots, "first", bounds[0]] -= 1
            self.bounds[link, include_bots, "first", bucket] += 1
            return bucket, bounds[1]
        if bucket > bounds[1]:
            self.bounds[link, include_bots, "last", bounds[1]] -= 1
            self.bounds[link, include_bots, "last", bucket] += 1
            return bounds[0], bucket
        return bounds

    def writes(self, batch: Writes) -> list[Write]:
        """The batch's writes to the pre-aggregates."""
        return [
            *batch.write(batch.count_clicks, sorted(self.clicks.items())),
            *batch.write(batch.add_traffic, [(*key, n) for key, n in self.traffic.items()]),
            *batch.write(batch.add_breakdown, [(*key, n) for key, n in self.breakdown.items()]),
            *batch.write(batch.insert_visits, self.visits),
            *batch.write(batch.count_visits, self.counted_visits),
            *batch.write(batch.add_visit_gaps, [(*key, n) for key, n in self.gaps.items() if n]),
            *batch.write(
                batch.add_visitor_bounds, [(*key, n) for key, n in self.bounds.items() if n]
            ),
        ]
