"""GeoIP: the country a client address belongs to, offline.

A product asks ``gateway.geoip`` (the ``tollway_geoip`` hook, resolved on first use)
for one object satisfying :class:`GeoIP`. The default, :class:`IptoccGeoIP`, reads the
regional internet registries' delegation data that the ``iptocc`` wheel embeds: no
file to download or keep fresh at run time, a lookup in a fraction of a microsecond
and under a megabyte of memory (docs/spec-decisions.md has the measurements against
``geoip2fast``).
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Protocol

import iptocc

UNKNOWN = "XX"
"""The code of every address that has no country: private, loopback, link-local,
reserved, unassigned or malformed."""

_REGIONS = frozenset({"EU", "AP"})
"""Codes a registry gives a block assigned to a region rather than a country (the
only one iptocc returns for IPv4 today is ``EU``): not a country, so ``XX``."""


class GeoIP(Protocol):
    """A country lookup. Both methods are synchronous and must not do I/O: they run
    on batches of clicks, many thousand a second, off the request path."""

    def country(self, address: str) -> str:
        """The ISO 3166-1 alpha-2 code (upper case) of the country of ``address``, an
        IPv4 or IPv6 address as text; ``"XX"`` when it has none."""
        ...

    def country_name(self, code: str) -> str:
        """The English name of the country ``code``: ``"Unknown"`` for ``XX``, the code
        itself for one the lookup does not know."""
        ...


class IptoccGeoIP:
    """The default lookup: the country each block is *registered* to in the five
    registries' delegation files, as of the installed ``iptocc`` release (it agrees
    with MaxMind's geolocation for about 95% of IPv4 addresses). Country names come
    from ``pycountry`` (ISO 3166, Debian's iso-codes), loaded on the first name asked."""

    def country(self, address: str) -> str:
        code = iptocc.country_code(address)
        if code is None and ":" in address:
            # A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d.
            code = _mapped_country(address)
        if code is None or code in _REGIONS:
            return UNKNOWN
        return code

    def country_name(self, code: str) -> str:
        if code == UNKNOWN:
            return "Unknown"
        return _country_names().get(code, code)


def _mapped_country(address: str) -> str | None:
    try:
        mapped = ipaddress.IPv6Address(address).ipv4_mapped
    except ValueError:
        return None
    return None if mapped is None else iptocc.country_code(str(mapped))


@functools.cache
def _country_names() -> dict[str, str]:
    """Alpha-2 code -> the name people use (ISO's ``common_name`` where it has one:
    "South Korea", not "Korea, Republic of")."""
    import pycountry

    return {
        country.alpha_2: getattr(country, "common_name", country.name)
        for country in pycountry.countries
    }
