"""The operator's commands: accounts, keys, the OpenAPI document, migrations and the
installed plugins."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from typing import Any

import msgspec

from tollway.accounts import AccountError
from tollway.cli.running import (
    JSON_OPTION,
    configured_gateway,
    print_json,
    product_plan,
    run_on,
    run_with_gateway,
)
from tollway.gateway import Gateway
from tollway.settings import load_settings


def cmd_accounts_create(args: argparse.Namespace) -> int:
    subscriptions = dict(args.subscribe)
    print(run_with_gateway(args, lambda g: g.accounts.create_account(args.name, subscriptions)))
    return 0


def cmd_accounts_list(args: argparse.Namespace) -> int:
    accounts = run_with_gateway(args, lambda g: g.accounts.list_accounts())
    if args.json:
        print_json(accounts)
        return 0
    for account in accounts:
        plans = ",".join(f"{product}={plan}" for product, plan in account.active_plans.items())
        print(f"{account.id}\t{account.name}\t{account.created_at.isoformat()}\t{plans or '-'}")
    return 0


def cmd_accounts_show(args: argparse.Namespace) -> int:
    account = run_with_gateway(args, lambda g: g.accounts.account(args.account_id))
    if args.json:
        print_json(account)
        return 0
    print(f"id\t{account.id}\nname\t{account.name}\ncreated\t{account.created_at.isoformat()}")
    for subscription in account.subscriptions:
        print(f"subscription\t{subscription.product}\t{subscription.plan}\t{subscription.status}")
    return 0


def cmd_accounts_subscribe(args: argparse.Namespace) -> int:
    product, plan = args.subscription
    run_with_gateway(args, lambda g: g.accounts.subscribe(args.account_id, product, plan))
    print(f"subscribed account {args.account_id} to {product} on plan {plan}", file=sys.stderr)
    return 0


def cmd_accounts_unsubscribe(args: argparse.Namespace) -> int:
    run_with_gateway(args, lambda g: g.accounts.unsubscribe(args.account_id, args.product))
    print(f"unsubscribed account {args.account_id} from {args.product}", file=sys.stderr)
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    expires = timedelta(days=args.expires_in) if args.expires_in is not None else None
    created = run_with_gateway(
        args,
        lambda g: g.accounts.create_key(
            args.account,
            name=args.name,
            scopes=args.scope,
            all_scopes=args.all_scopes,
            admin=args.admin,
            expires_in=expires,
        ),
    )
    print(created.key)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    keys = run_with_gateway(args, lambda g: g.accounts.list_keys(args.account))
    if args.json:
        print_json(keys)
        return 0
    for key in keys:
        state = "revoked" if key.revoked_at else "active"
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        admin = " admin" if key.is_admin else ""
        print(
            f"{key.id}\t{key.prefix}\t{key.name}\t{state}{admin}\texpires {expiry}\t"
            f"{','.join(key.scopes)}"
        )
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    if not run_with_gateway(args, lambda g: g.accounts.revoke_key(args.key_id)):
        raise AccountError(f"no active key with id {args.key_id}")
    print(f"revoked key {args.key_id}", file=sys.stderr)
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    from tollway.app import create_app
    from tollway.openapi import served_document

    json.dump(served_document(create_app(configured_gateway(args))), sys.stdout, indent=2)
    print()
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    run_on(Gateway(load_settings(args.config)), Gateway.migrate, migrate=False)
    print("database is at the head of every migration branch", file=sys.stderr)
    return 0


class PluginItem(msgspec.Struct):
    name: str
    description: str


class PluginProduct(msgspec.Struct):
    """One loaded product in ``tollway plugins --json``."""

    plugin: str
    product: str
    prefix: str
    scopes: list[PluginItem]
    events: list[PluginItem]
    plans: list[str]


def cmd_plugins(args: argparse.Namespace) -> int:
    gateway = configured_gateway(args)
    registry = gateway.registry
    products = []
    for name, product in sorted(registry.products.items()):
        plugin = registry.owners[f"product:{name}"]
        scopes = [
            PluginItem(s.name, s.description)
            for s in registry.scopes.values()
            if s.plugin == plugin
        ]
        events = [
            PluginItem(e.name, e.description)
            for e in registry.events.values()
            if e.plugin == plugin
        ]
        plans = list(gateway.plans.get(name, {}))
        products.append(PluginProduct(plugin, name, product.prefix, scopes, events, plans))
    if args.json:
        print_json(products)
        return 0
    for listed in products:
        print(f"{listed.plugin}: product {listed.product} at {listed.prefix}")
        for scope in listed.scopes:
            print(f"  scope {scope.name}: {scope.description}")
        for event in listed.events:
            print(f"  event {event.name}: {event.description}")
        print(f"  plans {', '.join(listed.plans)}")
    return 0


def add_account_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """``accounts create|list|show|subscribe|unsubscribe``."""
    accounts = commands.add_parser("accounts", help="manage accounts").add_subparsers(
        dest="action", required=True
    )
    create_account = accounts.add_parser("create", help="create an account; prints its id")
    create_account.add_argument("name", help="unique account name")
    create_account.add_argument(
        "--subscribe",
        action="append",
        default=[],
        type=product_plan,
        metavar="PRODUCT=PLAN",
        help="subscribe it to a product's plan (repeatable; default: no subscription)",
    )
    create_account.set_defaults(handler=cmd_accounts_create)
    list_accounts = accounts.add_parser("list", help="list accounts and their active plans")
    list_accounts.add_argument("--json", **JSON_OPTION)
    list_accounts.set_defaults(handler=cmd_accounts_list)
    show = accounts.add_parser("show", help="show an account and its subscriptions")
    show.add_argument("account_id", type=int, metavar="ID", help="the account's id")
    show.add_argument("--json", action="store_true", help="print a JSON object instead of lines")
    show.set_defaults(handler=cmd_accounts_show)
    subscribe = accounts.add_parser(
        "subscribe", help="subscribe an account to a product's plan, replacing its current plan"
    )
    subscribe.add_argument("account_id", type=int, metavar="ID", help="the account's id")
    subscribe.add_argument(
        "subscription", type=product_plan, metavar="PRODUCT=PLAN", help="a product's plan"
    )
    subscribe.set_defaults(handler=cmd_accounts_subscribe)
    unsubscribe = accounts.add_parser(
        "unsubscribe", help="cancel an account's subscription to a product"
    )
    unsubscribe.add_argument("account_id", type=int, metavar="ID", help="the account's id")
    unsubscribe.add_argument("product", help="the product's name")
    unsubscribe.set_defaults(handler=cmd_accounts_unsubscribe)


def add_key_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """``keys create|list|revoke``."""
    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(
        dest="action", required=True
    )
    create_key = keys.add_parser("create", help="create a key; prints the full key once")
    create_key.add_argument(
        "--account", type=int, required=True, metavar="ID", help="the account's id"
    )
    create_key.add_argument("--name", default="default", help="the key's name")
    create_key.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="grant a registered scope (repeatable); a key needs one unless it is an admin key",
    )
    create_key.add_argument("--all-scopes", action="store_true", help="grant every scope")
    create_key.add_argument(
        "--admin", action="store_true", help="an admin key, which may manage the account's keys"
    )
    create_key.add_argument(
        "--expires-in",
        type=float,
        metavar="DAYS",
        help="expire after DAYS days (default: never)",
    )
    create_key.set_defaults(handler=cmd_keys_create)
    list_keys = keys.add_parser("list", help="list an account's keys (prefix only)")
    list_keys.add_argument(
        "--account", type=int, required=True, metavar="ID", help="the account's id"
    )
    list_keys.add_argument("--json", **JSON_OPTION)
    list_keys.set_defaults(handler=cmd_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id", type=int, metavar="KEY_ID", help="the key's id (keys list)")
    revoke.set_defaults(handler=cmd_keys_revoke)
