"""Operator commands of the subscription billing product: ``tollway launchpad plans
create``, for setting a workspace's plans up without a key (a deployment's seed)."""

from __future__ import annotations

import click
import msgspec
from sqlalchemy import select

from tollway import Account, ApiError, Gateway
from tollway.cli import run_with_gateway
from tollway_launchpad import schemas
from tollway_launchpad.service import Plans


@click.group()
def launchpad() -> None:
    """Subscription billing administration."""


@launchpad.group()
def plans() -> None:
    """A workspace's plans."""


def _quota(entries: tuple[str, ...]) -> dict[str, int]:
    """``users=5 storage_gb=100`` as ``{"users": 5, "storage_gb": 100}``."""
    quota: dict[str, int] = {}
    for entry in entries:
        name, equals, value = entry.partition("=")
        if not equals or not value.strip().lstrip("-").isdigit():
            raise ValueError(f"--quota {entry!r}: write NAME=INTEGER, e.g. users=5")
        quota[name.strip()] = int(value)
    return quota


def _plan_create(**fields: object) -> schemas.PlanCreate:
    """The fields as the API's body, checked by the same rules (a mistake is one line)."""
    try:
        return msgspec.convert(fields, schemas.PlanCreate)
    except msgspec.ValidationError as error:
        raise ValueError(str(error).replace("Invalid request body: ", "")) from None


@plans.command("create")
@click.option("--account", type=int, required=True, metavar="ID", help="the workspace's account id")
@click.option("--name", required=True, help="the plan's name, shown to customers")
@click.option("--slug", required=True, help="its handle: lowercase words joined by hyphens")
@click.option("--monthly-cents", type=int, required=True, help="the monthly price, in cents")
@click.option("--annual-cents", type=int, required=True, help="the annual price, in cents")
@click.option("--trial-days", type=int, default=0, show_default=True, help="0 to 365")
@click.option("--feature", "features", multiple=True, metavar="TEXT", help="repeat for each")
@click.option("--quota", "quota", multiple=True, metavar="NAME=N", help="repeat: users=5")
@click.option("--sort-order", type=int, default=0, show_default=True, help="listing order")
@click.option("--inactive", is_flag=True, help="create it not for sale")
def create_plan(
    account: int,
    name: str,
    slug: str,
    monthly_cents: int,
    annual_cents: int,
    trial_days: int,
    features: tuple[str, ...],
    quota: tuple[str, ...],
    sort_order: int,
    inactive: bool,
) -> None:
    """Create a plan; prints it as JSON."""
    data = _plan_create(
        name=name,
        slug=slug,
        price_monthly_cents=monthly_cents,
        price_annual_cents=annual_cents,
        trial_days=trial_days,
        features=list(features),
        quota=_quota(quota),
        is_active=not inactive,
        sort_order=sort_order,
    )

    async def work(gateway: Gateway) -> schemas.Plan:
        async with gateway.database.transaction() as session:
            if await session.scalar(select(Account.id).where(Account.id == account)) is None:
                raise ValueError(f"account {account} not found")
            try:
                return await Plans(session, account).create(data)
            except ApiError as error:  # a taken slug, a blank name: the API's 409 and 400
                raise ValueError(error.message.replace("Invalid request body: ", "")) from None

    print(msgspec.json.encode(run_with_gateway(work)).decode())
