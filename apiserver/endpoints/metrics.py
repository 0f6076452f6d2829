"""The gRPC edge's request and watch metrics (upstream's apiserver_request_total,
apiserver_request_duration_seconds, apiserver_registered_watchers, apiserver_watch_events_total:
k8s.io/apiserver/pkg/endpoints/metrics/metrics.go)."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_DURATION_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
)


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out by verb, resource and gRPC code.",
            ["verb", "resource", "code"],
            registry=registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb and resource.",
            ["verb", "resource"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.watchers = Gauge(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resource.",
            ["resource"],
            registry=registry,
        )
        self.watch_events = Counter(
            "apiserver_watch_events_total",
            "Number of events sent in watch clients.",
            ["resource"],
            registry=registry,
        )
        # k8s.io/apiserver/pkg/storage/cacher/metrics/metrics.go ConsistentReadTotal
        self.consistent_reads = Counter(
            "apiserver_watch_cache_consistent_read_total",
            "Counter for consistent reads from cache.",
            ["resource", "success", "fallback"],
            registry=registry,
        )

        # labels() takes a lock and builds a key on every call: keep the children.
        self._request_children: dict[tuple[str, str, str], Counter] = {}
        self._duration_children: dict[tuple[str, str], Histogram] = {}

    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None:
        counter = self._request_children.get((verb, resource, code))
        if counter is None:
            counter = self._request_children[(verb, resource, code)] = self.requests.labels(
                verb, resource, code
            )
        counter.inc()
        histogram = self._duration_children.get((verb, resource))
        if histogram is None:
            histogram = self._duration_children[(verb, resource)] = self.duration.labels(
                verb, resource
            )
        histogram.observe(seconds)

    def watchers_changed(self, resource: str, count: int) -> None:
        self.watchers.labels(resource).set(count)
