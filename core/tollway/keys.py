"""API key format: ``tw_<8-char prefix>_<32-char secret>``, stored only as a SHA-256.

Keys carry 190 bits of randomness, so a fast hash is the right one: a slow password
hash would protect nothing more and would cost every request on a cache miss.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string

_ALPHABET = string.ascii_letters + string.digits
_PATTERN = re.compile(r"tw_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}")
PREFIX_LENGTH = len("tw_") + 8


def generate_key() -> str:
    prefix = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    secret = "".join(secrets.choice(_ALPHABET) for _ in range(32))
    return f"tw_{prefix}_{secret}"


def is_well_formed(key: str) -> bool:
    return _PATTERN.fullmatch(key) is not None


def key_prefix(key: str) -> str:
    """The public part shown in listings, e.g. ``tw_Ab3dEf9h``."""
    return key[:PREFIX_LENGTH]


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
