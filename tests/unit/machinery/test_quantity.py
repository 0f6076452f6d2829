"""Quantity parsing, canonical printing and the integer helpers."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT,
    ERR_SUFFIX,
    Quantity,
    cpu_millis,
    format_resource,
    parse_capacity_flag,
    parse_quantity,
    parse_resource_list,
    to_int,
)

GI = 2**30


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        ("0", 0, "0"),
        ("1", 1, "1"),
        ("100m", Fraction(1, 10), "100m"),
        ("0.1", Fraction(1, 10), "100m"),
        ("0.5", Fraction(1, 2), "500m"),
        (".5", Fraction(1, 2), "500m"),
        ("1.", 1, "1"),
        ("1.5", Fraction(3, 2), "1500m"),
        ("-1", -1, "-1"),
        ("+2", 2, "2"),
        ("1000", 1000, "1k"),
        ("1500", 1500, "1500"),
        ("1k", 1000, "1k"),
        ("1M", 10**6, "1M"),
        ("1G", 10**9, "1G"),
        ("1E", 10**18, "1E"),
        ("1n", Fraction(1, 10**9), "1n"),
        ("1u", Fraction(1, 10**6), "1u"),
        ("1Ki", 1024, "1Ki"),
        ("1Gi", GI, "1Gi"),
        ("1.5Gi", 3 * GI // 2, "1536Mi"),
        ("1536Mi", 1536 * 2**20, "1536Mi"),
        ("0.5Gi", GI // 2, "512Mi"),
        ("1.5Ki", 1536, "1536"),
        ("512", 512, "512"),
        ("1e3", 1000, "1e3"),
        ("1E3", 1000, "1e3"),
        ("1e+3", 1000, "1e3"),
        ("1e-3", Fraction(1, 1000), "1e-3"),
        ("1.5e3", 1500, "1500"),
        ("12e+2", 1200, "1200"),
        ("1.G", 10**9, "1G"),
        ("0.1n", Fraction(1, 10**9), "1n"),  # rounded up to the nano
        ("-0.1n", Fraction(-1, 10**9), "-1n"),  # away from zero
        ("-1.5Gi", -3 * GI // 2, "-1536Mi"),
        ("0Gi", 0, "0"),
        ("1000E", 10**21, "1e21"),  # beyond E: printed with an exponent, still exact
    ],
)
def test_parse_and_canonical_form(text: str, value: Fraction | int, canonical: str) -> None:
    q = parse_quantity(text)
    assert q.amount == value
    assert str(q) == canonical
    assert parse_quantity(canonical) == q


def test_binary_values_are_capped_at_int64_like_upstream() -> None:
    assert parse_quantity("99999999999Ei").value() == 2**63 - 1


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", ERR_FORMAT),
        ("abc", ERR_FORMAT),
        ("1.2.3", ERR_FORMAT),
        (" 1", ERR_FORMAT),
        ("1 ", ERR_FORMAT),
        ("m", ERR_FORMAT),
        ("-", ERR_FORMAT),
        ("1e3e", ERR_FORMAT),
        ("5i", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1ee3", ERR_SUFFIX),
        ("1Ki5", ERR_SUFFIX),
        ("1kk", ERR_SUFFIX),
        ("1e99999", ERR_SUFFIX),
    ],
)
def test_invalid_quantities_name_the_path(text: str, detail: str) -> None:
    with pytest.raises(Invalid) as err:
        parse_quantity(text, "spec.containers[0].resources.requests[cpu]")
    (cause,) = err.value.causes
    assert cause.field == "spec.containers[0].resources.requests[cpu]"
    assert cause.message == f'Invalid value: "{text}": {detail}'
    assert str(err.value).startswith("spec.containers[0].resources.requests[cpu]: Invalid value")


def test_the_format_error_quotes_upstreams_regular_expression() -> None:
    with pytest.raises(Invalid, match=r"quantities must match the regular expression '\^\(\[\+-\]"):
        parse_quantity("abc")


@pytest.mark.parametrize(
    ("text", "millis", "value"),
    [
        ("100m", 100, 1),
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("1n", 1, 1),  # MilliValue rounds up
        ("1500u", 2, 1),
        ("-1500u", -2, -1),  # away from zero, as upstream
        ("2Gi", 2 * GI * 1000, 2 * GI),
    ],
)
def test_milli_value_and_value_round_up(text: str, millis: int, value: int) -> None:
    q = parse_quantity(text)
    assert q.milli_value() == millis
    assert q.value() == value


def test_comparison_and_arithmetic_are_exact() -> None:
    a, b = parse_quantity("1Gi"), parse_quantity("1024Mi")
    assert a == b and hash(a) == hash(b)
    assert parse_quantity("999m") < parse_quantity("1")
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("300m")
    assert str(parse_quantity("1Gi") + parse_quantity("512Mi")) == "1536Mi"
    assert str(Quantity.from_int(0) + parse_quantity("1Gi")) == "1Gi"  # zero takes the format
    assert str(parse_quantity("1") - parse_quantity("1500m")) == "-500m"
    assert str(-parse_quantity("2")) == "-2"
    assert sorted([parse_quantity("2"), parse_quantity("100m")]) == [
        parse_quantity("100m"),
        parse_quantity("2"),
    ]


def test_cpu_and_resource_integers() -> None:
    assert cpu_millis("500m") == 500
    assert cpu_millis("2") == 2000
    assert cpu_millis("0.1") == 100
    assert to_int("cpu", "1.5") == 1500
    assert to_int("memory", "1.5Gi") == 3 * GI // 2
    assert to_int("pods", "110") == 110
    assert to_int("ephemeral-storage", "1k") == 1000
    with pytest.raises(Invalid) as err:
        to_int("memory", "lots", "status.capacity[memory]")
    assert err.value.causes[0].field == "status.capacity[memory]"


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("cpu", 500, "500m"),
        ("cpu", 2000, "2"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("memory", GI, "1Gi"),
        ("memory", 3 * GI // 2, "1536Mi"),
        ("memory", 1000, "1000"),
        ("memory", 1536, "1536"),
        ("memory", 0, "0"),
        ("ephemeral-storage", 2 * GI, "2Gi"),
        ("pods", 110, "110"),
        ("pods", 2048, "2048"),
        ("example.com/gpu", 4, "4"),
    ],
)
def test_format_resource(name: str, value: int, text: str) -> None:
    assert format_resource(name, value) == text
    assert to_int(name, text) == value


def test_parse_resource_list_collects_every_bad_entry() -> None:
    assert parse_resource_list({"cpu": "1.5", "memory": "1Gi", "pods": "10"}) == {
        "cpu": 1500,
        "memory": GI,
        "pods": 10,
    }
    with pytest.raises(Invalid) as err:
        parse_resource_list({"cpu": "-1", "memory": "x", "pods": "3"}, "spec.overhead")
    assert [(c.field, c.message.split(":")[0]) for c in err.value.causes] == [
        ("spec.overhead[cpu]", "Invalid value"),
        ("spec.overhead[memory]", "Invalid value"),
    ]
    assert err.value.causes[0].message == 'Invalid value: "-1": must be greater than or equal to 0'


def test_parse_capacity_flag() -> None:
    assert parse_capacity_flag("cpu=4,memory=8Gi,pods=110") == {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "110",
    }
    assert parse_capacity_flag(" cpu = 500m , memory=1Gi ") == {"cpu": "500m", "memory": "1Gi"}
    assert parse_capacity_flag("") == {}


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("cpu", "invalid entry 'cpu' in 'cpu': expected NAME=QUANTITY"),
        ("=4", "invalid entry '=4'"),
        ("cpu=", "invalid entry 'cpu='"),
        ("cpu=4,,pods=1", "empty entry in 'cpu=4,,pods=1'"),
        ("cpu=abc", "invalid quantity 'abc' for cpu: quantities must match"),
        ("cpu=5i", "invalid quantity '5i' for cpu: unable to parse quantity's suffix"),
        ("memory=-1Gi", "invalid quantity '-1Gi' for memory: must be greater than or equal to 0"),
        ("cpu=1,cpu=2", "resource 'cpu' given twice"),
    ],
)
def test_parse_capacity_flag_errors(flag: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_capacity_flag(flag)
    assert str(err.value).startswith(message)


# ---------------------------------------------------------------- properties

_quantities = st.builds(
    Quantity,
    st.builds(Fraction, st.integers(-(10**30), 10**30), st.just(10**9)),
    st.sampled_from([DECIMAL_SI, DECIMAL_EXPONENT]),
) | st.builds(
    Quantity,
    st.builds(Fraction, st.integers(-(2**63 - 1), 2**63 - 1)),
    st.just(BINARY_SI),
)


@given(_quantities)
def test_canonical_form_round_trips(q: Quantity) -> None:
    assert parse_quantity(str(q)) == q


@given(
    st.integers(0, 10**12),
    st.sampled_from(["", "m", "k", "M", "Ki", "Mi", "Gi", "n", "e3", "E-2"]),
)
def test_parse_then_print_then_parse_is_stable(number: int, suffix: str) -> None:
    q = parse_quantity(f"{number}{suffix}")
    assert parse_quantity(str(q)) == q
    assert str(parse_quantity(str(q))) == str(q)


@given(st.text(alphabet=st.sampled_from(list("0123456789.+-eEinumkKMGTP x")), max_size=20))
def test_parser_raises_only_invalid_on_near_miss_text(text: str) -> None:
    try:
        q = parse_quantity(text)
    except Invalid:
        return
    assert parse_quantity(str(q)) == q


@given(st.text(max_size=40))
def test_parser_raises_only_invalid_on_random_text(text: str) -> None:
    try:
        parse_quantity(text)
    except Invalid:
        pass
