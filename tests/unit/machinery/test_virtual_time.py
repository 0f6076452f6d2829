"""The virtual clock's segments (kemu/machinery/virtual_time.py)."""

from __future__ import annotations

import math

import pytest

from kemu.machinery.errors import Invalid
from kemu.machinery.virtual_time import (
    ClockSegment,
    ReceivedCalls,
    call_number,
    calls_square,
    parse_rate,
)


def test_virtual_time_follows_wall_time_at_the_rate_from_the_segments_start() -> None:
    s = ClockSegment(base_wall=100.0, base_virtual=5_000.0, rate=10.0)
    assert s.at(100.0) == 5_000.0
    assert s.at(101.5) == 5_015.0
    assert s.at(99.0) == 5_000.0  # a reader whose wall clock lags sees the base, not earlier
    assert s.wall_at(5_015.0) == 101.5
    assert s.wall_at(4_000.0) == 100.0


def test_a_held_clock_never_reaches_a_later_instant() -> None:
    s = ClockSegment(base_wall=100.0, base_virtual=5_000.0, rate=0.0)
    assert s.at(1_000.0) == 5_000.0
    assert s.wall_at(5_000.5) == math.inf


def test_a_rate_change_continues_from_the_instant_reached() -> None:
    s = ClockSegment(base_wall=100.0, base_virtual=5_000.0, rate=10.0, generation=3)
    held = s.with_rate(0.0, 102.0)
    assert (held.base_wall, held.base_virtual, held.rate, held.generation) == (
        102.0,
        5_020.0,
        0.0,
        4,
    )
    again = held.with_rate(2.0, 110.0)
    assert again.at(111.0) == 5_022.0  # held for 8 wall seconds: no virtual time lost or skipped


@pytest.mark.parametrize(
    ("text", "rate"), [("1", 1.0), ("0", 0.0), ("10", 10.0), (" 2.5 ", 2.5), ("max", math.inf)]
)
def test_a_rate_is_a_number_of_virtual_seconds_per_wall_second(text: str, rate: float) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-1", "must be between 0 and"),
        ("nan", "must be between 0 and"),
        ("1e9", "must be between 0 and"),
        ("fast", 'Invalid value: "fast": must be a number >= 0'),
    ],
)
def test_a_bad_rate_is_invalid_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(Invalid) as e:
        parse_rate(text)
    assert e.value.causes[0].field == "rate"
    assert message in e.value.causes[0].message


def test_the_event_driven_clock_holds_between_jumps_and_never_goes_back() -> None:
    s = ClockSegment(base_wall=100.0, base_virtual=5_000.0, rate=2.0, generation=1)
    driven = s.with_rate(math.inf, 101.0)
    assert (driven.event_driven, driven.rate, driven.base_virtual) == (True, 0.0, 5_002.0)
    assert driven.at(500.0) == 5_002.0  # held between jumps
    jumped = driven.jumped(5_030.0, 102.0)
    assert (jumped.base_virtual, jumped.generation, jumped.event_driven) == (5_030.0, 3, True)
    assert driven.jumped(4_000.0, 102.0).base_virtual == 5_002.0  # never back
    advancing = s.advancing(5_600.0, 101.0)
    assert (advancing.event_driven, advancing.advance_until) == (True, 5_600.0)
    assert advancing.with_rate(0.0, 103.0).event_driven is False
    assert driven.rate_text == "max" and s.rate_text == "2"


@pytest.mark.parametrize(
    ("sent", "abandoned", "received", "first", "last", "square"),
    [
        (3, 0, 3, 1, 3, True),
        (3, 0, 2, 1, 2, False),  # a call on its way
        (3, 0, 4, 1, 4, False),  # a call made after the answer
        (4, 1, 3, 1, 3, True),  # one given up on before it was sent
        (4, 1, 4, 1, 4, True),  # one given up on that arrived all the same
        (4, 1, 4, 1, 5, False),  # one given up on, lost, and one made after the answer
        (4, 1, 2, 1, 3, False),  # one given up on, and one on its way
        # the apiserver restarted after call 10: it saw 11 to 14 only
        (14, 0, 4, 11, 14, True),
        (14, 0, 3, 11, 13, False),  # and one is on its way to it
        (14, 0, 0, 0, 0, True),  # and it has seen none yet
        (14, 0, 1, 15, 15, False),  # one made after the answer, the first it sees
    ],
)
def test_calls_square_when_every_call_not_given_up_on_arrived_and_none_since(
    sent: int, abandoned: int, received: int, first: int, last: int, square: bool
) -> None:
    assert calls_square(sent, abandoned, received, first, last) is square


@pytest.mark.parametrize(("value", "number"), [("17", 17), (b"3", 3), ("x", 0), ("-2", 0)])
def test_a_call_number_is_read_from_its_metadata_and_a_bad_one_is_none(
    value: str | bytes, number: int
) -> None:
    assert call_number(value) == number


def test_received_calls_keep_per_caller_the_count_and_the_lowest_and_highest_number() -> None:
    calls = ReceivedCalls()
    for caller, number in (("a", 5), ("a", 3), ("b", 0), ("a", 7), ("b", 2)):
        calls.add(caller, number)
    assert calls.count == {"a": 3, "b": 2}
    assert calls.first == {"a": 3, "b": 2} and calls.last == {"a": 7, "b": 2}
    # Squared with what "a" made: 7 numbered calls from 3 on is 5, three received, two of
    # them given up on.
    assert calls_square(7, 2, calls.count["a"], calls.first["a"], calls.last["a"])
