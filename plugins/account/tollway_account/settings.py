"""``[products.account.settings]``: what an operator can configure (operations.md
documents each setting)."""

from __future__ import annotations

import msgspec

MIN_CARD_SESSION_TTL = 5 * 60
MAX_CARD_SESSION_TTL = 24 * 60 * 60
MIN_INVOICE_PDF_TTL = 60
MAX_INVOICE_PDF_TTL = 7 * 24 * 60 * 60


class AccountSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    card_session_ttl: int = 60 * 60
    """Seconds a "Save a card" page can be used after the API made it, 300 (5 minutes)
    to 86,400 (24 hours); default an hour."""
    seller_name: str = "tollway"
    """Who bills the accounts: the seller named on every invoice."""
    seller_address: list[str] = msgspec.field(default_factory=list)
    """The seller's postal address on invoices, one line per item."""
    seller_email: str | None = None
    """The address invoices give for billing questions; none by default."""
    seller_tax_id: str | None = None
    """The seller's tax number (VAT id...) on invoices; none by default."""
    invoice_pdf_ttl: int = 60 * 60
    """Seconds an invoice's PDF link is valid, 60 to 604,800 (7 days); default an
    hour."""
    invoice_pdf_secret: str | None = None
    """Key signing invoices' PDF links. Unset, one is made at first use and kept in the
    database (deployment secret ``account_invoice_pdfs``), shared by every process;
    set it to rotate it (links given before stop working)."""

    def __post_init__(self) -> None:
        if not MIN_CARD_SESSION_TTL <= self.card_session_ttl <= MAX_CARD_SESSION_TTL:
            raise ValueError("card_session_ttl must be between 300 and 86400 seconds")
        if not MIN_INVOICE_PDF_TTL <= self.invoice_pdf_ttl <= MAX_INVOICE_PDF_TTL:
            raise ValueError("invoice_pdf_ttl must be between 60 and 604800 seconds")
