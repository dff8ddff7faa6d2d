"""The subscription billing product's report for the analytics product,
``launchpad.subscriptions``: a workspace's customers' subscriptions started and ended
per day, week or month, and how many were active, bringing in how much a month, at the
end of each.

Subscriptions are the billing engine's, on the ``launchpad`` ledger
(:class:`tollway.billing.BillingSubscription`). Of each, the report reads:

* ``created_at``: when it started (when its trial started, for a plan with one);
* ``canceled_at``: when it ended, which the engine sets as the cancellation takes
  effect (at once; at the period's end for a cancellation asked for then; at the last
  failed try of a renewal). A cancellation waiting for the period's end is no end yet;
* ``trial_end_at``: until when it pays nothing;
* ``amount_cents`` and ``interval``: what it is billed, as it stands now. The engine
  keeps no history of a subscription's terms, so a plan change counts from its start
  (changing a plan's prices does not: a subscription keeps the price it was sold at).

The database sums, per day of the period (the report kit's :class:`tollway.local_day`)
and per interval and price, the subscriptions that started, ended and began to pay
that day, and counts those active and paying before the period; Python adds each day
to its bucket and carries the active ones and their monthly revenue from bucket to
bucket. Both statements read each subscription once, however many buckets the period
has: a year of days of 20,000 subscriptions takes 50 ms on PostgreSQL and 100 on
SQLite, where counting the subscriptions active at each bucket's end took 2 s.
"""

from __future__ import annotations

import asyncio
from fractions import Fraction
from typing import Any

from sqlalchemy import (
    Integer,
    String,
    bindparam,
    case,
    func,
    literal_column,
    or_,
    select,
    union_all,
)

from tollway import Column, Gateway, Period, Report, ReportData, local_day, utc_instant
from tollway.billing import BillingSubscription
from tollway_launchpad.product import LEDGER

MONTHS = {"month": 1, "year": 12}
"""A billing interval's length in months."""


def monthly(amount_cents: int, interval: str) -> int:
    """What ``amount_cents`` billed every ``interval`` brings in a month, in whole
    cents, half to even (a year's 12,006 is 1,000.5 a month: 1,000)."""
    return round(Fraction(amount_cents, MONTHS[interval]))


# Statements, built once ------------------------------------------------------------------

# The workspace and the range are written into the SQL as numbers, as the point of
# sale's reports write them (see tollway_pos.reports): each is planned for its own.
_ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
_START = bindparam("start", type_=Integer, literal_execute=True)
_END = bindparam("end", type_=Integer, literal_execute=True)
_SECONDS = bindparam("seconds", type_=Integer, literal_execute=True)
_ZONE = bindparam("zone", type_=String)
_FROM = utc_instant(_START)
_TO = utc_instant(_END)

_SUB = BillingSubscription
_OWNED = (_SUB.ledger == LEDGER, _SUB.account_id == _ACCOUNT)
_PAYS_FROM = func.coalesce(_SUB.trial_end_at, _SUB.created_at)
"""When a subscription's trial ends, or it starts without one."""
_PAID_BEFORE_ENDING = _SUB.canceled_at > _PAYS_FROM
"""It ended after its trial did (``NULL`` while it has not ended)."""
_EVER_PAYS = or_(_SUB.canceled_at.is_(None), _PAID_BEFORE_ENDING)
_ONE, _ZERO = literal_column("1", Integer), literal_column("0", Integer)


def _on_days(at: Any, new: Any, canceled: Any, paying: Any, *where: Any) -> Any:
    """The subscriptions whose ``at`` falls in the range: its ``local_day``, their
    interval and price, and what each adds to the day's new, canceled and paying."""
    return select(
        local_day(at, _ZONE, _START, _SECONDS).label("day"),
        _SUB.interval.label("interval"),
        _SUB.amount_cents.label("amount_cents"),
        new.label("new"),
        canceled.label("canceled"),
        paying.label("paying"),
    ).where(*_OWNED, at >= _FROM, at < _TO, *where)


_EVENTS = union_all(
    _on_days(_SUB.created_at, _ONE, _ZERO, _ZERO),
    _on_days(
        _SUB.canceled_at,
        _ZERO,
        _ONE,
        case((_PAID_BEFORE_ENDING, literal_column("-1", Integer)), else_=_ZERO),
    ),
    _on_days(_PAYS_FROM, _ZERO, _ZERO, _ONE, _EVER_PAYS),
).subquery()
CHANGES_BY_DAY = select(
    _EVENTS.c.day,
    _EVENTS.c.interval,
    _EVENTS.c.amount_cents,
    func.sum(_EVENTS.c.new),
    func.sum(_EVENTS.c.canceled),
    func.sum(_EVENTS.c.paying),
).group_by(_EVENTS.c.day, _EVENTS.c.interval, _EVENTS.c.amount_cents)
"""Per ``local_day`` from ``start`` to ``end``, interval and price: the workspace's
subscriptions started, ended, and paying from then on less those no longer paying."""

BEFORE = (
    select(
        _SUB.interval,
        _SUB.amount_cents,
        func.count(),
        func.count(case((_PAYS_FROM < _FROM, 1))),
    )
    .where(*_OWNED, _SUB.created_at < _FROM)
    .where(or_(_SUB.canceled_at.is_(None), _SUB.canceled_at >= _FROM))
    .group_by(_SUB.interval, _SUB.amount_cents)
)
"""Per interval and price, the workspace's subscriptions active at ``start``, and those
of them past their trial."""


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


# The report -----------------------------------------------------------------------------


async def subscriptions(gateway: Gateway, period: Period) -> ReportData:
    """``launchpad.subscriptions``, per bucket of ``period``:

    * ``new``: subscriptions started (``created_at``) on its days;
    * ``canceled``: subscriptions ended (``canceled_at``) on its days;
    * ``active``: subscriptions active at its end, the midnight after its last day in
      the period: started before it, and not ended before it (trialing and past due
      ones included, as the API's ``active`` has them). A bucket's ``active`` is the
      one before's, plus its ``new``, less its ``canceled``;
    * ``mrr``: what those of them past their trial then (``trial_end_at`` before that
      midnight, or none) are billed a month, in cents: a yearly price over 12, each
      rounded half to even (:func:`monthly`).

    Its summary: ``new`` and ``canceled`` over the period, ``active`` and ``mrr`` at
    its end. Money in the ledger's currency (the ``currency`` setting)."""
    reads = gateway.database.reads
    days = period.days
    params = days.params(period.account_id)
    changes, before = await asyncio.gather(
        reads.all(CHANGES_BY_DAY, _row, **params), reads.all(BEFORE, _row, **params)
    )
    series = period.series(
        (
            (day, new, canceled, new - canceled, paying * monthly(amount_cents, interval))
            for day, interval, amount_cents, new, canceled, paying in changes
        ),
        ("new", "canceled", "active", "mrr"),
        days,
    )
    active = sum(count for _, _, count, _ in before)
    mrr = sum(paying * monthly(amount, interval) for interval, amount, _, paying in before)
    for point in series:  # the day's changes, summed into their bucket, carried on
        active += point["active"]
        mrr += point["mrr"]
        point["active"], point["mrr"] = active, mrr
    return ReportData(
        summary={
            "new": sum(point["new"] for point in series),
            "canceled": sum(point["canceled"] for point in series),
            "active": active,
            "mrr": mrr,
        },
        series=series,
        currency=gateway.billing.ledger(LEDGER).currency,
    )


COLUMNS = (
    Column("new", "count", "New subscriptions"),
    Column("canceled", "count", "Canceled subscriptions"),
    Column("active", "count", "Active subscriptions"),
    Column("mrr", "money", "MRR"),
)
"""The summary's and each bucket's (the summary's ``new`` and ``canceled`` are the
period's, its ``active`` and ``mrr`` those at its end)."""

SUBSCRIPTIONS = Report(
    id="launchpad.subscriptions",
    name="Subscriptions",
    description=(
        "Subscriptions started and canceled per day, week or month, and the active "
        "ones and their monthly recurring revenue at the end of each."
    ),
    compute=subscriptions,
    summary=COLUMNS,
    series=COLUMNS,
)
"""The subscription billing product's report for the analytics product."""
