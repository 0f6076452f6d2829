"""Client-side rate limiting as client-go's: a token bucket (util/flowcontrol/throttle.go
NewTokenBucketRateLimiter over golang.org/x/time/rate's Limiter) and the wait a request
makes for its token (rest/request.go tryThrottleWithInfo), on the component's clock.

Semantics (x/time/rate): the bucket holds up to `burst` tokens and starts full; it refills
at `qps` tokens a second. A request takes one token: at once when one is there, otherwise it
reserves the next one to come (reservations are served in the order they were made, each
1/qps after the one before) and sleeps until then. A caller cancelled while it sleeps gives
its reservation back (Reservation.CancelAt: the tokens later reservations do not depend on).

Which calls take a token (rest/request.go): every unary call before its first attempt, and
every retry again (withRetry.Before throttles the retry "with the client-internal rate
limiter"); a watch does not ("We specifically don't want to rate limit watches"). kemu's own
clock service is not the Kubernetes API and takes none.

Time: the sleep is `Clock.sleep` on the component's clock, so in virtual time the event-driven
clock knows the timer and jumps to it (docs/virtual-time.md); a client waiting for a token is
not "in flight" (kemu.client.client keeps it out of `requests_in_flight`), so a cluster whose
only work is throttled calls is quiescent and time moves on to the next token.

What it shows (upstream's): the histogram `rest_client_rate_limiter_duration_seconds{verb,
host}` (k8s.io/component-base/metrics/prometheus/restclient), observed for every wait of a
limited client, and the line "Waited for 1.2s due to client-side throttling, not priority and
fairness, request: ..." when a wait is over 1 s (extraLongThrottleLatency), at most once every
10 s for all of a component's clients (the throttled logger's level-0 setting); over 50 ms at
debug level (klog V(3)). And kemu's own: the seconds a task's calls waited, gathered by `measure_waits()` (the scheduler's
binding cycle, for `kemuctl why`).
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Histogram

from kemu.component.client_connection import ClientConnection
from kemu.component.clock import Clock
from kemu.machinery.duration import format_duration

__all__ = [
    "RATE_LIMITER_METRIC",
    "Throttle",
    "ThrottleWaits",
    "TokenBucketRateLimiter",
    "ClientLimits",
    "measure_waits",
]

logger = logging.getLogger(__name__)

RATE_LIMITER_METRIC: Final = "rest_client_rate_limiter_duration_seconds"
_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
LONG_THROTTLE_LATENCY: Final = 0.05
"""rest/request.go longThrottleLatency: a wait logged at V(3) (here: debug)."""
EXTRA_LONG_THROTTLE_LATENCY: Final = 1.0
"""rest/request.go extraLongThrottleLatency: a wait logged at info, throttled."""
LOG_INTERVAL: Final = 10.0
"""globalThrottledLogger's level-0 minLogInterval."""
THROTTLING_REASON: Final = "due to client-side throttling, not priority and fairness"


class TokenBucketRateLimiter:
    """x/time/rate's Limiter with limit `qps` and `burst`, reserving one token at a time,
    on `clock`'s monotonic time (see the module docstring)."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        if not (qps > 0 and math.isfinite(qps)):
            raise ValueError(f"token bucket: qps {qps} must be a positive number")
        if burst <= 0:
            raise ValueError(f"token bucket: burst {burst} must be positive")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = -math.inf
        self._last_event = -math.inf

    def _advance(self, now: float) -> tuple[float, float]:
        last = min(self._last, now)
        return now, min(float(self.burst), self._tokens + (now - last) * self.qps)

    def reserve(self) -> float:
        """Takes the next token; the monotonic instant it is due (now when one is there)."""
        now, tokens = self._advance(self._clock.monotonic())
        tokens -= 1
        due = now + (-tokens / self.qps if tokens < 0 else 0.0)
        self._last, self._tokens, self._last_event = now, tokens, due
        return due

    def cancel(self, due: float) -> None:
        """Gives back the reservation due at `due`, not yet acted on (Reservation.CancelAt):
        its token, less what the reservations made after it were promised."""
        now = self._clock.monotonic()
        if due < now:
            return
        restore = 1.0 - (self._last_event - due) * self.qps
        if restore <= 0:
            return
        now, tokens = self._advance(now)
        self._last, self._tokens = now, min(float(self.burst), tokens + restore)
        if due == self._last_event:
            previous = due - 1.0 / self.qps
            if previous >= now:
                self._last_event = previous

    async def wait(self) -> None:
        """Waits for a token (Limiter.Wait without a deadline)."""
        due = self.reserve()
        delay = due - self._clock.monotonic()
        if delay <= 0:
            return
        try:
            await self._clock.sleep(delay)
        except BaseException:
            self.cancel(due)
            raise


@dataclass(slots=True)
class ThrottleWaits:
    """Seconds the calls of one piece of work waited for tokens (`measure_waits`)."""

    seconds: float = 0.0
    _taken: float = 0.0

    def take(self) -> float:
        """The seconds waited since the last take (the first: since the start)."""
        new, self._taken = self.seconds - self._taken, self.seconds
        return new


_current_waits: contextvars.ContextVar[ThrottleWaits | None] = contextvars.ContextVar(
    "kemu_throttle_waits", default=None
)


@contextmanager
def measure_waits() -> Iterator[ThrottleWaits]:
    """Gathers the token waits of every call made in this context (this task, and the
    tasks it starts meanwhile)."""
    waits = ThrottleWaits()
    token = _current_waits.set(waits)
    try:
        yield waits
    finally:
        _current_waits.reset(token)


def current_waits() -> ThrottleWaits | None:
    """What the calls made now count their token waits in (None: nobody measures them)."""
    return _current_waits.get()


@contextmanager
def counting_into(waits: ThrottleWaits | None) -> Iterator[None]:
    """Counts the token waits of the calls made in this context into `waits`: the
    `current_waits` of the work that handed them over (a call queued for another task to make,
    as the scheduler's API dispatcher does)."""
    token = _current_waits.set(waits)
    try:
        yield
    finally:
        _current_waits.reset(token)


@dataclass(slots=True)
class ThrottledLog:
    """When the info line was last logged: one for a component's clients, as client-go's
    globalThrottledLogger is one for the process."""

    last: float = -math.inf


class Throttle:
    """One client's limiter with what a wait shows (tryThrottleWithInfo): the histogram (when
    the component has a registry), the log lines, the task's ThrottleWaits."""

    def __init__(
        self,
        limiter: TokenBucketRateLimiter,
        clock: Clock,
        *,
        host: str,
        histogram: Histogram | None = None,
        log: ThrottledLog | None = None,
    ) -> None:
        self.limiter = limiter
        self._clock = clock
        self._host = host
        self._histogram = histogram
        self._observers: dict[str, Callable[[float], None]] = {}
        """Each verb's histogram child (labels() costs a lookup each time)."""
        self._log = log if log is not None else ThrottledLog()

    async def wait(self, verb: str, request: str, retry_info: str = "") -> None:
        """Waits for `verb` `request`'s token; `retry_info` says why for a retry."""
        start = self._clock.monotonic()
        await self.limiter.wait()
        latency = self._clock.monotonic() - start
        if self._histogram is not None:
            observe = self._observers.get(verb)
            if observe is None:
                observe = self._observers[verb] = self._histogram.labels(verb, self._host).observe
            observe(latency)
        if latency <= 0:
            return
        if (waits := _current_waits.get()) is not None:
            waits.seconds += latency
        if latency > LONG_THROTTLE_LATENCY:
            reason = f", {retry_info} -" if retry_info else f" {THROTTLING_REASON},"
            message = "Waited for %s%s request: %s:%s"
            args = (format_duration(latency), reason, verb, request)
            now = self._clock.monotonic()
            if latency > EXTRA_LONG_THROTTLE_LATENCY and now - self._log.last >= LOG_INTERVAL:
                self._log.last = now
                logger.info(message, *args)
            else:
                logger.debug(message, *args)


class ClientLimits:
    """A component's rate limits: every client it makes from them (upstream: each clientset
    made from one rest.Config, the scheduler's own, its event client's, its leader
    election's) has a bucket of its own, and all are observed in the one histogram on the
    component's `registry`."""

    def __init__(
        self,
        connection: ClientConnection,
        clock: Clock,
        *,
        host: str,
        registry: CollectorRegistry | None,
    ) -> None:
        self.connection = connection
        self._clock = clock
        self._host = host
        self._log = ThrottledLog()
        self._histogram: Histogram | None = None
        if registry is not None and connection.limits() is not None:
            self._histogram = Histogram(
                RATE_LIMITER_METRIC,
                "Client side rate limiter latency in seconds. Broken down by verb, and host.",
                ["verb", "host"],
                buckets=_BUCKETS,
                registry=registry,
            )

    def with_connection(self, connection: ClientConnection) -> ClientLimits:
        """The same component's limits from another rest.Config (`connection`): clients made
        from them have buckets of that size, observed in the same histogram and logged by the
        same throttled logger (upstream: cluster-autoscaler's events client, made from the
        kubeconfig alone, not from --kube-client-qps). The histogram is the one made for this
        component's own connection: a component whose own client is not limited observes
        none."""
        other = ClientLimits(connection, self._clock, host=self._host, registry=None)
        other._log = self._log
        other._histogram = self._histogram
        return other

    def new(self) -> Throttle | None:
        """A new client's throttle (None: not limited, a negative QPS)."""
        limits = self.connection.limits()
        if limits is None:
            return None
        qps, burst = limits
        return Throttle(
            TokenBucketRateLimiter(qps, burst, self._clock),
            self._clock,
            host=self._host,
            histogram=self._histogram,
            log=self._log,
        )
