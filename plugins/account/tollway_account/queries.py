"""The account API's reads: one statement each, without a transaction
(:class:`tollway.Reads`), every one filtered by the caller's account, so another
account's invoice or card is simply not found.

What the account pays for is the billing engine's: subscriptions, invoices and cards on
the platform's ledger, customer :data:`~tollway.billing.TENANT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any, cast

from sqlalchemy import BindParameter, bindparam, select

from tollway import (
    MAX_ROW_ID,
    PAGE_LIMIT,
    PAGE_OFFSET,
    Account,
    NotFound,
    Paged,
    Plan,
    Reads,
    count_of,
)
from tollway.billing import (
    ADMITTED_PLANS,
    PLATFORM,
    TENANT,
    BillingInvoice,
    BillingPaymentMethod,
    BillingSubscription,
    PaymentMethod,
    major,
)
from tollway_account import schemas

ACCOUNT: BindParameter[int] = bindparam("account_id")

PROFILE = select(
    Account.id,
    Account.email,
    Account.full_name,
    Account.company,
    Account.tax_id,
    Account.created_at,
    Account.updated_at,
).where(Account.id == ACCOUNT)

_SUBSCRIPTION = BillingSubscription
SUBSCRIPTIONS = (
    select(
        _SUBSCRIPTION.id,
        _SUBSCRIPTION.line,
        _SUBSCRIPTION.plan,
        _SUBSCRIPTION.status,
        _SUBSCRIPTION.amount_cents,
        _SUBSCRIPTION.currency,
        _SUBSCRIPTION.interval,
        _SUBSCRIPTION.current_period_start,
        _SUBSCRIPTION.current_period_end,
        _SUBSCRIPTION.cancel_at_period_end,
        _SUBSCRIPTION.pending,
        _SUBSCRIPTION.created_at,
    )
    .where(
        _SUBSCRIPTION.ledger == PLATFORM,
        _SUBSCRIPTION.account_id == ACCOUNT,
        _SUBSCRIPTION.customer == TENANT,
        _SUBSCRIPTION.status != "canceled",
    )
    .order_by(_SUBSCRIPTION.line)
)

_OWN_INVOICES = (
    BillingInvoice.ledger == PLATFORM,
    BillingInvoice.account_id == ACCOUNT,
    BillingInvoice.customer == TENANT,
)
INVOICE_COLUMNS = (
    BillingInvoice.uid,
    BillingInvoice.number,
    BillingSubscription.line,
    BillingInvoice.description,
    BillingInvoice.status,
    BillingInvoice.amount_cents,
    BillingInvoice.currency,
    BillingInvoice.period_start,
    BillingInvoice.period_end,
    BillingInvoice.attempts,
    BillingInvoice.failure_message,
    BillingInvoice.created_at,
    BillingInvoice.finalized_at,
    BillingInvoice.paid_at,
    BillingInvoice.failed_at,
    BillingInvoice.voided_at,
    BillingInvoice.uncollectible_at,
)
_INVOICES = select(*INVOICE_COLUMNS).join(
    BillingSubscription, BillingSubscription.id == BillingInvoice.subscription_id
)
INVOICE_PAGE = Paged(
    _INVOICES.where(*_OWN_INVOICES)
    .order_by(BillingInvoice.id.desc())
    .offset(PAGE_OFFSET)
    .limit(PAGE_LIMIT),
    count_of(BillingInvoice, *_OWN_INVOICES),
)
INVOICE = _INVOICES.where(*_OWN_INVOICES, BillingInvoice.uid == bindparam("uid"))
INVOICE_LINES = select(BillingInvoice.lines).where(
    *_OWN_INVOICES, BillingInvoice.uid == bindparam("uid")
)

CARDS = (
    select(
        BillingPaymentMethod.id,
        BillingPaymentMethod.brand,
        BillingPaymentMethod.last4,
        BillingPaymentMethod.exp_month,
        BillingPaymentMethod.exp_year,
        BillingPaymentMethod.is_default,
        BillingPaymentMethod.created_at,
    )
    .where(
        BillingPaymentMethod.ledger == PLATFORM,
        BillingPaymentMethod.account_id == ACCOUNT,
        BillingPaymentMethod.customer == TENANT,
    )
    .order_by(BillingPaymentMethod.id)
)

CARD_PREFIX = "pm_"
INVOICE_NUMBER = "INV-{:06d}"


def card_id(reference: str) -> int | None:
    """The saved card's row id in a ``pm_<id>`` reference, or ``None``."""
    digits = reference.removeprefix(CARD_PREFIX)
    if reference.startswith(CARD_PREFIX) and digits.isascii() and digits.isdigit():
        value = int(digits)
        return value if 1 <= value <= MAX_ROW_ID else None
    return None


def invoice_not_found(invoice_id: str) -> NotFound:
    return NotFound(f"Invoice {invoice_id} not found")


def invoice_status(status: str, failed_at: datetime | None) -> schemas.InvoiceStatus:
    """The engine's status as the API says it: an open invoice whose last charge was
    refused is ``failed``."""
    if status == "open" and failed_at is not None:
        return "failed"
    return cast(schemas.InvoiceStatus, status)


def _day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


class InvoiceRow:
    """An invoice as read, before its PDF link is made (:meth:`wire`)."""

    __slots__ = ("columns",)

    def __init__(self, *columns: Any) -> None:
        self.columns = columns

    @property
    def uid(self) -> str:
        return cast(str, self.columns[0])

    def wire(self, pdf_url: str, expires_at: datetime) -> schemas.Invoice:
        (
            uid,
            number,
            product,
            description,
            status,
            amount_cents,
            currency,
            period_start,
            period_end,
            attempts,
            failure_message,
            created_at,
            finalized_at,
            paid_at,
            failed_at,
            voided_at,
            uncollectible_at,
        ) = self.columns
        return schemas.Invoice(
            id=uid,
            number=INVOICE_NUMBER.format(number or 0),
            product=product,
            description=description,
            status=invoice_status(status, failed_at),
            amount=major(amount_cents, currency),
            amount_cents=amount_cents,
            currency=currency,
            period_start=_day(period_start),
            period_end=_day(period_end),
            attempts=attempts,
            failure_message=failure_message,
            pdf_url=pdf_url,
            pdf_url_expires_at=expires_at,
            created_at=created_at,
            finalized_at=finalized_at,
            paid_at=paid_at,
            failed_at=failed_at,
            voided_at=voided_at,
            uncollectible_at=uncollectible_at,
        )


def _subscription(
    id: int,
    product: str,
    plan: str,
    status: Any,
    amount_cents: int,
    currency: str,
    interval: Any,
    current_period_start: datetime,
    current_period_end: datetime,
    cancel_at_period_end: bool,
    pending: Mapping[str, Any] | None,
    created_at: datetime,
) -> schemas.ProductSubscription:
    return schemas.ProductSubscription(
        id=id,
        product=product,
        plan_name=plan,
        status=status,
        price=major(amount_cents, currency),
        price_cents=amount_cents,
        currency=currency,
        interval=interval,
        current_period_start=current_period_start,
        current_period_end=current_period_end,
        cancel_at_period_end=cancel_at_period_end,
        scheduled_plan=pending.get("plan") if pending else None,
        created_at=created_at,
    )


def _card(
    id: int,
    brand: str,
    last4: str,
    exp_month: int,
    exp_year: int,
    is_default: bool,
    created_at: datetime,
) -> schemas.PaymentMethod:
    return schemas.PaymentMethod(
        id=f"{CARD_PREFIX}{id}",
        type="card",
        brand=brand,
        last4=last4,
        exp_month=exp_month,
        exp_year=exp_year,
        is_default=is_default,
        created_at=created_at,
    )


def headline_plan(admitted: Mapping[str, str], plans: Mapping[str, Mapping[str, Plan]]) -> str:
    """The richest plan among ``{product: plan}``: highest rank, then price, then name."""
    ranked = [
        (found.rank, found.price_cents, found.name)
        for product, name in admitted.items()
        if (found := plans.get(product, {}).get(name)) is not None
    ]
    return max(ranked)[2] if ranked else "none"


class AccountReads:
    """The caller's account, for reading (no transaction)."""

    def __init__(self, reads: Reads, account_id: int) -> None:
        self.reads = reads
        self.account_id = account_id

    async def profile(self, plans: Mapping[str, Mapping[str, Plan]]) -> schemas.Profile:
        row = await self.reads.first(PROFILE, _tuple, account_id=self.account_id)
        if row is None:  # deleted while its key was cached
            raise NotFound("Account not found")
        admitted = dict(await self.reads.all(ADMITTED_PLANS, _tuple, account_id=self.account_id))
        id, email, full_name, company, tax_id, created_at, updated_at = row
        return schemas.Profile(
            id=id,
            email=email,
            full_name=full_name,
            company=company,
            tax_id=tax_id,
            products=sorted(admitted),
            plan=headline_plan(admitted, plans),
            created_at=created_at,
            updated_at=updated_at,
        )

    async def subscriptions(self) -> list[schemas.ProductSubscription]:
        return await self.reads.all(SUBSCRIPTIONS, _subscription, account_id=self.account_id)

    async def invoice_page(self, *, offset: int, limit: int) -> tuple[list[InvoiceRow], int]:
        return await self.reads.page(
            INVOICE_PAGE, InvoiceRow, account_id=self.account_id, offset=offset, limit=limit
        )

    async def invoice(self, uid: str) -> InvoiceRow | None:
        return await self.reads.first(INVOICE, InvoiceRow, account_id=self.account_id, uid=uid)

    async def invoice_lines(self, uid: str) -> list[dict[str, Any]]:
        lines = await self.reads.scalar(INVOICE_LINES, account_id=self.account_id, uid=uid)
        return list(lines or [])

    async def cards(self) -> list[schemas.PaymentMethod]:
        return await self.reads.all(CARDS, _card, account_id=self.account_id)


def _tuple(*columns: Any) -> tuple[Any, ...]:
    return columns


def wire_card(method: PaymentMethod) -> schemas.PaymentMethod:
    """A saved card of the engine's as the API shows it."""
    return _card(
        method.id,
        method.brand,
        method.last4,
        method.exp_month,
        method.exp_year,
        method.is_default,
        method.created_at,
    )
