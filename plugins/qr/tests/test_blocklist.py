"""Blocklist tests: real list files in tmp_path and the shipped default read as it ships.

No mocks: every case goes through ``Blocklist.load`` and ``Blocklist.check``, so the
parser, the normalisation and the lookups are tested together the way the route uses them.
Hosts that must look alike to a reader but not to Python are written with ``\\u`` escapes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tollway_qr.blocklist import DEFAULT_BLOCKLIST_PATH, Blocklist, BlocklistError, BlockMatch

# Line numbers matter: the cases below name the line each one must be blocked by.
OURS = """\
# our own list
host evil.test
host EXAMPLE-BAD.example.  # upper case and a trailing dot in the entry itself
host xn--pypal-4ve.com     # paypal.com with a Cyrillic a, listed in punycode
host \u0261oogle.example        # google with a Latin script g, listed in Unicode
ip 198.51.100.0/24
ip 203.0.113.7
ip 2001:db8:bad::/48
pattern paypa[l1]-.*verify
"""
OURS_ENTRIES = 8


@pytest.fixture(scope="module")
def ours_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lists") / "ours.txt"
    path.write_text(OURS, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ours(ours_path: Path) -> Blocklist:
    return Blocklist.load([ours_path], include_default=False)


@pytest.fixture(scope="module")
def default() -> Blocklist:
    return Blocklist.load()


def _write(directory: Path, text: str, name: str = "list.txt") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def _default_line(entry: str) -> int:
    lines = DEFAULT_BLOCKLIST_PATH.read_text(encoding="utf-8").split("\n")
    return lines.index(entry) + 1


# --- true positives ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "line"),
    [
        # host rules: the host, its subdomains, and every way of writing it
        ("https://evil.test/", 2),
        ("https://a.b.evil.test/login", 2),
        ("https://paypal.com@evil.test/", 2),
        ("https://user:pw@evil.test:8443/x", 2),
        ("HTTPS://EVIL.TEST/", 2),
        ("https://evil.test./", 2),
        ("https://evil.test.:443/", 2),
        ("https://%65vil.test/", 2),
        ("https://evil%2Etest/", 2),
        ("https://ev\u00adil.test/", 2),  # a soft hyphen, which browsers drop
        ("https://\uff45vil\uff0etest/", 2),  # full-width letters and full stop
        ("www.evil.test", 2),
        ("www.evil.test/login?next=1", 2),
        ("evil.test", 2),
        ("evil.test/login", 2),
        ("evil.test:8080/login", 2),
        ("https:evil.test", 2),
        ("https:\\\\evil.test\\login", 2),
        ("https://evil.test\\@example.com/", 2),  # browsers end the authority at "\"
        ("www.evil.test\\@example.com/", 2),
        ("https://user@x@evil.test/", 2),  # the host follows the last "@"
        ("  https://evil.test/  \n", 2),
        ("https://ev\nil.test/", 2),  # browsers drop newlines inside URLs
        ("ftp://evil.test/file", 2),
        ("wss://evil.test/socket", 2),
        ("intent://evil.test/#Intent;scheme=https;end", 2),
        # links inside text that is not a URL itself
        ("Scan me: https://evil.test/win.", 2),
        ("(see www.evil.test)", 2),
        ("BEGIN:VCARD\nVERSION:3.0\nFN:Eve\nURL:https://evil.test/\nEND:VCARD", 2),
        ("https://ok.example/\nhttps://evil.test/", 2),
        ("https://ok.example/ and https://evil.test/", 2),
        # entries written in upper case, with a trailing dot, in punycode or in Unicode
        ("https://sub.example-bad.example/", 3),
        ("https://p\u0430ypal.com/signin", 4),
        ("https://XN--PYPAL-4VE.COM/", 4),
        ("https://P\u0410YPAL.com/", 4),
        ("https://\u0261oogle.example/", 5),
        ("https://xn--oogle-qmc.example/", 5),
        ("https://accounts.xn--oogle-qmc.example/", 5),
        # ip rules, however the address is spelled
        ("http://198.51.100.23/login", 6),
        ("http://203.0.113.7:8080/", 7),
        ("http://3405803783/", 7),
        ("http://0xcb.0x0.0x71.0x7/", 7),
        ("http://0313.0.0161.07/", 7),
        ("http://[2001:db8:bad::1]/", 8),
        ("http://[2001:DB8:BAD:0:0:0:0:1]:8080/", 8),
        ("http://[::ffff:198.51.100.1]/", 6),
        ("198.51.100.9/admin", 6),
        # pattern rules, case-insensitive, on the path percent-decoded
        ("https://paypal-account-verify.example.net/", 9),
        ("https://example.net/PAYPAL-please-verify", 9),
        ("https://example.net/paypa1-%76erify", 9),
    ],
)
def test_listed_urls_are_blocked(ours: Blocklist, ours_path: Path, data: str, line: int) -> None:
    match = ours.check(data)
    assert match is not None
    assert match.source == f"{ours_path}:{line}"


@pytest.mark.parametrize(
    "data",
    [
        "https://phishing.test/login",
        "http://secure.malware.test:8080/x",
        "https://a.phishing.example/",
        "https://malware.invalid/payload.exe",
        "https://testsafebrowsing.appspot.com/s/phishing.html",
        "http://192.0.2.1/",
        "http://3221225985/",
        "http://[2001:db8::1]/",
        "https://www.paypal.com@phishing.example.org/signin",
        "https://accounts.google.com:443@login.example.org/",
        "https://paypa1.com/signin",
        "https://secure.app1e-id.example.net/",
        "https://www.micros0ft.example/",
    ],
)
def test_default_list_blocks_its_own_examples(default: Blocklist, data: str) -> None:
    assert default.check(data) is not None


# --- true negatives ---------------------------------------------------------------------------

ORDINARY_URLS = [
    "https://www.paypal.com/signin",
    "https://www.paypal.com/myaccount/summary?utm_campaign=verify-account",
    "https://github.com/login",
    "https://accounts.google.com/",
    "https://example.com/?q=verify+account",
    "https://en.wikipedia.org/wiki/Phishing",
    "https://bank.example.org/login",
    "https://phishing.example.org/",
    "https://malware.test.example.com/",
    "https://www.amazon.com/ap/signin?openid.return_to=https%3A%2F%2Fwww.amazon.com%2F",
    "https://appleid.apple.com/account/manage",
    "https://login.microsoftonline.com/common/oauth2/v2.0/authorize?client_id=x",
    "https://www.netflix.com/login",
    "https://www.google.com/search?q=paypa1+scam",
    "https://www.example.com/app1e",
    "https://app1eu.example.com/",
    "https://user:secret@intranet.example.net/dashboard",
    "https://git@github.com/org/repo.git",
    "ftp://anonymous@ftp.example.org/pub/",
    "http://192.168.1.1/login.html",
    "http://10.0.0.1:8080/",
    "http://[2001:db9::1]/",
    "http://192.0.3.1/",
    "https://b\u00fccher.example/",
    "https://xn--bcher-kva.example/",
    "https://maps.google.com/?q=52.5,13.4",
    "https://wa.me/15551234567",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
    "https://www.google.com/url?q=https://phishing.test/",  # nested URLs are not followed
    "www.example.com",
    "example.com/login",
]

PLAIN_PAYLOADS = [
    "",
    "   ",
    "hello world",
    "Hello, world",
    "phishing",
    "WIFI:S:home;T:WPA;P:secret;;",
    "WIFI:S:phishing.test;T:WPA;P:malware.test;;",
    "BEGIN:VCARD\nVERSION:3.0\nFN:Jane Doe\nURL:https://www.example.org/\nEND:VCARD",
    "mailto:alice@phishing.test",
    "alice@phishing.test",
    "MATMSG:TO:alice@phishing.test;SUB:hi;BODY:see you;;",
    "tel:+15551234567",
    "smsto:+15551234567:phishing.test",
    "geo:52.5,13.4",
    "hello phishing.test",  # a bare name inside prose is not a link
    "1.2.3",
    "e.g. this",
]


@pytest.mark.parametrize("data", ORDINARY_URLS + PLAIN_PAYLOADS)
def test_ordinary_content_passes_the_default_list(default: Blocklist, data: str) -> None:
    assert default.check(data) is None


@pytest.mark.parametrize(
    "data",
    [
        "https://notevil.test/",
        "https://evil.testing/",
        "https://evil-test.example/",
        "https://evil.test.example.org/",
        "https://evil.test@example.org/",  # the user name is not where the link goes
        "https://example.org/evil.test",
        "https://example.org/?next=https://evil.test/",
        "https://paypal.com/",
        "https://google.example/",
        "http://198.51.101.1/",
        "http://203.0.113.8/",
        "http://[2001:db8:bae::1]/",
        "https://example.net/paypal-support",
        "mailto:eve@evil.test",
        "eve@evil.test",
        "WIFI:S:evil.test;T:WPA;P:x;;",
        "hello evil.test",
    ],
)
def test_lookalikes_of_listed_entries_pass(ours: Blocklist, data: str) -> None:
    assert ours.check(data) is None


def test_default_list_names_only_reserved_or_test_hosts() -> None:
    hosts = [
        line.split()[1]
        for line in DEFAULT_BLOCKLIST_PATH.read_text(encoding="utf-8").split("\n")
        if line.startswith("host ")
    ]
    assert hosts
    for host in hosts:
        reserved = host.rsplit(".", 1)[-1] in {"test", "example", "invalid"}
        assert reserved or host == "testsafebrowsing.appspot.com", host


def test_default_list_documents_its_format() -> None:
    head = DEFAULT_BLOCKLIST_PATH.read_text(encoding="utf-8").split("\nhost ", 1)[0]
    for keyword in ("host <hostname>", "ip <address or CIDR>", "pattern <python regex>"):
        assert keyword in head


# --- reasons and sources ----------------------------------------------------------------------


def test_reasons_are_for_clients_and_sources_for_operators(
    default: Blocklist, ours: Blocklist, ours_path: Path
) -> None:
    assert default.check("https://phishing.test/login") == BlockMatch(
        reason="host 'phishing.test' is on the blocklist",
        source=f"blocklist.txt:{_default_line('host phishing.test')}",
    )
    assert ours.check("https://a.b.evil.test/") == BlockMatch(
        reason="host 'a.b.evil.test' is on the blocklist (under 'evil.test')",
        source=f"{ours_path}:2",
    )
    assert ours.check("http://0xcb.0x0.0x71.0x7/") == BlockMatch(
        reason="address '203.0.113.7' is on the blocklist (network 203.0.113.7/32)",
        source=f"{ours_path}:7",
    )
    assert ours.check("http://[::ffff:198.51.100.1]/") == BlockMatch(
        reason="address '198.51.100.1' is on the blocklist (network 198.51.100.0/24)",
        source=f"{ours_path}:6",
    )
    assert ours.check("https://paypal-x-verify.example.net/") == BlockMatch(
        reason="URL matches blocked pattern 'paypa[l1]-.*verify'",
        source=f"{ours_path}:9",
    )
    homograph = ours.check("https://p\u0430ypal.com/")
    assert homograph is not None
    assert homograph.reason == "host 'xn--pypal-4ve.com' is on the blocklist"


def test_host_rules_are_checked_before_patterns(default: Blocklist) -> None:
    # The default userinfo pattern matches too; the host is the more useful reason.
    match = default.check("https://www.paypal.com@phishing.test/")
    assert match is not None
    assert match.reason == "host 'phishing.test' is on the blocklist"


# --- loading ----------------------------------------------------------------------------------


def test_operator_files_add_to_the_default(default: Blocklist, ours_path: Path) -> None:
    both = Blocklist.load([ours_path])
    assert len(both) == len(default) + OURS_ENTRIES
    phishing = both.check("https://phishing.test/")
    evil = both.check("https://evil.test/")
    assert phishing is not None
    assert phishing.source.startswith("blocklist.txt:")
    assert evil is not None
    assert evil.source == f"{ours_path}:2"


def test_without_the_default_only_operator_entries_apply(ours: Blocklist) -> None:
    assert len(ours) == OURS_ENTRIES
    assert ours.check("https://phishing.test/") is None
    assert ours.check("https://www.paypal.com@example.org/") is None


def test_an_empty_blocklist_blocks_nothing() -> None:
    empty = Blocklist.load(include_default=False)
    assert len(empty) == 0
    assert empty.check("https://phishing.test/") is None


def test_files_load_in_order_and_duplicates_keep_their_first_source(
    tmp_path: Path, default: Blocklist
) -> None:
    first = _write(tmp_path, "host phishing.test\nhost shared.test\n", "first.txt")
    second = _write(tmp_path, "host SHARED.test.\nhost second.test\n", "second.txt")
    loaded = Blocklist.load([first, str(second)])
    assert len(loaded) == len(default) + 2
    for data, source in [
        ("https://phishing.test/", f"blocklist.txt:{_default_line('host phishing.test')}"),
        ("https://shared.test/", f"{first}:2"),
        ("https://second.test/", f"{second}:2"),
    ]:
        match = loaded.check(data)
        assert match is not None
        assert match.source == source


def test_a_single_path_is_not_read_as_a_sequence_of_characters(ours_path: Path) -> None:
    assert len(Blocklist.load(str(ours_path), include_default=False)) == OURS_ENTRIES


def test_byte_order_mark_and_crlf_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "windows.txt"
    path.write_bytes(b"\xef\xbb\xbf# exported\r\n\r\nhost evil.test\r\npattern (\r\n")
    with pytest.raises(
        BlocklistError, match=rf"^{re.escape(str(path))}:4: invalid regular expression"
    ):
        Blocklist.load([path], include_default=False)
    path.write_bytes(b"\xef\xbb\xbfhost evil.test\r\n")
    loaded = Blocklist.load([path], include_default=False)
    assert loaded.check("https://evil.test/") == BlockMatch(
        "host 'evil.test' is on the blocklist", f"{path}:1"
    )


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("host evil.test\npattern paypa[l\n", 2, "invalid regular expression 'paypa[l'"),
        ("hots evil.test\n", 1, "unknown entry 'hots'"),
        ("evil.test\n", 1, "unknown entry 'evil.test'"),
        ("0.0.0.0 evil.test\n", 1, "unknown entry '0.0.0.0'"),
        ("host https://evil.test/login\n", 1, "is not a hostname"),
        ("host *.evil.test\n", 1, "drop the '*.'"),
        ("host 192.0.2.1\n", 1, "use an 'ip' line"),
        ("host evil.123\n", 1, "use an 'ip' line"),
        ("host evil..test\n", 1, "is not a valid hostname"),
        ("host evil!.test\n", 1, "is not a valid hostname"),
        ("host evil.test extra\n", 1, "exactly one hostname"),
        ("host\n", 1, "exactly one hostname"),
        ("ip 192.0.2.1/24\n", 1, "did you mean 192.0.2.0/24"),
        ("ip evil.test\n", 1, "is not an IP address or network"),
        ("ip\n", 1, "is not an IP address or network"),
        ("pattern\n", 1, "needs a regular expression"),
        ("pattern .*\n", 1, "matches the empty string"),
        ("pattern x?\n", 1, "matches the empty string"),
        ("\n\n# fine so far\nhost ok.test\n   pattern (\n", 5, "invalid regular expression"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(BlocklistError) as raised:
        Blocklist.load([path])
    assert str(raised.value).startswith(f"{path}:{line}: ")
    assert message in str(raised.value)


def test_unreadable_files_are_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    with pytest.raises(BlocklistError, match=rf"^{re.escape(str(missing))}: cannot read blocklist"):
        Blocklist.load([missing])
    with pytest.raises(
        BlocklistError, match=rf"^{re.escape(str(tmp_path))}: cannot read blocklist"
    ):
        Blocklist.load([tmp_path])
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"host ok.test\nhost \xff\xfe.test\n")
    with pytest.raises(BlocklistError, match=rf"^{re.escape(str(binary))}:2: not valid UTF-8"):
        Blocklist.load([binary])


def test_blocklist_errors_are_value_errors() -> None:
    assert issubclass(BlocklistError, ValueError)


# --- patterns ---------------------------------------------------------------------------------


def test_the_first_matching_pattern_in_file_order_is_reported(tmp_path: Path) -> None:
    # A global inline flag and a backreference both keep patterns out of the combined
    # alternation; the order of the report must not depend on that.
    path = _write(
        tmp_path,
        "pattern (?x) secret \\. example\npattern (ab)\\1\npattern token\npattern token-b\n",
    )
    loaded = Blocklist.load([path], include_default=False)
    for data, line in [
        ("https://secret.example/abab/token", 1),
        ("https://x.example/abab/token", 2),
        ("https://x.example/token-b", 3),
        ("https://x.example/aba", None),
    ]:
        match = loaded.check(data)
        assert (match.source if match else None) == (f"{path}:{line}" if line else None)


def test_patterns_with_groups_are_checked_beside_the_combined_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, "pattern token\npattern (ab)\\1\n")
    loaded = Blocklist.load([path], include_default=False)
    for data, line in [("https://x.example/abab", 2), ("https://x.example/token/abab", 1)]:
        match = loaded.check(data)
        assert match is not None
        assert match.source == f"{path}:{line}"
    assert loaded.check("https://x.example/ab") is None


def test_patterns_see_the_normalised_url(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "pattern ^https://xn--pypal-4ve\\.com/\n"
        "pattern ^http://www\\.scheme-less\\.example/\n"
        "pattern ^https://[^/]*@\n"
        "pattern /login\\?user=\n"
        "pattern ^http://192\\.0\\.2\\.44/\n"
        "pattern ^http://\\[2001:db8::44\\]/\n",
    )
    loaded = Blocklist.load([path], include_default=False)
    for data, line in [
        ("https://P\u0430YPAL.com./x", 1),
        ("www.scheme-less.example/path", 2),
        ("https://someone@example.org/", 3),
        ("https://example.org/%6Cogin?user=x", 4),
        ("http://3221226028/", 5),
        ("http://[2001:DB8:0::44]/", 6),
    ]:
        match = loaded.check(data)
        assert match is not None, data
        assert match.source == f"{path}:{line}"


def test_patterns_apply_only_to_urls(tmp_path: Path) -> None:
    loaded = Blocklist.load([_write(tmp_path, "pattern secret\n")], include_default=False)
    assert loaded.check("this is secret") is None
    assert loaded.check("WIFI:S:secret;T:WPA;P:secret;;") is None
    assert loaded.check("https://example.org/secret") is not None


def test_a_pattern_line_keeps_its_hash_signs(tmp_path: Path) -> None:
    loaded = Blocklist.load([_write(tmp_path, "pattern /page#login\n")], include_default=False)
    assert loaded.check("https://example.org/page#login") is not None
    assert loaded.check("https://example.org/page") is None


# --- scale (correctness with a big list; timings are the benchmark's business) -----------------


def test_a_large_list_still_finds_its_entries(tmp_path: Path) -> None:
    lines = [f"host phish-{n}.example.net" for n in range(20_000)]
    lines += [f"ip 10.{n // 256}.{n % 256}.0/24" for n in range(1_000)]
    lines += [f"pattern /campaign-{n}/" for n in range(300)]
    loaded = Blocklist.load([_write(tmp_path, "\n".join(lines))], include_default=False)
    assert len(loaded) == 21_300
    assert loaded.check("https://login.phish-19999.example.net/") is not None
    assert loaded.check("http://10.3.231.7/") is not None
    assert loaded.check("https://example.org/campaign-299/") is not None
    assert loaded.check("https://phish-20000.example.net/") is None
    assert loaded.check("http://10.3.232.7/") is None
    assert loaded.check("https://example.org/campaign-300/") is None
    assert loaded.check("hello world") is None
