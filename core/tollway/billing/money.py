"""Amounts in integer minor units (what the billing engine keeps), shown to people
(pages, invoice PDFs) and given as the APIs' decimals."""

from __future__ import annotations

from typing import Final

ZERO_DECIMAL_CURRENCIES: Final = frozenset(
    {"bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv"}
    | {"xaf", "xof", "xpf"}
)
"""Stripe's zero-decimal currencies: their minor unit is the unit, ``1000`` JPY is ¥1,000."""
THREE_DECIMAL_CURRENCIES: Final = frozenset({"bhd", "jod", "kwd", "omr", "tnd"})
"""Stripe's three-decimal currencies: ``1000`` KWD is 1.000 KWD. All others have two."""
_SYMBOLS: Final = {"usd": "$", "eur": "€", "gbp": "£", "cad": "CA$", "aud": "A$", "jpy": "¥"}
"""Written before the amount; any other currency's code follows it (``12.50 CHF``)."""


def decimals(currency: str) -> int:
    """Digits of ``currency``'s minor unit: 0 for yen, 3 for dinars, else 2."""
    code = currency.lower()
    return 0 if code in ZERO_DECIMAL_CURRENCIES else 3 if code in THREE_DECIMAL_CURRENCIES else 2


def major(amount_cents: int, currency: str) -> float:
    """The amount in major units, as the API's decimal (``2999`` USD is ``29.99``): the
    nearest float, whose shortest form is the exact decimal for any amount a ledger
    holds."""
    scale: int = 10 ** decimals(currency)
    return amount_cents / scale


def money(amount_cents: int, currency: str) -> str:
    """``amount_cents`` of ``currency`` for people: ``$1,234.50``, ``-1,234.50 CHF``,
    ``¥1,235``. Integer arithmetic only, so no amount is ever rounded."""
    code = currency.lower()
    digits = decimals(code)
    units, minor = divmod(abs(amount_cents), 10**digits)
    number = f"{units:,}.{minor:0{digits}d}" if digits else f"{units:,}"
    sign = "-" if amount_cents < 0 else ""
    symbol = _SYMBOLS.get(code)
    return f"{sign}{symbol}{number}" if symbol else f"{sign}{number} {code.upper()}"
