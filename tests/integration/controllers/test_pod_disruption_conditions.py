"""PodDisruptionConditions (KEP-3329: alpha, off, 1.25; beta, on, 1.26; GA 1.31; gone from
1.34) and kubernetes#114623 (1.27), by emulated version, on real processes: etcd, an apiserver
at 1.37 and one at 1.25 (the eviction API's condition), a controller-manager at 1.25 (the
taint manager's), a kubelet per scenario node at 1.37 and four scheduler processes, each with
its own profile (the pods pick their scheduler by schedulerName):

- 1.25: PodDisruptionConditions off (its alpha default);
- 1.26: on (beta), PodSchedulingReadiness on (its alpha: the scenarios nominate a pod with a
  scheduling gate, `Scenario.create_nominated`, which a scheduler without it would schedule at
  once);
- 1.27: on;
- 1.27 with PodDisruptionConditions=false.

A scheduler older than the apiserver is outside the supported skew; what is checked here is
the scheduler's own behaviour (the condition it writes, whether it may preempt), as upstream's
1.25, 1.26 and 1.27 kube-scheduler: pkg/scheduler/framework/preemption/preemption.go
prepareCandidate and plugins/defaultpreemption PodEligibleToPreemptOthers. The scheduler
scenarios record their pods through a watch and end with the invariant checks
(kemu.testing.invariants) told the reason the variant's scheduler writes (none at 1.25 or with
the gate off, PreemptionByKubeScheduler at 1.26).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import DELETED
from kemu.component.featuregate import (
    POD_DISRUPTION_CONDITIONS,
    POD_SCHEDULING_READINESS,
    FeatureGates,
)
from kemu.component.version import Version
from kemu.scheduling.preemption import preemption_disruption_reason
from kemu.testing import Cluster
from kemu.testing.invariants import PodHistory, PodVersion, assert_invariants, record_pods
from kemu.testing.ports import LOOPBACK
from kemu.testing.scenarios import Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@dataclass(frozen=True)
class Variant:
    profile: str
    process: str
    version: str
    gates: tuple[tuple[str, bool], ...] = ()

    @property
    def disruption_reason(self) -> str | None:
        """The reason of the DisruptionTarget this scheduler writes on its victims."""
        gates = FeatureGates.for_version(Version.parse(self.version), dict(self.gates))
        return preemption_disruption_reason(gates)


V1_25: Final = Variant("sched-1-25", "scheduler-1.25", "1.25")
V1_26: Final = Variant("sched-1-26", "scheduler-1.26", "1.26", ((POD_SCHEDULING_READINESS, True),))
V1_27: Final = Variant("sched-1-27", "scheduler-1.27", "1.27")
V1_27_OFF: Final = Variant(
    "sched-1-27-pdc-off", "scheduler-1.27-pdc-off", "1.27", ((POD_DISRUPTION_CONDITIONS, False),)
)
VARIANTS: Final = (V1_25, V1_26, V1_27, V1_27_OFF)

APISERVER_1_25: Final = "apiserver-1.25"

LOW, HIGH = 1, 100
TIMEOUT: Final = 60.0
# A pod that stays terminating until the test force-deletes it.
STUCK_GRACE: Final = 300
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("pod-disruption-conditions")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_apiserver(name=APISERVER_1_25, emulated_version="1.25", wait=False)
        c.start_controllermanager(emulated_version="1.25", wait=False)
        for v in VARIANTS:
            config = root / f"{v.process}.yaml"
            config.write_text(
                "apiVersion: kubescheduler.config.k8s.io/v1\n"
                "kind: KubeSchedulerConfiguration\n"
                f"profiles:\n- schedulerName: {v.profile}\n"
            )
            c.start_scheduler(
                name=v.process,
                config=str(config),
                emulated_version=v.version,
                feature_gates=dict(v.gates) or None,
                extra_args=["--seed", "1"],
                wait=False,
            )
        for name in (APISERVER_1_25, "controllermanager", *(v.process for v in VARIANTS)):
            c.wait_ready(name)
        yield c


class Recorded:
    def __init__(self, s: Scenario, history: PodHistory) -> None:
        self.s = s
        self.history = history
        # Pods the test deletes itself (exempt from invariant (2)).
        self.externally_deleted: set[str] = set()

    async def delete(self, name: str, *, grace_period_seconds: int | None = None) -> None:
        self.externally_deleted.add(name)
        await self.s.client.delete(
            types_pb2.Pod, name, self.s.ns, grace_period_seconds=grace_period_seconds
        )

    async def sync(self) -> None:
        await self.history.sync(self.s.client, timeout=TIMEOUT)

    def versions(self, name: str) -> list[PodVersion]:
        return [v for uid in self.history.uids_of(name) for v in self.history.versions[uid]]

    def first_terminating(self, name: str) -> int | None:
        """The history position of the first version of `name` being deleted, or None."""
        return next(
            (
                v.seq
                for v in self.versions(name)
                if v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp")
            ),
            None,
        )

    def gone(self, name: str) -> int:
        return next(v.seq for v in self.versions(name) if v.type == DELETED)

    def reasons(self, name: str) -> set[str]:
        """The reasons of every DisruptionTarget=True the pod ever carried."""
        return {
            c.reason
            for v in self.versions(name)
            if (c := disruption_target(v.pod)) is not None and c.status == "True"
        }


@asynccontextmanager
async def scenario(cluster: Cluster, prefix: str, variant: Variant) -> AsyncIterator[Recorded]:
    """A Scenario whose pods are recorded from the start; once the block has succeeded, the
    invariants are checked on that history, for the variant's scheduler."""
    async with Scenario.open(cluster, prefix) as s, record_pods(s.client, s.ns) as history:
        r = Recorded(s, history)
        yield r
        await assert_invariants(
            s.client,
            history,
            s.ns,
            disruption_reason=variant.disruption_reason,
            externally_deleted=r.externally_deleted,
            sync_timeout=TIMEOUT,
        )


async def wait_event(s: Scenario, reason: str, name: str, text: str) -> None:
    async def found() -> bool:
        assert [e for e in await s.events(reason, name) if text in e.message], (
            f"no {reason} event of {name} with {text!r}"
        )
        return True

    await s.eventually(found, timeout=TIMEOUT)


# ---------------------------------------------------------------- the scheduler's preemption


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        pytest.param(V1_25, None, id="1.25"),
        pytest.param(V1_26, "PreemptionByKubeScheduler", id="1.26"),
        pytest.param(V1_27, "PreemptionByScheduler", id="1.27"),
        pytest.param(V1_27_OFF, None, id="1.27-gate-off"),
    ],
)
async def test_preemption_victim_disruption_target_by_version(
    cluster: Cluster, variant: Variant, reason: str | None
) -> None:
    """upstream prepareCandidate: a victim gets DisruptionTarget=True before its DELETE only
    with PodDisruptionConditions (its 1.25 alpha is off), with the reason
    PreemptionByKubeScheduler until kubernetes#114623 renamed it PreemptionByScheduler (1.27)."""
    assert variant.disruption_reason == reason
    async with scenario(cluster, "pdc-victim", variant) as r:
        s = r.s
        await s.nodes("n", cpu="2", memory="8Gi", pods="32")
        await s.run(s.pod("v", priority=LOW, cpu="2"), node="n")
        await s.create(s.pod("p", priority=HIGH, cpu="2").scheduler_name(variant.profile))
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n")
        await wait_event(s, "Preempted", "v", "Preempted by pod")

        await r.sync()
        assert r.first_terminating("v") is not None, "v was not deleted"
        assert r.reasons("v") == (set() if reason is None else {reason})


# ---------------------------------------------------------------- PodEligibleToPreemptOthers


async def _user_deleted_victim_on_the_nominated_node(r: Recorded, variant: Variant) -> None:
    """n (cpu 4): V (prio 1, cpu 2) deleted by a user (graceful, no DisruptionTarget, kept
    terminating) and X (prio 1, cpu 2). P (prio 100, cpu 4) is created nominated to n."""
    s = r.s
    await s.nodes("n", cpu="4", memory="8Gi", pods="32")
    await s.run(s.pod("v", priority=LOW, cpu="2", shutdown="never").grace(STUCK_GRACE), node="n")
    await s.run(s.pod("x", priority=LOW, cpu="2"), node="n")
    await r.delete("v")

    async def terminating() -> bool:
        assert (await s.get("v")).metadata.HasField("deletion_timestamp")
        return True

    await s.eventually(terminating, timeout=TIMEOUT)
    await s.create_nominated(
        s.pod("p", priority=HIGH, cpu="4").scheduler_name(variant.profile), "n"
    )


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(V1_26, id="1.26"),
        pytest.param(V1_27_OFF, id="1.27-gate-off"),
    ],
)
async def test_any_terminating_lower_priority_pod_on_the_nominated_node_blocks_preemption(
    cluster: Cluster, variant: Variant
) -> None:
    """Before kubernetes#114623 (1.27), or with PodDisruptionConditions off after it,
    PodEligibleToPreemptOthers refuses a preemptor whose nominated node holds any terminating
    pod of lower priority, whatever deletes it: P waits for V (deleted by a user), and X is
    preempted only once V is gone."""
    async with scenario(cluster, "pdc-eligible", variant) as r:
        s = r.s
        await _user_deleted_victim_on_the_nominated_node(r, variant)
        await wait_event(s, "FailedScheduling", "p", NOT_ELIGIBLE_TERMINATING)
        x = await s.get("x")
        assert not x.metadata.HasField("deletion_timestamp"), "x was preempted while v terminated"

        await r.delete("v", grace_period_seconds=0)
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n")

        await r.sync()
        x_terminating = r.first_terminating("x")
        assert x_terminating is not None, "x was never preempted"
        assert x_terminating > r.gone("v"), "x was preempted while v was terminating"
        assert r.reasons("v") == set()
        expected = {V1_26: {"PreemptionByKubeScheduler"}, V1_27_OFF: set()}[variant]
        assert r.reasons("x") == expected


async def test_a_pod_terminating_for_another_reason_does_not_block_preemption_from_1_27(
    cluster: Cluster,
) -> None:
    """kubernetes#114623 (1.27): with PodDisruptionConditions on, only a pod terminating with
    DisruptionTarget=True/PreemptionByScheduler makes the preemptor wait: P preempts X while V
    (deleted by a user) still terminates."""
    async with scenario(cluster, "pdc-eligible", V1_27) as r:
        s = r.s
        await _user_deleted_victim_on_the_nominated_node(r, V1_27)
        await s.wait_gone("x", timeout=TIMEOUT)
        assert (await s.get("v")).metadata.HasField("deletion_timestamp")

        await r.delete("v", grace_period_seconds=0)
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n")
        await r.sync()
        first_x = r.first_terminating("x")
        assert first_x is not None and first_x < r.gone("v")
        assert r.reasons("x") == {"PreemptionByScheduler"}
        assert not [
            e
            for e in await s.events("FailedScheduling", "p")
            if NOT_ELIGIBLE_TERMINATING in e.message
        ]


# ---------------------------------------------------------------- the eviction API, the taint manager


@pytest.mark.parametrize(
    ("apiserver", "reason"),
    [
        pytest.param(APISERVER_1_25, None, id="1.25"),
        pytest.param("apiserver", "EvictionByEvictionAPI", id="1.37"),
    ],
)
async def test_eviction_api_disruption_target_by_version(
    cluster: Cluster, apiserver: str, reason: str | None
) -> None:
    """upstream pkg/registry/core/pod/storage/eviction.go addConditionAndDeletePod: the
    DisruptionTarget condition only with PodDisruptionConditions (off at 1.25)."""
    async with Scenario.open(cluster, "pdc-evict") as s:
        await s.bare_node("b", cpu="2")
        pod = s.pod("p").obj()
        pod.spec.node_name = s.node_name("b")
        await s.create(pod)
        server = f"{LOOPBACK}:{cluster.component(apiserver).port}"
        async with Client(server, timeout=10.0) as c:
            await c.evict(s.ns, "p")
        evicted = await s.get("p")  # no kubelet: it stays terminating
        assert evicted.metadata.HasField("deletion_timestamp")
        cond = disruption_target(evicted)
        assert (cond.reason if cond is not None else None) == reason


async def test_taint_manager_deletes_without_disruption_target_at_1_25(cluster: Cluster) -> None:
    """upstream's taint manager (pkg/controller/tainteviction addConditionAndDeletePod, inside
    the node lifecycle controller before 1.29): at 1.25, PodDisruptionConditions off, a pod that
    does not tolerate a NoExecute taint is deleted with no DeletionByTaintManager condition."""
    async with Scenario.open(cluster, "pdc-taint") as s:
        node = await s.bare_node("b", cpu="2")
        pod = s.pod("p").obj()
        pod.spec.node_name = node
        await s.create(pod)
        await s.client.patch(
            types_pb2.Node,
            node,
            {"spec": {"taints": [{"key": "kemu.io/evict", "effect": "NoExecute"}]}},
        )

        async def deleted() -> types_pb2.Pod:
            p = await s.get("p")  # no kubelet: it stays terminating
            assert p.metadata.HasField("deletion_timestamp"), "p not evicted yet"
            return p

        evicted: types_pb2.Pod = await s.eventually(deleted, timeout=TIMEOUT)
        await wait_event(s, "TaintManagerEviction", "p", "Marking for deletion Pod")
        assert disruption_target(evicted) is None
