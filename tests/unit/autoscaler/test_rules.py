"""The drainability rules in upstream's words (simulator/drainability/rules): the blocking
messages, the safe-to-evict-local-volumes annotation, and the long-terminating rule (in the
drainability rules and in utilization)."""

from __future__ import annotations

import pytest

from autoscaler.scaledown.eligibility import utilization
from autoscaler.scaledown.options import ScaleDownOptions
from autoscaler.scaledown.rules import (
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    NodePods,
    PdbTracker,
    classify,
)
from kemu.api.v1 import types_pb2
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import PodBuilder, make_node, make_pdb, make_pod

NOW = 1_000_000.0


def replicated(name: str, namespace: str = "apps") -> PodBuilder:
    return (
        make_pod(name)
        .namespace(namespace)
        .req(cpu="100m")
        .owner("ReplicaSet", "rs", "uid-rs")
        .phase("Running")
    )


def sort(*pods: types_pb2.Pod, pdbs: tuple[types_pb2.PodDisruptionBudget, ...] = ()) -> NodePods:
    return classify(pods, PdbTracker(pdbs), ScaleDownOptions(), now=NOW)


def with_volumes(pod: PodBuilder, *volumes: tuple[str, str]) -> types_pb2.Pod:
    """`pod` with volumes (name, "disk" | "memory" | "host")."""
    obj = pod.obj()
    for name, kind in volumes:
        v = obj.spec.volumes.add(name=name)
        if kind == "host":
            v.host_path.path = f"/var/{name}"
        else:
            v.empty_dir.medium = "Memory" if kind == "memory" else ""
    return obj


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        # The kube-system, not-safe-to-evict and local-storage rules name the pod alone...
        (
            replicated("dns", "kube-system").obj(),
            "non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: dns",
        ),
        (
            replicated("nse").annotation(SAFE_TO_EVICT, "false").obj(),
            "pod annotated as not safe to evict present: nse",
        ),
        (
            with_volumes(replicated("scratchy"), ("scratch", "disk")),
            "pod with local storage present: scratchy",
        ),
        # ...the replicated rule its namespace too.
        (make_pod("bare").namespace("apps").obj(), "apps/bare is not replicated"),
    ],
)
def test_blocking_messages_are_upstreams(pod: types_pb2.Pod, message: str) -> None:
    out = sort(pod)
    assert out.blocking is not None
    assert out.blocking.message == message


def test_a_pdb_without_disruptions_names_the_pod_with_its_namespace() -> None:
    pdb = make_pdb("guard").namespace("apps").selector(app="web").min_available(1).obj()
    out = sort(replicated("web").label("app", "web").obj(), pdbs=(pdb,))
    assert out.blocking is not None
    assert out.blocking.message == "not enough pod disruption budget to move apps/web"


@pytest.mark.parametrize(
    ("volumes", "listed", "blocks"),
    [
        ((("scratch", "disk"),), "", True),
        ((("scratch", "disk"),), "scratch", False),
        ((("cache", "host"),), "cache", False),
        ((("scratch", "disk"), ("cache", "host")), "scratch", True),  # cache is not listed
        ((("scratch", "disk"), ("cache", "host")), "scratch,cache", False),
        ((("tmp", "memory"),), "", False),  # an emptyDir in memory is not local storage
    ],
)
def test_safe_to_evict_local_volumes_lists_the_volumes_that_do_not_block(
    volumes: tuple[tuple[str, str], ...], listed: str, blocks: bool
) -> None:
    pod = replicated("p")
    if listed:
        pod = pod.annotation(SAFE_TO_EVICT_LOCAL_VOLUMES, listed)
    out = sort(with_volumes(pod, *volumes))
    assert (out.blocking is not None) is blocks
    assert [p.metadata.name for p in out.movable] == ([] if blocks else ["p"])


@pytest.mark.parametrize(
    ("deleted_ago", "grace", "long_terminating"),
    [
        (40.0, 10, False),  # exactly grace + 30 s: not yet
        (40.5, 10, True),
        (60.0, None, False),  # no grace period set: 30 s, so 60 s
        (60.5, None, True),
    ],
)
def test_a_pod_terminating_past_its_grace_period_and_30s_is_left_alone(
    deleted_ago: float, grace: int | None, long_terminating: bool
) -> None:
    """Upstream's longterminating rule: such a pod is skipped (neither moved nor blocking),
    even a bare one that would otherwise block."""
    pod = make_pod("stuck").namespace("apps").obj()
    if grace is not None:
        pod.spec.termination_grace_period_seconds = grace
    else:
        pod.spec.ClearField("termination_grace_period_seconds")
    pod.metadata.deletion_timestamp.FromNanoseconds(round((NOW - deleted_ago) * 1e9))
    out = sort(pod)
    if long_terminating:
        assert out.blocking is None and [p.metadata.name for p in out.ignored] == ["stuck"]
    else:
        assert out.blocking is not None and out.blocking.message == "apps/stuck is not replicated"


def test_a_long_terminating_pod_is_left_out_of_its_nodes_utilization() -> None:
    """Upstream's utilization.Calculate skips drain.IsPodLongTerminating pods: a node whose
    only busy pod was deleted 31 s past its grace period is empty by utilization."""
    node = make_node("n").capacity(cpu="2", memory="4Gi", pods=20).obj()
    stuck = make_pod("stuck").namespace("apps").req(cpu="1200m").grace(1).obj()
    stuck.metadata.deletion_timestamp.FromNanoseconds(round((NOW - 31.5) * 1e9))
    ni = NodeInfo(node)
    ni.add_pod(stuck)
    assert utilization(ni, NOW).value == 0.0
    assert utilization(ni, NOW - 1.0).value == pytest.approx(0.6)


def test_a_pdb_with_one_disruption_lets_a_node_of_two_of_its_pods_go() -> None:
    """Upstream's pdb rule asks each pod whether its PDBs allow one disruption: two pods under
    a budget of one are both drainable (the drain evicts them one after the other as the
    budget allows); the budget is then used up, below zero, and a third pod is blocked."""
    pdb = make_pdb("guard").namespace("apps").selector(app="web").min_available(1).obj()
    pdb.status.disruptions_allowed = 1
    tracker = PdbTracker((pdb,))
    pods = [replicated(f"web-{i}").label("app", "web").obj() for i in range(3)]
    out = classify(pods[:2], tracker, ScaleDownOptions(), now=NOW)
    assert out.blocking is None
    assert [p.metadata.name for p in out.movable] == ["web-0", "web-1"]
    out = classify(pods[2:], tracker, ScaleDownOptions(), now=NOW)
    assert out.blocking is not None and out.blocking.pod == "apps/web-2"


@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize("kind", ["disk", "host"])
def test_local_storage_blocks_only_under_skip_nodes_with_local_storage(
    kind: str, skip: bool
) -> None:
    """Upstream registers the localstorage rule only with --skip-nodes-with-local-storage
    (true by default): under false an emptyDir on disk or a hostPath pod is moved as any."""
    pod = with_volumes(replicated("p"), ("scratch", kind))
    out = classify(
        [pod], PdbTracker(()), ScaleDownOptions(skip_nodes_with_local_storage=skip), now=NOW
    )
    assert (out.blocking is not None) is skip
    assert [p.metadata.name for p in out.movable] == ([] if skip else ["p"])
