"""Validation: messages and field paths as upstream prints them."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.validation.field import raise_if_invalid
from kemu.machinery.validation.meta import validate_object_size
from kemu.machinery.validation.names import (
    MAX_OBJECT_SIZE,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)
from kemu.machinery.validation.objects import validate_object
from kemu.testing.builders import make_pod


def pod(**resources: dict[str, str]) -> types_pb2.Pod:
    p = types_pb2.Pod()
    p.metadata.name, p.metadata.namespace = "p", "default"
    c = p.spec.containers.add(name="c", image="img")
    for kind, values in resources.items():
        getattr(c.resources, kind).update(values)
    return p


def by_field(causes: list[Cause]) -> dict[str, str]:
    return {c.field: c.message for c in causes}


def only(causes: list[Cause]) -> Cause:
    assert len(causes) == 1, causes
    return causes[0]


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("a-b.c", True),
        ("A", False),
        ("-a", False),
        ("a" * 253, True),
        ("a" * 254, False),
    ],
)
def test_dns_subdomain(value: str, ok: bool) -> None:
    assert (not is_dns1123_subdomain(value)) is ok


@pytest.mark.parametrize(
    ("value", "ok"), [("ns-1", True), ("a.b", False), ("a" * 63, True), ("a" * 64, False)]
)
def test_dns_label(value: str, ok: bool) -> None:
    assert (not is_dns1123_label(value)) is ok


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("app", []),
        ("example.com/App_1", []),
        ("a" * 63, []),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        ("/a", ["prefix part must be non-empty"]),
        ("Example.com/a", ["prefix part a lowercase RFC 1123 subdomain"]),
        ("a/b/c", ["a qualified name must consist of"]),
        ("-a", ["name part must consist of alphanumeric characters"]),
        ("", ["name part must be non-empty", "name part must consist of"]),
    ],
)
def test_qualified_names(value: str, errors: list[str]) -> None:
    got = is_qualified_name(value)
    assert len(got) == len(errors)
    for msg, want in zip(got, errors, strict=True):
        assert msg.startswith(want)


def test_label_values() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_3-x") == []
    assert is_valid_label_value("a" * 64) == ["must be no more than 63 characters"]
    assert is_valid_label_value("-x")[0].startswith("a valid label must be an empty string")


# ---------------------------------------------------------------- metadata


def test_a_minimal_pod_is_valid() -> None:
    assert validate_object(pod()) == []


def test_name_or_generate_name_is_required() -> None:
    p = pod()
    p.metadata.name = ""
    assert only(validate_object(p)) == Cause(
        "metadata.name", "Required value: name or generateName is required"
    )
    p.metadata.generate_name = "web-"
    assert validate_object(p) == []


def test_metadata_errors() -> None:
    p = pod()
    p.metadata.name = "Bad_Name"
    p.metadata.namespace = "a.b"
    p.metadata.labels["bad key"] = "ok"
    p.metadata.labels["ok"] = "-bad"
    p.metadata.annotations["x"] = "v" * (256 * 1024)
    causes = by_field(validate_object(p))
    assert causes["metadata.name"].startswith(
        'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of'
    )
    assert causes["metadata.namespace"].startswith(
        'Invalid value: "a.b": a lowercase RFC 1123 label'
    )
    assert causes["metadata.labels"].startswith('Invalid value: "bad key": name part must consist')
    assert causes["metadata.labels[ok]"].startswith('Invalid value: "-bad": a valid label')
    assert causes["metadata.annotations"] == "Too long: must have at most 262144 bytes"


def test_namespace_required_for_namespaced_and_forbidden_for_cluster_kinds() -> None:
    p = pod()
    p.metadata.namespace = ""
    assert only(validate_object(p)) == Cause("metadata.namespace", "Required value")
    n = types_pb2.Node()
    n.metadata.name, n.metadata.namespace = "n1", "default"
    assert only(validate_object(n)) == Cause(
        "metadata.namespace", "Forbidden: not allowed on this type"
    )


def test_object_size() -> None:
    assert validate_object_size(MAX_OBJECT_SIZE) == []
    (cause,) = validate_object_size(MAX_OBJECT_SIZE + 1, name="p")
    assert cause.field == "metadata.name" and "object is too large" in cause.message
    assert validate_object_size(2 * MAX_OBJECT_SIZE)[0].field == "<root>"


def test_raise_if_invalid() -> None:
    raise_if_invalid('Pod "p"', [])
    with pytest.raises(Invalid, match=r'^Pod "p" is invalid: spec.containers: Required value$'):
        raise_if_invalid('Pod "p"', [Cause("spec.containers", "Required value")])


# ---------------------------------------------------------------- pods


def test_containers_required_unique_and_dns_labels() -> None:
    p = pod()
    del p.spec.containers[:]
    assert only(validate_object(p)) == Cause("spec.containers", "Required value")
    p = pod()
    p.spec.containers.add(name="c")
    p.spec.init_containers.add(name="Init")
    causes = by_field(validate_object(p))
    assert causes["spec.containers[1].name"] == 'Duplicate value: "c"'
    assert causes["spec.initContainers[0].name"].startswith(
        'Invalid value: "Init": a lowercase RFC 1123 label'
    )
    p = pod()
    p.spec.containers.add(image="nginx")
    assert by_field(validate_object(p)) == {"spec.containers[1].name": "Required value"}
    p = pod()
    p.spec.containers.add(name="noimage")
    assert by_field(validate_object(p)) == {"spec.containers[1].image": "Required value"}


@pytest.mark.parametrize(
    ("resources", "field", "message"),
    [
        (
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
            "spec.containers[0].resources.requests[cpu]",
            'Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
            "spec.containers[0].resources.requests[memory]",
            'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
        ),
        (
            {"requests": {"cpu": "-1"}},
            "spec.containers[0].resources.requests[cpu]",
            'Invalid value: "-1": must be greater than or equal to 0',
        ),
        (
            {"limits": {"memory": "lots"}},
            "spec.containers[0].resources.limits[memory]",
            'Invalid value: "lots": quantities must match the regular expression',
        ),
        (
            {"requests": {"gpu": "1"}},
            "spec.containers[0].resources.requests[gpu]",
            'Invalid value: "gpu": must be a standard resource for containers',
        ),
        (
            {"requests": {"pods": "1"}},
            "spec.containers[0].resources.requests[pods]",
            'Invalid value: "pods": must be a standard resource for containers',
        ),
        (
            {"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}},
            "spec.containers[0].resources.requests[example.com/gpu]",
            'Invalid value: "1": must be equal to example.com/gpu limit of 2',
        ),
        (
            {"requests": {"example.com/gpu": "1"}},
            "spec.containers[0].resources.limits",
            "Required value: Limit must be set for non overcommitable resources",
        ),
    ],
)
def test_container_resources(
    resources: dict[str, dict[str, str]], field: str, message: str
) -> None:
    cause = only(validate_object(pod(**resources)))
    assert cause.field == field
    assert cause.message.startswith(message)


def test_extended_resources_must_be_integers() -> None:
    p = pod(limits={"example.com/gpu": "1500m"}, requests={"example.com/gpu": "1500m"})
    assert by_field(validate_object(p)) == {
        "spec.containers[0].resources.limits[example.com/gpu]": (
            'Invalid value: "1500m": must be an integer'
        ),
        "spec.containers[0].resources.requests[example.com/gpu]": (
            'Invalid value: "1500m": must be an integer'
        ),
    }


def test_pod_level_requests_must_cover_the_containers_aggregate() -> None:
    """validatePodResourceConsistency: a pod-level request below what the containers request
    together (sidecars counted) is invalid; one above, or a resource the containers do not
    request, is not."""
    p = make_pod("p").req(cpu="1", memory="1Gi").init_container("s", restart_policy="Always")
    p.req(cpu="500m").pod_req(cpu="1", memory="2Gi")
    assert by_field(validate_object(p.obj())) == {
        "spec.resources.requests[cpu]": (
            'Invalid value: "1": must be greater than or equal to aggregate container '
            "requests of 1500m"
        )
    }
    assert validate_object(make_pod("q").req(cpu="1").pod_req(cpu="3", memory="1Gi").obj()) == []


def test_valid_container_resources() -> None:
    p = pod(
        requests={
            "cpu": "500m",
            "memory": "1Gi",
            "example.com/gpu": "1",
            "ephemeral-storage": "1G",
        },
        limits={"cpu": "1", "memory": "1Gi", "example.com/gpu": "1", "hugepages-2Mi": "4Mi"},
    )
    assert validate_object(p) == []


def test_pod_spec_fields() -> None:
    p = pod()
    p.spec.preemption_policy = "Sometimes"
    p.spec.termination_grace_period_seconds = -1
    p.spec.restart_policy = "Maybe"
    p.spec.node_selector["disk"] = "-ssd"
    p.spec.priority_class_name = "High"
    p.spec.overhead["cpu"] = "-1"
    causes = by_field(validate_object(p))
    assert causes["spec.preemptionPolicy"] == (
        'Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'
    )
    assert causes["spec.terminationGracePeriodSeconds"] == (
        "Invalid value: -1: must be greater than or equal to 0"
    )
    assert causes["spec.restartPolicy"].startswith('Unsupported value: "Maybe"')
    assert causes["spec.nodeSelector[disk]"].startswith('Invalid value: "-ssd"')
    assert causes["spec.priorityClassName"].startswith('Invalid value: "High"')
    assert causes["spec.overhead[cpu]"] == 'Invalid value: "-1": must be greater than or equal to 0'
    assert len(causes) == 6


def test_valid_preemption_policies_and_grace_period() -> None:
    for policy in ("Never", "PreemptLowerPriority"):
        p = pod()
        p.spec.preemption_policy = policy
        p.spec.termination_grace_period_seconds = 0
        assert validate_object(p) == []


@pytest.mark.parametrize(
    ("toleration", "field", "message"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, None, None),
        ({"operator": "Exists"}, None, None),
        ({"key": "k", "value": "v"}, None, None),
        (
            {"key": "k", "operator": "Exists", "value": "v"},
            "spec.tolerations[0].operator",
            "Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
        ),
        (
            {"key": "k", "operator": "Gte"},
            "spec.tolerations[0].operator",
            'Unsupported value: "Gte": supported values: "Equal", "Exists"',
        ),
        (
            {"key": "k", "operator": "Exists", "effect": "NoWay"},
            "spec.tolerations[0].effect",
            'Unsupported value: "NoWay": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
        (
            {"operator": "Equal", "value": "v"},
            "spec.tolerations[0].operator",
            'Invalid value: "Equal": operator must be Exists when `key` is empty',
        ),
        (
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "toleration_seconds": 5},
            "spec.tolerations[0].effect",
            "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            {"key": "bad key", "operator": "Exists"},
            "spec.tolerations[0].key",
            'Invalid value: "bad key"',
        ),
    ],
)
def test_tolerations(toleration: dict[str, object], field: str | None, message: str | None) -> None:
    p = pod()
    p.spec.tolerations.add(**toleration)
    causes = validate_object(p)
    if field is None:
        assert causes == []
    else:
        cause = only(causes)
        assert cause.field == field
        assert cause.message.startswith(message or "")


def test_affinity() -> None:
    p = pod()
    na = p.spec.affinity.node_affinity
    term = na.required_during_scheduling_ignored_during_execution.node_selector_terms.add()
    term.match_expressions.add(key="zone", operator="In", values=["a"])
    term.match_expressions.add(key="zone", operator="Near", values=["a"])
    term.match_expressions.add(key="gen", operator="Gt", values=["1", "2"])
    term.match_expressions.add(key="zone", operator="Exists", values=["a"])
    term.match_fields.add(key="metadata.uid", operator="In", values=["x"])
    na.preferred_during_scheduling_ignored_during_execution.add(weight=101)
    pa = p.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution.add()
    pa.label_selector.match_expressions.add(key="app", operator="In")
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    causes = by_field(validate_object(p))
    assert causes == {
        f"{base}.matchExpressions[1].operator": 'Invalid value: "Near": not a valid selector operator',
        f"{base}.matchExpressions[2].values": (
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        ),
        f"{base}.matchExpressions[3].values": (
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        ),
        f"{base}.matchFields[0].key": (
            'Unsupported value: "metadata.uid": supported values: "metadata.name"'
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight": (
            "Invalid value: 101: must be in the range 1-100"
        ),
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".labelSelector.matchExpressions[0].values": (
            "Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ),
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".topologyKey": "Required value: can not be empty",
    }


def test_scheduling_gates() -> None:
    p = pod()
    p.spec.scheduling_gates.add(name="example.com/wait")
    p.spec.scheduling_gates.add(name="example.com/wait")
    p.spec.scheduling_gates.add(name="not valid")
    causes = by_field(validate_object(p))
    assert causes["spec.schedulingGates[1]"] == 'Duplicate value: "example.com/wait"'
    assert causes["spec.schedulingGates[2]"].startswith('Invalid value: "not valid"')
    assert len(causes) == 2


def test_resize_policy() -> None:
    p = pod()
    c = p.spec.containers[0]
    c.resize_policy.add(resource_name="cpu", restart_policy="NotRequired")
    c.resize_policy.add(resource_name="memory", restart_policy="RestartContainer")
    assert validate_object(p) == []
    c.resize_policy.add(resource_name="cpu", restart_policy="Sometimes")
    c.resize_policy.add(resource_name="gpu", restart_policy="NotRequired")
    causes = by_field(validate_object(p))
    base = "spec.containers[0].resizePolicy"
    assert causes == {
        f"{base}[2].resourceName": 'Duplicate value: "cpu"',
        f"{base}[2].restartPolicy": (
            'Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"'
        ),
        f"{base}[3].resourceName": 'Unsupported value: "gpu": supported values: "cpu", "memory"',
    }


def test_init_container_restart_policy_only_always() -> None:
    p = pod()
    p.spec.init_containers.add(name="sidecar", image="i", restart_policy="Always")
    assert validate_object(p) == []
    p.spec.init_containers.add(name="bad", image="i", restart_policy="Never")
    assert only(validate_object(p)) == Cause(
        "spec.initContainers[1].restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
    )


def test_pod_update_rules() -> None:
    old = pod(requests={"cpu": "1"})
    old.spec.scheduling_gates.add(name="example.com/a")
    new = types_pb2.Pod()
    new.CopyFrom(old)
    new.spec.containers[0].image = "img:2"
    new.spec.tolerations.add(key="k", operator="Exists")
    del new.spec.scheduling_gates[:]
    new.spec.node_selector["zone"] = "a"  # allowed while the pod was gated
    assert validate_object(new, old=old) == []

    changed = types_pb2.Pod()
    changed.CopyFrom(old)
    changed.spec.containers[0].resources.requests["cpu"] = "2"
    assert only(validate_object(changed, old=old)).message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    )

    renamed = types_pb2.Pod()
    renamed.CopyFrom(old)
    renamed.metadata.name = "q"
    renamed.spec.scheduling_gates.add(name="example.com/b")
    assert by_field(validate_object(renamed, old=old)) == {
        "metadata.name": 'Invalid value: "q": field is immutable',
        "spec.schedulingGates": (
            "Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/b'"
        ),
    }


# ---------------------------------------------------------------- nodes


def node() -> types_pb2.Node:
    n = types_pb2.Node()
    n.metadata.name = "node-1"
    n.status.capacity.update({"cpu": "4", "memory": "8Gi", "pods": "110"})
    n.status.allocatable.update(
        {"cpu": "3800m", "memory": "7Gi", "pods": "110", "example.com/gpu": "2"}
    )
    return n


def test_node_validation() -> None:
    assert validate_object(node()) == []
    n = node()
    n.status.capacity["cpu"] = "-4"
    n.status.capacity["pods"] = "1.5"
    n.status.allocatable["gpu"] = "1.5"  # upstream checks a node's quantities, not its names
    n.status.allocatable["example.com/gpu"] = "1.5"
    n.status.allocatable["attachable-volumes-csi-ebs.csi.aws.com"] = "39"
    n.spec.taints.add(key="k", effect="NoSchedule")
    n.spec.taints.add(key="k", effect="NoSchedule")
    n.spec.taints.add(key="k2", effect="")
    n.spec.taints.add(key="k3", effect="Never")
    causes = by_field(validate_object(n))
    assert causes == {
        "status.capacity.cpu": 'Invalid value: "-4": must be greater than or equal to 0',
        "status.capacity.pods": 'Invalid value: "1.5": must be an integer',
        "status.allocatable.example.com/gpu": 'Invalid value: "1.5": must be an integer',
        "spec.taints[1]": (
            'Duplicate value: "k:NoSchedule": taints must be unique by key and effect pair'
        ),
        "spec.taints[2].effect": "Required value",
        "spec.taints[3].effect": (
            'Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", '
            '"NoExecute"'
        ),
    }


def test_disable_resize_preemption() -> None:
    n = node()
    owners = n.spec.pod_preemption_policy.disable_resize_preemption
    owners.extend(["example.com/autoscaler", "vpa"])
    assert validate_object(n) == []
    owners.extend([f"o{i}" for i in range(19)] + ["bad owner"])
    causes = by_field(validate_object(n))
    path = "spec.podPreemptionPolicy.disableResizePreemption"
    assert causes[path] == "Too many: 22: must have at most 20 items"
    assert causes[f"{path}[21]"].startswith('Invalid value: "bad owner"')


# ---------------------------------------------------------------- priority classes


def pc(name: str, value: int) -> types_pb2.PriorityClass:
    out = types_pb2.PriorityClass(value=value)
    out.metadata.name = name
    return out


def test_priority_classes() -> None:
    assert validate_object(pc("high", 1_000_000_000)) == []
    assert validate_object(pc("system-node-critical", 2_000_001_000)) == []
    assert only(validate_object(pc("high", 1_000_000_001))) == Cause(
        "value", "Forbidden: maximum allowed value of a user defined priority is 1000000000"
    )
    cause = only(validate_object(pc("system-mine", 5)))
    assert cause.field == "metadata.name"
    assert cause.message.startswith(
        "Forbidden: priority class names with 'system-' prefix are reserved"
    )
    assert "system-mine is not a known system priority class" in cause.message
    bad = pc("low", 1)
    bad.preemption_policy = "Always"
    assert only(validate_object(bad)).field == "preemptionPolicy"


def test_priority_class_value_is_immutable() -> None:
    old, new = pc("high", 10), pc("high", 11)
    assert only(validate_object(new, old=old)) == Cause(
        "value", "Forbidden: may not be changed in an update."
    )


# ---------------------------------------------------------------- PDBs, leases, events


def pdb(min_available: int | str | None = None, max_unavailable: int | str | None = None):
    out = types_pb2.PodDisruptionBudget()
    out.metadata.name, out.metadata.namespace = "budget", "default"
    for field, value in (("min_available", min_available), ("max_unavailable", max_unavailable)):
        if isinstance(value, int):
            getattr(out.spec, field).int_val = value
        elif isinstance(value, str):
            getattr(out.spec, field).str_val = value
    out.spec.selector.match_labels["app"] = "web"
    return out


@pytest.mark.parametrize(
    ("budget", "field", "message"),
    [
        (pdb(min_available=1), None, None),
        (pdb(max_unavailable="50%"), None, None),
        (pdb(min_available=0), None, None),
        (
            pdb(min_available=1, max_unavailable=1),
            "spec.minAvailable",
            "Invalid value: 1: minAvailable and maxUnavailable cannot be both set",
        ),
        (pdb(), "spec.minAvailable", "Required value: one of minAvailable or maxUnavailable"),
        (
            pdb(min_available=-1),
            "spec.minAvailable",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            pdb(max_unavailable="half"),
            "spec.maxUnavailable",
            "Invalid value: \"half\": a valid percent string must be a numeric string followed by an ending '%'",
        ),
        (
            pdb(max_unavailable="150%"),
            "spec.maxUnavailable",
            'Invalid value: "150%": must not be greater than 100%',
        ),
    ],
)
def test_pod_disruption_budgets(budget, field: str | None, message: str | None) -> None:
    causes = validate_object(budget)
    if field is None:
        assert causes == []
    else:
        cause = only(causes)
        assert cause.field == field
        assert cause.message.startswith(message or "")


def test_pdb_selector_is_validated() -> None:
    budget = pdb(min_available=1)
    budget.spec.selector.match_expressions.add(key="tier", operator="Near")
    assert only(validate_object(budget)) == Cause(
        "spec.selector.matchExpressions[0].operator",
        'Invalid value: "Near": not a valid selector operator',
    )


def test_leases_and_events() -> None:
    lease = types_pb2.Lease()
    lease.metadata.name, lease.metadata.namespace = "kube-scheduler", "kube-system"
    lease.spec.lease_duration_seconds = 15
    assert validate_object(lease) == []
    lease.spec.lease_duration_seconds = 0
    assert only(validate_object(lease)) == Cause(
        "spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0"
    )
    event = types_pb2.Event(type="Normal", reason="Scheduled")
    event.metadata.name, event.metadata.namespace = "p.17a", "default"
    assert validate_object(event) == []
    event.metadata.name = "P"
    assert only(validate_object(event)).field == "metadata.name"


def test_validate_object_rejects_non_kinds() -> None:
    with pytest.raises(TypeError):
        validate_object(types_pb2.ObjectMeta())


# ---------------------------------------------------------------- addresses


def test_pod_ips_one_per_family() -> None:
    """validatePodIPs / validateHostIPs: valid IPs, several only as a dual-stack pair."""
    p = pod()
    p.status.pod_ips.add(ip="10.244.0.2")
    p.status.pod_ips.add(ip="fd00::2")
    p.status.host_ips.add(ip="172.18.0.2")
    assert validate_object(p) == []
    p.status.pod_ips.add(ip="10.244.0.3")
    (cause,) = validate_object(p)
    assert cause.field == "status.podIPs"
    assert cause.message.endswith("may specify no more than one IP address for each IP family")
    del p.status.pod_ips[:]
    p.status.host_ips[0].ip = "not-an-ip"
    assert by_field(validate_object(p)) == {
        "status.hostIPs[0]": 'Invalid value: "not-an-ip": must be a valid IP address'
    }


def test_node_pod_cidrs_are_set_once() -> None:
    """ValidateNode and ValidateNodeUpdate: podCIDRs are CIDRs, and once set never change."""
    old = types_pb2.Node()
    old.metadata.name = "n1"
    new = types_pb2.Node()
    new.CopyFrom(old)
    new.spec.pod_cidrs.append("10.244.1.0/24")
    assert validate_object(new, old=old) == []
    changed = types_pb2.Node()
    changed.CopyFrom(new)
    changed.spec.pod_cidrs[0] = "10.244.2.0/24"
    assert only(validate_object(changed, old=new)).field == "spec.podCIDRs"
    new.spec.pod_cidrs[0] = "10.244.1.0/33"
    assert by_field(validate_object(new)) == {
        "spec.podCIDRs[0]": 'Invalid value: "10.244.1.0/33": must be a valid CIDR'
    }
