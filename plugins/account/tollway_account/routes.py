"""HTTP handlers of the account and billing API (``/v1/account``), but the "save a
card" setup's (:mod:`tollway_account.card_setup`).

Reading handlers receive ``account_reads``, the caller's account read without a
transaction. What the account pays for is the billing engine's, on the platform's
ledger (:mod:`tollway.billing.platform`): its subscriptions are what the gateway
admits its keys by. Another account's invoice or card is a 404, like an unknown one.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, delete, get, patch
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    CurrentCaller,
    CurrentGateway,
    NotFound,
    Page,
    Reads,
    UnprocessableEntity,
    offset,
    page_limit,
)
from tollway.billing import TENANT
from tollway_account import schemas
from tollway_account.card_setup import SETUP_DEPENDENCIES, SETUP_ROUTES
from tollway_account.invoice_pdfs import PDF_DEPENDENCIES, InvoicePdfs
from tollway_account.product import (
    BILLING_READ,
    BILLING_WRITE,
    LEDGER,
    PROFILE_READ,
    PROFILE_WRITE,
    SUBSCRIPTIONS_READ,
)
from tollway_account.profile import update_profile
from tollway_account.queries import AccountReads, InvoiceRow, card_id, invoice_not_found, wire_card

InvoiceId = Annotated[str, PathParameter(max_length=64, description="The invoice's id.")]
PaymentMethodId = Annotated[
    str, PathParameter(max_length=32, description="The saved card's id (``pm_...``).")
]


def provide_account_reads(reads: NamedDependency[Reads], caller: CurrentCaller) -> AccountReads:
    """The caller's account for reading (``account_reads``): no transaction."""
    return AccountReads(reads, caller.principal.account_id)


def _card_not_found(reference: str) -> NotFound:
    return NotFound(f"Payment method {reference} not found")


# Profile --------------------------------------------------------------------------------


@get("/me", scope=PROFILE_READ)
async def get_profile(
    account_reads: NamedDependency[AccountReads], gateway: CurrentGateway
) -> schemas.Profile:
    return await account_reads.profile(gateway.plans)


@patch("/me", scope=PROFILE_WRITE)
async def change_profile(
    data: JSONBody[schemas.ProfileChange],
    caller: CurrentCaller,
    transaction: NamedDependency[AsyncSession],
) -> schemas.ProfileUpdated:
    """Only the fields given change; a value breaking its rule is a 422."""
    return await update_profile(transaction, caller.principal.account_id, data)


# Subscriptions --------------------------------------------------------------------------


@get("/subscriptions", scope=SUBSCRIPTIONS_READ)
async def list_subscriptions(
    account_reads: NamedDependency[AccountReads],
) -> schemas.SubscriptionList:
    """The account's product subscriptions that are not over, by product."""
    return schemas.SubscriptionList(await account_reads.subscriptions())


# Invoices -------------------------------------------------------------------------------


async def _with_link(
    request: Request[Any, Any, Any], pdfs: InvoicePdfs, row: InvoiceRow, account_id: int
) -> schemas.Invoice:
    url, expires_at = await pdfs.link(request.scope, row.uid, account_id)
    return row.wire(url, expires_at)


@get("/invoices", scope=BILLING_READ)
async def list_invoices(
    request: Request[Any, Any, Any],
    caller: CurrentCaller,
    account_reads: NamedDependency[AccountReads],
    invoice_pdfs: NamedDependency[InvoicePdfs],
    page: Page = 1,
    limit: Annotated[int, page_limit(50)] = 20,
) -> schemas.InvoiceList:
    """Newest first."""
    rows, total = await account_reads.invoice_page(offset=offset(page, limit), limit=limit)
    account_id = caller.principal.account_id
    invoices = [await _with_link(request, invoice_pdfs, row, account_id) for row in rows]
    return schemas.InvoiceList(invoices=invoices, total=total, page=page, limit=limit)


@get("/invoices/{invoice_id:str}", scope=BILLING_READ)
async def get_invoice(
    request: Request[Any, Any, Any],
    invoice_id: InvoiceId,
    caller: CurrentCaller,
    account_reads: NamedDependency[AccountReads],
    invoice_pdfs: NamedDependency[InvoicePdfs],
) -> schemas.Invoice:
    row = await account_reads.invoice(invoice_id)
    if row is None:
        raise invoice_not_found(invoice_id)
    return await _with_link(request, invoice_pdfs, row, caller.principal.account_id)


# Payment methods ------------------------------------------------------------------------


@get("/payment-methods", scope=BILLING_READ)
async def list_payment_methods(
    account_reads: NamedDependency[AccountReads],
) -> schemas.PaymentMethodList:
    """The account's saved cards, oldest first; exactly one is the default."""
    return schemas.PaymentMethodList(await account_reads.cards())


@patch("/payment-methods/{payment_method_id:str}", scope=BILLING_WRITE)
async def change_payment_method(
    payment_method_id: PaymentMethodId,
    data: JSONBody[schemas.PaymentMethodChange],
    caller: CurrentCaller,
    gateway: CurrentGateway,
) -> schemas.PaymentMethod:
    """Make the card the default: renewals charge it, and the account's unpaid
    invoices are tried with it at once."""
    if not data.is_default:
        raise UnprocessableEntity(
            "A card stops being the default when another becomes it: set is_default "
            "to true on that card"
        )
    method_id = card_id(payment_method_id)
    if method_id is None:
        raise _card_not_found(payment_method_id)
    account_id = caller.principal.account_id
    async with gateway.database.transaction() as session:
        wallet = gateway.billing.wallet(session, LEDGER, account_id)
        try:
            method = await wallet.set_default(TENANT, method_id)
        except NotFound:
            raise _card_not_found(payment_method_id) from None
    await gateway.billing.collect(LEDGER, account_id, TENANT)
    return wire_card(method)


@delete("/payment-methods/{payment_method_id:str}", scope=BILLING_WRITE)
async def remove_payment_method(
    payment_method_id: PaymentMethodId,
    caller: CurrentCaller,
    gateway: CurrentGateway,
    transaction: NamedDependency[AsyncSession],
) -> None:
    """204; the last card of an account paying for a subscription cannot be removed
    (409): add another first. Removing the default makes the newest other card it."""
    method_id = card_id(payment_method_id)
    if method_id is None:
        raise _card_not_found(payment_method_id)
    wallet = gateway.billing.wallet(transaction, LEDGER, caller.principal.account_id)
    try:
        await wallet.remove(TENANT, method_id)
    except NotFound:
        raise _card_not_found(payment_method_id) from None


ROUTES = [
    get_profile,
    change_profile,
    list_subscriptions,
    list_invoices,
    get_invoice,
    list_payment_methods,
    change_payment_method,
    remove_payment_method,
    *SETUP_ROUTES,
]
DEPENDENCIES: dict[str, Any] = {
    "account_reads": provide_account_reads,
    **PDF_DEPENDENCIES,
    **SETUP_DEPENDENCIES,
}
