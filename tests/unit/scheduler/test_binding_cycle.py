"""The binding cycle and assumed pods as upstream's scheduler (schedule_one.go bindingCycle,
handleBindingCycleError; eventhandlers.go handleAssumedPodDeletion,
updatePodInSchedulingQueue): a pod deleted while assumed frees its node at once, PreBind and
Bind failures back off, Done comes right after WaitOnPermit, and updates of an assumed pod
(the KEP-5278 NNN PATCH) move nothing. Also a cluster without nodes and a deleting pod."""

from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.scheduling.config import parse_config
from kemu.scheduling.emulation import slow_pre_bind
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.profile import Profile
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from tests.unit.scheduler.harness import Env, env, settle
from tests.unit.scheduling.deferred_builders import SCHEDULER

pytestmark = pytest.mark.anyio

GATES = FeatureGates.default()


def _profile() -> Profile:
    return parse_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins: {multiPoint: {enabled: [{name: SlowPreBind}]}}\n"
    ).profiles[0]


def _pod(name: str, cpu: str = "1") -> types_pb2.Pod:
    return make_pod(name).req(cpu=cpu).scheduler_name(SCHEDULER).obj()


def _slow(name: str, cpu: str = "1") -> types_pb2.Pod:
    pod = _pod(name, cpu)
    pod.metadata.annotations[slow_pre_bind.ANNOTATION_DELAY] = "60s"
    return pod


async def _node_of(e: Env, name: str) -> str | None:
    pod = await e.get(name)
    return None if pod is None else pod.spec.node_name


def _attempts(e: Env, result: str) -> float:
    return float(e.metrics.schedule_attempts.labels(result, SCHEDULER)._value.get())


async def test_a_pod_deleted_in_prebind_frees_its_node_for_the_next_pod_at_once() -> None:
    async with env(GATES, profile=_profile()) as e:
        e.node("n1", cpu="1")
        await settle()
        e.add(_slow("a"))
        await settle()
        assert await e.cycle() == "a"  # assumed on n1, PreBind takes 60 s
        assert e.cache.is_assumed_pod(await e.get("a") or types_pb2.Pod())
        e.add(_pod("b"))
        await settle()
        assert await e.cycle() == "b"
        assert e.where("b") == "unschedulable"  # a holds n1
        await e.client.delete(types_pb2.Pod, "a", "default")
        await settle()
        # Forgotten at once, and b retried by the AssignedPodDelete: no wait for PreBind.
        assert not e.cached("a")
        assert e.where("b") in ("backoff", "active")
        e.queue.flush_backoff_q_completed()
        e.scheduler.clock.advance(11)  # type: ignore[attr-defined]
        e.queue.flush_backoff_q_completed()
        await settle()
        assert await e.cycle() == "b"
        assert await _node_of(e, "b") == "n1"
        # a's PreBind ends; its Bind fails (the pod is gone) and nothing is requeued.
        e.scheduler.clock.advance(60)  # type: ignore[attr-defined]
        await settle()
        assert e.where("a") == ""
        assert e.queue.len_in_flight() == 0
        assert e.cached("b")


async def test_done_comes_right_after_wait_on_permit() -> None:
    async with env(GATES, profile=_profile()) as e:
        e.node("n1", cpu="2")
        await settle()
        e.add(_slow("a"))
        await settle()
        await e.cycle()
        # In PreBind: no longer in flight, so no cluster event is kept for it.
        assert e.queue.len_in_flight() == 0
        assert e.cache.assumed_pod_count() == 1


async def test_a_prebind_failure_backs_off_and_is_an_error_not_unschedulable() -> None:
    async with env(GATES, profile=_profile()) as e:
        e.node("n1", cpu="2")
        await settle()
        pod = _pod("f")
        pod.metadata.annotations[slow_pre_bind.ANNOTATION_FAIL] = "1"
        e.add(pod)
        await settle()
        assert await e.cycle() == "f"
        assert e.where("f") == "backoff"  # not the 5-minute pool
        assert _attempts(e, "error") == 1
        assert not e.cached("f")
        current = await e.get("f")
        assert current is not None
        cond = [c for c in current.status.conditions if c.type == "PodScheduled"]
        assert [(c.status, c.reason) for c in cond] == [("False", "SchedulerError")]


async def test_the_binding_cycle_nnn_patch_of_an_assumed_pod_moves_no_other_pod() -> None:
    async with env(GATES, profile=_profile()) as e:
        e.node("n1", cpu="2")
        e.node("n2", cpu="1")
        await settle()
        big = e.add(_pod("big", cpu="4"))
        await settle()
        assert await e.cycle() == "big"
        assert e.where("big") == "unschedulable"
        # a was nominated to n2 earlier; it fits only on n1, where the binding cycle's
        # KEP-5278 PATCH sets its nominatedNodeName while PreBind works.
        a = e.add(_slow("a", cpu="2"))
        await e.client.patch(
            types_pb2.Pod, "a", {"status": {"nominatedNodeName": "n2"}}, subresource="status"
        )
        await settle()
        assert await e.cycle() == "a"
        current = await e.get("a")
        assert current is not None and current.status.nominated_node_name == "n1"
        # The update of the assumed pod is ignored: a is not queued again, big not moved.
        assert e.where("a") == ""
        assert e.where("big") == "unschedulable"
        assert big.metadata.name == "big" and a.metadata.name == "a"


async def test_no_nodes_is_unschedulable_with_upstreams_message() -> None:
    async with env(GATES) as e:
        e.add(_pod("p"))
        await settle()
        await e.cycle()
        pod = await e.get("p")
        assert pod is not None
        (cond,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
        assert (cond.status, cond.reason, cond.message) == (
            "False",
            "Unschedulable",
            "no nodes available to schedule pods",
        )
        assert _attempts(e, "unschedulable") == 1 and _attempts(e, "error") == 0
        assert e.where("p") == "backoff"  # no rejecting plugin: retried after backoff


async def test_a_deleting_pod_is_skipped_with_upstreams_event() -> None:
    async with env(GATES) as e:
        pod = _pod("p")
        pod.metadata.uid = "uid-p"
        pod.metadata.namespace = "default"
        pod.metadata.deletion_timestamp.FromSeconds(1)
        qpi = QueuedPodInfo(PodInfo(pod), 0.0)
        await e.scheduler.schedule_one(qpi)
        assert e.recorder.messages == [
            (
                "p",
                "Warning",
                "FailedScheduling",
                "Scheduling",
                "skip schedule deleting pod: default/p",
            )
        ]
        await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize(("minor", "observed"), [(37, 1), (32, 0)])
async def test_pod_scheduled_carries_observed_generation_as_pod_observed_generation_tracking(
    minor: int, observed: int
) -> None:
    """upstream CalculatePodConditionObservedGeneration: the pod's generation from 1.34 (the
    gate's beta) on; before, only when the condition already carries one."""
    async with env(FeatureGates.for_version(Version(1, minor))) as e:
        e.add(_pod("p"))
        await settle()
        await e.cycle()
        pod = await e.get("p")
        assert pod is not None
        (cond,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
        assert cond.observed_generation == observed
