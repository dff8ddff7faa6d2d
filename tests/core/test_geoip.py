"""The GeoIP mechanism: the default's countries on well-known public addresses, ``XX``
for every address without a country, English names, and the hook resolved once, on
first use, replaceable like every mechanism."""

from __future__ import annotations

import pytest

from tollway import Gateway, GeoIP, IptoccGeoIP, RegistrationError, hookimpl, load_settings


def _gateway(*plugins: tuple[str, object]) -> Gateway:
    settings = load_settings(environ={}, plugins=[], database_url="sqlite+aiosqlite:///:memory:")
    return Gateway(settings, extra_plugins=plugins)


@pytest.mark.parametrize(
    ("address", "country"),
    [
        ("8.8.8.8", "US"),  # Google Public DNS
        ("2001:4860:4860::8888", "US"),
        ("::ffff:8.8.8.8", "US"),  # an IPv4 client on a dual-stack socket
        ("88.198.0.1", "DE"),  # Hetzner Online, Nuremberg (88.198.0.0/16)
        ("193.99.144.80", "DE"),  # heise.de
        ("2a01:4f8::1", "DE"),  # Hetzner's IPv6 block
        ("133.11.0.1", "JP"),  # The University of Tokyo (133.11.0.0/16)
        ("2001:200::1", "JP"),  # the WIDE project
        ("200.160.2.3", "BR"),  # registro.br, NIC.br
        ("2001:12ff::1", "BR"),  # NIC.br
    ],
)
def test_the_default_finds_the_country_of_public_addresses(address: str, country: str) -> None:
    assert IptoccGeoIP().country(address) == country


@pytest.mark.parametrize(
    "address",
    [
        *("10.1.2.3", "172.16.0.1", "192.168.0.1", "100.64.0.1"),  # private, shared
        *("127.0.0.1", "169.254.1.1", "0.0.0.0", "255.255.255.255"),
        *("192.0.2.1", "198.51.100.7", "224.0.0.1", "240.0.0.1"),  # documentation, multicast
        *("::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "2001:db8::1", "ff02::1"),
        *("::ffff:10.0.0.1", "", "not an address", "999.1.1.1", "1.2.3"),
    ],
)
def test_addresses_without_a_country_are_xx(address: str) -> None:
    assert IptoccGeoIP().country(address) == "XX"


def test_a_block_registered_to_a_region_is_not_a_country(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The registries assign some blocks to "EU" (Europe-wide), which no ISO country is.
    monkeypatch.setattr("iptocc.country_code", lambda address: "EU")
    assert IptoccGeoIP().country("192.0.2.1") == "XX"


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("US", "United States"),
        ("DE", "Germany"),
        ("JP", "Japan"),
        ("BR", "Brazil"),
        ("KR", "South Korea"),  # ISO's common name, not "Korea, Republic of"
        ("XX", "Unknown"),
        ("QZ", "QZ"),  # a code no country has: shown as it is
    ],
)
def test_country_names_are_english(code: str, name: str) -> None:
    assert IptoccGeoIP().country_name(code) == name


class CountingGeoIP:
    """Every address in Japan; counts how often the hook is asked."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.calls = 0

    def country(self, address: str) -> str:
        return "JP"

    def country_name(self, code: str) -> str:
        return "Japan"

    @hookimpl
    def tollway_geoip(self, gateway: Gateway) -> GeoIP | None:
        self.calls += 1
        return self if self.answer else None


def test_the_hook_is_asked_once_on_first_use_not_when_the_gateway_is_built() -> None:
    plugin = CountingGeoIP()
    gateway = _gateway(("geo", plugin))
    assert plugin.calls == 0
    assert gateway.geoip is plugin
    assert gateway.geoip is plugin
    assert plugin.calls == 1
    assert gateway.geoip.country("8.8.8.8") == "JP"


def test_the_default_answers_when_no_plugin_does() -> None:
    deferring = CountingGeoIP(answer=False)
    gateway = _gateway(("geo", deferring))
    assert isinstance(gateway.geoip, IptoccGeoIP)
    assert deferring.calls == 1
    assert isinstance(_gateway().geoip, IptoccGeoIP)


def test_without_any_lookup_the_first_use_says_so() -> None:
    gateway = _gateway()
    gateway.plugins.unregister(name="tollway.defaults.geoip")
    with pytest.raises(RegistrationError, match="no plugin provides a GeoIP lookup"):
        _ = gateway.geoip
