"""Latency on the API path as one value (issue #58 item 4): "what if the apiserver answers in
200 ms". The same text configures every place that adds it: a component's
`--apiserver-latency` (kemu.client.client: every call waits that long on the process's clock
before it is sent), the apiserver's `--etcd-latency` (apiserver/storage/etcd.py: every etcd
round trip), the chaos fault `latency` (kemu/chaos: the fault proxy's links), `kemu.whatif`'s
flags and the pytest marker's `apiserver_latency=` / `etcd_latency=`.

Syntax (the values are Go durations, kemu.machinery.duration):

    200ms                   fixed: every call waits 200 ms ("fixed:200ms" too; "0" is none)
    uniform:100ms-300ms     drawn uniformly between the two
    normal:200ms,50ms       drawn from a normal distribution of that mean and standard
                            deviation (a draw below 0 counts as 0)
    lognormal:200ms,50ms    drawn from the log-normal distribution of that mean and standard
                            deviation (of the latency, not of its logarithm): a long tail,
                            never below 0

Upstream has no such knob in its components; the names follow what one sets on a Linux link
(tc-netem's `delay TIME JITTER distribution uniform|normal`) and chaos-mesh's NetworkChaos
`delay` (latency, jitter). Draws come from a `random.Random` the caller seeds (a run's seed),
so a seeded run draws the same latencies in the same order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from kemu.machinery.duration import DurationError, format_duration, parse_duration


class LatencyError(ValueError):
    """Text that is not a latency; the message says which part is wrong (callers prefix it
    with their field or flag's name)."""


class Distribution(StrEnum):
    FIXED = "fixed"
    UNIFORM = "uniform"
    NORMAL = "normal"
    LOGNORMAL = "lognormal"


SYNTAX: Final = "DURATION, uniform:MIN-MAX, normal:MEAN,STDDEV or lognormal:MEAN,STDDEV"


@dataclass(frozen=True)
class Latency:
    """A latency distribution, in seconds: FIXED `first`; UNIFORM between `first` and
    `second`; NORMAL and LOGNORMAL of mean `first` and standard deviation `second`."""

    distribution: Distribution = Distribution.FIXED
    first: float = 0.0
    second: float = 0.0

    def __post_init__(self) -> None:
        d = self.distribution.value
        if not (0 <= self.first < math.inf and 0 <= self.second < math.inf):  # (NaN too)
            raise LatencyError(f"{d}: durations must be finite and not negative")
        if self.distribution is Distribution.UNIFORM and self.second < self.first:
            raise LatencyError(f"{self}: the maximum is below the minimum")
        if self.distribution is Distribution.LOGNORMAL and self.first == 0 and self.second > 0:
            raise LatencyError(f"{self}: a log-normal latency needs a mean above 0")

    @classmethod
    def parse(cls, text: str) -> Latency:
        """The latency `text` says (the module docstring's syntax); LatencyError if none."""
        text = text.strip()
        name, sep, rest = text.partition(":")
        if not sep:
            return cls(Distribution.FIXED, _duration(text, text))
        try:
            distribution = Distribution(name)
        except ValueError:
            known = ", ".join(d.value for d in Distribution)
            raise LatencyError(
                f"{text!r}: unknown distribution {name!r} (known: {known})"
            ) from None
        if distribution is Distribution.FIXED:
            return cls(distribution, _duration(rest, text))
        separator = "-" if distribution is Distribution.UNIFORM else ","
        first, sep, second = rest.partition(separator)
        if not sep:
            shape = "MIN-MAX" if distribution is Distribution.UNIFORM else "MEAN,STDDEV"
            raise LatencyError(f"{text!r}: {distribution.value} takes {shape}")
        return cls(distribution, _duration(first, text), _duration(second, text))

    @property
    def none(self) -> bool:
        """Whether every draw is 0 (no latency at all)."""
        return self.first == 0 and (self.second == 0 or self.distribution is Distribution.FIXED)

    @property
    def mean(self) -> float:
        if self.distribution is Distribution.UNIFORM:
            return (self.first + self.second) / 2
        return self.first

    def scaled(self, factor: float) -> Latency:
        """This latency with every duration times `factor` (a round trip's halves, one per
        direction of a link: the chaos fault's proxy rules)."""
        return Latency(self.distribution, self.first * factor, self.second * factor)

    def draw(self, rng: random.Random) -> float:
        """One latency in seconds (>= 0). A FIXED one draws nothing from `rng`; the others
        draw once each, so the sequence of a seeded `rng` is the same run after run."""
        d = self.distribution
        if d is Distribution.FIXED:
            return self.first
        if d is Distribution.UNIFORM:
            return rng.uniform(self.first, self.second)
        if d is Distribution.NORMAL:
            return max(0.0, rng.gauss(self.first, self.second))
        if self.second == 0:
            return self.first
        # the log's parameters from the latency's own mean m and deviation s:
        # sigma^2 = ln(1 + s^2/m^2), mu = ln(m) - sigma^2/2
        sigma2 = math.log1p((self.second / self.first) ** 2)
        return rng.lognormvariate(math.log(self.first) - sigma2 / 2, math.sqrt(sigma2))

    def __str__(self) -> str:
        d = self.distribution
        if d is Distribution.FIXED:
            return format_duration(self.first)
        separator = "-" if d is Distribution.UNIFORM else ","
        return f"{d.value}:{format_duration(self.first)}{separator}{format_duration(self.second)}"


NO_LATENCY: Final = Latency()


def _duration(part: str, text: str) -> float:
    try:
        return parse_duration(part.strip())
    except DurationError as e:
        raise LatencyError(f"{text!r}: {e} (expected {SYNTAX})") from None


@dataclass(frozen=True)
class PathLatency:
    """The API path's latencies, as one knob for a whole cluster (the harness's
    `Cluster(latency=...)`, the pytest marker, `kemu.whatif`): `apiserver` on every
    component's calls to the apiserver (`--apiserver-latency`), `etcd` on every round trip of
    the apiserver to etcd (`--etcd-latency`); each process's draws seeded from `seed` and its
    name."""

    apiserver: Latency = NO_LATENCY
    etcd: Latency = NO_LATENCY
    seed: int = 0

    @property
    def none(self) -> bool:
        return self.apiserver.none and self.etcd.none

    def describe(self) -> str:
        return f"apiserver {self.apiserver}, etcd {self.etcd}"


NO_PATH_LATENCY: Final = PathLatency()
