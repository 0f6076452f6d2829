"""The per-kind strategies (kemu.machinery.strategy, upstream's PrepareForCreate and
PrepareForUpdate) the apiserver's registry looks up instead of testing an object's type."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.defaults import set_defaults
from kemu.machinery.kinds import BY_KIND, kind_of
from kemu.machinery.strategy import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    StrategyOptions,
    before_update,
    strategy_for,
)
from kemu.testing import make_node, make_pod

ON = StrategyOptions()
OFF = StrategyOptions(
    match_label_keys_merge=False,
    pod_scheduling_readiness=False,
    node_pod_preemption_policy=False,
    pod_observed_generation=False,
    pod_level_resources=False,
)
POD = BY_KIND["Pod"]


def test_every_strategy_is_for_a_kind_kemu_serves_and_others_get_the_default() -> None:
    assert set(STRATEGIES) <= set(BY_KIND)
    assert strategy_for(BY_KIND["ConfigMap"]) is DEFAULT_STRATEGY
    assert strategy_for(BY_KIND["Pod"]) is STRATEGIES["Pod"]


def test_a_new_pods_status_is_the_servers_and_a_gated_pod_says_so() -> None:
    pod = make_pod("p").gate("example.com/wait").obj()
    pod.status.phase = "Running"
    pod.status.nominated_node_name = "n1"
    strategy_for(kind_of(pod)).prepare_for_create(pod, ON, 100.0)
    assert pod.status.phase == "Pending" and not pod.status.nominated_node_name
    (cond,) = pod.status.conditions
    assert (cond.type, cond.status, cond.reason) == ("PodScheduled", "False", "SchedulingGated")
    assert pod.spec.containers[0].image_pull_policy, "defaulted first"


def test_without_pod_scheduling_readiness_the_gates_are_dropped() -> None:
    pod = make_pod("p").gate("example.com/wait").obj()
    strategy_for(kind_of(pod)).prepare_for_create(pod, OFF, 100.0)
    assert not pod.spec.scheduling_gates and not pod.status.conditions


def test_without_pod_level_resources_spec_resources_is_dropped_unless_stored_before() -> None:
    """dropDisabledPodLevelResources (pkg/api/pod/util.go)."""
    strategy = strategy_for(POD)
    pod = make_pod("p").req(cpu="1").pod_req(cpu="3").obj()
    strategy.prepare_for_create(pod, OFF, 100.0)
    assert not pod.spec.HasField("resources")
    kept = make_pod("p").req(cpu="1").pod_req(cpu="3").obj()
    strategy.prepare_for_create(kept, ON, 100.0)
    assert kept.spec.resources.requests["cpu"] == "3"

    new = make_pod("p").pod_lim(memory="1Gi").obj()
    strategy.prepare_for_update(new, make_pod("p").obj(), OFF)
    assert not new.spec.HasField("resources"), "dropped: the stored pod does not use it"
    new = make_pod("p").pod_lim(memory="1Gi").obj()
    strategy.prepare_for_update(new, make_pod("p").pod_lim(memory="1Gi").obj(), OFF)
    assert new.spec.resources.limits["memory"] == "1Gi", "a stored value survives the gate off"


def test_pod_level_requests_default_from_the_containers_or_the_pod_limits() -> None:
    """SetDefaults_Pod with PodLevelResources (defaultPodRequests, defaultHugePagePodLimits):
    only for a pod with pod-level values; without the gate nothing is defaulted (dropped)."""
    strategy = strategy_for(POD)
    pod = make_pod("p").req(cpu="1").container("b").req(cpu="500m").pod_lim(cpu="4", memory="2Gi")
    created = pod.obj()
    strategy.prepare_for_create(created, ON, 100.0)
    # cpu: the containers' aggregate; memory: nothing requested, so the pod-level limit.
    assert dict(created.spec.resources.requests) == {"cpu": "1500m", "memory": "2Gi"}
    huge = make_pod("h").lim({"hugepages-2Mi": "4Mi"}, memory="1Gi").pod_req(cpu="2").obj()
    strategy.prepare_for_create(huge, ON, 100.0)
    assert dict(huge.spec.resources.limits) == {"hugepages-2Mi": "4Mi"}
    assert dict(huge.spec.resources.requests) == {
        "cpu": "2",
        "memory": "1Gi",
        "hugepages-2Mi": "4Mi",
    }
    plain = make_pod("q").req(cpu="1").obj()
    strategy.prepare_for_create(plain, ON, 100.0)
    assert not plain.spec.HasField("resources")


def test_a_nodes_status_is_kept_and_a_disabled_field_dropped_unless_stored_before() -> None:
    node = make_node("n1").capacity(cpu="4").obj()
    node.spec.pod_preemption_policy.CopyFrom(types_pb2.NodePodPreemptionPolicy())
    strategy = strategy_for(kind_of(node))
    strategy.prepare_for_create(node, OFF, 100.0)
    assert node.status.capacity["cpu"] == "4", "nodes may set their status on create"
    assert not node.spec.HasField("pod_preemption_policy")

    stored = make_node("n1").obj()
    stored.spec.pod_preemption_policy.CopyFrom(types_pb2.NodePodPreemptionPolicy())
    new = make_node("n1").obj()
    new.spec.pod_preemption_policy.CopyFrom(types_pb2.NodePodPreemptionPolicy())
    strategy.prepare_for_update(new, stored, OFF)
    assert new.spec.HasField("pod_preemption_policy"), "a stored value survives the gate off"


def test_workload_kinds_reset_their_status_on_create() -> None:
    for name in ("ReplicaSet", "Deployment", "Job", "DaemonSet", "PodDisruptionBudget", "Service"):
        obj = BY_KIND[name].message()
        obj.metadata.name = "x"  # type: ignore[attr-defined]
        obj.status.SetInParent()  # type: ignore[attr-defined]
        assert obj.HasField("status")
        strategy_for(BY_KIND[name]).prepare_for_create(obj, ON, 100.0)
        assert not obj.HasField("status"), name


def _stored_pod() -> types_pb2.Pod:
    pod = make_pod("p").namespace("ns").obj()
    pod.metadata.uid = "u1"
    pod.metadata.generation = 3
    pod.metadata.resource_version = "7"
    pod.metadata.creation_timestamp.seconds = 100
    pod.status.phase = "Running"
    pod.status.qos_class = "BestEffort"
    return pod


def test_an_update_keeps_identity_and_status_and_bumps_the_generation_on_a_spec_change() -> None:
    old = _stored_pod()
    sent = types_pb2.Pod()
    sent.CopyFrom(old)
    sent.metadata.name = "renamed"
    sent.metadata.uid = ""
    sent.metadata.generation = 99
    sent.metadata.labels["a"] = "b"
    sent.status.phase = "Failed"
    labels_only = before_update(POD, old, sent, ON)
    assert isinstance(labels_only, types_pb2.Pod)
    assert (labels_only.metadata.name, labels_only.metadata.uid) == ("p", "u1")
    assert labels_only.metadata.generation == 3  # metadata is no spec change
    assert labels_only.metadata.labels["a"] == "b"
    assert labels_only.status.phase == "Running"  # the status subresource's to write
    sent.spec.active_deadline_seconds = 5
    spec_change = before_update(POD, old, sent, ON)
    assert spec_change.metadata.generation == 4  # type: ignore[attr-defined]
    assert sent.metadata.name == "renamed"  # (only read)


def test_a_pod_status_update_takes_the_status_and_backfills_the_qos_class() -> None:
    old = _stored_pod()
    sent = types_pb2.Pod()
    sent.CopyFrom(old)
    sent.spec.node_name = "elsewhere"
    sent.status.phase = "Succeeded"
    sent.status.qos_class = ""
    sent.status.observed_generation = 3
    written = strategy_for(POD).prepare_for_status_update(sent, old, ON, 0.0)
    assert isinstance(written, types_pb2.Pod)
    assert written.spec.node_name == ""  # the spec is the stored one
    assert (written.status.phase, written.status.qos_class) == ("Succeeded", "BestEffort")
    assert written.status.observed_generation == 3
    gated = strategy_for(POD).prepare_for_status_update(sent, old, OFF, 0.0)
    assert gated.status.observed_generation == 0  # type: ignore[attr-defined]


def test_a_node_status_update_keeps_the_stored_metadata() -> None:
    old = make_node("n").label("zone", "a").obj()
    sent = types_pb2.Node()
    sent.CopyFrom(old)
    sent.metadata.labels["zone"] = "b"
    sent.status.capacity["cpu"] = "4"
    written = strategy_for(BY_KIND["Node"]).prepare_for_status_update(sent, old, ON, 0.0)
    assert isinstance(written, types_pb2.Node)
    assert written.metadata.labels["zone"] == "a"
    assert written.status.capacity["cpu"] == "4"


def test_singular_ip_and_cidr_fields_pair_with_their_lists() -> None:
    """core/v1's conversion: podIP/hostIP/podCIDR is the list's first, and a client that sets
    only the singular field gets a list of it."""
    p = types_pb2.Pod()
    p.status.pod_ip = "10.244.0.5"
    p.status.host_ips.add(ip="172.18.0.2")
    set_defaults(p)
    assert [i.ip for i in p.status.pod_ips] == ["10.244.0.5"]
    assert p.status.host_ip == "172.18.0.2"
    node = types_pb2.Node()
    node.spec.pod_cidr = "10.244.3.0/24"
    set_defaults(node)
    assert list(node.spec.pod_cidrs) == ["10.244.3.0/24"]
    node.spec.pod_cidr = ""
    set_defaults(node)
    assert node.spec.pod_cidr == "10.244.3.0/24"


def test_a_new_pod_gets_its_qos_class_in_prepare_for_create() -> None:
    """podStrategy.PrepareForCreate computes status.qosClass (upstream
    pkg/registry/core/pod/strategy.go); a quantity that does not parse leaves it empty for
    validation to refuse the pod by its field."""
    guaranteed = make_pod("g").req(cpu="1", memory="1Gi").lim(cpu="1", memory="1Gi").obj()
    guaranteed.status.qos_class = "BestEffort"  # (a client's is never kept)
    strategy_for(POD).prepare_for_create(guaranteed, ON, 0.0)
    assert guaranteed.status.qos_class == "Guaranteed"
    best_effort = make_pod("b").obj()
    strategy_for(POD).prepare_for_create(best_effort, ON, 0.0)
    assert best_effort.status.qos_class == "BestEffort"
    invalid = make_pod("i").req(cpu="lots").obj()
    strategy_for(POD).prepare_for_create(invalid, ON, 0.0)
    assert invalid.status.qos_class == ""
