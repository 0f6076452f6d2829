"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), exact.

A quantity is a decimal number with an optional suffix: a decimal SI one (n u m "" k M G T P E),
a binary SI one (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2). Values are held as exact
`Fraction`s, never floats. As upstream, parsing rounds a value that is not a whole number of
nano units up (away from zero) to the next nano, and a binary-SI value is capped at 2^63-1.

The format a quantity was written in (DecimalSI, BinarySI, DecimalExponent) is remembered only
to print it back canonically (`1.5Gi` -> `1536Mi`, `0.5` -> `500m`, `1e3` -> `1e3`); equality
and ordering look at the value alone, as upstream's Quantity.Cmp does.

The rest of kemu works on plain integers: CPU in millicores, everything else in base units
(bytes, pods, devices). `to_int`, `cpu_millis`, `parse_resource_list` and `format_resource`
convert between those integers and quantity strings.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering
from typing import Final, Literal

from kemu.machinery.errors import Cause, Invalid

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]
DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

QUANTITY_REGEX: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT: Final = f"quantities must match the regular expression '{QUANTITY_REGEX}'"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
NEGATIVE_ERROR: Final = "must be greater than or equal to 0"

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT: Final[dict[int, str]] = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_BINARY_BY_EXPONENT: Final[dict[int, str]] = {e: s for s, e in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")
_NANO: Final = 10**9
_MAX_INT64: Final = 2**63 - 1
# kemu's own bounds, far beyond anything meaningful, so that hostile input ("1e999999999",
# ten thousand digits) cannot make exact arithmetic explode. Upstream has no such bound.
_MAX_EXPONENT: Final = 1000
_MAX_DIGITS: Final = 1000

# Resources counted in bytes: printed with binary suffixes by format_resource.
_BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage", "storage"})


def _round_away(value: Fraction) -> int:
    """Rounds to an integer away from zero, as upstream's "round up" (inf.RoundUp) does."""
    if value.denominator == 1:
        return value.numerator
    magnitude = -(-abs(value.numerator) // value.denominator)
    return magnitude if value > 0 else -magnitude


def _to_nano(value: Fraction) -> Fraction:
    """`value` rounded away from zero to a whole number of nano units."""
    if (_NANO % value.denominator) == 0:
        return value
    return Fraction(_round_away(value * _NANO), _NANO)


@total_ordering
@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact quantity. `amount` is always a whole number of nano units (rounded on creation)."""

    amount: Fraction
    format: Format = DECIMAL_SI

    def __post_init__(self) -> None:
        amount = Fraction(self.amount)
        object.__setattr__(self, "amount", _to_nano(amount))

    # ------------------------------------------------------------ construction

    @classmethod
    def parse(cls, text: str, path: str = "") -> Quantity:
        return parse_quantity(text, path)

    @classmethod
    def from_int(cls, value: int, fmt: Format = DECIMAL_SI) -> Quantity:
        return cls(Fraction(value), fmt)

    @classmethod
    def from_milli(cls, millis: int) -> Quantity:
        return cls(Fraction(millis, 1000), DECIMAL_SI)

    # ------------------------------------------------------------ values

    def value(self) -> int:
        """The value as an integer, rounded away from zero (upstream Value)."""
        return _round_away(self.amount)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (upstream MilliValue)."""
        return _round_away(self.amount * 1000)

    def scaled_value(self, exponent: int) -> int:
        """The value in units of 10^exponent, rounded away from zero (upstream ScaledValue)."""
        return _round_away(self.amount / Fraction(10) ** exponent)

    def sign(self) -> int:
        return (self.amount > 0) - (self.amount < 0)

    def is_zero(self) -> bool:
        return self.amount == 0

    # ------------------------------------------------------------ arithmetic, order

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        # As upstream Add: a zero quantity takes the format of what is added to it.
        fmt = other.format if self.amount == 0 else self.format
        return Quantity(self.amount + other.amount, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.amount == 0 else self.format
        return Quantity(self.amount - other.amount, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.amount, self.format)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.amount == other.amount

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.amount < other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    # ------------------------------------------------------------ printing

    def __str__(self) -> str:
        """The canonical form, as upstream's CanonicalizeBytes prints it."""
        if self.amount == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (-1024 < self.amount < 1024 or self.amount.denominator != 1):
            # Small or fractional binary values print in decimal, so nothing is rounded.
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            number = self.amount.numerator
            exponent = 0
            while number % 1024 == 0 and exponent < 60:
                number //= 1024
                exponent += 10
            return f"{number}{_BINARY_BY_EXPONENT.get(exponent, '')}"
        # Decimal: an integer mantissa times 10^exponent, exponent a multiple of 3.
        mantissa = _round_away(self.amount * _NANO)
        exponent = -9
        while mantissa % 10 == 0:
            mantissa //= 10
            exponent += 1
        shift = exponent % 3
        mantissa *= 10**shift
        exponent -= shift
        if fmt == DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
            return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
        # DecimalExponent, or a DecimalSI value beyond E: upstream would print a wrong number
        # without a suffix there; kemu prints the exponent so the value survives a round trip.
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


# ---------------------------------------------------------------- parsing


def _field_error(path: str, text: str, detail: str) -> Invalid:
    body = f"Invalid value: {json.dumps(text)}: {detail}"
    if not path:
        return Invalid(body, [Cause("", body)])
    return Invalid(f"{path}: {body}", [Cause(path, body)])


def _scan(text: str) -> tuple[bool, str, str, str] | None:
    """Splits `text` into (positive, integer digits, fraction digits, suffix), or None.

    Follows upstream's scanner: "." reads as zero and "1.G" is allowed.
    """
    n = len(text)
    i = 0
    positive = True
    if i < n and text[i] in "+-":
        positive = text[i] == "+"
        i += 1
    start = number_start = i
    while i < n and text[i] in _DIGITS:
        i += 1
    whole = text[start:i].lstrip("0") or "0"
    fraction = ""
    if i < n and text[i] == ".":
        i += 1
        start = i
        while i < n and text[i] in _DIGITS:
            i += 1
        fraction = text[start:i]
    suffix_start = i
    if suffix_start == number_start:
        # Upstream's scanner reads "m", "-" or "Gi" as zero; kemu holds to the regular
        # expression its error message quotes, which wants a digit or "." first.
        return None
    while i < n and text[i] in _SUFFIX_CHARS:
        i += 1
    if i < n and text[i] in "+-":
        i += 1
    while i < n and text[i] in _DIGITS:
        i += 1
    if i != n:
        return None
    return positive, whole, fraction, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format] | None:
    """(base, exponent, format) for a suffix, or None when it means nothing."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if not body or not set(body) <= _DIGITS:
            return None
        if len(body.lstrip("0")) > 6:
            return None
        exponent = int(digits)
        if abs(exponent) > _MAX_EXPONENT:
            return None
        return 10, exponent, DECIMAL_EXPONENT
    return None


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Quantity | str:
    """The quantity `text` denotes, or the upstream error detail saying why it is none.

    Cached: the same few quantity strings are parsed on every pod create, validation and QoS
    computation, and exact Fraction arithmetic is slow. Quantity is immutable, so sharing is safe.
    """
    if not text:
        return ERR_FORMAT
    scanned = _scan(text)
    if scanned is None:
        return ERR_FORMAT
    positive, whole, fraction, suffix = scanned
    meaning = _interpret(suffix)
    if meaning is None:
        return ERR_SUFFIX
    base, exponent, fmt = meaning
    fraction = fraction.rstrip("0")
    if len(whole) + len(fraction) > _MAX_DIGITS:
        return ERR_NUMERIC
    amount = Fraction(int(whole + fraction), 10 ** len(fraction))
    amount = _to_nano(amount * Fraction(base) ** exponent)
    if fmt == BINARY_SI:
        amount = min(amount, Fraction(_MAX_INT64))
        if 0 < amount < 1:
            fmt = DECIMAL_SI
    if text == "0":
        fmt = DECIMAL_SI
    return Quantity(amount if positive else -amount, fmt)


def parse_quantity(text: str, path: str = "") -> Quantity:
    """Parses a quantity string exactly; Invalid (naming `path`) when it is not one."""
    if not isinstance(text, str):
        raise _field_error(path, repr(text), ERR_FORMAT)
    result = _parse(text)
    if isinstance(result, str):
        raise _field_error(path, text, result)
    return result


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except Invalid:
        return False
    return True


# ---------------------------------------------------------------- resources as integers


def cpu_millis(text: str, path: str = "") -> int:
    """A CPU quantity in millicores ("500m" -> 500, "2" -> 2000, "0.1" -> 100)."""
    return parse_quantity(text, path).milli_value()


def to_int(resource_name: str, text: str, path: str = "") -> int:
    """A resource quantity as kemu's integer: millicores for cpu, base units for the rest."""
    q = parse_quantity(text, path)
    return q.milli_value() if resource_name == "cpu" else q.value()


def from_int(resource_name: str, value: int) -> Quantity:
    """The inverse of `to_int`, as a Quantity."""
    if resource_name == "cpu":
        return Quantity.from_milli(value)
    if _is_bytes(resource_name):
        return Quantity.from_int(value, BINARY_SI)
    return Quantity.from_int(value, DECIMAL_SI)


def _is_bytes(resource_name: str) -> bool:
    return resource_name in _BYTE_RESOURCES or resource_name.startswith("hugepages-")


def format_resource(resource_name: str, value: int) -> str:
    """kemu's integer for a resource as a quantity string.

    cpu: 500 -> "500m", 2000 -> "2"; bytes (memory, ephemeral-storage, hugepages-*):
    1073741824 -> "1Gi", 1610612736 -> "1536Mi", 1000 -> "1000", 1536 -> "1536"; anything
    else plain: "110".
    """
    if resource_name == "cpu":
        return str(Quantity.from_milli(value))
    if _is_bytes(resource_name) and value % 1024 == 0 and value != 0:
        return str(Quantity.from_int(value, BINARY_SI))
    return str(value)


def parse_resource_list(mapping: Mapping[str, str], path: str = "") -> dict[str, int]:
    """A resource map (requests, capacity) as integers; Invalid listing every bad entry.

    Entries are named `path[name]` (spec.containers[0].resources.requests[cpu]), as upstream
    field paths name map keys. Negative values are Invalid.
    """
    out: dict[str, int] = {}
    causes: list[Cause] = []
    for name, text in mapping.items():
        entry = f"{path}[{name}]" if path else name
        try:
            q = parse_quantity(text, entry)
        except Invalid as e:
            causes.extend(e.causes)
            continue
        if q.sign() < 0:
            causes.append(Cause(entry, f"Invalid value: {json.dumps(str(text))}: {NEGATIVE_ERROR}"))
            continue
        out[name] = q.milli_value() if name == "cpu" else q.value()
    if causes:
        raise Invalid.from_causes(path or "resource list", causes)
    return out


def parse_capacity_flag(text: str) -> dict[str, str]:
    """Reads a flag such as "cpu=4,memory=8Gi,pods=110" into {"cpu": "4", ...}.

    Raises ValueError with a message fit for a command-line error: which entry is malformed
    and why. Whitespace around entries is ignored; an empty flag is an empty map.
    """
    out: dict[str, str] = {}
    if not text.strip():
        return out
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ValueError(f"empty entry in {text!r}: expected NAME=QUANTITY[,NAME=QUANTITY...]")
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ValueError(f"invalid entry {item!r} in {text!r}: expected NAME=QUANTITY")
        if name in out:
            raise ValueError(f"resource {name!r} given twice in {text!r}")
        q = _parse(value)
        if isinstance(q, str):
            raise ValueError(f"invalid quantity {value!r} for {name}: {q}")
        if q.sign() < 0:
            raise ValueError(f"invalid quantity {value!r} for {name}: {NEGATIVE_ERROR}")
        out[name] = value
    return out
