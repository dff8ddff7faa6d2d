"""Operator commands of the chat product: ``tollway chat inboxes create``.

Inboxes are not created over the API (spec 2.1); operators create them here.
"""

from __future__ import annotations

import argparse
from typing import Any

from sqlalchemy import select

from tollway import Gateway
from tollway.cli import run_with_gateway
from tollway.db.models import Account
from tollway_chat.service import Chat

CHANNELS = ("live_chat", "email")


def create_inbox(args: argparse.Namespace) -> int:
    """Mistakes raise ``ValueError``: ``tollway`` prints ``tollway: <message>``, exits 2."""
    name = args.name.strip()
    if not name or "\x00" in name or len(name) > 200:
        raise ValueError("--name must be 1-200 characters and not blank")

    async def work(gateway: Gateway) -> int:
        async with gateway.database.transaction() as session:
            if await session.scalar(select(Account.id).where(Account.id == args.account)) is None:
                raise ValueError(f"account {args.account} not found")
            chat = Chat(session, args.account, gateway.webhooks)
            return await chat.create_inbox(name, args.channel, enabled=not args.disabled)

    print(run_with_gateway(args, work))
    return 0


def add_commands(commands: argparse._SubParsersAction[Any]) -> None:
    chat = commands.add_parser("chat", help="chat product administration")
    inboxes = chat.add_subparsers(dest="chat_command", required=True).add_parser(
        "inboxes", help="chat inboxes"
    )
    create = inboxes.add_subparsers(dest="inboxes_command", required=True).add_parser(
        "create", help="create an inbox; prints its id"
    )
    create.add_argument("--account", type=int, required=True, help="the account's id")
    create.add_argument("--name", required=True, help="the inbox's name")
    create.add_argument(
        "--channel", choices=CHANNELS, required=True, help="how its messages reach contacts"
    )
    create.add_argument("--disabled", action="store_true", help="create it disabled")
    create.set_defaults(handler=create_inbox)
