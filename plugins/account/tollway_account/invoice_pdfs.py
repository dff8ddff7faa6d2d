"""Invoice PDFs: the signed, expiring links the invoice list gives, and the keyless
route serving them, ``/account/invoices/<invoice id>/pdf?expires=&signature=``.

A link is HMAC-SHA256(deployment secret ``account_invoice_pdfs``, ``<invoice id>.
<account id>.<expires>``): bound to the invoice and to the account it belongs to,
valid until ``expires`` (epoch seconds, ``invoice_pdf_ttl`` after it was made,
rounded up to the minute so one list read twice in a minute gives the same links).
An expired or altered link is a 403; the PDF is rendered on each request from the
invoice as it stands (its status, paid date), the same bytes for the same invoice
(hence the ``ETag``), off the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter
from litestar.response import Response
from sqlalchemy import bindparam, select

from tollway import (
    Account,
    Forbidden,
    Gateway,
    NotFound,
    PublicOrigin,
    deployment_secret,
    etag_matches,
    signature,
    visitor_access,
)
from tollway.billing import BillingInvoice
from tollway_account.invoice_pdf import InvoiceDocument, InvoiceLine, Party, render_invoice
from tollway_account.product import ANONYMOUS, INVOICES
from tollway_account.queries import AccountReads, InvoiceRow, invoice_not_found
from tollway_account.settings import AccountSettings

SECRET = "account_invoice_pdfs"
INVOICE_ID = re.compile(r"in_[0-9a-f]{24}")
SIGNATURE = re.compile(r"[A-Za-z0-9_-]{43}")
MAX_EXPIRES = 2**53
EXPIRED = "This invoice link has expired: list the invoices again for a new one"
FORGED = "This invoice link is not valid"

OWNER = select(BillingInvoice.account_id).where(BillingInvoice.uid == bindparam("uid"))
BUYER = select(
    Account.name, Account.email, Account.full_name, Account.company, Account.tax_id
).where(Account.id == bindparam("account_id"))


class InvoicePdfs:
    """Signs invoices' PDF links and renders the PDFs (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.settings = gateway.product_settings(AccountSettings)
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)
        self._key: bytes | None = None

    async def _signature(self, uid: str, account_id: int, expires: int) -> str:
        if self._key is None:
            secret = self.settings.invoice_pdf_secret
            secret = secret or await deployment_secret(self.gateway.database, SECRET)
            self._key = secret.encode()
        return signature(self._key, uid, account_id, expires)

    async def link(self, scope: Any, uid: str, account_id: int) -> tuple[str, datetime]:
        """The invoice's PDF link on the gateway's public origin, and when it expires."""
        now = int(datetime.now(UTC).timestamp())
        expires = -(-(now + self.settings.invoice_pdf_ttl) // 60) * 60
        signature = await self._signature(uid, account_id, expires)
        url = (
            f"{self.origin.of(scope)}{INVOICES.prefix}/{uid}/pdf"
            f"?expires={expires}&signature={signature}"
        )
        return url, datetime.fromtimestamp(expires, UTC)

    async def pdf(self, uid: str, expires: int, signature: str) -> tuple[str, bytes]:
        """The invoice's number and PDF, if the link is valid (403 when it is not)."""
        reads = self.gateway.database.reads
        account_id = None
        if INVOICE_ID.fullmatch(uid) and SIGNATURE.fullmatch(signature):
            account_id = await reads.scalar(OWNER, uid=uid)
        expected = await self._signature(uid, account_id or 0, expires)
        if account_id is None or not hmac.compare_digest(expected, signature):
            raise Forbidden(FORGED)
        if expires <= datetime.now(UTC).timestamp():
            raise Forbidden(EXPIRED)
        account = AccountReads(reads, account_id)
        row = await account.invoice(uid)
        if row is None:
            raise invoice_not_found(uid)
        document = await self._document(account, row)
        return document.number, await asyncio.to_thread(render_invoice, document)

    async def _document(self, account: AccountReads, row: InvoiceRow) -> InvoiceDocument:
        invoice = row.wire("", datetime.now(UTC))
        buyer = await account.reads.first(BUYER, _buyer, account_id=account.account_id)
        if buyer is None:
            raise NotFound("Account not found")
        lines = await account.invoice_lines(row.uid)
        settings = self.settings
        return InvoiceDocument(
            number=invoice.number,
            status=invoice.status,
            issued_at=invoice.finalized_at or invoice.created_at,
            paid_at=invoice.paid_at,
            period_start=invoice.period_start,
            period_end=invoice.period_end,
            currency=invoice.currency,
            seller=Party(
                settings.seller_name,
                tuple(settings.seller_address),
                settings.seller_email,
                settings.seller_tax_id,
            ),
            buyer=buyer,
            lines=[_line(line, invoice.currency) for line in lines],
            total_cents=invoice.amount_cents,
        )


def _buyer(name: str, email: str | None, full_name: str, company: str, tax_id: str | None) -> Party:
    """Invoices are made out to the company, for the attention of the account holder;
    without a company, to the holder (or the account's name)."""
    holder = full_name or name
    if company:
        return Party(company, (holder,), email, tax_id)
    return Party(holder, (), email, tax_id)


def _line(line: dict[str, Any], currency: str) -> InvoiceLine:
    return InvoiceLine(
        description=str(line.get("description", "")),
        period_start=datetime.fromisoformat(line["period_start"]).astimezone(UTC).date(),
        period_end=datetime.fromisoformat(line["period_end"]).astimezone(UTC).date(),
        amount_cents=int(line.get("amount_cents", 0)),
    )


InvoiceId = Annotated[str, PathParameter(max_length=64, description="The invoice's id.")]
Expires = Annotated[
    int, QueryParameter(ge=0, le=MAX_EXPIRES, description="When the link expires (epoch s).")
]
Signature = Annotated[str, QueryParameter(max_length=128, description="The link's signature.")]


@get(
    "/{invoice_id:str}/pdf",
    access=visitor_access(
        ANONYMOUS, "pdfs_per_minute", counter="pdfs", what="invoice PDF requests"
    ),
    media_type="application/pdf",
)
async def invoice_pdf(
    request: Request[Any, Any, Any],
    invoice_id: InvoiceId,
    expires: Expires,
    signature: Signature,
    invoice_pdfs: NamedDependency[InvoicePdfs],
) -> Response[bytes]:
    """The invoice's PDF; 403 for an expired or altered link; 304 when the copy the
    client has (``If-None-Match``) is still the invoice as it stands."""
    number, pdf = await invoice_pdfs.pdf(invoice_id, expires, signature)
    etag = f'"{hashlib.sha256(pdf).hexdigest()[:32]}"'
    headers = {
        "cache-control": "private, no-cache",
        "etag": etag,
        "content-disposition": f'inline; filename="{number}.pdf"',
        "x-content-type-options": "nosniff",
    }
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(b"", status_code=304, headers=headers, media_type="application/pdf")
    return Response(pdf, headers=headers, media_type="application/pdf")


PDF_ROUTES = [invoice_pdf]
PDF_DEPENDENCIES: dict[str, Any] = {"invoice_pdfs": InvoicePdfs}
