"""The operator's commands: accounts, keys, the OpenAPI document, migrations and the
installed plugins."""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import click
import msgspec

from tollway.accounts import AccountError
from tollway.billing.platform import scheduled
from tollway.cli.billing import billing
from tollway.cli.running import (
    ProductPlan,
    configured_gateway,
    configured_settings,
    json_option,
    plugins_option,
    print_json,
    run_on,
    run_with_gateway,
)
from tollway.gateway import Gateway
from tollway.profiles import Profile

ACCOUNT_OPTION = click.option(
    "--account", type=int, required=True, metavar="ID", help="the account's id"
)


@click.group()
def accounts() -> None:
    """Manage accounts."""


@accounts.command("create")
@click.argument("name")
@click.option(
    "--subscribe",
    "subscriptions",
    multiple=True,
    type=ProductPlan(),
    help="subscribe it to a product's free plan (repeatable; default: no subscription)",
)
@click.option("--email", help="the account's email address (unique)")
@click.option("--full-name", "full_name", help="the account holder's name")
@click.option("--company", help="the company invoices are made out to")
@click.option("--tax-id", "tax_id", help="the company's tax id (VAT number...), on invoices")
def create_account(
    name: str,
    subscriptions: tuple[tuple[str, str], ...],
    email: str | None,
    full_name: str | None,
    company: str | None,
    tax_id: str | None,
) -> None:
    """Create an account named NAME (names and emails are unique); prints its id. Paid
    plans need a saved card: subscribe to them once the account has one."""

    async def create(gateway: Gateway) -> int:
        profile = Profile(
            email=email, full_name=full_name or "", company=company or "", tax_id=tax_id
        )
        return await gateway.accounts.create_account(name, dict(subscriptions), profile=profile)

    print(run_with_gateway(create))


@accounts.command("list")
@json_option
def list_accounts(as_json: bool) -> None:
    """List accounts and their active plans."""
    listed = run_with_gateway(lambda g: g.accounts.list_accounts())
    if as_json:
        print_json(listed)
        return
    for account in listed:
        plans = ",".join(f"{product}={plan}" for product, plan in account.active_plans.items())
        print(f"{account.id}\t{account.name}\t{account.created_at.isoformat()}\t{plans or '-'}")


@accounts.command("show")
@click.argument("account_id", type=int, metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="print a JSON object instead of lines")
def show_account(account_id: int, as_json: bool) -> None:
    """Show account ID and its subscriptions."""
    account = run_with_gateway(lambda g: g.accounts.account(account_id))
    if as_json:
        print_json(account)
        return
    print(f"id\t{account.id}\nname\t{account.name}\ncreated\t{account.created_at.isoformat()}")
    for field in ("email", "full_name", "company", "tax_id"):
        if value := getattr(account, field):
            print(f"{field}\t{value}")
    for subscription in account.subscriptions:
        print(f"subscription\t{subscription.product}\t{subscription.plan}\t{subscription.status}")


@accounts.command("subscribe")
@click.argument("account_id", type=int, metavar="ID")
@click.argument("subscription", type=ProductPlan(), metavar="PRODUCT=PLAN")
def subscribe(account_id: int, subscription: tuple[str, str]) -> None:
    """Subscribe account ID to a product's plan, PRODUCT=PLAN, replacing its current
    plan of that product. A paid plan's first period is charged to the account's
    default card now; moving to a cheaper plan takes effect at the period's end."""
    product, plan = subscription
    done = run_with_gateway(lambda g: g.accounts.subscribe(account_id, product, plan))
    when = scheduled(done, plan)
    if when is not None:
        print(
            f"account {account_id} moves to plan {plan} of {product} on {when.isoformat()}",
            file=sys.stderr,
        )
    else:
        print(f"subscribed account {account_id} to {product} on plan {plan}", file=sys.stderr)


@accounts.command("unsubscribe")
@click.argument("account_id", type=int, metavar="ID")
@click.argument("product")
@click.option(
    "--at-period-end",
    is_flag=True,
    help="keep the product until the end of the period paid for (default: end it now)",
)
def unsubscribe(account_id: int, product: str, at_period_end: bool) -> None:
    """Cancel account ID's subscription to PRODUCT."""
    done = run_with_gateway(
        lambda g: g.accounts.unsubscribe(account_id, product, at_period_end=at_period_end)
    )
    if at_period_end:
        print(
            f"account {account_id} keeps {product} until {done.current_period_end.isoformat()}",
            file=sys.stderr,
        )
    else:
        print(f"unsubscribed account {account_id} from {product}", file=sys.stderr)


@click.group()
def keys() -> None:
    """Manage API keys."""


@keys.command("create")
@ACCOUNT_OPTION
@click.option("--name", metavar="NAME", default="default", help="the key's name (default: default)")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="grant a registered scope (repeatable); a key needs one unless it is an admin key",
)
@click.option("--all-scopes", is_flag=True, help="grant every scope")
@click.option("--admin", is_flag=True, help="an admin key, which may manage the account's keys")
@click.option(
    "--expires-in", type=float, metavar="DAYS", help="expire after DAYS days (default: never)"
)
def create_key(
    account: int,
    name: str,
    scopes: tuple[str, ...],
    all_scopes: bool,
    admin: bool,
    expires_in: float | None,
) -> None:
    """Create a key; prints the full key, the only time it is shown."""
    expires = timedelta(days=expires_in) if expires_in is not None else None
    created = run_with_gateway(
        lambda g: g.accounts.create_key(
            account,
            name=name,
            scopes=list(scopes),
            all_scopes=all_scopes,
            admin=admin,
            expires_in=expires,
        )
    )
    print(created.key)


@keys.command("list")
@ACCOUNT_OPTION
@json_option
def list_keys(account: int, as_json: bool) -> None:
    """List an account's keys (their prefix only, never the secret)."""
    listed = run_with_gateway(lambda g: g.accounts.list_keys(account))
    if as_json:
        print_json(listed)
        return
    for key in listed:
        state = "revoked" if key.revoked_at else "active"
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        admin = " admin" if key.is_admin else ""
        print(
            f"{key.id}\t{key.prefix}\t{key.name}\t{state}{admin}\texpires {expiry}\t"
            f"{','.join(key.scopes)}"
        )


@keys.command("revoke")
@click.argument("key_id", type=int, metavar="KEY_ID")
def revoke_key(key_id: int) -> None:
    """Revoke the key KEY_ID (its id in keys list)."""
    if not run_with_gateway(lambda g: g.accounts.revoke_key(key_id)):
        raise AccountError(f"no active key with id {key_id}")
    print(f"revoked key {key_id}", file=sys.stderr)


@click.command()
@plugins_option
def openapi(plugins: list[str] | None) -> None:
    """Print the served OpenAPI document."""
    from tollway.app import create_app
    from tollway.openapi import served_document

    json.dump(served_document(create_app(configured_gateway(plugins))), sys.stdout, indent=2)
    print()


@click.group()
def db() -> None:
    """Database migrations."""


@db.command("upgrade")
def upgrade() -> None:
    """Apply all migrations."""
    run_on(Gateway(configured_settings()), Gateway.migrate, migrate=False)
    print("database is at the head of every migration branch", file=sys.stderr)


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


def _loaded_products(gateway: Gateway) -> list[PluginProduct]:
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
    return products


@click.command("plugins")
@json_option
def list_plugins(as_json: bool) -> None:
    """Installed plugins, scopes and events."""
    products = _loaded_products(configured_gateway())
    if as_json:
        print_json(products)
        return
    for listed in products:
        print(f"{listed.plugin}: product {listed.product} at {listed.prefix}")
        for scope in listed.scopes:
            print(f"  scope {scope.name}: {scope.description}")
        for event in listed.events:
            print(f"  event {event.name}: {event.description}")
        print(f"  plans {', '.join(listed.plans)}")


MANAGE_COMMANDS = (accounts, keys, openapi, db, list_plugins, billing)
