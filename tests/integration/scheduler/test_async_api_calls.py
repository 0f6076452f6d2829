"""SchedulerAsyncAPICalls (KEP-5229) on real processes: with the gate on, a pod that fits is
bound and a pod that fits nowhere gets PodScheduled=False (Unschedulable), both through the
scheduler's API dispatcher, whose `scheduler_async_api_call_execution_total` counts a
pod_binding and a pod_status_patch (upstream registers the series only with the gate on); and a
preemption with the gate on: the preemptor nominated, the victim gone, the preemptor bound."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.builders import PriorityClassBuilder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CALLS = "scheduler_async_api_call_execution"


def _calls(metrics: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(metrics):
        if family.name != CALLS:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out[(sample.labels["call_type"], sample.labels["result"])] = sample.value
    return out


async def test_binding_and_failure_status_go_through_the_dispatcher(tmp_path: Path) -> None:
    with Cluster(tmp_path) as c:
        c.start_etcd()
        c.start_apiserver()
        scheduler = c.start_scheduler(
            extra_args=["--seed", "1"], feature_gates={"SchedulerAsyncAPICalls": True}
        )
        async with Client(c.server, timeout=10.0) as client:
            await client.create(make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").obj())
            await client.create(make_pod("fits").namespace("default").req(cpu="1").obj())
            await client.create(make_pod("too-big").namespace("default").req(cpu="64").obj())

            async def bound() -> bool:
                pod = await client.get(types_pb2.Pod, "fits", "default")
                return pod.spec.node_name == "n1"

            async def unschedulable() -> types_pb2.PodCondition | None:
                pod = await client.get(types_pb2.Pod, "too-big", "default")
                for cond in pod.status.conditions:
                    if cond.type == "PodScheduled" and cond.status == "False":
                        return cond
                return None

            await eventually(bound, timeout=20)
            cond = await eventually(unschedulable, timeout=20)
            assert cond is not None and cond.reason == "Unschedulable", cond
            assert "Insufficient cpu" in cond.message, cond

            async def counted() -> dict[tuple[str, str], float]:
                calls = _calls(await anyio.to_thread.run_sync(scheduler.scrape))
                assert calls.get(("pod_binding", "success"), 0) >= 1, calls
                assert calls.get(("pod_status_patch", "success"), 0) >= 1, calls
                return calls

            await eventually(counted, timeout=10)


async def test_preemption_with_the_gate_on(tmp_path: Path) -> None:
    """The preemptor's failure patch (PodScheduled=False with its nominatedNodeName) through
    the dispatcher; the victim goes and the preemptor is bound there."""
    with Cluster(tmp_path) as c:
        c.start_etcd()
        c.start_apiserver()
        scheduler = c.start_scheduler(
            extra_args=["--seed", "1"], feature_gates={"SchedulerAsyncAPICalls": True}
        )
        async with Client(c.server, timeout=10.0) as client:
            await client.create(PriorityClassBuilder("high", 1000).obj())
            await client.create(make_node("n1").capacity(cpu="2", memory="8Gi", pods="110").obj())
            await client.create(make_pod("low").namespace("default").req(cpu="2").obj())

            async def bound(name: str) -> bool:
                pod = await client.get(types_pb2.Pod, name, "default")
                return pod.spec.node_name == "n1"

            await eventually(lambda: bound("low"), timeout=20)
            high = make_pod("high").namespace("default").req(cpu="2").priority_class("high")
            await client.create(high.obj())

            async def low_gone() -> bool:
                try:
                    pod = await client.get(types_pb2.Pod, "low", "default")
                except NotFound:
                    return True
                return pod.metadata.HasField("deletion_timestamp")

            await eventually(low_gone, timeout=20)
            # (bare nodes: no kubelet finishes the victim; its deletion is forced)
            with contextlib.suppress(NotFound):
                await client.delete(types_pb2.Pod, "low", "default", grace_period_seconds=0)
            await eventually(lambda: bound("high"), timeout=30)
            calls = _calls(await anyio.to_thread.run_sync(scheduler.scrape))
            # the preemptor's nomination patch and both bindings went through the dispatcher
            assert calls.get(("pod_status_patch", "success"), 0) >= 1, calls
            assert calls.get(("pod_binding", "success"), 0) == 2, calls
