"""A level's seat demand over time (upstream's fairqueuing/integrator.go, and
apf_controller.go's seatDemandStats): the time-weighted average, standard deviation and high
watermark of a value since the last reset, and the smoothed demand the borrowing divides by.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

SMOOTHING_COEFFICIENT: Final = 0.977
"""apf_controller.go's seatDemandSmoothingCoefficient."""


@dataclass(frozen=True)
class IntegratorResults:
    duration: float
    average: float
    deviation: float
    max: float


class Integrator:
    """Integrates `set` values over the time `now` gives."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._start = self._last = now()
        self._value = 0.0
        self._max = 0.0
        self._integral = 0.0
        self._square = 0.0

    def set(self, value: float) -> None:
        self._advance()
        self._value = value
        self._max = max(self._max, value)

    def _advance(self) -> None:
        now = self._now()
        dt = now - self._last
        if dt > 0:
            self._integral += self._value * dt
            self._square += self._value * self._value * dt
        self._last = now

    def reset(self) -> IntegratorResults:
        """What the period since the last reset saw; the next starts at the current value."""
        self._advance()
        duration = self._last - self._start
        if duration > 0:
            average = self._integral / duration
            variance = self._square / duration - average * average
            deviation = math.sqrt(variance) if variance > 0 else 0.0
        else:
            average = deviation = math.nan
        results = IntegratorResults(duration, average, deviation, self._max)
        self._start = self._last
        self._integral = self._square = 0.0
        self._max = self._value
        return results


@dataclass
class SeatDemandStats:
    """seatDemandStats: the last period's figures; `smoothed` follows the envelope (average
    + deviation) up at once and down slowly (max(envelope, A * smoothed + (1 - A) *
    envelope))."""

    average: float = 0.0
    deviation: float = 0.0
    high_watermark: float = 0.0
    smoothed: float = 0.0

    def update(self, obs: IntegratorResults) -> None:
        self.high_watermark = obs.max
        if obs.duration <= 0:
            return
        deviation = 0.0 if math.isnan(obs.deviation) else obs.deviation
        self.average = obs.average
        self.deviation = deviation
        envelope = obs.average + deviation
        self.smoothed = max(
            envelope,
            SMOOTHING_COEFFICIENT * self.smoothed + (1 - SMOOTHING_COEFFICIENT) * envelope,
        )
