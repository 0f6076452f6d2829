"""kemu.machinery.cron: robfig/cron's ParseStandard and Next as upstream's CronJobs use them."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo

import pytest

from kemu.machinery.cron import CronError, parse_standard


def at(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def nexts(spec: str, start: str, count: int, zone: str = "UTC") -> list[str]:
    schedule = parse_standard(spec)
    tz = dt.UTC if zone == "UTC" else zoneinfo.ZoneInfo(zone)
    t: float | None = at(start)
    out = []
    for _ in range(count):
        assert t is not None
        t = schedule.next(t)
        if t is None:
            out.append("never")
            break
        out.append(dt.datetime.fromtimestamp(t, tz).isoformat())
    return out


def test_every_minute_is_strictly_after_the_given_time() -> None:
    assert nexts("* * * * *", "2025-03-29T22:17:00+00:00", 2) == [
        "2025-03-29T22:18:00+00:00",
        "2025-03-29T22:19:00+00:00",
    ]
    # a time inside a minute: the next whole minute
    assert nexts("* * * * *", "2025-03-29T22:17:59.9+00:00", 1) == ["2025-03-29T22:18:00+00:00"]


def test_ranges_steps_lists_and_names() -> None:
    assert nexts("*/15 9-17 * * mon-fri", "2025-03-28T17:40:00+00:00", 3) == [
        "2025-03-28T17:45:00+00:00",
        "2025-03-31T09:00:00+00:00",  # Friday evening to Monday morning
        "2025-03-31T09:15:00+00:00",
    ]
    assert nexts("0 0 1 jan,JUL *", "2025-02-01T00:00:00+00:00", 2) == [
        "2025-07-01T00:00:00+00:00",
        "2026-01-01T00:00:00+00:00",
    ]
    # "N/step" runs from N to the maximum
    assert nexts("50/5 * * * *", "2025-01-01T00:00:00+00:00", 3) == [
        "2025-01-01T00:50:00+00:00",
        "2025-01-01T00:55:00+00:00",
        "2025-01-01T01:50:00+00:00",
    ]


def test_day_of_month_and_day_of_week_are_or_when_both_are_restricted() -> None:
    # 1st and 15th, or any Wednesday (2025-01-01 is a Wednesday)
    assert nexts("0 0 1,15 * 3", "2025-01-01T00:00:00+00:00", 3) == [
        "2025-01-08T00:00:00+00:00",
        "2025-01-15T00:00:00+00:00",
        "2025-01-22T00:00:00+00:00",
    ]
    # with a star in one of them, both must hold: Wednesdays only
    assert nexts("0 0 * * 3", "2025-01-01T00:00:00+00:00", 1) == ["2025-01-08T00:00:00+00:00"]


def test_descriptors_and_every() -> None:
    assert nexts("@hourly", "2025-01-01T00:30:00+00:00", 1) == ["2025-01-01T01:00:00+00:00"]
    assert nexts("@daily", "2025-01-01T00:30:00+00:00", 1) == ["2025-01-02T00:00:00+00:00"]
    assert nexts("@weekly", "2025-01-01T00:30:00+00:00", 1) == ["2025-01-05T00:00:00+00:00"]
    assert nexts("@monthly", "2025-01-01T00:30:00+00:00", 1) == ["2025-02-01T00:00:00+00:00"]
    assert nexts("@yearly", "2025-01-01T00:30:00+00:00", 1) == ["2026-01-01T00:00:00+00:00"]
    # @every counts from the given second (ParseStandard takes it, so upstream validation does)
    assert nexts("@every 1m30s", "2025-01-01T00:00:10.7+00:00", 2) == [
        "2025-01-01T00:01:40+00:00",
        "2025-01-01T00:03:10+00:00",
    ]
    assert nexts("@every 10ms", "2025-01-01T00:00:00+00:00", 1) == ["2025-01-01T00:00:01+00:00"]


def test_a_schedule_that_never_fires_has_no_next_time() -> None:
    assert nexts("0 0 30 2 *", "2025-01-01T00:00:00+00:00", 1) == ["never"]


def test_dst_in_a_time_zone_follows_gos_calendar() -> None:
    # 02:30 does not exist on 2025-03-09 in New York: that day is skipped, as robfig's
    spring = nexts(
        "TZ=America/New_York 30 2 * * *", "2025-03-08T03:00:00-05:00", 2, "America/New_York"
    )
    assert spring == ["2025-03-10T02:30:00-04:00", "2025-03-11T02:30:00-04:00"]
    # 01:30 happens twice on 2025-11-02: both fire
    fall = nexts(
        "CRON_TZ=America/New_York 30 1 * * *", "2025-11-01T12:00:00-04:00", 3, "America/New_York"
    )
    assert fall == [
        "2025-11-02T01:30:00-04:00",
        "2025-11-02T01:30:00-05:00",
        "2025-11-03T01:30:00-05:00",
    ]
    # a daily job at 09:00 Tokyo is 00:00 UTC
    assert nexts("TZ=Asia/Tokyo 0 9 * * *", "2025-01-01T01:00:00+00:00", 1) == [
        "2025-01-02T00:00:00+00:00"
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4"),
        ("* * * * * *", "expected exactly 5 fields, found 6"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        ("x * * * *", "failed to parse int from x"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every 5", "failed to parse duration @every 5"),
        ("TZ=Mars/Olympus * * * * *", "provided bad location Mars/Olympus"),
    ],
)
def test_what_parse_standard_refuses(spec: str, message: str) -> None:
    with pytest.raises(CronError, match="^" + re.escape(message)):
        parse_standard(spec)
