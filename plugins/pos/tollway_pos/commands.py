"""Operator commands of the point of sale product: ``tollway pos catalog import``."""

from __future__ import annotations

from pathlib import Path

import click
from sqlalchemy import select

from tollway import Account, Gateway
from tollway.cli import run_with_gateway
from tollway_pos.catalog_import import import_catalog, read_catalog
from tollway_pos.live import Live
from tollway_pos.settings import PosSettings


@click.group("pos")
def pos_commands() -> None:
    """Point of sale administration."""


@pos_commands.group()
def catalog() -> None:
    """A store's catalog."""


@catalog.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--account", type=int, required=True, metavar="ID", help="the store's account id")
def import_command(file: Path, account: int) -> None:
    """Create or update the store's categories and products from FILE (JSON)."""
    # A mistake is a ValueError, which tollway prints as one line and exits 2 for.
    content = read_catalog(file.read_bytes())

    async def work(gateway: Gateway) -> str:
        async with gateway.database.transaction() as session:
            if await session.scalar(select(Account.id).where(Account.id == account)) is None:
                raise ValueError(f"account {account} not found")
            imported = await import_catalog(
                session,
                account,
                content,
                settings=gateway.product_settings(PosSettings),
                webhooks=gateway.webhooks,
                live=gateway.service(Live),
            )
        return (
            f"categories: {imported.categories_created} created, "
            f"{imported.categories_updated} updated; products: "
            f"{imported.products_created} created, {imported.products_updated} updated"
        )

    print(run_with_gateway(work))
