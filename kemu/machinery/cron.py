"""Cron schedules as upstream's CronJobs read them: github.com/robfig/cron/v3's ParseStandard
(parser.go) and its schedules' Next (spec.go, constantdelay.go), which both the batch
validation (pkg/apis/batch/validation) and the CronJob controller call.

`parse_standard(text)` accepts what ParseStandard accepts:
- five fields, minute hour day-of-month month day-of-week, each a comma list of `*` or `?`,
  `N`, `N-M`, with an optional `/step` (`N/step` is `N-max/step`); months and weekdays also by
  their three-letter English names, in any case; weekdays 0-6 (Sunday 0; 7 is out of range);
- the descriptors @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, and
  `@every <Go duration>` (ParseStandard takes it, so upstream's validation does; a delay
  under a second is a second, and it is truncated to whole seconds);
- a `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix (the controller's formatSchedule prepends it
  for spec.timeZone).
A bad schedule is a `CronError` with robfig's message.

`Schedule.next(t)` is the first activation strictly after `t` (Unix seconds, floats), in the
schedule's zone with Go's calendar arithmetic (time.Date's normalisation and its choice of
offset for a wall time a DST change skips or repeats), so that a CronJob with a timeZone
fires at upstream's instants across DST changes; None when none comes within five years
(robfig's zero time), as for "0 0 30 2 *".
"""

from __future__ import annotations

import datetime as dt
import math
import zoneinfo
from dataclasses import dataclass
from typing import Final, Protocol

from kemu.machinery.duration import SECOND, parse_duration_ns

_STAR: Final = 1 << 63
_MONTH_NAMES: Final = {
    name: i + 1
    for i, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DOW_NAMES: Final = {
    name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}
_DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_UTC: Final = dt.UTC
_YEAR_LIMIT: Final = 5


class CronError(ValueError):
    """A schedule ParseStandard refuses (robfig's message), or a zone Go cannot load."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MINUTE: Final = _Bounds(0, 59)
_HOUR: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTH: Final = _Bounds(1, 12, _MONTH_NAMES)
_DOW: Final = _Bounds(0, 6, _DOW_NAMES)


class Schedule(Protocol):
    def next(self, t: float) -> float | None:
        """The first activation after `t` (Unix seconds), None if none within five years."""
        ...


def load_location(name: str) -> dt.tzinfo:
    """time.LoadLocation: "" and "UTC" are UTC; "Local" is the process's zone, which for
    kemu's controllers is UTC; otherwise an IANA name. CronError if it is unknown."""
    if name in ("", "UTC", "Local"):
        return _UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise CronError(f"unknown time zone {name}") from e


# ---------------------------------------------------------------- parsing


def parse_standard(text: str) -> Schedule:
    """cron.ParseStandard (see the module docstring)."""
    if not text:
        raise CronError("empty spec string")
    spec = text
    loc: dt.tzinfo = _UTC
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        eq = spec.find("=")
        if space < 0:
            raise CronError(f"provided bad location {spec[eq + 1 :]}: missing schedule")
        try:
            loc = load_location(spec[eq + 1 : space])
        except CronError as e:
            raise CronError(f"provided bad location {spec[eq + 1 : space]}: {e}") from None
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _parse_descriptor(spec, loc)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return SpecSchedule(
        minute=_field(fields[0], _MINUTE),
        hour=_field(fields[1], _HOUR),
        dom=_field(fields[2], _DOM),
        month=_field(fields[3], _MONTH),
        dow=_field(fields[4], _DOW),
        location=loc,
    )


def _parse_descriptor(spec: str, loc: dt.tzinfo) -> Schedule:
    standard = _DESCRIPTORS.get(spec)
    if standard is not None:
        fields = standard.split()
        return SpecSchedule(
            minute=_field(fields[0], _MINUTE),
            hour=_field(fields[1], _HOUR),
            dom=_field(fields[2], _DOM),
            month=_field(fields[3], _MONTH),
            dow=_field(fields[4], _DOW),
            location=loc,
        )
    every = "@every "
    if spec.startswith(every):
        try:
            delay_ns = parse_duration_ns(spec[len(every) :], allow_negative=True)
        except ValueError as e:
            raise CronError(f"failed to parse duration {spec}: {e}") from None
        return ConstantDelaySchedule(max(1, delay_ns // SECOND))
    raise CronError(f"unrecognized descriptor: {spec}")


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _range(expr, bounds)
    return bits


def _range(expr: str, bounds: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if single:
            end = bounds.high  # "N/step" is "N-max/step"
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _int(expr)


def _int(expr: str) -> int:
    """Go's strconv.Atoi (an optional sign, decimal digits), then no negatives."""
    body = expr[1:] if expr[:1] in ("+", "-") else expr
    if not body or not body.isascii() or not body.isdigit():
        raise CronError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'
        )
    num = int(expr)
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


# ---------------------------------------------------------------- Go's wall-clock arithmetic


def _offset(unix: int, loc: dt.tzinfo) -> int:
    off = dt.datetime.fromtimestamp(unix, loc).utcoffset()
    return 0 if off is None else int(off.total_seconds())


def _go_date(year: int, month: int, day: int, hour: int, minute: int, loc: dt.tzinfo) -> int:
    """time.Date(year, month, day, hour, minute, 0, 0, loc) as Unix seconds: out-of-range
    months, days, hours and minutes normalised as Go does, and Go's offset for a wall time
    that a zone change skips or repeats (the offset in force at the wall time read as UTC,
    unless the instant it gives lies outside that offset's period)."""
    y, m0 = divmod(month - 1, 12)
    base = dt.datetime(year + y, m0 + 1, 1, tzinfo=_UTC)
    wall = base + dt.timedelta(days=day - 1, hours=hour, minutes=minute)
    unix = int(wall.timestamp())
    offset = _offset(unix, loc)
    if offset != 0:
        utc = unix - offset
        if _offset(utc, loc) != offset:
            offset = _offset(utc, loc)
        unix -= offset
    return unix


@dataclass(frozen=True)
class _Wall:
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int  # Go's: Sunday 0


def _wall(unix: int, loc: dt.tzinfo) -> _Wall:
    t = dt.datetime.fromtimestamp(unix, loc)
    return _Wall(t.year, t.month, t.day, t.hour, t.minute, t.second, (t.weekday() + 1) % 7)


@dataclass(frozen=True)
class SpecSchedule:
    """robfig's SpecSchedule: a bit set per field (bit 63: the field was `*` or `?`)."""

    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: dt.tzinfo = _UTC

    def _day_matches(self, w: _Wall) -> bool:
        dom = (1 << w.day) & self.dom > 0
        dow = (1 << w.weekday) & self.dow > 0
        if self.dom & _STAR or self.dow & _STAR:
            return dom and dow
        return dom or dow

    def next(self, t: float) -> float | None:
        """robfig's SpecSchedule.Next (seconds always 0 in the standard format)."""
        loc = self.location
        u = math.floor(t) + 1
        added = False
        year_limit = _wall(u, loc).year + _YEAR_LIMIT
        while True:  # WRAP
            w = _wall(u, loc)
            if w.year > year_limit:
                return None
            wrapped = False
            while (1 << w.month) & self.month == 0:
                if not added:
                    added = True
                    u = _go_date(w.year, w.month, 1, 0, 0, loc)
                    w = _wall(u, loc)
                u = _go_date(w.year, w.month + 1, w.day, w.hour, w.minute, loc)
                w = _wall(u, loc)
                if w.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(w):
                if not added:
                    added = True
                    u = _go_date(w.year, w.month, w.day, 0, 0, loc)
                    w = _wall(u, loc)
                u = _go_date(w.year, w.month, w.day + 1, w.hour, w.minute, loc)
                w = _wall(u, loc)
                # A DST change moved midnight: back onto it.
                if w.hour != 0:
                    u += (24 - w.hour) * 3600 if w.hour > 12 else -w.hour * 3600
                    w = _wall(u, loc)
                if w.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << w.hour) & self.hour == 0:
                if not added:
                    added = True
                    u = _go_date(w.year, w.month, w.day, w.hour, 0, loc)
                    w = _wall(u, loc)
                u += 3600
                w = _wall(u, loc)
                if w.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << w.minute) & self.minute == 0:
                if not added:
                    added = True
                    u -= u % 60
                    w = _wall(u, loc)
                u += 60
                w = _wall(u, loc)
                if w.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            if w.second != 0:  # the standard format's second field is 0: on to the next minute
                added = True
                u += 60 - w.second
                continue
            return float(u)


@dataclass(frozen=True)
class ConstantDelaySchedule:
    """robfig's ConstantDelaySchedule (`@every`): whole seconds after `t`'s second."""

    delay: int

    def next(self, t: float) -> float | None:
        return float(math.floor(t) + self.delay)
