"""The priority and fairness filter of both edges (upstream's
k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go and pkg/util/flowcontrol:
apf_controller.go, apf_filter.go, dropped_requests_tracker.go,
request/list_work_estimator.go), in place of the max-in-flight filter when
`--enable-priority-and-fairness` (default true).

A request (a watch too, whose seats are held only until its initial events are sent) is
classified by the FlowSchemas (match.py) to a priority level and a flow; the level's QueueSet
admits, queues or rejects it. A rejected request, or one that waited `WAIT_LIMIT` seconds in
its queue, is answered 429 with a Retry-After from the level's recent drops (1 s, doubled
while at least 3 per second of it are dropped, at most 32 s).

Each level's nominal concurrency limit is ceil(server total * its shares / the sum of all
levels' shares), the server total being --max-requests-inflight +
--max-mutating-requests-inflight. From 1.26 (VersionRules apf_borrowing) levels lend and
borrow (apf_controller.go's updateBorrowing, every BORROWING_PERIOD on the server's clock and at
each configuration change): a level's current limit lies in [nominal - round(nominal *
lendablePercent / 100), nominal + round(nominal * borrowingLimitPercent / 100)] (no
borrowingLimitPercent: + the server total), at least its seat demand's high watermark of the
last period (up to its nominal), and the nominal limits' sum is divided fairly by the levels'
smoothed seat demand (conc_alloc.py; the demand: integrator.py over each QueueSet's seats in
use and waiting). A new level starts at nominal - lendable / 2. Before 1.26 each level has its
nominal limit.

The configuration is the FlowSchemas and PriorityLevelConfigurations of the watch caches
(re-read when either cache moves), or upstream's bootstrap objects before any is stored.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from apiserver.endpoints.inflight import RequestInfo, watch_init_signal
from apiserver.flowcontrol import match
from apiserver.flowcontrol.conc_alloc import AllocItem, compute_concurrency_allocation
from apiserver.flowcontrol.integrator import SeatDemandStats
from apiserver.flowcontrol.queueset import (
    CANCELLED,
    TIME_OUT,
    Decision,
    QueueSet,
    QueuingConfig,
)
from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.virtual_clock import move_on_after
from kemu.machinery import flowcontrol
from kemu.machinery.errors import TooManyRequests

MESSAGE: Final = "Too many requests, please try again later."
WAIT_LIMIT: Final = 15.0
"""Seconds a request may wait in its queue: upstream's a quarter of the request timeout
(60 s), priority-and-fairness.go's getRequestWaitContext."""
OBJECTS_PER_SEAT: Final = 100
"""A list's seats are its objects / this (list_work_estimator.go, ObjectsPerSeat)."""
MAXIMUM_SEATS: Final = 10
"""The work estimator's cap on a request's seats (DefaultMaximumSeats)."""
MAX_SEATS_PERCENT: Final = 0.15
"""A level's max seats: 15% of its limit, at most limit / handSize (apf_controller.go)."""
BORROWING_PERIOD: Final = 10.0
"""Seconds between two re-divisions of the seats (apf_controller.go borrowingAdjustmentPeriod)."""
DUMP_REQUESTS: Final = "api_priority_and_fairness/dump_requests"
"""The debug handler's name: /debug/<it> on the metrics port (upstream's path on its own)."""
MAX_RETRY_AFTER: Final = 32
"""dropped_requests_tracker.go's maxRetryAfter."""

logger = logging.getLogger(__name__)

Config = tuple[Sequence[types_pb2.FlowSchema], Sequence[types_pb2.PriorityLevelConfiguration]]


def bootstrap_config() -> Config:
    levels = [pl for pl, _ in flowcontrol.bootstrap_priority_levels()]
    schemas = [fs for fs, _ in flowcontrol.bootstrap_flow_schemas()]
    return schemas, levels


def nominal_limits(
    server_limit: int, levels: Sequence[types_pb2.PriorityLevelConfiguration]
) -> dict[str, int]:
    """Each level's nominal concurrency limit in seats: ceil(server_limit * shares / sum of
    shares) (apf_controller.go's NominalCL; the exempt level's shares count in the sum)."""
    shares = {pl.metadata.name: _shares(pl) for pl in levels}
    total = sum(shares.values())
    if not total:
        return dict.fromkeys(shares, 0)
    return {name: math.ceil(server_limit * s / total) for name, s in shares.items()}


def _shares(pl: types_pb2.PriorityLevelConfiguration) -> int:
    if pl.spec.HasField("exempt"):
        return pl.spec.exempt.nominal_concurrency_shares
    return pl.spec.limited.nominal_concurrency_shares


def _go_round(x: float) -> int:
    """Go's math.Round for x >= 0: halves away from zero (Python's round() goes to even)."""
    return math.floor(x + 0.5)


def limit_bounds(
    pl: types_pb2.PriorityLevelConfiguration, nominal: int, server_limit: int
) -> tuple[int, int]:
    """A level's (minCL, maxCL): its nominal limit less what it lends, plus what it may
    borrow (apf_controller.go finishQueueSetReconfigsLocked and plSpecCommons: an exempt
    level, or a limited one without borrowingLimitPercent, may borrow up to the server
    total)."""
    commons = pl.spec.exempt if pl.spec.HasField("exempt") else pl.spec.limited
    lendable = 0
    if commons.HasField("lendable_percent"):
        lendable = _go_round(nominal * commons.lendable_percent / 100)
    borrowing = server_limit
    limited = pl.spec.limited
    if not pl.spec.HasField("exempt") and limited.HasField("borrowing_limit_percent"):
        borrowing = _go_round(nominal * limited.borrowing_limit_percent / 100)
    return nominal - lendable, nominal + borrowing


def max_seats(limit: int, hand_size: int) -> int:
    """A level's max seats per request (apf_controller.go), within the estimator's cap."""
    by_hand = limit // hand_size if hand_size else limit
    return min(MAXIMUM_SEATS, max(1, min(math.ceil(limit * MAX_SEATS_PERCENT), by_hand)))


def list_seats(objects: int, level_max_seats: int) -> int:
    """A list's seats: its objects over OBJECTS_PER_SEAT, at least 1 and at most the level's
    max (list_work_estimator.go; every other request 1 seat)."""
    return max(1, min(level_max_seats, math.ceil(objects / OBJECTS_PER_SEAT)))


class RetryAfter:
    """Per level, the Retry-After of a dropped request (dropped_requests_tracker.go): 1 s;
    doubled (at most MAX_RETRY_AFTER) when at least 3 * retryAfter requests were dropped in
    the last retryAfter seconds and retryAfter seconds passed since the last increase; less
    one when fewer than retryAfter were dropped. Updated when a new second sees a drop."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._levels: dict[str, _DropStats] = {}

    def dropped(self, level: str) -> None:
        unix = int(self._now())
        self._levels.setdefault(level, _DropStats()).record(unix)

    def get(self, level: str) -> int:
        stats = self._levels.get(level)
        return stats.retry_after if stats is not None else 1


@dataclass
class _DropStats:
    retry_after: int = 1
    updated: int = 0
    current: int = -1
    count: int = 0

    def __post_init__(self) -> None:
        self.history: list[tuple[int, int]] = []

    def record(self, unix: int) -> None:
        if unix == self.current:
            self.count += 1
            return
        if self.current >= 0:
            self.history.append((self.current, self.count))
            self.history = [(t, n) for t, n in self.history if unix - t <= MAX_RETRY_AFTER]
        self.current, self.count = unix, 1
        dropped = sum(n for t, n in self.history if unix - t <= self.retry_after and t < unix)
        if unix - self.updated >= self.retry_after and dropped >= 3 * self.retry_after:
            self.retry_after = min(self.retry_after * 2, MAX_RETRY_AFTER)
            self.updated = unix
        elif dropped < self.retry_after and self.retry_after > 1:
            self.retry_after -= 1


class ApfMetrics:
    """upstream's apiserver_flowcontrol_* (metrics/metrics.go), with its labels."""

    def __init__(self, registry: CollectorRegistry) -> None:
        pl_fs = ["priority_level", "flow_schema"]
        self.executing = Gauge(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
            "stage in the API Priority and Fairness subsystem",
            pl_fs,
            registry=registry,
        )
        self.executing_seats = Gauge(
            "apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage "
            "for a WATCH, any stage otherwise) requests in the API Priority and Fairness "
            "subsystem",
            pl_fs,
            registry=registry,
        )
        self.inqueue = Gauge(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness "
            "subsystem",
            pl_fs,
            registry=registry,
        )
        self.dispatched = Counter(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            pl_fs,
            registry=registry,
        )
        self.rejected = Counter(
            "apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            [*pl_fs, "reason"],
            registry=registry,
        )
        self.wait = Histogram(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            [*pl_fs, "execute"],
            buckets=(0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30),
            registry=registry,
        )
        self.nominal_limit = Gauge(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            ["priority_level"],
            registry=registry,
        )


class BorrowingMetrics:
    """The borrowing's gauges (upstream's metrics.go SetPriorityLevelConfiguration,
    NotePriorityLevelConcurrencyAdjustment, SetFairFrac), from 1.26."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def level_gauge(name: str, doc: str) -> Gauge:
            return Gauge(
                f"apiserver_flowcontrol_{name}", doc, ["priority_level"], registry=registry
            )

        self.lower_limit = level_gauge(
            "lower_limit_seats",
            "Configured lower bound on number of execution seats available to each priority level",
        )
        self.upper_limit = level_gauge(
            "upper_limit_seats",
            "Configured upper bound on number of execution seats available to each priority level",
        )
        self.current_limit = level_gauge(
            "current_limit_seats",
            "current derived number of execution seats available to each priority level",
        )
        self.high_watermark = level_gauge(
            "demand_seats_high_watermark",
            "High watermark, over last adjustment period, of demand_seats",
        )
        self.average = level_gauge(
            "demand_seats_average",
            "Time-weighted average, over last adjustment period, of demand_seats",
        )
        self.stdev = level_gauge(
            "demand_seats_stdev",
            "Time-weighted standard deviation, over last adjustment period, of demand_seats",
        )
        self.smoothed = level_gauge("demand_seats_smoothed", "Smoothed seat demands")
        self.target = level_gauge("target_seats", "Seat allocation targets")
        self.fair_frac = Gauge(
            "apiserver_flowcontrol_seat_fair_frac",
            "Fair fraction of server's concurrency to allocate to each priority level that "
            "can use it",
            registry=registry,
        )


@dataclass
class _Level:
    pl: types_pb2.PriorityLevelConfiguration
    queues: QueueSet
    max_seats: int
    nominal: int = 0
    lower: int = 0
    """minCL: nominal less what the level lends."""
    upper: int = 0
    """maxCL: nominal plus what the level may borrow."""
    stats: SeatDemandStats = field(default_factory=SeatDemandStats)


CLASSIFIED_CACHE_SIZE: Final = 4096
"""Requests' classifications kept (by what classification reads of them,
`match.classified_as`) until the configuration moves: a
cluster's requests come in few shapes, and the FlowSchemas' rules are a walk of Python
loops per request (match.go's, cheap in Go)."""


@dataclass(frozen=True)
class _Flow:
    """A request shape's classification with what admitting it needs: the flow's hash and its
    (priority level, flow schema) series of the metrics, looked up once."""

    classification: match.Classification
    hash: int
    executing: Gauge
    executing_seats: Gauge
    inqueue: Gauge
    dispatched: Counter
    waited: Histogram
    labels: tuple[str, str]

    @classmethod
    def of(cls, c: match.Classification, metrics: ApfMetrics) -> _Flow:
        labels = (c.level, c.flow_schema_name)
        return cls(
            c,
            c.flow_hash(),
            metrics.executing.labels(*labels),
            metrics.executing_seats.labels(*labels),
            metrics.inqueue.labels(*labels),
            metrics.dispatched.labels(*labels),
            metrics.wait.labels(*labels, "true"),
            labels,
        )


class PriorityAndFairness:
    """The limiter of both edges when APF is on (apiserver/endpoints/inflight.py Limiter)."""

    limited: Final = True

    def __init__(
        self,
        server_limit: int,
        version: Callable[[], object],
        config: Callable[[], Config | None],
        object_count: Callable[[RequestInfo], int],
        metrics: ApfMetrics,
        *,
        now: Callable[[], float] = time.monotonic,
        wait_limit: float = WAIT_LIMIT,
        wait_clock: Clock | None = None,
        borrowing: BorrowingMetrics | None = None,
    ) -> None:
        """`config()` gives the stored configuration (None: nothing stored yet, the bootstrap
        objects serve), read again when `version()` moves.
        `object_count` the objects a list of the request would read. `borrowing`: the levels
        lend and borrow seats (from 1.26; `update_borrowing` to be called every
        BORROWING_PERIOD), its gauges; None: each level at its nominal limit. `wait_clock`:
        the clock a queued request's `wait_limit` runs on, default the host's (upstream's
        request context deadline, priority-and-fairness.go; its fairqueuing tests run the
        queue set on a fake clock, testing/eventclock)."""
        self.server_limit = server_limit
        self._config = config
        self._config_version = version
        self._object_count = object_count
        self._metrics = metrics
        self._now = now
        self._wait_limit = wait_limit
        self._wait_clock: Clock = wait_clock if wait_clock is not None else RealClock()
        self._borrowing = borrowing
        self._nominal_sum = 0
        self._version: object = _UNSET
        self._schemas: list[types_pb2.FlowSchema] = []
        self._levels: dict[str, _Level] = {}
        self._flows: dict[match.ClassifiedAs, _Flow | None] = {}
        self.retry_after = RetryAfter(time.time)

    # ------------------------------------------------------------ configuration

    def _refresh(self) -> None:
        version = self._config_version()
        if version == self._version:
            return
        self._version = version
        stored = self._config()
        schemas, levels = stored if stored else bootstrap_config()
        limits = nominal_limits(self.server_limit, levels)
        kept: dict[str, _Level] = {}
        for pl in levels:
            name = pl.metadata.name
            limit = limits[name]
            lower, upper = limit_bounds(pl, limit, self.server_limit)
            self._metrics.nominal_limit.labels(name).set(limit)
            if self._borrowing is not None:
                self._borrowing.lower_limit.labels(name).set(lower)
                self._borrowing.upper_limit.labels(name).set(upper)
            queuing = _queuing(pl)
            old = self._levels.get(name)
            if old is not None and old.pl.spec == pl.spec:
                old.pl, old.nominal, old.lower, old.upper = pl, limit, lower, upper
                if self._borrowing is None:
                    old.queues.set_concurrency_limit(limit)  # (the sum of shares may move)
                kept[name] = old
                continue
            # (a changed level gets new queues; its old set drains its own requests)
            exempt = pl.spec.HasField("exempt") or pl.spec.type == "Exempt"
            hand = queuing.hand_size if queuing else 0
            # a new level starts at nominal - lendable / 2 (finishQueueSetReconfigsLocked)
            initial = limit - (limit - lower) // 2 if self._borrowing is not None else limit
            queues = QueueSet(initial, queuing, self._now, exempt=exempt)
            kept[name] = _Level(pl, queues, max_seats(limit, hand), limit, lower, upper)
        self._levels = kept
        self._nominal_sum = sum(limits.values())
        self._schemas = match.ordered(schemas)
        self._flows.clear()
        if self._borrowing is not None:  # (as upstream, at each configuration change too)
            self._update_borrowing(self._borrowing)

    def update_borrowing(self) -> None:
        """The periodic re-division of the seats (apf_controller.go updateBorrowing); nothing
        where levels do not borrow."""
        if self._borrowing is None:
            return
        before = self._version
        self._refresh()
        if self._version is before:  # (a configuration change re-divided them itself)
            self._update_borrowing(self._borrowing)

    def _update_borrowing(self, metrics: BorrowingMetrics) -> None:
        """Each level's demand of the period ended now; its bounds: [max(minCL,
        min(nominal, high watermark)), maxCL], its target the larger of that lower bound and
        the smoothed demand; the nominal limits' sum divided fairly (conc_alloc.py), each
        level's current limit the rounded share (upstream's updateBorrowingLocked)."""
        names = list(self._levels)
        items = []
        for name in names:
            level = self._levels[name]
            level.stats.update(level.queues.demand.reset())
            lower = max(level.lower, min(level.nominal, level.stats.high_watermark))
            items.append(AllocItem(max(lower, level.stats.smoothed), lower, level.upper))
        try:
            allocs, fair = compute_concurrency_allocation(self._nominal_sum, items)
        except ValueError as e:  # (as upstream: logged, the current limits kept)
            logger.error("Unable to derive new concurrency limits: %s", e)
            allocs = [float(self._levels[n].queues.concurrency_limit) for n in names]
            fair = math.nan
        for name, item, alloc in zip(names, items, allocs, strict=True):
            level = self._levels[name]
            current = _go_round(alloc)
            level.queues.set_concurrency_limit(current)
            stats = level.stats
            metrics.high_watermark.labels(name).set(stats.high_watermark)
            metrics.average.labels(name).set(stats.average)
            metrics.stdev.labels(name).set(stats.deviation)
            metrics.smoothed.labels(name).set(stats.smoothed)
            metrics.target.labels(name).set(item.target)
            metrics.current_limit.labels(name).set(current)
        if not math.isnan(fair):
            metrics.fair_frac.set(fair)

    def nominal_limit(self, level: str) -> int:
        self._refresh()
        return self._levels[level].nominal

    def current_limit(self, level: str) -> int:
        """The level's concurrency limit now: its nominal one, or what the borrowing gave."""
        self._refresh()
        return self._levels[level].queues.concurrency_limit

    def classify(self, info: RequestInfo) -> match.Classification | None:
        flow = self._flow(info)
        return flow.classification if flow is not None else None

    def _flow(self, info: RequestInfo) -> _Flow | None:
        self._refresh()
        key = match.classified_as(info)
        try:
            return self._flows[key]
        except KeyError:
            pass
        c = match.classify(self._schemas, set(self._levels), info)
        flow = _Flow.of(c, self._metrics) if c is not None else None
        if len(self._flows) >= CLASSIFIED_CACHE_SIZE:
            self._flows.clear()
        self._flows[key] = flow
        return flow

    def dump_requests(self, params: Mapping[str, str]) -> list[dict[str, object]]:
        """The waiting requests, a row each with upstream's columns
        (apf_controller_debug.go dumpRequests, served at
        /debug/api_priority_and_fairness/dump_requests; `includeRequestDetails` adds the user
        and what the request names). JSON rows where upstream writes a table."""
        self._refresh()
        details = bool(params.get("includeRequestDetails"))
        offset = time.time() - self._now()
        rows: list[dict[str, object]] = []
        for name, level in self._levels.items():
            for queue, index, r in level.queues.waiting_requests():
                row: dict[str, object] = {
                    "PriorityLevelName": name,
                    "FlowSchemaName": r.flow_schema,
                    "QueueIndex": queue,
                    "RequestIndexInQueue": index,
                    "FlowDistingsher": r.flow_distinguisher,  # (upstream's spelling)
                    "ArriveTime": _rfc3339(r.arrive_time + offset),
                    "InitialSeats": r.seats,
                    "FinalSeats": 0,
                    "AdditionalLatency": "0s",
                }
                info = r.details
                if details and isinstance(info, RequestInfo):
                    row |= {
                        "UserName": info.user.name,
                        "Verb": info.verb,
                        "APIPath": info.path,
                        "Namespace": info.namespace,
                        "Resource": info.resource,
                        "SubResource": info.subresource,
                    }
                rows.append(row)
        return rows

    # ------------------------------------------------------------ the filter

    def admit(self, info: RequestInfo) -> contextlib.AbstractAsyncContextManager[None]:
        return self._admit(info)

    @contextlib.asynccontextmanager
    async def _admit(self, info: RequestInfo) -> AsyncIterator[None]:
        """A request waits for its seats (or is refused) and holds them while it is served;
        a watch only until its initial events are handed over (`watch_initialized`:
        priority-and-fairness.go's watchInitializationSignal)."""
        flow = self._flow(info)
        if flow is None:  # (no catch-all: upstream's filter rejects with 500)
            yield
            return
        level_name, fs = flow.labels
        level = self._levels[level_name]
        seats = 1
        if info.verb == "list" or info.send_initial_events:
            # (a watch that starts with the list's objects costs as the list: upstream's
            # work estimator with WatchList)
            seats = list_seats(self._object_count(info), level.max_seats)
        queues = level.queues
        started = self._now()
        request = queues.start_request(
            flow.hash, seats, fs, flow.classification.distinguisher, info
        )
        if request.decision is Decision.WAITING:
            decided = anyio.Event()
            request.on_decision = decided.set
            flow.inqueue.inc()
            try:
                async with move_on_after(self._wait_clock, self._wait_limit):
                    await decided.wait()
            except BaseException:  # (its caller went away)
                if not queues.give_up(request, CANCELLED):
                    queues.finish(request)  # (dispatched meanwhile: its seats back)
                raise
            finally:
                flow.inqueue.dec()
            if request.decision is Decision.WAITING:
                queues.give_up(request, TIME_OUT)
        waited = self._now() - started
        if request.decision is Decision.REJECT:
            self._metrics.wait.labels(level_name, fs, "false").observe(waited)
            self._metrics.rejected.labels(level_name, fs, request.reason).inc()
            self.retry_after.dropped(level_name)
            raise TooManyRequests.retry_after(MESSAGE, self.retry_after.get(level_name))
        flow.waited.observe(waited)
        flow.dispatched.inc()
        flow.executing.inc()
        flow.executing_seats.inc(seats)
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            queues.finish(request)
            flow.executing.dec()
            flow.executing_seats.dec(seats)

        try:
            if info.long_running:
                with watch_init_signal(release):
                    yield
            else:
                yield
        finally:
            release()


_UNSET: Final = object()


def _rfc3339(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, datetime.UTC).isoformat().replace("+00:00", "Z")


def _queuing(pl: types_pb2.PriorityLevelConfiguration) -> QueuingConfig | None:
    if not pl.spec.HasField("limited"):
        return None
    response = pl.spec.limited.limit_response
    if response.type != "Queue":
        return None
    q = response.queuing
    return QueuingConfig(q.queues, q.hand_size, q.queue_length_limit)
