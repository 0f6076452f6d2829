"""The priority and fairness filter: levels' limits, seats, 429 and Retry-After, metrics
(apf_controller.go, priority-and-fairness.go, dropped_requests_tracker.go; issue #58 item 3)."""

from __future__ import annotations

import time

import anyio
import pytest
from prometheus_client import CollectorRegistry

from apiserver.endpoints import identity
from apiserver.endpoints.inflight import RequestInfo
from apiserver.flowcontrol.apf_filter import (
    ApfMetrics,
    Config,
    PriorityAndFairness,
    RetryAfter,
    bootstrap_config,
    list_seats,
    max_seats,
    nominal_limits,
)
from kemu.component.clock import FakeClock
from kemu.machinery.errors import TooManyRequests

SCHEDULER = identity.of_user_agent("kube-scheduler")
LEASE_RENEWAL = RequestInfo(
    "update", "leases", "kube-system", api_group="coordination.k8s.io", user=SCHEDULER
)


def test_nominal_limits_of_the_bootstrap_levels_at_upstreams_default_total() -> None:
    """600 seats (400 + 200) over 245 shares: upstream's apiserver_flowcontrol_nominal_limit_seats
    of a default cluster."""
    _, levels = bootstrap_config()
    assert nominal_limits(600, levels) == {
        "exempt": 0,
        "catch-all": 13,
        "system": 74,
        "node-high": 98,
        "leader-election": 25,
        "workload-high": 98,
        "workload-low": 245,
        "global-default": 49,
    }


def test_seats_of_a_list() -> None:
    assert max_seats(245, 6) == 10  # the estimator's cap
    assert max_seats(25, 4) == 4  # ceil(15% of 25)
    assert max_seats(3, 6) == 1
    assert list_seats(0, 10) == 1
    assert list_seats(250, 10) == 3
    assert list_seats(5000, 10) == 10


def test_retry_after_doubles_under_drops_and_comes_back_down() -> None:
    t = [1000.0]
    ra = RetryAfter(lambda: t[0])
    assert ra.get("l") == 1
    for second in range(1000, 1004):
        t[0] = second
        for _ in range(10):
            ra.dropped("l")
    assert ra.get("l") > 1
    high = ra.get("l")
    for second in range(1010, 1060, 5):
        t[0] = second
        ra.dropped("l")
    assert ra.get("l") < high


def _apf(
    server_limit: int,
    metrics_registry: CollectorRegistry,
    wait_limit: float = 5.0,
    clock: FakeClock | None = None,
) -> PriorityAndFairness:
    def config() -> Config | None:
        return None

    return PriorityAndFairness(
        server_limit,
        lambda: 1,
        config,
        lambda info: 0,
        ApfMetrics(metrics_registry),
        now=clock.monotonic if clock is not None else time.monotonic,
        wait_limit=wait_limit,
        wait_clock=clock,
    )


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return value if value is not None else 0.0


@pytest.mark.anyio
async def test_a_flood_at_global_default_does_not_delay_a_lease_renewal() -> None:
    """The anonymous flood fills global-default's seats and queues; the scheduler's renewal
    is classified to leader-election and executes at once."""
    registry = CollectorRegistry()
    apf = _apf(60, registry)  # global-default: ceil(60*20/245) = 5 seats
    release = anyio.Event()
    entered = 0

    async def flood_one() -> None:
        nonlocal entered
        try:
            async with apf.admit(RequestInfo("get", "pods", "ns")):
                entered += 1
                await release.wait()
        except TooManyRequests:
            pass

    async with anyio.create_task_group() as tg:
        for _ in range(40):
            tg.start_soon(flood_one)
        await anyio.wait_all_tasks_blocked()
        assert entered == 5
        pl_fs = {"priority_level": "global-default", "flow_schema": "global-default"}
        assert _sample(registry, "apiserver_flowcontrol_current_executing_requests", **pl_fs) == 5
        assert _sample(registry, "apiserver_flowcontrol_current_inqueue_requests", **pl_fs) == 35
        with anyio.fail_after(1):
            async with apf.admit(LEASE_RENEWAL):
                pass
        release.set()
    le = {"priority_level": "leader-election", "flow_schema": "system-leader-election"}
    assert _sample(registry, "apiserver_flowcontrol_dispatched_requests_total", **le) == 1
    assert _sample(registry, "apiserver_flowcontrol_nominal_limit_seats",
                   priority_level="leader-election") == 3  # fmt: skip


@pytest.mark.anyio
async def test_a_full_queue_is_refused_with_429_and_retry_after() -> None:
    """One flow (the anonymous user) over its one queue's length: queue-full."""
    registry = CollectorRegistry()
    apf = _apf(60, registry)
    release = anyio.Event()
    refused: list[TooManyRequests] = []

    async def one() -> None:
        try:
            async with apf.admit(RequestInfo("get", "pods", "ns")):
                await release.wait()
        except TooManyRequests as e:
            refused.append(e)

    async with anyio.create_task_group() as tg:
        # 5 execute; the flow's queue holds 50 (one flow: the hand's least-loaded queue
        # changes as it fills, so up to hand 6 queues * 50 wait)
        for _ in range(5 + 6 * 50 + 3):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()
        assert len(refused) == 3
        release.set()
    assert refused[0].retry_after_seconds == 1
    assert "Too many requests" in refused[0].message
    labels = {"priority_level": "global-default", "flow_schema": "global-default"}
    assert _sample(registry, "apiserver_flowcontrol_rejected_requests_total", **labels,
                   reason="queue-full") == 3  # fmt: skip


@pytest.mark.anyio
async def test_a_request_waiting_past_the_limit_times_out() -> None:
    """The queue wait's limit on a fake clock: the sixth request, queued behind global-default's
    five seats, is refused once the limit has passed, and not before."""
    registry = CollectorRegistry()
    clock = FakeClock()
    apf = _apf(60, registry, wait_limit=0.05, clock=clock)
    release = anyio.Event()
    refused: list[str] = []

    async def one() -> None:
        try:
            async with apf.admit(RequestInfo("get", "pods", "ns")):
                await release.wait()
        except TooManyRequests:
            refused.append("x")

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()
        assert clock.sleepers == 1  # the one queued request's limit
        clock.advance(0.049)
        await anyio.wait_all_tasks_blocked()
        assert refused == []
        clock.advance(0.002)
        await anyio.wait_all_tasks_blocked()
        assert refused == ["x"]
        release.set()
    labels = {"priority_level": "global-default", "flow_schema": "global-default"}
    assert _sample(registry, "apiserver_flowcontrol_rejected_requests_total", **labels,
                   reason="time-out") == 1  # fmt: skip


def test_a_classification_is_kept_for_every_object_of_a_request_shape() -> None:
    """Each pod's status PATCH names another pod: the kept classification (by what
    classification reads, match.classified_as) serves them all, the same one a fresh filter
    computes; another user's request is classified on its own."""
    kubelet = identity.of_user_agent("kubelet")
    apf = _apf(600, CollectorRegistry())
    first = apf.classify(
        RequestInfo("patch", "pods", "ns", subresource="status", user=kubelet, name="p0")
    )
    assert first is not None
    for i in range(1, 50):
        info = RequestInfo("patch", "pods", "ns", subresource="status", user=kubelet, name=f"p{i}")
        assert apf.classify(info) is first
        fresh = _apf(600, CollectorRegistry()).classify(info)
        assert fresh is not None
        assert (fresh.flow_schema_name, fresh.level, fresh.distinguisher) == (
            first.flow_schema_name,
            first.level,
            first.distinguisher,
        )
    other = apf.classify(
        RequestInfo(
            "patch", "pods", "ns", subresource="status", user=identity.of_user_agent("x"), name="p0"
        )
    )
    assert other is not None and other is not first
