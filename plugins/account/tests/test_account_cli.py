"""``tollway accounts create`` with a profile, as an operator runs it: what it stores is
the profile ``GET /v1/account/me`` shows to a key ``tollway keys create`` made; a
taken or malformed email, or a value breaking a profile rule, is refused in one line
(exit 2) and creates nothing."""

from __future__ import annotations

from account_client import account_client, tollway

from tollway.testing import ProductClientFactory, Tenant
from tollway_account.product import PROFILE_READ

SUBSCRIPTIONS = ("--subscribe", "account=standard", "--subscribe", "chat=free")
PROFILE = (
    "--email",
    "Ops@Initech.Example",
    "--full-name",
    "Bill Lumbergh",
    "--company",
    "Initech LLC",
    "--tax-id",
    "US 12-3456789",
)


async def test_the_profile_created_is_the_one_the_api_shows(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        created = await tollway(
            account.gateway, "accounts", "create", "initech", *PROFILE, *SUBSCRIPTIONS
        )
        assert created.status == 0, created.stderr
        account_id = int(created.stdout)
        key = await tollway(
            account.gateway, "keys", "create", "--account", str(account_id), "--scope", PROFILE_READ
        )
        assert key.status == 0, key.stderr
        initech = Tenant(account_id, 0, key.stdout.strip())
        me = await account.call("GET", "/me", by=initech)
        assert {name: me[name] for name in ("id", "email", "full_name", "company", "tax_id")} == {
            "id": account_id,
            "email": "ops@initech.example",  # lowercased: one address, one spelling
            "full_name": "Bill Lumbergh",
            "company": "Initech LLC",
            "tax_id": "US 12-3456789",
        }
        assert me["products"] == ["account", "chat"]
        assert (await account.call("GET", "/me"))["email"] is None  # the owner's own


async def test_a_taken_or_malformed_value_is_refused(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        first = await tollway(account.gateway, "accounts", "create", "initech", *PROFILE)
        assert first.status == 0, first.stderr
        for args, says in [
            (
                ("initrode", "--email", "OPS@INITECH.example"),
                "an account with the email 'ops@initech.example' exists already",
            ),
            (("initrode", "--email", "ops@initech"), "email must be an address like"),
            (("initrode", "--tax-id", "US#1"), "tax_id must be letters and digits"),
        ]:
            refused = await tollway(account.gateway, "accounts", "create", *args)
            assert refused.status == 2, (args, refused.stderr)
            assert refused.stderr.startswith("tollway: "), refused.stderr
            assert refused.stderr.count("\n") == 1, refused.stderr  # one line, no traceback
            assert says in refused.stderr, (args, refused.stderr)
            assert refused.stdout == ""
        listed = await account.gateway.accounts.list_accounts()
        assert [item.name for item in listed] == ["acme", "globex", "initech"]
