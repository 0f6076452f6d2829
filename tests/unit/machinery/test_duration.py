"""kemu.machinery.duration: Go's time.ParseDuration and Duration.String."""

from __future__ import annotations

import pytest

from kemu.machinery.duration import (
    DurationError,
    format_duration,
    format_duration_ns,
    parse_duration,
    parse_duration_ns,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("5s", 5_000_000_000),
        ("30s", 30_000_000_000),
        ("1478s", 1_478_000_000_000),
        ("+5s", 5_000_000_000),
        ("5.0s", 5_000_000_000),
        ("5.6s", 5_600_000_000),
        ("5.s", 5_000_000_000),
        (".5s", 500_000_000),
        ("1.004s", 1_004_000_000),
        ("100.00100s", 100_001_000_000),
        ("10ns", 10),
        ("11us", 11_000),
        ("12µs", 12_000),  # U+00B5
        ("12μs", 12_000),  # U+03BC
        ("13ms", 13_000_000),
        ("14s", 14_000_000_000),
        ("15m", 900_000_000_000),
        ("16h", 57_600_000_000_000),
        ("3h30m", 12_600_000_000_000),
        ("10.5s4m", 250_500_000_000),
        ("1h2m3.5s", 3_723_500_000_000),
        ("1h1m1s1ms1us1ns", 3_661_001_001_001),
        ("52763797000ns", 52_763_797_000),
        ("0.3333333333333333333h", 1_200_000_000_000),  # float64 scaling, as Go
        ("1.00000000000000000000001s", 1_000_000_000),  # digits past 2^63 ignored
        ("9223372036854775807ns", (1 << 63) - 1),
        ("0.100000000000000000000h", 360_000_000_000),
    ],
)
def test_go_durations_parse_exactly(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


def test_seconds_and_negative_durations() -> None:
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("-1.5h", allow_negative=True) == -5400.0
    assert parse_duration_ns("-9223372036854775808ns", allow_negative=True) == -(1 << 63)
    assert parse_duration_ns("-0s") == 0  # negative zero is zero, not a negative duration
    with pytest.raises(
        DurationError, match=r'^time: invalid duration "-1s": must not be negative$'
    ):
        parse_duration("-1s")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The former disagreement: a bare number was 5 s in kemuctl wait and in the component
        # flags, and an error in the scheduling plugins. Go: an error, except for 0.
        ("5", 'time: missing unit in duration "5"'),
        ("1.5", 'time: missing unit in duration "1.5"'),
        ("0.0", 'time: missing unit in duration "0.0"'),
        ("1h5", 'time: missing unit in duration "1h5"'),
        ("", 'time: invalid duration ""'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1.5.5s", 'time: missing unit in duration "1.5.5s"'),
        (" 1s", 'time: invalid duration " 1s"'),
        ("1s ", 'time: unknown unit "s " in duration "1s "'),
        ("3000000h", 'time: invalid duration "3000000h"'),  # more than 2^63-1 ns
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("15x", 'time: unknown unit "x" in duration "15x"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1hm", 'time: unknown unit "hm" in duration "1hm"'),
        ("nan", 'time: invalid duration "nan"'),
        ("inf", 'time: invalid duration "inf"'),
    ],
)
def test_go_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration_ns(text, allow_negative=True)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_100, "1.1µs"),
        (2_200_000, "2.2ms"),
        (500_000_000, "500ms"),
        (3_300_000_000, "3.3s"),
        (10_000_000_000, "10s"),
        (90_000_000_000, "1m30s"),
        (4 * 60 * 1_000_000_000 + 5_001_000_000, "4m5.001s"),
        (5 * 3600 * 1_000_000_000 + 6 * 60 * 1_000_000_000 + 7_001_000_000, "5h6m7.001s"),
        (3600 * 1_000_000_000, "1h0m0s"),
        (-1_500_000_000, "-1.5s"),
        (-1, "-1ns"),
        ((1 << 63) - 1, "2562047h47m16.854775807s"),
    ],
)
def test_format_is_go_string(ns: int, text: str) -> None:
    assert format_duration_ns(ns) == text
    assert parse_duration_ns(text, allow_negative=True) == ns


def test_format_seconds() -> None:
    assert format_duration(10) == "10s"
    assert format_duration(0.25) == "250ms"
    assert format_duration(5400) == "1h30m0s"
