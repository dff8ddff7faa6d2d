"""An account's profile (email, full name, company, tax id) and the rules its values
follow, shared by ``tollway accounts create`` and the account product's ``PATCH``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tollway.errors import UnprocessableEntity

MAX_EMAIL = 254
MAX_NAME = 200
MAX_TAX_ID = 32
EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")
TAX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9 .\-/]*")
"""VAT numbers, EINs, ABNs and the like: letters and digits, spaces, dots, dashes and
slashes between them."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ProfileError(UnprocessableEntity):
    """A profile value that breaks its rule (422; the command line exits 2)."""


@dataclass(frozen=True, slots=True)
class Profile:
    """What an account is created with besides its name; every field checked."""

    email: str | None = None
    full_name: str = ""
    company: str = ""
    tax_id: str | None = None

    def __post_init__(self) -> None:
        if self.email is not None:
            object.__setattr__(self, "email", check_email(self.email))
        object.__setattr__(self, "full_name", check_text("full_name", self.full_name))
        object.__setattr__(self, "company", check_text("company", self.company))
        if self.tax_id is not None:
            object.__setattr__(self, "tax_id", check_tax_id(self.tax_id))


def check_email(email: str) -> str:
    """The address trimmed and lowercased (so two accounts cannot hold one address in
    two spellings); :class:`ProfileError` unless it has the shape ``local@domain.tld``."""
    email = email.strip()
    if len(email) > MAX_EMAIL or not EMAIL.fullmatch(email):
        raise ProfileError(f"email must be an address like name@example.com, not {email!r}")
    return email.lower()


def check_text(field: str, value: str) -> str:
    """A name trimmed: at most :data:`MAX_NAME` characters, no control characters."""
    value = value.strip()
    if len(value) > MAX_NAME:
        raise ProfileError(f"{field} can be at most {MAX_NAME} characters")
    if _CONTROL.search(value):
        raise ProfileError(f"{field} must not contain control characters")
    return value


def check_tax_id(value: str) -> str | None:
    """A tax id trimmed (empty: none), at most :data:`MAX_TAX_ID` characters of
    :data:`TAX_ID`."""
    value = value.strip()
    if not value:
        return None
    if len(value) > MAX_TAX_ID or not TAX_ID.fullmatch(value):
        raise ProfileError(
            f"tax_id must be letters and digits (spaces, dots, dashes and slashes "
            f"between them), at most {MAX_TAX_ID} characters"
        )
    return value
