"""Migration 0003: the visit gaps computed from the visits already stored are the ones
the click store writes, and the downgrade's day windows count each window's visitors."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from zoneinfo import ZoneInfo

from clicks_client import open_clicks
from sqlalchemy import text
from test_link_analytics import counted, expected, made_up, utc

import tollway_link
from tollway.testing import ProductClientFactory, revision, run_revision
from tollway_link.analytics import Analytics
from tollway_link.store import store


def _windows(visits: list[tuple[str, int, bool]], include_bots: bool) -> Counter[tuple[int, int]]:
    """The distinct visitors of every window (length, first bucket) holding a visit,
    counted one by one."""
    seen: dict[tuple[int, int], set[str]] = {}
    for visitor, bucket, bot in visits:
        if bot and not include_bots:
            continue
        for length in (92, 96, 100):
            for start in range(bucket - length + 1, bucket + 1):
                seen.setdefault((length, start), set()).add(visitor)
    return Counter({window: len(visitors) for window, visitors in seen.items()})


async def test_the_gaps_of_stored_visits_and_the_windows_back(
    product_client: ProductClientFactory,
) -> None:
    migration = revision(tollway_link, "0003_link_visit_gaps.py")
    now = utc("2026-11-10T12:07:00")
    async with open_clicks(product_client, isolated=True) as link:
        public_id, key = await link.link()
        clicks = made_up(now, seed=3)[:300]
        rows = [click.row(key, link.owner.account_id) for click in clicks]
        random.Random(5).shuffle(rows)
        for n in range(0, len(rows), 41):
            await store(link.gateway.database, rows[n : n + 41])
        engine = link.gateway.database.engine
        gaps = text("SELECT include_bots, bucket, gap, visitors FROM link_visit_gaps")
        async with engine.connect() as connection:
            written = {
                (bool(bots), bucket, gap): n
                for bots, bucket, gap, n in await connection.execute(gaps)
                if n
            }
            visits = [
                (visitor, bucket, bool(bot))
                for visitor, bucket, bot in await connection.execute(
                    text("SELECT visitor, bucket, bot FROM link_visits")
                )
            ]
        assert sum(written.values()) == len(visits) + sum(not bot for _, _, bot in visits)

        await run_revision(engine, migration, "downgrade")
        async with engine.connect() as connection:
            for include_bots in (False, True):
                windows = Counter(
                    {
                        (length, 96 * day - shift): n
                        for length, shift, day, n in await connection.execute(
                            text(
                                "SELECT buckets, shift, day, visitors FROM link_day_visitors"
                                " WHERE include_bots = :bots"
                            ),
                            {"bots": include_bots},
                        )
                    }
                )
                assert windows == _windows(visits, include_bots)

        await run_revision(engine, migration, "upgrade")
        async with engine.connect() as connection:
            migrated = {
                (bool(bots), bucket, gap): n
                for bots, bucket, gap, n in await connection.execute(gaps)
            }
        assert migrated == written

        # The analytics read the migrated gaps as they read the written ones.
        reader = Analytics(
            link.gateway.database.reads, link.owner.account_id, "", link.gateway.geoip
        )
        tz = ZoneInfo("America/New_York")
        today = now.astimezone(tz).date()
        answer = await reader.of(public_id, "90d", tz, False, now)
        assert counted(answer) == expected(clicks, tz, today - timedelta(days=89), today, False)
