"""Calendar-correct billing periods."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from dateutil.relativedelta import relativedelta

Interval = Literal["month", "year"]
INTERVALS: tuple[Interval, ...] = ("month", "year")


def period_end(anchor: datetime, interval: Interval, cycle: int) -> datetime:
    """The end of period ``cycle`` (counted from 0) of a subscription anchored at
    ``anchor``: always computed from the anchor, so a Jan 31 anchor gives Feb 28 (29),
    then Mar 31, never drifting to the 28th."""
    steps = cycle + 1
    delta = relativedelta(months=steps) if interval == "month" else relativedelta(years=steps)
    return anchor + delta


def period_start(anchor: datetime, interval: Interval, cycle: int) -> datetime:
    return anchor if cycle == 0 else period_end(anchor, interval, cycle - 1)
