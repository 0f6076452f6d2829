"""The scheduler's client-side rate limit (issue #58 item 2) on real processes in virtual
time: with KubeSchedulerConfiguration `clientConnection: {qps: 2, burst: 2}` twenty pods
created at one instant are bound two at once and then one every half second, the last 9 s
after the first (client-go's token bucket: the burst, then 1/qps apart), the scheduler's
`rest_client_rate_limiter_duration_seconds{verb="POST"}` holds those waits and its decision
record says how long each binding's Bind waited; with the scheduler's default (50/100) the
same twenty are bound at once and nothing waited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.client.client import Client
from kemu.client.flowcontrol import RATE_LIMITER_METRIC
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, make_node, make_pod
from kemu.testing.digest import RunRecorder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PODS = 20
THROTTLED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 2, burst: 2}
"""


def _binds(metrics: str) -> tuple[float, float]:
    """The POST samples of the rate limiter histogram: (count, sum)."""
    count = total = 0.0
    for family in text_string_to_metric_families(metrics):
        if family.name != RATE_LIMITER_METRIC:
            continue
        for sample in family.samples:
            if sample.labels.get("verb") != "POST":
                continue
            if sample.name.endswith("_count"):
                count = sample.value
            elif sample.name.endswith("_sum"):
                total = sample.value
    return count, total


async def _bind_twenty(
    root: Path, config: str | None, gates: str = ""
) -> tuple[RunRecorder, str, dict[str, Any]]:
    """Twenty pods created at one held instant on a scheduler whose bucket is full; the run,
    the scheduler's /metrics after it and the decision record of the pod bound last."""
    c = Cluster(root, clock=ClockMode.VIRTUAL)
    with c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)
            path = None
            if config is not None:
                path = root / "scheduler.yaml"
                path.write_text(config)
            args = ["--seed", "1", "--record-decisions"]
            if gates:
                args += ["--feature-gates", gates]
            scheduler = c.start_scheduler(config=path, extra_args=args, wait=False)
            # The informers' lists wait for tokens too (at 2 qps: for virtual time to pass);
            # then the bucket fills up again.
            await client.advance_clock(10)
            await anyio.to_thread.run_sync(scheduler.wait_ready)
            await client.create(make_node("n1").capacity(cpu="64", pods="110").obj())
            await client.advance_clock(10)
            async with RunRecorder.watching(client) as run:
                for i in range(PODS):
                    await client.create(make_pod(f"p{i:02}").namespace("default").obj())
                await client.advance_clock(30)
            metrics = await anyio.to_thread.run_sync(scheduler.scrape)
            last = max(run.pods.items(), key=lambda item: item[1].bound_at_ms or 0)[0]
            record = await anyio.to_thread.run_sync(scheduler.debug, "decisions", {"pod": last})
            return run, metrics, record


@pytest.mark.parametrize(
    ("gates", "least_wait"),
    [("", 8.9), ("SchedulerAsyncAPICalls=true", 8.0)],
    ids=["sync", "async-api-calls"],
)
async def test_a_scheduler_at_2_qps_binds_twenty_pods_over_9_virtual_seconds(
    tmp_path: Path, gates: str, least_wait: float
) -> None:
    """With SchedulerAsyncAPICalls the dispatcher's workers make the binds, and the wait is
    still the binding's in its record (the last call is popped once a worker is free, up to
    half a second after the others asked, so it waits up to that much less)."""
    run, metrics, record = await _bind_twenty(tmp_path, THROTTLED, gates)
    bound = sorted(p.bound_at_ms for p in run.pods.values() if p.bound_at_ms is not None)
    assert len(bound) == PODS
    # two at once (the burst), then one every 1/qps = 0.5 s: the last 9 s after the first
    assert 8_900 <= bound[-1] - bound[0] <= 9_500, bound
    count, total = _binds(metrics)
    assert count >= PODS  # the binds, and the Scheduled events' creates (their own bucket)
    # the binds' waits: 0, 0, 0.5, 1.0, ... 9.0 s (the events come as fast as the binds)
    assert 80 <= total <= 90, total
    # kemuctl why's record: the last pod bound waited 9 s in Bind for its token
    (bind,) = [p for p in record["attempts"][-1]["phases"] if p["point"] == "Bind"]
    assert least_wait <= bind["throttledSeconds"] <= 9.1, bind


async def test_the_schedulers_default_does_not_throttle_twenty_binds(tmp_path: Path) -> None:
    run, metrics, record = await _bind_twenty(tmp_path, None)
    bound = sorted(p.bound_at_ms for p in run.pods.values() if p.bound_at_ms is not None)
    assert len(bound) == PODS
    assert bound[-1] - bound[0] < 1_000, bound
    count, total = _binds(metrics)
    assert count >= PODS and total < 0.01, (count, total)
    (bind,) = [p for p in record["attempts"][-1]["phases"] if p["point"] == "Bind"]
    assert "throttledSeconds" not in bind
