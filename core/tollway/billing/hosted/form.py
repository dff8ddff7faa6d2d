"""A hosted card page's form as it is posted: read by the page itself, so that every
refusal, even of a body that is not a form at all, is one of its HTML pages.

Litestar documents a request body only when it parses one; :class:`PaymentOperation`
documents this one from :class:`PaymentForm`, the Struct the page reads it into, so
the contract's drift check compares the form the code reads.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import parse_qs

import msgspec
from litestar import Request
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema

from tollway.billing.processor import CardDetails

MEDIA_TYPE = "application/x-www-form-urlencoded"
MAX_FORM = 4096
"""Bytes of the largest form accepted: the fields take a few hundred."""
MAX_FIELDS = 20
EXPIRY = re.compile(r"\s*(\d{1,2})\s*/\s*(\d{2}|\d{4})\s*")
INCOMPLETE = "Fill in the card number, its expiry date (MM/YY) and its CVC."
NAME_TOO_LONG = "The name on the card can be at most 200 characters."


class PaymentForm(msgspec.Struct, kw_only=True):
    """What a card page's form posts."""

    csrf_token: str
    """The hidden field: the form's token for the browser's nonce cookie."""
    card_number: str
    expiry: str
    """``MM/YY`` (or ``MM/YYYY``)."""
    cvc: str
    name: Annotated[str, msgspec.Meta(max_length=200)] = ""


class Unreadable(Exception):
    """A body that is no form the page reads: ``status`` says why (400, 413, 415)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def read_form(request: Request[Any, Any, Any]) -> dict[str, str]:
    """The URL-encoded form's fields (the first value of each); :class:`Unreadable`
    for another media type (415), over :data:`MAX_FORM` (413), or text that is not
    URL-encoded ASCII or has over :data:`MAX_FIELDS` fields (400)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != MEDIA_TYPE:
        raise Unreadable(415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise Unreadable(413)
    try:
        fields = parse_qs(body.decode("ascii"), max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise Unreadable(400) from None
    return {name: values[0] for name, values in fields.items()}


def name_on_card(fields: dict[str, str]) -> str:
    """The name typed, as the form shows it again (at most 200 characters)."""
    return fields.get("name", "").strip()[:200]


def card(fields: dict[str, str]) -> CardDetails | str:
    """The card the form describes, or what to ask the visitor for."""
    try:
        form = msgspec.convert(fields, PaymentForm)
    except msgspec.ValidationError as error:
        return NAME_TOO_LONG if "$.name" in str(error) else INCOMPLETE
    number, cvc = form.card_number.strip(), form.cvc.strip()
    expiry = EXPIRY.fullmatch(form.expiry)
    month = int(expiry.group(1)) if expiry else 0
    if not (number and cvc):
        return INCOMPLETE
    if expiry is None or not 1 <= month <= 12:
        return "Enter the expiry date as MM/YY."
    year = int(expiry.group(2))
    return CardDetails(
        number=number,
        exp_month=month,
        exp_year=year + 2000 if year < 100 else year,
        cvc=cvc,
        name=form.name.strip(),
    )


def _request_body(form: type[msgspec.Struct]) -> RequestBody:
    fields = msgspec.inspect.type_info(form).fields  # type: ignore[attr-defined]
    schema = Schema(
        type=OpenAPIType.OBJECT,
        properties={
            field.encode_name: Schema(type=OpenAPIType.STRING, max_length=field.type.max_length)
            for field in fields
        },
        required=[field.encode_name for field in fields if field.required],
    )
    return RequestBody(content={MEDIA_TYPE: OpenAPIMediaType(schema=schema)}, required=True)


class PaymentOperation(Operation):
    """A card page's posting route's OpenAPI operation, with :class:`PaymentForm` as
    its body."""

    def __init__(self, **parts: Any) -> None:
        super().__init__(**{**parts, "request_body": _request_body(PaymentForm)})
