"""Fuzzing the JSON body decoder: whatever the bytes, a value or a short 400.

Bodies are arbitrary bytes, and JSON documents damaged the ways hostile clients damage
them (invalid UTF-8, lone surrogates, deep nesting, huge numbers, repeated keys,
truncation), decoded into generic types, product-like structs and every body type the
installed plugins declare.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest
from fuzzing import budget
from hypothesis import example, given
from hypothesis import strategies as st
from litestar.handlers import HTTPRouteHandler

from tollway import BadRequest, Gateway, decode_json_body, load_settings
from tollway.app import create_app
from tollway.bodies import MAX_DEPTH, MAX_MESSAGE

INT64 = range(-(2**63), 2**63)


class Order(msgspec.Struct, forbid_unknown_fields=True):
    item: Annotated[str, msgspec.Meta(min_length=1, max_length=50)]
    quantity: Annotated[int, msgspec.Meta(ge=1)]
    note: str | None = None
    tags: list[str] = []


class Lenient(msgspec.Struct):
    """Ignores unknown fields, whose values msgspec skips without reading them."""

    key: str | None = None


def _product_body_types() -> list[Any]:
    app = create_app(Gateway(load_settings(environ={})))
    types = {
        handler.parsed_fn_signature.parameters["data"].annotation
        for route in app.routes
        for handler in getattr(route, "route_handlers", ())
        if isinstance(handler, HTTPRouteHandler)
        and "data" in handler.parsed_fn_signature.parameters
    }
    return sorted(types, key=repr)


TYPES: list[Any] = [Any, dict[str, Any], list[int], int, str, Order, Lenient]
PRODUCT_TYPES = _product_body_types()

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=16,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def integers_fit(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return value in INT64
    if isinstance(value, dict):
        return all(map(integers_fit, value.values()))
    if isinstance(value, list):
        return all(map(integers_fit, value))
    return True


def outcome(body: bytes, into: Any) -> Any:
    """The decoded value, or the BadRequest; anything else escapes and fails the test."""
    try:
        return decode_json_body(body, into)
    except BadRequest as error:
        refusal = error
    assert refusal.status_code == 400
    assert 0 < len(refusal.message) <= MAX_MESSAGE
    return refusal


def assert_sound(body: bytes, into: Any) -> None:
    """Decoding never raises anything but BadRequest, and what it accepts is strict
    JSON: UTF-8, no repeated key, nested at most MAX_DEPTH deep, integers in 64 bits."""
    result = outcome(body, into)
    if isinstance(result, BadRequest):
        return
    body.decode("utf-8")  # accepted bodies are UTF-8

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        assert len({key for key, _ in pairs}) == len(pairs), "a repeated key was accepted"
        return dict(pairs)

    tree = json.loads(body, object_pairs_hook=unique)
    assert depth(tree) <= MAX_DEPTH
    assert integers_fit(tree)


@budget(1500)
@given(body=st.binary(max_size=64), into=st.sampled_from(TYPES + PRODUCT_TYPES))
@example(body=b'{"data":"\xff"}', into=Any)
# A UTF-8-encoded surrogate in a key msgspec skips (found by test_damaged_json).
@example(body=b'{"\xed\xa0\x80":null}', into=Lenient)
def test_arbitrary_bytes(body: bytes, into: Any) -> None:
    assert_sound(body, into)


# Ways hostile clients damage a JSON document (its serialized bytes).
Damage = Callable[[bytes], bytes]


def _at(position: int, insert: bytes) -> Damage:
    return lambda text: (
        text[: position % (len(text) + 1)] + insert + text[position % (len(text) + 1) :]
    )


def _nested(levels: int, opener: bytes, closer: bytes) -> Damage:
    return lambda text: opener * levels + text + closer * levels


def _repeated_key(key: str) -> Damage:
    encoded = json.dumps(key).encode()
    return lambda text: b"{" + encoded + b":1," + encoded + b":" + text + b"}"


damages = st.one_of(
    st.just(lambda text: text),
    st.builds(_at, st.integers(0, 200), st.binary(min_size=1, max_size=4)),
    st.builds(
        _at,
        st.integers(0, 200),
        st.sampled_from(
            [b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe3\x80", b"\\ud800", b"\\udc00"]
        ),
    ),
    st.builds(
        _nested,
        st.integers(MAX_DEPTH - 8, 4 * MAX_DEPTH) | st.integers(900, 1100) | st.just(100_000),
        st.just(b"["),
        st.just(b"]"),
    ),
    st.builds(_nested, st.integers(1, 2 * MAX_DEPTH), st.just(b'{"a":'), st.just(b"}")),
    st.builds(_repeated_key, st.text(max_size=3)),
    st.integers(0, 200).map(lambda cut: lambda text: text[:cut]),
    st.sampled_from([b"9" * 4301, b"1" + b"0" * 400, b"1e400", b"-1e400", str(2**63).encode()]).map(
        lambda number: _at(0, number + b",")
    ),
)


@budget(1000)
@given(value=json_values, damage=damages, into=st.sampled_from(TYPES + PRODUCT_TYPES))
def test_damaged_json(value: Any, damage: Damage, into: Any) -> None:
    assert_sound(damage(msgspec.json.encode(value)), into)


@budget(400)
@given(value=json_values, levels=st.integers(0, 3 * MAX_DEPTH))
def test_intact_json_is_decoded_as_written(value: Any, levels: int) -> None:
    """An undamaged document decodes to exactly its value, unless it nests deeper than
    MAX_DEPTH or holds an integer beyond 64 bits, which are refused."""
    for _ in range(levels):
        value = [value]
    result = outcome(msgspec.json.encode(value), Any)
    if depth(value) > MAX_DEPTH or not integers_fit(value):
        assert isinstance(result, BadRequest)
    else:
        assert result == value


@budget(500)
@given(item=st.text(min_size=1, max_size=50), quantity=st.integers(1, 2**63 - 1))
def test_whole_number_floats_count_as_integers(item: str, quantity: int) -> None:
    body = msgspec.json.encode({"item": item, "quantity": float(quantity)})
    result = outcome(body, Order)
    if int(float(quantity)) in INT64:
        assert result == Order(item, int(float(quantity)))
    else:
        assert isinstance(result, BadRequest)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"item":"\xff","quantity":1}', "Request body is not valid UTF-8"),
        (b'{"item":"\\ud800","quantity":1}', "Request body is not valid JSON"),
        (b'{"x":' * 65 + b"1" + b"}" * 65, f"nested more than {MAX_DEPTH} levels"),
        (b"[" * 100_000 + b"]" * 100_000, f"nested more than {MAX_DEPTH} levels"),
        (b'{"item":"a","item":"b","quantity":1}', "repeats the key 'item'"),
        (b'{"item":"a","quantity":1,"tags":["x"],"tags":[]}', "repeats the key 'tags'"),
        (b'{"item":"a","quantity":18446744073709551616}', "integers must fit in 64 bits"),
        (b'{"item":"a","quantity":1e400}', "Number out of range"),
        (b'{"item":"a","quantity":2.5}', "Expected `int`, got `float`"),
        (b'{"item":"a","quantity":1e300}', "Expected `int`, got `float`"),
    ],
)
def test_refusals_say_why(body: bytes, message: str) -> None:
    refusal = outcome(body, Order if body.startswith(b'{"item"') else Any)
    assert isinstance(refusal, BadRequest)
    assert message in refusal.message


def test_long_keys_are_not_echoed_in_full() -> None:
    refusal = outcome(b'{"' + b"k" * 100_000 + b'":1}', Order)
    assert isinstance(refusal, BadRequest)
    assert len(refusal.message) <= MAX_MESSAGE


def test_skipped_fields_are_checked_too() -> None:
    """msgspec skips unknown fields of a lenient struct without reading them; the
    body is refused all the same."""
    for body in (b'{"x":"\xff"}', b'{"x":' + b"9" * 5000 + b"}", b'{"x":1,"x":2}'):
        assert isinstance(outcome(body, Lenient), BadRequest), body
