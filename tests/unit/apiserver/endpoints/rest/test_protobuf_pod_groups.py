"""S-PGAPI-13: scheduling.k8s.io's pod groups in kubectl's protobuf bodies, in each group
version's own field numbers (apiserver/endpoints/rest/protobuf_schema.py), pinned against the
`protobuf:"..."` tags of kubernetes/api (the staging mirror of kubernetes/kubernetes'
staging/src/k8s.io/api):

- 1.35 scheduling/v1alpha1/types.go at v0.35.0 (9afe7de0);
- 1.36 scheduling/v1alpha2/types.go at v0.36.0 (545bb975);
- 1.37 scheduling/v1beta1/types.go and scheduling/v1alpha3/types.go at master 10b39a39
  (2026-07-24; their last change 3b7f20c3), which share every number;
- core/v1 PodSpec.workloadRef 42 (1.35) and schedulingGroup 43 (1.36+).
"""

from __future__ import annotations

import pytest

from apiserver.endpoints.rest import protobuf
from apiserver.endpoints.rest.protobuf_schema import SCHEMA, schema_of
from apiserver.storage.encoding import field_bytes, varint

V1ALPHA1 = "scheduling.k8s.io/v1alpha1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
V1BETA1 = "scheduling.k8s.io/v1beta1"

# message -> {number: json name}, as upstream's tags say
UPSTREAM_1_37: dict[str, dict[int, str]] = {
    "Workload": {1: "metadata", 2: "spec"},
    "WorkloadSpec": {1: "controllerRef", 2: "podGroupTemplates", 3: "compositePodGroupTemplates"},
    "PodGroupTemplate": {
        1: "name",
        2: "schedulingPolicy",
        3: "schedulingConstraints",
        4: "resourceClaims",
        5: "disruptionMode",
        6: "priorityClassName",
        7: "priority",
        8: "preemptionPolicy",
    },
    "CompositePodGroupTemplate": {
        1: "name",
        2: "schedulingPolicy",
        3: "schedulingConstraints",
        4: "disruptionMode",
        5: "priorityClassName",
        6: "priority",
        7: "preemptionPolicy",
        8: "podGroupTemplates",
        9: "compositePodGroupTemplates",
    },
    "PodGroupSchedulingPolicy": {1: "basic", 2: "gang"},
    "GangSchedulingPolicy": {1: "minCount"},
    "PodGroupResourceClaim": {1: "name", 2: "resourceClaimName", 3: "resourceClaimTemplateName"},
    "DisruptionMode": {1: "single", 2: "all"},
    "PodGroup": {1: "metadata", 2: "spec", 3: "status"},
    "PodGroupSpec": {
        1: "parentCompositePodGroupName",
        2: "workloadRef",
        3: "schedulingPolicy",
        4: "schedulingConstraints",
        5: "resourceClaims",
        6: "disruptionMode",
        7: "priorityClassName",
        8: "priority",
        9: "preemptionPolicy",
    },
    "PodGroupStatus": {1: "conditions", 2: "resourceClaimStatuses"},
    "PodGroupResourceClaimStatus": {1: "name", 2: "resourceClaimName"},
    "WorkloadReference": {1: "workloadName", 2: "templateName"},
    "PodGroupSchedulingConstraints": {1: "topology"},
    "TopologyConstraint": {1: "key"},
    "CompositePodGroup": {1: "metadata", 2: "spec", 3: "status"},
    "CompositePodGroupSpec": {
        1: "parentCompositePodGroupName",
        2: "workloadRef",
        3: "schedulingPolicy",
        4: "schedulingConstraints",
        5: "disruptionMode",
        6: "priorityClassName",
        7: "priority",
        8: "preemptionPolicy",
    },
    "CompositePodGroupSchedulingPolicy": {1: "basic", 2: "gang"},
    "CompositeGangSchedulingPolicy": {1: "minGroupCount"},
    "CompositeDisruptionMode": {1: "single", 2: "all"},
    "CompositePodGroupStatus": {1: "conditions"},
    "CompositePodGroupSchedulingConstraints": {1: "topology"},
}
UPSTREAM_1_36: dict[str, dict[int, str]] = {
    **{
        k: v
        for k, v in UPSTREAM_1_37.items()
        if not k.startswith("Composite") and k != "WorkloadReference"
    },
    "WorkloadSpec": {1: "controllerRef", 2: "podGroupTemplates"},
    "PodGroupTemplate": {
        1: "name",
        2: "schedulingPolicy",
        3: "schedulingConstraints",
        4: "resourceClaims",
        5: "disruptionMode",
        6: "priorityClassName",
        7: "priority",
    },
    "PodGroupSpec": {
        1: "podGroupTemplateRef",
        2: "schedulingPolicy",
        3: "schedulingConstraints",
        4: "resourceClaims",
        5: "disruptionMode",
        6: "priorityClassName",
        7: "priority",
    },
    "PodGroupTemplateReference": {1: "workload"},
    "WorkloadPodGroupTemplateReference": {1: "workloadName", 2: "podGroupTemplateName"},
}
UPSTREAM_1_35: dict[str, dict[int, str]] = {
    "Workload": {1: "metadata", 2: "spec"},
    "WorkloadSpec": {1: "controllerRef", 2: "podGroups"},
    "PodGroup": {1: "name", 3: "policy"},
    "PodGroupPolicy": {2: "basic", 3: "gang"},
    "GangSchedulingPolicy": {1: "minCount"},
}


@pytest.mark.parametrize(
    ("api_version", "upstream"),
    [
        (V1ALPHA1, UPSTREAM_1_35),
        (V1ALPHA2, UPSTREAM_1_36),
        (V1ALPHA3, UPSTREAM_1_37),
        (V1BETA1, UPSTREAM_1_37),
    ],
)
def test_s_pgapi_13_the_numbers_are_upstreams(
    api_version: str, upstream: dict[str, dict[int, str]]
) -> None:
    schema = schema_of(api_version)
    for message, numbers in upstream.items():
        kemu = {n: json_name for n, (json_name, _) in schema[message].items()}
        assert kemu == numbers, f"{api_version} {message}"


def test_the_pods_reference_to_its_group() -> None:
    pod_spec = {n: f for n, (f, _) in SCHEMA["PodSpec"].items() if n in (42, 43)}
    assert pod_spec == {42: "workloadRef", 43: "schedulingGroup"}
    assert {n: f for n, (f, _) in SCHEMA["PodWorkloadReference"].items()} == {
        1: "name",
        2: "podGroup",
        3: "podGroupReplicaKey",
    }


def _k8s(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field_bytes(1, api_version.encode()) + field_bytes(2, kind.encode())
    return b"k8s\x00" + field_bytes(1, type_meta) + field_bytes(2, raw)


def _meta(name: str) -> bytes:
    return field_bytes(1, field_bytes(1, name.encode()) + field_bytes(3, b"ns"))


def test_a_1_37_pod_group_body() -> None:
    gang = field_bytes(2, varint(1 << 3) + varint(3))  # schedulingPolicy.gang{minCount: 3}
    ref = field_bytes(1, b"train") + field_bytes(2, b"workers")
    spec = (
        field_bytes(1, b"mid")
        + field_bytes(2, ref)
        + field_bytes(3, gang)
        + field_bytes(6, field_bytes(1, b""))
        + field_bytes(7, b"high")
        + varint(8 << 3)
        + varint(100)
        + field_bytes(9, b"Never")
    )
    for api_version in (V1BETA1, V1ALPHA3):
        decoded = protobuf.decode(
            _k8s(api_version, "PodGroup", _meta("leaf") + field_bytes(2, spec))
        )
        assert decoded == {
            "apiVersion": api_version,
            "kind": "PodGroup",
            "metadata": {"name": "leaf", "namespace": "ns"},
            "spec": {
                "parentCompositePodGroupName": "mid",
                "workloadRef": {"workloadName": "train", "templateName": "workers"},
                "schedulingPolicy": {"gang": {"minCount": 3}},
                "disruptionMode": {"single": {}},
                "priorityClassName": "high",
                "priority": 100,
                "preemptionPolicy": "Never",
            },
        }


def test_a_1_37_composite_pod_group_body() -> None:
    gang = field_bytes(2, varint(1 << 3) + varint(2))  # gang{minGroupCount: 2}
    topology = field_bytes(1, field_bytes(1, b"zone"))
    spec = (
        field_bytes(3, gang)
        + field_bytes(4, topology)
        + field_bytes(5, field_bytes(2, b""))
        + field_bytes(6, b"high")
    )
    decoded = protobuf.decode(
        _k8s(V1ALPHA3, "CompositePodGroup", _meta("root") + field_bytes(2, spec))
    )
    assert decoded is not None
    assert decoded["spec"] == {
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "zone"}]},
        "disruptionMode": {"all": {}},
        "priorityClassName": "high",
    }


def test_a_1_36_pod_group_body() -> None:
    ref = field_bytes(1, field_bytes(1, b"train") + field_bytes(2, b"workers"))
    spec = field_bytes(1, ref) + field_bytes(2, field_bytes(1, b"")) + field_bytes(5, b"PodGroup")
    decoded = protobuf.decode(_k8s(V1ALPHA2, "PodGroup", _meta("g") + field_bytes(2, spec)))
    assert decoded is not None
    assert decoded["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "train", "podGroupTemplateName": "workers"}
        },
        "schedulingPolicy": {"basic": {}},
        "disruptionMode": "PodGroup",
    }


def test_a_1_35_workload_body() -> None:
    group = field_bytes(1, b"workers") + field_bytes(3, field_bytes(3, varint(1 << 3) + varint(4)))
    spec = field_bytes(2, group)
    decoded = protobuf.decode(_k8s(V1ALPHA1, "Workload", _meta("w") + field_bytes(2, spec)))
    assert decoded is not None
    assert decoded["spec"] == {
        "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]
    }
