"""kemu.machinery.jsonutil: whatever a client sends, a value or BadRequest naming the problem,
never a RecursionError, a UnicodeError or an infinity that breaks code further on."""

from __future__ import annotations

import pytest

from kemu.machinery import jsonutil
from kemu.machinery.errors import BadRequest


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # Python's parser: RecursionError
        (b'{"a":' * 5_000 + b"1" + b"}" * 5_000, "nested too deeply"),
        (b"[" * 101 + b"]" * 101, "nested too deeply (at most 100 levels)"),
        (b'{"a":1e400}', "the number 1e400 is out of range"),
        (b"[NaN]", "NaN is not a JSON value"),
        (b"-Infinity", "-Infinity is not a JSON value"),
        (b'"\\ud800"', "lone UTF-16 surrogate"),
        (b'{"\\udfff":1}', "lone UTF-16 surrogate"),
        (b'{"a":"\xff"}', "not valid UTF-8: invalid start byte at byte 6"),
        (b'"\xed\xa0\x80"', "not valid UTF-8"),  # a surrogate encoded in UTF-8
        (b"{", "not valid JSON"),
    ],
)
def test_bad_documents_are_bad_requests_naming_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(BadRequest, match="^the patch ") as e:
        jsonutil.loads(data, "the patch")
    assert problem in e.value.message


def test_good_documents_read_as_json_does() -> None:
    deep = "[" * 100 + "]" * 100
    assert jsonutil.loads(deep) == jsonutil.loads(deep.encode())
    assert jsonutil.loads('{"a":[1,2.5,{"b":"ü\\u00e9"}],"c":null}') == {
        "a": [1, 2.5, {"b": "üé"}],
        "c": None,
    }
    assert jsonutil.loads("123456789012345678901234567890") == 123456789012345678901234567890
