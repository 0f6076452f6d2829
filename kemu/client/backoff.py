"""The client side's one retry backoff: client-go's wait.Backoff (apimachinery
pkg/util/wait/backoff.go) reduced to what kemu's retries use: the delay doubles from
`initial` up to `cap`, each step spread by `jitter` around it. Seedable: the jitter comes
from the `random.Random` it is given, so that a run with a seeded source draws the same
delays."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    initial: float
    """The first delay (seconds)."""
    cap: float
    """The largest delay before jitter."""
    jitter: float = 0.0
    """Each delay is multiplied by a factor drawn uniformly from [1 - jitter, 1 + jitter]."""
    rng: random.Random = field(default_factory=random.Random, repr=False)
    _next: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.cap:
            raise ValueError(f"backoff: need 0 < initial ({self.initial}) <= cap ({self.cap})")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"backoff: jitter {self.jitter} is not in [0, 1)")
        self._next = self.initial

    def next(self) -> float:
        """The next delay; the one after it is twice as long (up to `cap`)."""
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay * (1 - self.jitter + 2 * self.jitter * self.rng.random())

    def reset(self) -> None:
        """Start again from `initial` (after a success)."""
        self._next = self.initial
