"""Exponential back-off of node groups whose scale-up failed (upstream utils/backoff,
ExponentialBackoff): the first failure backs the group off for the initial duration, each
failure while backed off (or within the reset timeout of the last one) doubles it up to the
maximum; a group backed off is not considered for scale-up."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Entry:
    duration: float
    until: float
    last_failure: float
    reason: str
    code: str


class Backoff:
    def __init__(self, *, initial: float, maximum: float, reset_timeout: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.reset_timeout = reset_timeout
        self._groups: dict[str, _Entry] = {}

    def backoff(self, group: str, reason: str, now: float, code: str = "") -> float:
        """Records a failure at `now` (`code`: upstream's errorCode, for the status
        ConfigMap); returns when the back-off ends."""
        e = self._groups.get(group)
        if e is None or now - e.last_failure > self.reset_timeout:
            duration = self.initial
        else:
            duration = min(e.duration * 2, self.maximum)
        self._groups[group] = _Entry(duration, now + duration, now, reason, code)
        return now + duration

    def backed_off(self, group: str, now: float) -> str | None:
        """The reason of the back-off in force at `now`, or None."""
        e = self._groups.get(group)
        return e.reason if e is not None and e.until > now else None

    def info(self, group: str, now: float) -> tuple[str, str] | None:
        """(errorCode, errorMessage) of the back-off in force at `now`, or None."""
        e = self._groups.get(group)
        return (e.code, e.reason) if e is not None and e.until > now else None

    def remove(self, group: str) -> None:
        self._groups.pop(group, None)
