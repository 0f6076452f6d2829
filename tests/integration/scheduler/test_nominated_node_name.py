"""Nominated node name scenarios of KEP-1923 (PreferNominatedNode, keps/sig-scheduling/1923-*) and KEP-5278 (NNN
for expectation and clearing, KEP-5278) on real processes: etcd, two apiservers on it
(ClearingNominatedNodeNameAfterBinding on and off), one scheduler process per combination of
gates and emulated version, and one real kubelet per node.

Each scheduler process has its own profile names, so that a pod picks its variant through
spec.schedulerName; processes at 1.37 also have a "binding" profile with the SlowPreBind and
WaitingPermit emulation plugins (KEP-5278, keps/sig-scheduling/5278-*'s test plugins), kept out of their default-like
profile so that plain pods meet the default plugins only.

A nomination that upstream's tests force (a test plugin, or a PATCH while the scheduler is
stopped) is made here by an external writer, as KEP-5278, keps/sig-scheduling/5278-* allows: the pod is created held
by a scheduling gate, its status.nominatedNodeName PATCHed, then the gate removed
(`Scenario.create_nominated`), so that its first scheduling cycle already sees the nomination.
A held pod is in the scheduler's nominator too (pkg/scheduler/backend/queue/nominator.go: nominated even when gated),
which is how S-CLR-3 and S-NOM-1 keep a nominated pod pending while others are scheduled.

Every scenario ends with the invariants (kemu.testing.invariants) over the history of its
namespace's pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypedDict

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    PREFER_NOMINATED_NODE,
)
from kemu.testing import Cluster
from kemu.testing.invariants import PodHistory, assert_invariants, record_pods
from kemu.testing.ports import LOOPBACK
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HOSTNAME: Final = "kubernetes.io/hostname"
PREBIND_DELAY: Final = "scheduling.kemu.io/prebind-delay"
PREBIND_FAIL: Final = "scheduling.kemu.io/prebind-fail"
PERMIT_WAIT: Final = "scheduling.kemu.io/permit-wait"
PERMIT: Final = "scheduling.kemu.io/permit"
PERMIT_WAIT_SAMPLE: Final = "scheduler_framework_extension_point_duration_seconds_count"


class Capacity(TypedDict):
    """A node's capacity in kubelet --capacity syntax."""

    cpu: str
    memory: str
    pods: str


# Scenario nodes as in upstream's TestPreferNominatedNode.
PNN_NODE: Final = Capacity(cpu="500m", memory="500", pods="32")
# The single node "node" (cpu 4) of upstream's TestPreemptionAndNominatedNodeNameScenarios.
CPU4_NODE: Final = Capacity(cpu="4", memory="4Gi", pods="32")


@dataclass(frozen=True)
class Variant:
    """One scheduler profile, and what its process's gates mean for the scenarios."""

    profile: str  # spec.schedulerName
    process: str  # the scheduler process serving it
    prefers_nominated: bool = True  # PreferNominatedNode (unconditional from 1.26)
    nne: bool = True  # NominatedNodeNameForExpectation
    clearing: bool = True  # ClearingNominatedNodeNameAfterBinding at its apiserver


@dataclass(frozen=True)
class SchedulerSpec:
    process: str
    profiles: tuple[str, ...]
    binding_profile: str = ""  # with SlowPreBind and WaitingPermit
    emulated_version: str | None = None
    gates: tuple[tuple[str, bool], ...] = ()
    apiserver: str = ""  # "" for the cluster's first apiserver


CLEARING_OFF_APISERVER: Final = "apiserver-clearing-off"

SCHEDULERS: Final = (
    SchedulerSpec("scheduler", ("default-scheduler",), binding_profile="binding-scheduler"),
    SchedulerSpec(
        "scheduler-nne-off",
        ("nne-off-scheduler",),
        binding_profile="nne-off-binding-scheduler",
        gates=((NOMINATED_NODE_NAME_FOR_EXPECTATION, False),),
    ),
    SchedulerSpec(
        "scheduler-clearing-off", ("clearing-off-scheduler",), apiserver=CLEARING_OFF_APISERVER
    ),
    SchedulerSpec(
        "scheduler-nne-off-clearing-off",
        ("nne-off-clearing-off-scheduler",),
        gates=((NOMINATED_NODE_NAME_FOR_EXPECTATION, False),),
        apiserver=CLEARING_OFF_APISERVER,
    ),
    # Older schedulers against the 1.37 apiserver: outside the supported skew (one minor), but
    # PreferNominatedNode and the 1.34 alpha of KEP-5278 are scheduler-only behaviour.
    SchedulerSpec(
        "scheduler-1.23-pnn-on",
        ("pnn-on-1-23-scheduler",),
        emulated_version="1.23",
        gates=((PREFER_NOMINATED_NODE, True),),
    ),
    SchedulerSpec(
        "scheduler-1.23-pnn-off",
        ("pnn-off-1-23-scheduler",),
        emulated_version="1.23",
        gates=((PREFER_NOMINATED_NODE, False),),
    ),
    SchedulerSpec(
        "scheduler-1.34-nne-alpha",
        ("nne-alpha-1-34-scheduler",),
        emulated_version="1.34",
        gates=((NOMINATED_NODE_NAME_FOR_EXPECTATION, True),),
    ),
)

DEFAULT: Final = Variant("default-scheduler", "scheduler")
NNE_OFF: Final = Variant("nne-off-scheduler", "scheduler-nne-off", nne=False)
CLEARING_OFF: Final = Variant("clearing-off-scheduler", "scheduler-clearing-off", clearing=False)
NNE_OFF_CLEARING_OFF: Final = Variant(
    "nne-off-clearing-off-scheduler", "scheduler-nne-off-clearing-off", nne=False, clearing=False
)
PNN_ON_1_23: Final = Variant("pnn-on-1-23-scheduler", "scheduler-1.23-pnn-on")
PNN_OFF_1_23: Final = Variant(
    "pnn-off-1-23-scheduler", "scheduler-1.23-pnn-off", prefers_nominated=False
)
NNE_ALPHA_1_34: Final = Variant("nne-alpha-1-34-scheduler", "scheduler-1.34-nne-alpha")
BINDING_NNE_ON: Final = Variant("binding-scheduler", "scheduler")
BINDING_NNE_OFF: Final = Variant("nne-off-binding-scheduler", "scheduler-nne-off", nne=False)

# S-PNN-*: PreferNominatedNode at 1.23 on and off, and at 1.37 where it is unconditional.
PNN_VARIANTS: Final = [
    pytest.param(DEFAULT, id="1.37"),
    pytest.param(PNN_ON_1_23, id="1.23-gate-on", marks=pytest.mark.skew),
    pytest.param(PNN_OFF_1_23, id="1.23-gate-off", marks=pytest.mark.skew),
]
# S-NNE-*: NominatedNodeNameForExpectation on and off (1.37), binding profile.
NNE_VARIANTS: Final = [
    pytest.param(BINDING_NNE_ON, id="nne-on"),
    pytest.param(BINDING_NNE_OFF, id="nne-off"),
]
# S-CLR-*: upstream runs each case with both KEP-5278 gates on and off (test/integration/scheduler/nominated_node_name/nominated_node_name_test.go).
CLR_VARIANTS: Final = [
    pytest.param(DEFAULT, id="nne-on-clearing-on"),
    pytest.param(NNE_OFF, id="nne-off-clearing-on"),
    pytest.param(CLEARING_OFF, id="nne-on-clearing-off"),
    pytest.param(NNE_OFF_CLEARING_OFF, id="nne-off-clearing-off"),
]


def scheduler_config(spec: SchedulerSpec) -> str:
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "profiles:",
    ]
    for profile in spec.profiles:
        lines.append(f"- schedulerName: {profile}")
    if spec.binding_profile:
        lines += [
            f"- schedulerName: {spec.binding_profile}",
            "  plugins:",
            "    multiPoint:",
            "      enabled:",
            "      - name: SlowPreBind",
            "      - name: WaitingPermit",
        ]
    return "\n".join(lines) + "\n"


def start_schedulers(cluster: Cluster, root: Path, specs: tuple[SchedulerSpec, ...]) -> None:
    """Starts the schedulers side by side, then waits until each is ready."""
    for spec in specs:
        config = root / f"{spec.process}.yaml"
        config.write_text(scheduler_config(spec))
        # A scheduler with its own apiserver binds through it (the clearing gate is there).
        server = f"{LOOPBACK}:{cluster.component(spec.apiserver).port}" if spec.apiserver else None
        cluster.start_scheduler(
            name=spec.process,
            config=str(config),
            emulated_version=spec.emulated_version,
            feature_gates=dict(spec.gates) or None,
            extra_args=["--seed", "1"],
            wait=False,
            server=server,
        )
    for spec in specs:
        cluster.wait_ready(spec.process)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("nominated-node-name")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_apiserver(
            name=CLEARING_OFF_APISERVER,
            feature_gates={CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: False},
        )
        start_schedulers(c, root, SCHEDULERS)
        yield c


# ---------------------------------------------------------------- helpers


def versions(history: PodHistory, s: Scenario, name: str) -> list[types_pb2.Pod]:
    """Every recorded version of the scenario's pod `name` (its only incarnation)."""
    uids = history.uids_of(name, s.ns)
    assert len(uids) == 1, f"{name}: {len(uids)} incarnations recorded"
    return [v.pod for v in history.versions[uids[0]]]


def nnn_changes(history: PodHistory, s: Scenario, name: str) -> list[str]:
    """The pod's successive status.nominatedNodeName values, each change once ("" = none)."""
    out: list[str] = []
    for pod in versions(history, s, name):
        value = pod.status.nominated_node_name
        if not out or out[-1] != value:
            out.append(value)
    return out


def binding_version(history: PodHistory, s: Scenario, name: str) -> types_pb2.Pod:
    """The pod as the binding write left it (its first recorded version with a nodeName)."""
    bound = [p for p in versions(history, s, name) if p.spec.node_name]
    assert bound, f"{name} was never bound"
    return bound[0]


async def sync(history: PodHistory, s: Scenario) -> None:
    await history.sync(s.client, timeout=30.0)


def sample(cluster: Cluster, process: str, name: str, labels: dict[str, str]) -> float:
    """The value of the Prometheus sample `name` with (at least) `labels`; 0 if absent."""
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        for smp in family.samples:
            if smp.name == name and all(smp.labels.get(k) == v for k, v in labels.items()):
                return float(smp.value)
    return 0.0


def permit_waits(cluster: Cluster, v: Variant) -> float:
    """How many scheduling cycles of profile `v` ended Permit with Wait."""
    labels = {"extension_point": "Permit", "status": "Wait", "profile": v.profile}
    return sample(cluster, v.process, PERMIT_WAIT_SAMPLE, labels)


async def wait_pending_with(s: Scenario, name: str, nnn: str | None) -> types_pb2.Pod:
    """Until the pod has failed a cycle (PodScheduled=False) and is nominated to the scenario
    node `nnn` (None: not nominated). Fails at once if the pod gets bound."""
    want = s.node_name(nnn) if nnn else ""

    async def check() -> types_pb2.Pod:
        p = await s.get(name)
        if p.spec.node_name:
            pytest.fail(f"{name} was bound to {p.spec.node_name}, expected it pending")
        cond = [c for c in p.status.conditions if c.type == "PodScheduled"]
        assert cond and cond[0].status == "False", f"{name}: {p.status.conditions}"
        assert p.status.nominated_node_name == want, (
            f"{name}: nominatedNodeName {p.status.nominated_node_name!r}, want {want!r}"
        )
        return p

    result: types_pb2.Pod = await s.eventually(check)
    return result


# ---------------------------------------------------------------- KEP-1923 PreferNominatedNode


@pytest.mark.parametrize("v", PNN_VARIANTS)
async def test_s_pnn_1_nominated_node_fits_is_used(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-pnn-1") as s, record_pods(s.client, s.ns) as history:
        await s.nodes("node-1", "node-2", **PNN_NODE)
        await s.run(s.pod("low-pod1", priority=100, cpu="100m", memory="100"), node="node-2")
        preemptor = s.pod("preemptor-pod", priority=300, cpu="500m", memory="200")
        await s.create_nominated(preemptor.scheduler_name(v.profile), "node-1")
        assert await s.wait_bound("preemptor-pod") == s.node_name("node-1")
        assert not await s.events("Preempted")
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", PNN_VARIANTS)
async def test_s_pnn_2_nominated_node_fails_filters_falls_back(
    cluster: Cluster, v: Variant
) -> None:
    async with Scenario.open(cluster, "s-pnn-2") as s, record_pods(s.client, s.ns) as history:
        await s.nodes("node-1", "node-2", **PNN_NODE)
        await s.run(s.pod("low-pod", priority=100, cpu="100m", memory="100"), node="node-1")
        preemptor = s.pod("preemptor-pod1", priority=300, cpu="500m", memory="200")
        await s.create_nominated(preemptor.scheduler_name(v.profile), "node-1")
        # node-2 fits: no preemption of low-pod on the nominated node.
        assert await s.wait_bound("preemptor-pod1") == s.node_name("node-2")
        assert (await s.get("low-pod")).spec.node_name == s.node_name("node-1")
        assert not await s.events("Preempted")
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", PNN_VARIANTS)
async def test_s_pnn_3_nominated_node_wins_over_better_scoring_node(
    cluster: Cluster, v: Variant
) -> None:
    async with Scenario.open(cluster, "s-pnn-3") as s, record_pods(s.client, s.ns) as history:
        await s.nodes("node-a", "node-b", cpu="1", memory="1Gi", pods="32")
        # node-a half full: LeastAllocated scores node-b far higher for the pod.
        await s.run(s.pod("filler", cpu="500m", memory="512Mi"), node="node-a")
        pod = s.pod("pod", cpu="100m", memory="100Mi").scheduler_name(v.profile)
        await s.create_nominated(pod, "node-a")
        # With the nominated node first, node-a is the only feasible node and is not scored;
        # without it (1.23, gate off) scoring picks node-b.
        want = "node-a" if v.prefers_nominated else "node-b"
        assert await s.wait_bound("pod") == s.node_name(want)
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", PNN_VARIANTS)
async def test_s_pnn_4_nominated_node_missing(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-pnn-4") as s, record_pods(s.client, s.ns) as history:
        await s.nodes("node-1", **PNN_NODE)
        # Some node fits: the full search finds it.
        fits = s.pod("fits-pod", priority=100, cpu="100m", memory="100").scheduler_name(v.profile)
        await s.create_nominated(fits, "ghost")
        assert await s.wait_bound("fits-pod") == s.node_name("node-1")
        # Nothing fits and preemption finds no candidate (evicting fits-pod would not make
        # room): the NNN to the missing node is cleared (pkg/scheduler/schedule_one.go handleSchedulingFailure).
        big = s.pod("big-pod", priority=300, cpu="1", memory="100").scheduler_name(v.profile)
        await s.create_nominated(big, "ghost")
        await wait_pending_with(s, "big-pod", None)
        await sync(history, s)
        assert nnn_changes(history, s, "big-pod") == ["", s.node_name("ghost"), ""]
        assert not await s.events("Preempted")
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


# ---------------------------------------------------------------- KEP-5278 NNN for expectation


@pytest.mark.parametrize("v", NNE_VARIANTS)
async def test_s_nne_1_prebind_work_sets_nnn_before_prebind(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-nne-1") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        pod = s.pod("test-pod").scheduler_name(v.profile).annotation(PREBIND_DELAY, "forever")
        await s.create(pod)
        # The binding cycle has reached PreBind (which never ends); the NNN PATCH, when the
        # gate asks for it, was answered before PreBind started.
        await s.wait_logged(v.process, f"PreBind of {s.ns}/test-pod on {node} waits")
        p = await s.get("test-pod")
        assert not p.spec.node_name
        assert p.status.nominated_node_name == (node if v.nne else "")
        await sync(history, s)
        assert nnn_changes(history, s, "test-pod") == (["", node] if v.nne else [""])
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", NNE_VARIANTS)
async def test_s_nne_2_waiting_permit_sets_nnn_before_wait(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-nne-2") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        waits = permit_waits(cluster, v)
        pod = s.pod("test-pod").scheduler_name(v.profile).annotation(PERMIT_WAIT, "10m")
        await s.create(pod)

        async def waiting() -> bool:
            assert permit_waits(cluster, v) > waits, "Permit has not answered Wait yet"
            return True

        await s.eventually(waiting)
        if v.nne:
            await s.wait_nominated("test-pod", "node")
        assert not (await s.get("test-pod")).spec.node_name
        # Released: it binds. Released only now, so that Permit did answer Wait (a release
        # seen before Permit makes it answer Success, with no NNN either way).
        await s.client.patch(
            types_pb2.Pod, "test-pod", {"metadata": {"annotations": {PERMIT: "allow"}}}, s.ns
        )
        assert await s.wait_bound("test-pod") == node
        await sync(history, s)
        assert nnn_changes(history, s, "test-pod") == (["", node, ""] if v.nne else [""])
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", NNE_VARIANTS)
async def test_s_nne_3_permit_success_sets_no_nnn(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-nne-3") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        # Taking part in WaitingPermit, already allowed: Permit answers Success.
        pod = s.pod("test-pod").scheduler_name(v.profile)
        await s.create(pod.annotation(PERMIT_WAIT, "10m").annotation(PERMIT, "allow"))
        assert await s.wait_bound("test-pod") == node
        await sync(history, s)
        assert nnn_changes(history, s, "test-pod") == [""]
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", NNE_VARIANTS)
async def test_s_nne_4_no_binding_work_sets_no_nnn(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-nne-4") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        await s.create(s.pod("test-pod").scheduler_name(v.profile))
        assert await s.wait_bound("test-pod") == node
        await sync(history, s)
        assert nnn_changes(history, s, "test-pod") == [""]
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", NNE_VARIANTS)
async def test_s_nne_5_binding_failure_clears_expectation_nnn(cluster: Cluster, v: Variant) -> None:
    async with Scenario.open(cluster, "s-nne-5") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        # PreBind has work and its first attempt fails (an Error: binding failure).
        await s.create(s.pod("test-pod").scheduler_name(v.profile).annotation(PREBIND_FAIL, "1"))
        assert await s.wait_bound("test-pod") == node
        # The failed binding cycle is reported (events are written asynchronously).
        await s.eventually(lambda: s.events("FailedScheduling", "test-pod"))
        await sync(history, s)
        # Set at binding start, cleared by the failure handler, set again by the retry, cleared
        # by the apiserver's binding.
        expected = ["", node, "", node, ""] if v.nne else [""]
        assert nnn_changes(history, s, "test-pod") == expected
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


async def test_s_nne_6_nnn_survives_scheduler_restart_and_reserves_node(
    kemu_cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cl = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver()
    spec = SchedulerSpec("scheduler", ("default-scheduler",), binding_profile="binding-scheduler")
    start_schedulers(cl, tmp_path, (spec,))
    profile = spec.binding_profile
    async with Scenario.open(cl, "s-nne-6") as s, record_pods(s.client, s.ns) as history:
        node0, node1 = await s.nodes("node-0", "node-1", cpu="1", memory="1Gi", pods="1")

        def pod(name: str) -> types_pb2.Pod:
            b = s.pod(name).scheduler_name(profile).node_affinity_preferred(HOSTNAME, [node0], 100)
            return b.obj()

        # pod1 goes to node-0 (preferred) and stays in PreBind: its NNN is set, no nodeName.
        pod1 = pod("test-pod1")
        pod1.metadata.annotations[PREBIND_DELAY] = "forever"
        await s.create(pod1)
        await s.wait_logged("scheduler", f"PreBind of {s.ns}/test-pod1 on {node0} waits")
        cl.kill("scheduler")
        p1 = await s.get("test-pod1")
        assert p1.status.nominated_node_name == node0 and not p1.spec.node_name
        # The restarted scheduler's PreBind for pod1 ends at once (this one would not have).
        await s.client.patch(
            types_pb2.Pod, "test-pod1", {"metadata": {"annotations": {PREBIND_DELAY: "0s"}}}, s.ns
        )
        # pod2, equal priority, same preference. Upstream uses a queue sort that puts pod2
        # first; here the restarted scheduler lists pods in key order and queues equal
        # priorities first-in first-out, so a name sorting before pod1's puts pod2 first.
        # That makes the test discriminate: scheduled first without pod1's reservation,
        # pod2 would take node-0 (had pod1 gone first, pod2 would land on node-1 anyway).
        # Scheduling order leaves no trace in the API (binding cycles are concurrent), so it
        # is not checked here.
        await s.create(pod("a-test-pod2"))
        await anyio.to_thread.run_sync(cl.restart, "scheduler")
        assert await s.wait_bound("a-test-pod2") == node1
        assert await s.wait_bound("test-pod1") == node0
        await sync(history, s)
        # pod1 kept its NNN across the restart until its binding cleared it; pod2 had none.
        assert nnn_changes(history, s, "test-pod1") == ["", node0, ""]
        assert nnn_changes(history, s, "a-test-pod2") == [""]
        await assert_invariants(s.client, history, s.ns)


# ---------------------------------------------------------------- KEP-5278 clearing


@pytest.mark.parametrize("v", CLR_VARIANTS)
async def test_s_clr_1_binding_clears_nnn_at_the_apiserver(cluster: Cluster, v: Variant) -> None:
    """S-CLR-1 through the scheduler's binding (tests/integration/apiserver/test_apiserver.py binds by
    hand): the binding write clears the NNN iff the apiserver's gate is on."""
    async with Scenario.open(cluster, "s-clr-1") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        await s.create_nominated(
            s.pod("pod", priority=1, cpu="4").scheduler_name(v.profile), "node"
        )
        assert await s.wait_bound("pod") == node
        await sync(history, s)
        bound = binding_version(history, s, "pod")
        assert bound.status.nominated_node_name == ("" if v.clearing else node)
        assert (await s.get("pod")).status.nominated_node_name == ("" if v.clearing else node)
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", CLR_VARIANTS)
async def test_s_clr_2_scheduler_clears_nnn_when_pod_cannot_fit(
    cluster: Cluster, v: Variant
) -> None:
    async with Scenario.open(cluster, "s-clr-2") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        exceeds = s.pod("pod-exceeds-capacity", priority=1, cpu="5").scheduler_name(v.profile)
        await s.create_nominated(exceeds, "node")
        await wait_pending_with(s, "pod-exceeds-capacity", None)
        # Without the equal-priority reservation, pod-fits fits.
        await s.create(s.pod("pod-fits", priority=1, cpu="3").scheduler_name(v.profile))
        assert await s.wait_bound("pod-fits") == node
        await sync(history, s)
        assert nnn_changes(history, s, "pod-exceeds-capacity") == ["", node, ""]
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.skew
async def test_s_clr_2_alpha_1_34_failed_cycle_keeps_nnn(cluster: Cluster) -> None:
    """handleSchedulingFailure, history note: with NominatedNodeNameForExpectation on at 1.34 (alpha),
    a failed cycle leaves the NNN alone, so the reservation keeps blocking pod-fits."""
    v = NNE_ALPHA_1_34
    async with Scenario.open(cluster, "s-clr-2-alpha") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        exceeds = s.pod("pod-exceeds-capacity", priority=1, cpu="5").scheduler_name(v.profile)
        await s.create_nominated(exceeds, "node")
        await wait_pending_with(s, "pod-exceeds-capacity", "node")
        # pod-fits (equal priority) counts the 5 CPUs nominated to the node: it cannot fit,
        # and it cannot preempt anything.
        await s.create(s.pod("pod-fits", priority=1, cpu="3").scheduler_name(v.profile))
        cond = (await wait_pending_with(s, "pod-fits", None)).status.conditions
        assert any("Insufficient cpu" in c.message for c in cond), cond
        assert (await s.get("pod-exceeds-capacity")).status.nominated_node_name == node
        # Withdrawing the nomination retries pods of lower or equal priority (scheduling_queue.go's nominated-pod moves).
        await s.nominate("pod-exceeds-capacity", None)
        assert await s.wait_bound("pod-fits") == node
        await sync(history, s)
        assert nnn_changes(history, s, "pod-exceeds-capacity") == ["", node, ""]
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


@pytest.mark.parametrize("v", CLR_VARIANTS)
async def test_s_clr_3_higher_priority_ignores_lower_nomination(
    cluster: Cluster, v: Variant
) -> None:
    async with Scenario.open(cluster, "s-clr-3") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        # low-priority: pending (held by a gate) and nominated to the node.
        low = s.pod("low-priority", priority=1, cpu="4").scheduler_name(v.profile)
        await s.create_nominated(low, "node", release=False)
        high = s.pod("high-priority", priority=100, cpu="4").scheduler_name(v.profile)
        await s.create(high)
        assert await s.wait_bound("high-priority") == node
        # low-priority fails and cannot preempt a higher-priority pod: no candidates, the NNN
        # is cleared.
        await s.release("low-priority")
        await wait_pending_with(s, "low-priority", None)
        assert not await s.events("Preempted")
        await sync(history, s)
        assert nnn_changes(history, s, "low-priority") == ["", node, ""]
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


async def test_s_clr_4_non_preempting_pod_keeps_nnn(cluster: Cluster) -> None:
    v = DEFAULT
    async with Scenario.open(cluster, "s-clr-4") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        never = s.pod("never-pod", priority=10, never=True, cpu="5").scheduler_name(v.profile)
        await s.create_nominated(never, "node")
        # Not eligible to preempt: PostFilter leaves the NNN as it is.
        await wait_pending_with(s, "never-pod", "node")
        # Still a reservation against equal priority...
        await s.create(s.pod("equal-pod", priority=10, cpu="1").scheduler_name(v.profile))
        await wait_pending_with(s, "equal-pod", None)
        assert (await s.get("never-pod")).status.nominated_node_name == node
        # ...but not against higher priority.
        await s.create(s.pod("higher-pod", priority=11, cpu="1").scheduler_name(v.profile))
        assert await s.wait_bound("higher-pod") == node
        # With the nominated pod gone, equal-pod fits.
        await s.client.delete(types_pb2.Pod, "never-pod", s.ns)
        assert await s.wait_bound("equal-pod") == node
        await sync(history, s)
        assert nnn_changes(history, s, "never-pod") == ["", node]
        assert nnn_changes(history, s, "equal-pod") == [""]
        assert not await s.events("Preempted")
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)


# ---------------------------------------------------------------- RunFilterPluginsWithNominatedPods, the nominator


async def test_s_nom_1_equal_priority_reservation(cluster: Cluster) -> None:
    v = DEFAULT
    async with Scenario.open(cluster, "s-nom-1") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", **CPU4_NODE)
        await s.run(s.pod("r", priority=10, cpu="1"), node="node")
        # A (cpu 3) would fit next to R; held by a gate, it is pending and nominated.
        a = s.pod("a", priority=10, cpu="3").scheduler_name(v.profile)
        await s.create_nominated(a, "node", release=False)
        # B (equal priority): 1 + 3 + 1 > 4 with A counted; R is not a victim for it.
        await s.create(s.pod("b", priority=10, cpu="1").scheduler_name(v.profile))
        await wait_pending_with(s, "b", None)
        # D (lower priority): the same.
        await s.create(s.pod("d", priority=5, cpu="1").scheduler_name(v.profile))
        await wait_pending_with(s, "d", None)
        # C (higher priority) ignores A's nomination.
        await s.create(s.pod("c", priority=11, cpu="1").scheduler_name(v.profile))
        assert await s.wait_bound("c") == node
        # A no longer fits (R + C + A = 5) and has nothing to preempt: it loses its NNN...
        await s.release("a")
        await wait_pending_with(s, "a", None)
        # ...which retries B and D (scheduling_queue.go's nominated-pod moves), and they now fit (R + C + B + D = 4).
        assert await s.wait_bound("b") == node
        assert await s.wait_bound("d") == node
        await sync(history, s)
        assert nnn_changes(history, s, "a") == ["", node, ""]
        for name in ("b", "c", "d"):
            assert nnn_changes(history, s, name) == [""], name
        assert not await s.events("Preempted")
        await assert_invariants(s.client, history, s.ns, clearing_gate_on=v.clearing)
