"""Fuzzing the query string decoder: any bytes give the UTF-8 text they spell, as
Litestar's parser reads the result, or a 400.

The oracle reads a query string the way the URL standard does, from bytes: split on
``&`` and the first ``=``, ``+`` as a space, %-escapes and raw bytes alike as UTF-8.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote, quote_plus, unquote_to_bytes

import pytest
from fuzzing import budget
from hypothesis import example, given
from hypothesis import strategies as st
from litestar import Litestar, Request, Response, get
from litestar._parsers import parse_query_string

from tollway import ApiError, BadRequest
from tollway.query import check_query_string, utf8_query
from tollway.testing import raw_request


def oracle(query: bytes) -> list[tuple[str, str]] | None:
    """The query's (name, value) pairs, or ``None`` when they are not UTF-8."""
    pairs = []
    try:
        for part in query.split(b"&"):
            if part:
                name, _, value = part.partition(b"=")
                pairs.append(
                    tuple(
                        unquote_to_bytes(item.replace(b"+", b" ")).decode()
                        for item in (name, value)
                    )
                )
    except UnicodeDecodeError:
        return None
    return pairs  # type: ignore[return-value]


pieces = st.one_of(
    st.sampled_from([b"&", b"=", b"+", b"%", b"%2", b"%zz", b"%20", b"%26", b"%3D", b"%2B"]),
    st.binary(max_size=3),
    st.text(max_size=4).map(str.encode),  # raw UTF-8
    st.text(max_size=4).map(lambda text: quote(text).encode()),  # %-escaped UTF-8
    st.sampled_from(
        [b"%FF", b"%ED%A0%80", b"\xed\xa0\x80", b"%C0%AF", b"\xe3\x80", b"%E3%80", b"\x80"]
    ),
)
queries = st.lists(pieces, max_size=12).map(b"".join)


@budget(1500)
@given(query=queries | st.binary(max_size=40))
@example(query="data=https://phishing。test/".encode())
@example(query=b"data=%FF")
@example(query=b"q=\xe3%80%82")  # raw and escaped bytes of one character
def test_any_query_string_means_its_utf8_text_or_is_refused(query: bytes) -> None:
    expected = oracle(query)
    if expected is None:
        with pytest.raises(BadRequest):
            utf8_query(query)
        return
    rewritten = utf8_query(query)
    assert rewritten.isascii()
    assert list(parse_query_string(rewritten)) == expected


@budget(500)
@given(query=st.text(alphabet=st.characters(max_codepoint=127)).map(str.encode))
def test_ascii_queries_pass_untouched(query: bytes) -> None:
    if b"%" not in query:
        assert utf8_query(query) is query


@get("/echo", sync_to_thread=False)
def echo(request: Request[Any, Any, Any]) -> list[tuple[str, str]]:
    return list(request.query_params.multi_items())


def _refused(request: Request[Any, Any, Any], error: Exception) -> Response[dict[str, str]]:
    assert isinstance(error, ApiError)
    return Response({"detail": error.message}, status_code=error.status_code)


async def _check_query(request: Request[Any, Any, Any]) -> None:
    check_query_string(request.scope)  # as each route's entry runs it, first


ECHO = Litestar([echo], before_request=_check_query, exception_handlers={ApiError: _refused})


def get_echo(query: bytes) -> tuple[int, Any]:
    """``GET /echo?<query>`` through the ASGI interface, the query as raw bytes."""
    answer = asyncio.run(raw_request(ECHO, "GET", "/echo", query=query))
    return answer.status, answer.json()


def _raw(text: str) -> bytes:
    """``text`` as a browser puts it in a query: UTF-8, only separators escaped."""
    for special in "%&=+#":
        text = text.replace(special, quote(special, safe=""))
    return text.encode()


@budget(300)
@given(
    pairs=st.lists(st.tuples(st.text(min_size=1, max_size=6), st.text(max_size=6)), max_size=4),
    raw=st.booleans(),
)
def test_handlers_read_the_text_clients_send(pairs: list[tuple[str, str]], raw: bool) -> None:
    """Raw UTF-8 and %-escaped UTF-8 reach a handler as the same text."""
    encode = _raw if raw else (lambda text: quote_plus(text).encode())
    query = b"&".join(encode(name) + b"=" + encode(value) for name, value in pairs)
    status, echoed = get_echo(query)
    assert status == 200
    assert sorted(map(tuple, echoed)) == sorted(pairs)  # grouped by name, not in order


@pytest.mark.parametrize("query", [b"q=%FF", b"q=\xff", b"q=%ED%A0%80", b"q=\xed\xa0\x80"])
def test_queries_that_are_not_utf8_are_refused(query: bytes) -> None:
    assert get_echo(query) == (
        400,
        {"detail": "Invalid request: the query string is not valid UTF-8"},
    )


@pytest.mark.parametrize("query", [b"=x", b"=", b"a=1&=x", b"a=1&=", b"%C3%A9=1&=%FF"])
def test_parameters_without_a_name_are_refused(query: bytes) -> None:
    assert get_echo(query) == (400, {"detail": "Invalid request: a query parameter has no name"})


@pytest.mark.parametrize("query", [b"a=", b"a", b"a=1&b", b"a==1", b"a=1&&b=2"])
def test_named_parameters_without_values_pass(query: bytes) -> None:
    assert get_echo(query)[0] == 200
