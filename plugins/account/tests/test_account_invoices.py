"""``GET /v1/account/invoices`` (and one by id): the account's own invoices, newest
first, a page at a time, numbered gaplessly across the deployment; their PDFs behind
signed, expiring links that need no key."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from account_client import DECLINING_CARD, GOOD_CARD, AccountClient, account_client
from pypdf import PdfReader

from tollway.billing import CardError, period_end
from tollway.testing import ProductClientFactory
from tollway_account.invoice_pdfs import EXPIRED, FORGED, InvoicePdfs
from tollway_account.product import INVOICES

INVOICE_FIELDS = {
    "id",
    "number",
    "product",
    "description",
    "status",
    "amount",
    "amount_cents",
    "currency",
    "period_start",
    "period_end",
    "attempts",
    "failure_message",
    "pdf_url",
    "pdf_url_expires_at",
    "created_at",
    "finalized_at",
    "paid_at",
    "failed_at",
    "voided_at",
    "uncollectible_at",
}
SELLER: dict[str, Any] = {
    "seller_name": "Tollway Platform Ltd",
    "seller_address": ["1 Example Street", "London EC1A 1AA"],
    "seller_email": "billing@tollway.example",
    "seller_tax_id": "GB123456789",
}
BUYER = {"full_name": "Jane Roe", "company": "Acme Widgets GmbH", "tax_id": "DE811907980"}


def day(moment: str) -> str:
    return datetime.fromisoformat(moment).astimezone(UTC).date().isoformat()


def without_link(invoice: dict[str, Any]) -> dict[str, Any]:
    """An invoice but its PDF link, which is made anew on each read."""
    return {name: value for name, value in invoice.items() if not name.startswith("pdf_url")}


def pdf_text(body: bytes) -> str:
    return PdfReader(io.BytesIO(body)).pages[0].extract_text()


async def test_newest_first_a_page_at_a_time(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        await account.save_card()
        await account.subscribe("chat", "pro")
        chat = await account.subscription("chat")
        start = datetime.fromisoformat(chat["current_period_start"])
        await account.run(period_end(start, "month", 24))  # 25 renewals
        first = await account.call("GET", "/invoices")
        assert (first["total"], first["page"], first["limit"]) == (26, 1, 20)
        second = await account.call("GET", "/invoices", params={"page": 2})
        listed = first["invoices"] + second["invoices"]
        assert [item["number"] for item in listed] == [f"INV-{n:06d}" for n in range(26, 0, -1)]
        starts = [item["period_start"] for item in listed]
        assert starts == sorted(starts, reverse=True)
        assert starts[-1] == day(chat["current_period_start"])
        assert len(await account.invoices(limit=50)) == 26
        assert [item["number"] for item in await account.invoices(page=3, limit=10)] == [
            f"INV-{n:06d}" for n in range(6, 0, -1)
        ]
        beyond = await account.call("GET", "/invoices", params={"page": 4, "limit": 10})
        assert (beyond["invoices"], beyond["total"]) == ([], 26)
        for wrong in ({"limit": 51}, {"limit": 0}, {"page": 0}, {"limit": "ten"}):
            await account.call("GET", "/invoices", params=wrong, expect=400)
        assert await account.invoices(by=account.other) == []


async def test_numbers_are_gapless_across_the_deployment(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        other = account.other
        await account.save_card()
        await account.subscribe("chat", "pro")
        await account.save_card(DECLINING_CARD, by=other)
        with pytest.raises(CardError):  # declined: no invoice, and no number taken
            await account.subscribe("chat", "pro", by=other)
        await account.save_card(GOOD_CARD, by=other)
        await account.subscribe("chat", "pro", by=other)
        await account.subscribe("code", "pro")
        renewals = [await account.subscription("chat", by=who) for who in (account.owner, other)]
        ends = [subscription["current_period_end"] for subscription in renewals]
        await account.run(datetime.fromisoformat(max(ends)))
        mine = [item["number"] for item in await account.invoices()]
        theirs = [item["number"] for item in await account.invoices(by=other)]
        assert (len(mine), len(theirs)) == (3, 2)
        assert sorted(mine + theirs) == [f"INV-{n:06d}" for n in range(1, 6)]
        assert mine[-1] == "INV-000001"  # the owner subscribed first
        assert theirs[-1] == "INV-000002"


async def test_an_invoice_and_who_may_read_it(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        await account.save_card()
        await account.subscribe("chat", "pro")
        chat = await account.subscription("chat")
        [invoice] = await account.invoices()
        assert set(invoice) == INVOICE_FIELDS
        assert {
            name: invoice[name]
            for name in ("product", "description", "status", "amount", "amount_cents", "currency")
        } == {
            "product": "chat",
            "description": "chat pro (monthly)",
            "status": "paid",
            "amount": 29.0,
            "amount_cents": 2900,
            "currency": "usd",
        }
        assert invoice["period_start"] == day(chat["current_period_start"])
        assert invoice["period_end"] == day(chat["current_period_end"])
        assert invoice["paid_at"] == invoice["finalized_at"] == invoice["created_at"]
        assert (invoice["attempts"], invoice["failure_message"]) == (1, None)
        assert [invoice[name] for name in ("failed_at", "voided_at", "uncollectible_at")] == [
            None
        ] * 3
        path = f"/invoices/{invoice['id']}"
        assert without_link(await account.call("GET", path)) == without_link(invoice)
        refused = await account.call("GET", path, by=account.other, expect=404)
        assert refused["detail"] == f"Invoice {invoice['id']} not found"
        await account.call("GET", "/invoices/in_000000000000000000000000", expect=404)
        await account.call("GET", "/invoices/INV-000001", expect=404)


async def test_the_pdf_opens_without_a_key(product_client: ProductClientFactory) -> None:
    async with account_client(product_client, settings=SELLER) as account:
        await account.call("PATCH", "/me", json=BUYER)
        await account.save_card()
        await account.subscribe("chat", "pro")
        [invoice] = await account.invoices()
        assert invoice["pdf_url"].startswith(f"http://testserver{INVOICES.prefix}/{invoice['id']}")
        opened = await account.client.get(invoice["pdf_url"])  # no key
        assert opened.status_code == 200, opened.text
        assert opened.headers["content-type"] == "application/pdf"
        assert 'filename="INV-000001.pdf"' in opened.headers["content-disposition"]
        text = pdf_text(opened.content)
        period = f"{invoice['period_start']} \N{EN DASH} {invoice['period_end']}"
        for shown in [
            *SELLER["seller_address"],
            SELLER["seller_name"],
            SELLER["seller_email"],
            f"Tax ID: {SELLER['seller_tax_id']}",
            BUYER["company"],
            BUYER["full_name"],
            f"Tax ID: {BUYER['tax_id']}",
            "INV-000001",
            f"Service period {period}",
            f"chat pro (monthly) {period} $29.00",
            "Total $29.00",
            f"Paid on {day(invoice['paid_at'])}",
        ]:
            assert shown in text, (shown, text)


async def signed(account: AccountClient, invoice_id: str, expires: int) -> str:
    """The invoice's PDF path with a link signed as the gateway signs them."""
    pdfs = account.gateway.service(InvoicePdfs)
    signature = await pdfs._signature(invoice_id, account.owner.account_id, expires)
    return f"{INVOICES.prefix}/{invoice_id}/pdf?expires={expires}&signature={signature}"


async def test_an_altered_borrowed_or_expired_link_is_403(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        await account.save_card()
        await account.subscribe("chat", "pro")
        await account.subscribe("code", "pro")
        code, chat = await account.invoices()
        url = urlsplit(chat["pdf_url"])
        query = {name: values[0] for name, values in parse_qs(url.query).items()}
        expires, signature = int(query["expires"]), query["signature"]
        borrowed = parse_qs(urlsplit(code["pdf_url"]).query)["signature"][0]
        flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
        for forged in [
            {"expires": expires, "signature": flipped},
            {"expires": expires, "signature": borrowed},
            {"expires": expires + 60, "signature": signature},
            {"expires": expires, "signature": ""},
        ]:
            refused = await account.client.get(url.path, params=forged)
            assert (refused.status_code, refused.json()["detail"]) == (403, FORGED), forged
        moved = await account.client.get(
            f"{INVOICES.prefix}/{code['id']}/pdf",
            params={"expires": expires, "signature": signature},
        )
        assert (moved.status_code, moved.json()["detail"]) == (403, FORGED)
        now = int(datetime.now(UTC).timestamp())
        assert (
            await account.client.get(await signed(account, chat["id"], now + 60))
        ).status_code == 200
        expired = await account.client.get(await signed(account, chat["id"], now - 1))
        assert (expired.status_code, expired.json()["detail"]) == (403, EXPIRED)
        assert (await account.client.get(chat["pdf_url"])).status_code == 200


async def test_the_etag_follows_the_invoice(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        await account.call("PATCH", "/me", json=BUYER)
        await account.save_card()
        await account.subscribe("chat", "pro")
        [invoice] = await account.invoices()
        first = await account.client.get(invoice["pdf_url"])
        etag = first.headers["etag"]
        unchanged = await account.client.get(invoice["pdf_url"], headers={"If-None-Match": etag})
        assert (unchanged.status_code, unchanged.content) == (304, b"")
        assert unchanged.headers["etag"] == etag
        stale = await account.client.get(invoice["pdf_url"], headers={"If-None-Match": '"0"'})
        assert (stale.status_code, stale.content) == (200, first.content)
        await account.call("PATCH", "/me", json={"company": "Acme Holdings SE"})
        changed = await account.client.get(invoice["pdf_url"], headers={"If-None-Match": etag})
        assert changed.status_code == 200
        assert changed.headers["etag"] != etag
        assert "Acme Holdings SE" in pdf_text(changed.content)
