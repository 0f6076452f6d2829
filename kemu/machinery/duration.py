"""Go's time.Duration as text, both ways: `parse_duration` reads what time.ParseDuration reads,
`format_duration` writes what Duration.String writes.

Syntax: an optional sign, then one or more decimal numbers each followed by a unit ("300ms",
"-1.5h", "2h45m", "1h2m3.5s"); units ns, us, µs (or μs), ms, s, m, h. "0" (signed or not) is the
only number allowed without a unit.

A bare number: upstream's duration flags (pflag's DurationVar) and duration config fields
(metav1.Duration) both go through time.ParseDuration, which refuses "5" with
`time: missing unit in duration "5"`. kemu does the same for every duration it reads (flags,
KubeSchedulerConfiguration fields, plugin args, annotations), so "5" means the same, an error,
everywhere. The single upstream exception, kubectl's --request-timeout (a bare integer counts as
seconds), is kemuctl's own rule on top of this parser.

Values are integers of nanoseconds as in Go (a fraction is scaled as Go scales it, more than
2^63-1 ns is an error); `parse_duration` returns seconds as a float for callers that sleep.
Negative durations are refused unless the caller allows them (kubectl wait's "negative means a
week" does; a lease duration or a delay has no use for one).
"""

from __future__ import annotations

from typing import Final

NANOSECOND: Final = 1
MICROSECOND: Final = 1_000 * NANOSECOND
MILLISECOND: Final = 1_000 * MICROSECOND
SECOND: Final = 1_000 * MILLISECOND
MINUTE: Final = 60 * SECOND
HOUR: Final = 60 * MINUTE

_UNITS: Final = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # µ, MICRO SIGN
    "\u03bcs": MICROSECOND,  # μ, GREEK SMALL LETTER MU
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX: Final = (1 << 63) - 1
_LIMIT: Final = 1 << 63  # the magnitude of the most negative duration
_DIGITS: Final = frozenset("0123456789")


class DurationError(ValueError):
    """Text that is not a Go duration; the message is Go's ("time: invalid duration ...")."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fraction_ns(digits: str, unit: int) -> int:
    """What Go adds for the digits after the point: they are read until 2^63 would overflow
    (later ones are ignored) and scaled in float64, as time.ParseDuration does, so that
    "0.3333333333333333333h" is 20m as in Go."""
    value, scale = 0, 1.0
    for c in digits:
        if value > _MAX // 10:
            break
        nxt = value * 10 + int(c)
        if nxt > _LIMIT:
            break
        value, scale = nxt, scale * 10
    return int(float(value) * (float(unit) / scale))


def parse_duration_ns(text: str, *, allow_negative: bool = False) -> int:
    """Nanoseconds of a Go duration; DurationError with Go's message otherwise."""
    invalid = f"time: invalid duration {_quote(text)}"
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(invalid)
    total = 0
    i = 0
    while i < len(s):
        if not (s[i] == "." or s[i] in _DIGITS):
            raise DurationError(invalid)
        start = i
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        whole = s[start:i]
        fraction = ""
        if i < len(s) and s[i] == ".":
            i += 1
            start = i
            while i < len(s) and s[i] in _DIGITS:
                i += 1
            fraction = s[start:i]
        if not whole and not fraction:  # ".s", "-.s"
            raise DurationError(invalid)
        start = i
        while i < len(s) and s[i] != "." and s[i] not in _DIGITS:
            i += 1
        unit_text = s[start:i]
        if not unit_text:
            raise DurationError(f"time: missing unit in duration {_quote(text)}")
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {_quote(unit_text)} in duration {_quote(text)}"
            )
        value = int(whole or "0") * unit
        if fraction:
            value += _fraction_ns(fraction, unit)
        total += value
        if total > _LIMIT:
            raise DurationError(invalid)
    if not negative and total > _MAX:
        raise DurationError(invalid)
    if negative and total:
        if not allow_negative:
            raise DurationError(f"{invalid}: must not be negative")
        return -total
    return total


def parse_duration(text: str, *, allow_negative: bool = False) -> float:
    """Seconds of a Go duration ("500ms", "1m30s", "0"); see the module docstring."""
    return parse_duration_ns(text, allow_negative=allow_negative) / SECOND


def _fraction(value: int, digits: int) -> str:
    """`value` / 10**digits without trailing zeros: 1500, 3 -> "1.5"."""
    whole, frac = divmod(value, 10**digits)
    text = str(frac).rjust(digits, "0").rstrip("0")
    return f"{whole}.{text}" if text else str(whole)


def format_duration_ns(ns: int) -> str:
    """Go's Duration.String: "1h0m0s", "1m30s", "1.5s", "500ms", "1.5µs", "0s"."""
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        if u == 0:
            return "0s"
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        if u < MILLISECOND:
            return f"{sign}{_fraction(u, 3)}\u00b5s"
        return f"{sign}{_fraction(u, 6)}ms"
    hours, rest = divmod(u, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    text = _fraction(rest, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def format_duration(seconds: float) -> str:
    """Seconds (rounded to the nanosecond) as Go prints a time.Duration."""
    return format_duration_ns(round(seconds * SECOND))
