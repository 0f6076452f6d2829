"""Preemption victims still in their binding cycle, by emulated version (issue #58, Why 2 and
4), on real processes: etcd, apiserver, and one scheduler at 1.36 and one at 1.35, each with a
profile that adds the SlowPreBind and WaitingPermit emulation plugins. Nodes are bare Node
objects: no pod ever runs, the victims are never bound when they are preempted.

- S-PRE-20 (upstream TestPreemptionRespectsBindingPod, kubernetes#135502): a victim in
  PreBind. From 1.36 its binding cycle is cancelled in memory: it is not deleted, its
  Preempted event says "(in kube-scheduler memory).", it fails with an error
  (`running PreBind plugin "SlowPreBind": context canceled`) and, after its backoff, binds
  elsewhere. 1.35 marks it DisruptionTarget and deletes it.
- S-PRE-21 (upstream TestPreemptionRespectsWaitingPod, kubernetes#135719): a victim waiting
  at Permit. From 1.36 it is preempted with an Error (PodScheduled=False SchedulerError) and
  retried after its backoff, with no cluster event; 1.35 rejects it (Unschedulable) and it
  waits in the unschedulable pool for an event.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.testing import Cluster
from kemu.testing.scenarios import Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

# kemu/scheduling/emulation/slow_pre_bind.py, waiting_permit.py
PREBIND_DELAY: Final = "scheduling.kemu.io/prebind-delay"
PERMIT_WAIT: Final = "scheduling.kemu.io/permit-wait"

LOW, HIGH = 100, 300
TIMEOUT: Final = 60.0
IN_MEMORY: Final = " (in kube-scheduler memory)."


@dataclass(frozen=True)
class Version:
    minor: int

    @property
    def process(self) -> str:
        return f"scheduler-1{self.minor}"

    @property
    def profile(self) -> str:
        return f"binding-1{self.minor}"

    @property
    def in_memory(self) -> bool:
        return self.minor >= 36


VERSIONS: Final = [Version(36), Version(35)]
BY_VERSION: Final = pytest.mark.parametrize("v", VERSIONS, ids=lambda v: f"1.{v.minor}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("preemption-in-memory")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        for v in VERSIONS:
            config = root / f"{v.process}.yaml"
            config.write_text(
                "apiVersion: kubescheduler.config.k8s.io/v1\n"
                "kind: KubeSchedulerConfiguration\n"
                "profiles:\n"
                f"- schedulerName: {v.profile}\n"
                "  plugins: {multiPoint: {enabled: [{name: SlowPreBind}, {name: WaitingPermit}]}}\n"
            )
            c.start_scheduler(
                name=v.process,
                config=str(config),
                emulated_version=f"1.{v.minor}",
                extra_args=["--seed", "1"],
            )
        yield c


def pod_scheduled(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)


async def preempted_event(s: Scenario, name: str) -> types_pb2.Event:
    async def found() -> types_pb2.Event:
        events = await s.events("Preempted", name)
        assert events, f"no Preempted event of {name}"
        return events[0]

    result: types_pb2.Event = await s.eventually(found, timeout=TIMEOUT)
    return result


async def wait_condition(s: Scenario, name: str, reason: str, text: str) -> types_pb2.PodCondition:
    """Until the pod's PodScheduled is False with `reason` and a message containing `text`."""

    async def failed() -> types_pb2.PodCondition:
        c = pod_scheduled(await s.get(name))
        assert c is not None and c.status == "False", f"{name}: PodScheduled {c}"
        assert (c.reason, text in c.message) == (reason, True), f"{name}: {c}"
        return c

    result: types_pb2.PodCondition = await s.eventually(failed, timeout=TIMEOUT)
    return result


async def preempt(s: Scenario, v: Version) -> None:
    """The victim holds "big" in its binding cycle: the small node comes, then the preemptor,
    which fits only on big."""
    await s.bare_node("small", cpu="1", memory="8Gi", pods="32")
    await s.create(s.pod("preemptor", priority=HIGH, cpu="1500m").scheduler_name(v.profile))
    assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("big")


@BY_VERSION
async def test_s_pre_20_victim_in_pre_bind(cluster: Cluster, v: Version) -> None:
    """S-PRE-20: the victim's PreBind waits until cancelled; its next attempt (the annotation
    changed meanwhile) binds at once."""
    async with Scenario.open(cluster, f"s-pre-20-1{v.minor}") as s:
        big = await s.bare_node("big", cpu="1500m", memory="8Gi", pods="32")
        await s.create(
            s.pod("victim", priority=LOW, cpu="1")
            .annotation(PREBIND_DELAY, "forever")
            .scheduler_name(v.profile)
        )
        await s.wait_logged(v.process, f"PreBind of {s.ns}/victim on {big} waits until cancelled")
        # Read by the next attempt only: this one waits until it is cancelled.
        await s.client.patch(
            types_pb2.Pod, "victim", {"metadata": {"annotations": {PREBIND_DELAY: "0s"}}}, s.ns
        )
        await preempt(s, v)

        event = await preempted_event(s, "victim")
        if v.in_memory:
            assert event.message.endswith(IN_MEMORY), event.message
            condition = await wait_condition(
                s,
                "victim",
                "SchedulerError",
                'running PreBind plugin "SlowPreBind": context canceled',
            )
            assert condition.message.endswith("context canceled"), condition.message
            assert await s.wait_bound("victim", timeout=TIMEOUT) == s.node_name("small")
            victim = await s.get("victim")
            assert disruption_target(victim) is None, "preempted in memory, not through the API"
            assert not victim.metadata.HasField("deletion_timestamp")
        else:
            assert not event.message.endswith(IN_MEMORY), event.message
            await s.wait_gone("victim", timeout=TIMEOUT)


@BY_VERSION
async def test_s_pre_21_victim_waiting_at_permit(cluster: Cluster, v: Version) -> None:
    """S-PRE-21: 1.36 backs the victim off with an Error and retries it by itself (it waits at
    Permit again, on the small node: nominated there); 1.35 leaves it Unschedulable, in the
    unschedulable pool, where no event of this scenario moves it."""
    async with Scenario.open(cluster, f"s-pre-21-1{v.minor}") as s:
        await s.bare_node("big", cpu="1500m", memory="8Gi", pods="32")
        await s.create(
            s.pod("victim", priority=LOW, cpu="1")
            .annotation(PERMIT_WAIT, "10m")
            .scheduler_name(v.profile)
        )
        # KEP-5278: nominated to big while it waits at Permit there.
        await s.wait_nominated("victim", "big", timeout=TIMEOUT)
        await preempt(s, v)

        event = await preempted_event(s, "victim")
        assert (await s.get("victim")).metadata.name == "victim", "never deleted"
        if v.in_memory:
            assert event.message.endswith(IN_MEMORY), event.message
            await wait_condition(
                s, "victim", "SchedulerError", "waiting on permit for pod: preempted"
            )
            await s.wait_nominated("victim", "small", timeout=TIMEOUT)
        else:
            assert not event.message.endswith(IN_MEMORY), event.message
            await wait_condition(s, "victim", "Unschedulable", "preempted")

            async def not_retried() -> None:
                victim = await s.get("victim")
                assert victim.status.nominated_node_name == "", "retried"
                assert not victim.spec.node_name, "bound"

            await s.holds(not_retried, seconds=5)
        victim = await s.get("victim")
        assert disruption_target(victim) is None
        assert not victim.metadata.HasField("deletion_timestamp")
