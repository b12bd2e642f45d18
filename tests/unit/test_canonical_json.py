"""RFC 8785 (JCS) canonical JSON as effect digests and certificate signatures use it (seed 001,
"d := SHA256(JCS(M))"). Vectors from RFC 8785 itself and the ``rfc8785`` package's test suite."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785

from gateway.domain.canonical import NotCanonicalizable, canonical_json, digest


@pytest.mark.parametrize(("number", "expected"), [
    # RFC 8785 appendix B: ECMAScript number serialization.
    (0.0, "0"), (-0.0, "0"), (1.0, "1"), (1e21, "1e+21"), (1e-7, "1e-7"), (1e20, "100000000000000000000"),
    (333333333.33333329, "333333333.3333333"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (9007199254740991, "9007199254740991"), (-9007199254740991, "-9007199254740991"),
    (0.000001, "0.000001"), (123456789012345680000.0, "123456789012345680000"),
])
def test_numbers_are_formatted_as_ecmascript_does(number: float, expected: str) -> None:
    """RFC 8785 section 3.2.2.3: numbers use ECMAScript's shortest round-trip form."""
    assert canonical_json(number) == expected.encode()


def test_object_keys_are_sorted_by_utf16_code_units_at_every_depth() -> None:
    """RFC 8785 section 3.2.3, its own example: the sort compares UTF-16 code units, so U+1F600
    (surrogates D83D DE00) sorts before U+FB33 although it is the larger code point."""
    value = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
             "1": "One", "\U0001f600": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}
    keys = list(json.loads(canonical_json(value)))
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert canonical_json({"b": {"z": 1, "a": [3, {"y": 2, "x": 1}]}, "a": None}) == \
        b'{"a":null,"b":{"a":[3,{"x":1,"y":2}],"z":1}}'


def test_strings_use_minimal_escapes_and_raw_utf8() -> None:
    """RFC 8785 section 3.2.2.2: only the mandatory escapes; everything else is literal UTF-8."""
    assert canonical_json("\u20ac$\u000f\nA'B\"\\\\\"/") == '"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"'.encode()
    assert canonical_json({"literals": [None, True, False]}) == b'{"literals":[null,true,false]}'
    assert canonical_json("\U0001f600") == "\"\U0001f600\"".encode()


def test_the_rfc_example_object_canonicalizes_byte_for_byte() -> None:
    """RFC 8785 section 3.2.4's example, with the digest of its canonical bytes."""
    value = {"numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
             "string": "\u20ac$\u000f\nA'B\"\\\\\"/", "literals": [None, True, False]}
    expected = ('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
                '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}').encode()
    assert canonical_json(value) == expected
    assert digest(value) == hashlib.sha256(expected).digest()
    assert len(digest(value)) == 32


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**53, -(2**53), {1: "non-string key"}, object()])
def test_values_without_a_canonical_form_are_refused(value: object) -> None:
    """I-JSON limits: no NaN or infinities, integers within +-(2^53 - 1), string keys only."""
    with pytest.raises(NotCanonicalizable):
        canonical_json(value)


def _values() -> list[object]:
    """Values the orjson path takes and values it leaves to rfc8785, built to disagree if any rule
    differed: every control character, the characters JSON writers escape differently (DEL, the
    line and paragraph separators, '/', the surrogate-free edges of the BMP, astral planes), key
    orders, depth, exact-integer edges, and the numbers only rfc8785 formats."""
    text = "".join(chr(code) for code in range(0x20)) + "\x7f\u2028\u2029/\"\\\ud7ff\ue000\uffff\U0001f600\u20ac\u00e9"
    values: list[object] = [text, "", {"": ""}, [], {}, [text, [text, {"k": text}]], True, False, None, 0, -1,
                            2**53 - 1, -(2**53 - 1), 1.5, -0.0, 1e21, [1, 2.0, 3], {"b": 1, "a": 2, "B": 3, "_": 4},
                            {"\u00e9": 1, "e": 2}, {"\U0001f600": 1, "\ufb33": 2}]
    for n in range(0x20, 0x7f):
        values.append({chr(n) + "x": n, "x" + chr(n): [chr(n)], "nested": {chr(n): {chr(0x7e - n + 0x20): n}}})
    return values


@pytest.mark.parametrize("value", _values())
def test_every_value_canonicalizes_exactly_as_the_rfc8785_package_does(value: object) -> None:
    """canonical_json takes orjson for plain values (gateway/domain/canonical.py): its bytes are
    rfc8785's, byte for byte, for every value, including those it leaves to rfc8785."""
    assert canonical_json(value) == rfc8785.dumps(value)
