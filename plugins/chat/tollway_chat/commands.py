"""Operator commands of the chat product: ``tollway chat inboxes create``.

Inboxes are not created over the API (spec 2.1); operators create them here.
"""

from __future__ import annotations

import click
from sqlalchemy import select

from tollway import Account, Gateway
from tollway.cli import Choice, run_with_gateway
from tollway_chat.service import Chat

CHANNELS = ("live_chat", "email")


@click.group()
def chat() -> None:
    """Chat product administration."""


@chat.group()
def inboxes() -> None:
    """Chat inboxes."""


@inboxes.command("create")
@click.option("--account", type=int, required=True, metavar="ID", help="the account's id")
@click.option("--name", required=True, metavar="NAME", help="the inbox's name")
@click.option(
    "--channel", type=Choice(CHANNELS), required=True, help="how its messages reach contacts"
)
@click.option("--disabled", is_flag=True, help="create it disabled")
def create_inbox(account: int, name: str, channel: str, disabled: bool) -> None:
    """Create an inbox; prints its id."""
    # A mistake is a ValueError, which tollway prints as one line and exits 2 for.
    name = name.strip()
    if not name or "\x00" in name or len(name) > 200:
        raise ValueError("--name must be 1-200 characters and not blank")

    async def work(gateway: Gateway) -> int:
        async with gateway.database.transaction() as session:
            if await session.scalar(select(Account.id).where(Account.id == account)) is None:
                raise ValueError(f"account {account} not found")
            chat = Chat(session, account, gateway.webhooks)
            return await chat.create_inbox(name, channel, enabled=not disabled)

    print(run_with_gateway(work))
