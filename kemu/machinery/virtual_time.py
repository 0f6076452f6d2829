"""The cluster's virtual clock as data: how virtual time follows wall time (kemu only; upstream
has no such clock, its components read the host's).

A virtual clock is a sequence of segments. In one segment virtual time moves at `rate` times
wall time from (`base_wall`, `base_virtual`): rate 1 is real speed, 10 ten times faster, 0 holds
it still. A rate change starts a new segment at the virtual instant the clock had reached, so
virtual time never jumps back nor skips. Every process that reads the segment computes the same
virtual time from its wall clock (one machine, one wall clock), and `generation` orders
segments (a process keeps the newest it has seen).

The apiserver keeps the segment in etcd (apiserver/clock/cluster_clock.py) and streams it to every
component (kemu/component/virtual_clock.py). `--clock virtual` selects it (`ClockMode`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from kemu.api.v1 import clock_pb2
from kemu.machinery.errors import Invalid

MAX_RATE: Final = 1_000_000.0
"""A scaled clock runs at most this many times wall time."""


CLOCK_IDENTITY_KEY: Final = "kemu-clock-identity"
"""The gRPC metadata with which a component in a clock session tags its calls and watches."""

CLOCK_CALL_KEY: Final = "kemu-clock-call"
"""The gRPC metadata with a tagged call's number: the count of calls its session had made,
itself included (`call_number` reads it)."""


APISERVER_KEY: Final = "kemu-apiserver"
"""The initial gRPC metadata with which an apiserver tags its watch streams: its incarnation
(new at each start). A component counts the events it receives per incarnation, and reports
those of the apiserver its clock session is with: one restarted counts from nothing, as the
component's calls and events to the one before it are gone with it."""


def call_number(value: str | bytes) -> int:
    """A kemu-clock-call value; 0 for a malformed one (a call without a number squares as
    one made before every answer)."""
    try:
        return max(int(value), 0)
    except ValueError:
        return 0


def clock_caller(metadata: Iterable[tuple[str, str | bytes]]) -> tuple[str, int]:
    """A call's clock session identity ("" for none) and its number (CLOCK_CALL_KEY), from
    its gRPC metadata."""
    identity, number = "", 0
    for key, value in metadata:
        if key == CLOCK_IDENTITY_KEY:
            identity = value if isinstance(value, str) else value.decode(errors="replace")
        elif key == CLOCK_CALL_KEY:
            number = call_number(value)
    return identity, number


def calls_square(sent: int, abandoned: int, received: int, first: int, last: int) -> bool:
    """Whether the calls one component counts as made (`sent`, numbered 1 to `sent`, of
    which it gave up on `abandoned` before their answer) square with what the other side
    counts: `received` of them, numbered `first` to `last` at most. Every call not given up
    on from `first` on was received (one on its way is not), none twice, and none made after
    `sent` was counted (work done after the answer). A call given up on may never arrive
    (cancelled before gRPC sent it), so it counts either way: were it counted as made only,
    one cancelled call would hold the event-driven clock until the session ended. The calls
    before `first` went to an apiserver that has restarted since (this one never saw them);
    with none received there is nothing to compare."""
    if received == 0:
        return last == 0
    numbered = sent - first + 1
    return numbered - abandoned <= received <= numbered and last <= sent


@dataclass
class ReceivedCalls:
    """The calls a callee received from each caller in a clock session: how many, and the
    lowest and highest call number (CLOCK_CALL_KEY) among them, what `calls_square` compares
    with the caller's own count (the apiserver's Activity, the cloud's PeerCalls)."""

    count: dict[str, int] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)

    def add(self, caller: str, number: int) -> None:
        """One call of `caller`, numbered `number` (0: not numbered)."""
        self.count[caller] = self.count.get(caller, 0) + 1
        if number > self.last.get(caller, 0):
            self.last[caller] = number
        if number and number < self.first.get(caller, number + 1):
            self.first[caller] = number


BOOT_TOKEN_ENV: Final = "KEMU_CLOCK_BOOT_TOKEN"
"""The environment variable with which a launcher (the harness) gives a component the token it
announced it with (Clock.ExpectClockSession); the component reports it in its clock session."""

REAL_TIME_CLOCK: Final = (
    "the cluster clock is real time (the apiserver runs with --clock real): "
    "start the cluster with --clock virtual to set its rate or advance it"
)
"""The BadRequest of a rate change in real time."""


class ClockMode(enum.Enum):
    REAL = "real"
    VIRTUAL = "virtual"


@dataclass(frozen=True, slots=True)
class ClockSegment:
    base_wall: float
    """Wall time (seconds since the epoch) at which the segment starts."""
    base_virtual: float
    """Virtual time (seconds since the epoch) at `base_wall`."""
    rate: float
    """Virtual seconds per wall second (0: held, and between the jumps of rate max)."""
    generation: int = 1
    event_driven: bool = False
    """Rate max: virtual time moves only by jumps to the next timer, each a new segment, made
    when the cluster is quiescent (apiserver/clock/cluster_clock.py)."""
    advance_until: float = 0.0
    """While advancing: the virtual time at which the clock holds (0: not advancing)."""

    def at(self, wall: float) -> float:
        """Virtual time at wall time `wall` (not before the segment's start: a reader whose
        wall clock lags the writer's sees the base, never earlier)."""
        return self.base_virtual + self.rate * max(wall - self.base_wall, 0.0)

    def wall_at(self, virtual: float) -> float:
        """Wall time at which virtual time reaches `virtual`; inf while held."""
        if virtual <= self.base_virtual:
            return self.base_wall
        if self.rate == 0:
            return math.inf
        return self.base_wall + (virtual - self.base_virtual) / self.rate

    def with_rate(self, rate: float, wall: float) -> ClockSegment:
        """The segment that continues this one at `wall` with `rate` (math.inf: rate max)."""
        if rate == math.inf:
            return self.advancing(0.0, wall)
        return ClockSegment(
            base_wall=wall, base_virtual=self.at(wall), rate=rate, generation=self.generation + 1
        )

    def advancing(self, until: float, wall: float) -> ClockSegment:
        """The event-driven segment that continues this one at `wall`, holding at `until`
        (0: rate max without end)."""
        return ClockSegment(
            base_wall=wall,
            base_virtual=self.at(wall),
            rate=0.0,
            generation=self.generation + 1,
            event_driven=True,
            advance_until=until,
        )

    def jumped(self, virtual: float, wall: float) -> ClockSegment:
        """The next segment of an event-driven clock: at `virtual` (never back) from `wall`."""
        return replace(
            self,
            base_wall=wall,
            base_virtual=max(virtual, self.at(wall)),
            generation=self.generation + 1,
        )

    @property
    def rate_text(self) -> str:
        return "max" if self.event_driven else f"{self.rate:g}"


_SEGMENT_FIELDS: Final = (
    "base_wall",
    "base_virtual",
    "rate",
    "generation",
    "event_driven",
    "advance_until",
)
"""The fields a segment and its protobuf message share (the same names in both)."""


def to_proto(segment: ClockSegment) -> clock_pb2.ClockSegment:
    return clock_pb2.ClockSegment(**{f: getattr(segment, f) for f in _SEGMENT_FIELDS})


def from_proto(segment: clock_pb2.ClockSegment) -> ClockSegment:
    return ClockSegment(**{f: getattr(segment, f) for f in _SEGMENT_FIELDS})


def parse_rate(text: str, field: str = "rate") -> float:
    """A rate as `kemuctl clock rate` takes it: a number >= 0 (0 holds the clock) or `max`
    (the event-driven clock: math.inf). Invalid names `field`."""
    value = text.strip()
    if value == "max":
        return math.inf
    try:
        rate = float(value)
    except ValueError:
        raise Invalid.field(
            field,
            f'Invalid value: "{value[:64]}": must be a number >= 0 (0 holds the clock) or max',
        ) from None
    check_rate(rate, field)
    return rate


def check_rate(rate: float, field: str = "rate") -> None:
    if not (0 <= rate <= MAX_RATE):  # also NaN
        raise Invalid.field(field, f"Invalid value: {rate:g}: must be between 0 and {MAX_RATE:g}")
