"""``tollway billing run``: the billing engine's due work, up to an instant."""

from __future__ import annotations

from datetime import UTC, datetime

import click
import msgspec

from tollway.cli.running import print_json, run_with_gateway


def _instant(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise click.BadParameter("give the time zone, e.g. 2027-01-31T00:00:00Z")
    return moment.astimezone(UTC)


@click.group()
def billing() -> None:
    """Run the billing engine's time-driven work."""


@billing.command("run")
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    callback=_instant,
    help="do what is due up to this ISO 8601 time (default: now); later than now moves "
    "billing's clock forward, like a test clock",
)
def run(as_of: datetime | None) -> None:
    """Renew, retry failed payments, end trials and cancel at periods' ends: everything
    due up to TIME, each at its own due time. Safe to run in several processes at once;
    prints what it did as JSON."""
    report = run_with_gateway(lambda gateway: gateway.billing.run_due(as_of))
    print_json(msgspec.to_builtins(report))
