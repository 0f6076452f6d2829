"""kemuctl describe in kubectl's layout for the kinds of issue #57 (gcquota): each object of
data/kubectl_1_32_describe.json (as a kemu apiserver served it to kubectl 1.32) described by
kemu is what kubectl described (trailing blanks aside: kubectl's tabwriter pads a cell
before an empty last one). S-CTL-DESCRIBE-*."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.ctl import describe
from kemu.machinery import convert, kinds

DATA = Path(__file__).parent / "data" / "kubectl_1_32_describe.json"
ENTRIES: list[dict[str, Any]] = json.loads(DATA.read_text())
CASES = [e for e in ENTRIES if e["kubectl"] is not None]
NOW = 2_000_000_000.0

KUBECTL_1_37: dict[str, list[tuple[str, str]]] = {
    # (kubectl 1.32 -> 1.37, describe.go at 1.37: what changed for these kinds)
    "DaemonSet": [("Name:           agent\n", "Name:           agent\nNamespace:      d\n")],
    "CronJob": [
        (
            "Suspend:                       False\n",
            "Suspend:                       False\nTime Zone:                     <unset>\n",
        )
    ],
    "ServiceAccount": [
        (
            "Image pull secrets:  regcred (not found)\n"
            "Mountable secrets:   builder-token (not found)\n"
            "Tokens:              <none>\n",
            "Image pull secrets:  regcred\n",
        )
    ],
    "Secret": [
        ("user:      5 bytes\npassword:  8 bytes", "password:  8 bytes\nuser:      5 bytes")
    ],
    "ReplicaSet/web-67fbdf86b9": [
        (
            "Ports:       80/TCP, 443/TCP\n    Host Ports:  0/TCP, 0/TCP\n",
            "Ports:       80/TCP (http), 443/TCP\n    Host Ports:  0/TCP (http), 0/TCP\n",
        )
    ],
}
"""1.32's text made 1.37's where kubectl changed between them: a DaemonSet's namespace, a
CronJob's unset time zone, a ServiceAccount's pull secrets only (no lookups), a Secret's keys
sorted (1.32 followed a Go map), a container port's name (the old ReplicaSet's named port).
Where 1.32's text has not the part (a Go map's order that happened to be sorted, a template
without a named port), there is nothing to change."""


def _kind(obj: dict[str, Any]) -> kinds.Kind:
    group = obj["apiVersion"].rpartition("/")[0]
    return next(k for k in kinds.KINDS if k.kind == obj["kind"] and k.group == group)


def _msg(obj: dict[str, Any]) -> Any:
    return convert.from_dict(_kind(obj), obj)


def _all(kind: str) -> list[Any]:
    return [_msg(e["object"]) for e in ENTRIES if e["object"]["kind"] == kind]


def _strip(text: str) -> str:
    """Without trailing blanks, and without the events (their ages are the clock's)."""
    text = text.split("\nEvents:", 1)[0]
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())


def _described(obj: dict[str, Any]) -> str:
    msg = _msg(obj)
    if isinstance(msg, types_pb2.Namespace):
        return describe.describe_namespace(msg, _all("ResourceQuota"), _all("LimitRange"))
    if isinstance(msg, types_pb2.Deployment):
        return describe.describe_deployment(msg, _all("ReplicaSet"), [], NOW)
    services = {svc.metadata.name: svc for svc in _all("Service")}
    slices = _all("EndpointSlice")
    out = describe.describe_known(msg, [], NOW, pods=_all("Pod"), services=services, slices=slices)
    if out is None:  # kubectl's genericDescriber
        out = describe.describe_unstructured(msg, [], NOW, obj["apiVersion"])
    return out


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{c['object']['kind']}/{c['object']['metadata']['name']}" for c in CASES],
)
def test_s_ctl_describe_1_as_kubectl(case: dict[str, Any]) -> None:
    """S-CTL-DESCRIBE-1: RBAC, Ingress, IngressClass, NetworkPolicy, HPA, EndpointSlice,
    Endpoints, ResourceQuota, LimitRange, ReplicationController, CSR, PriorityClass, PDB,
    StorageClass, Namespace, Deployment, ReplicaSet, Job, CronJob, DaemonSet, StatefulSet,
    CSINode, Secret, ServiceAccount; Lease, APIService and a CRD through the generic
    describer."""
    theirs = case["kubectl"]
    kind, name = case["object"]["kind"], case["object"]["metadata"]["name"]
    for old, new in KUBECTL_1_37.get(kind, []) + KUBECTL_1_37.get(f"{kind}/{name}", []):
        theirs = theirs.replace(old, new)
    ours, theirs = _strip(_described(case["object"])), _strip(theirs)
    if case["object"]["kind"] in ("LimitRange", "Namespace"):  # limits: a Go map's order
        ours, theirs = "\n".join(sorted(ours.split("\n"))), "\n".join(sorted(theirs.split("\n")))
    assert ours == theirs


def test_s_ctl_describe_2_rules_compacted_and_sorted() -> None:
    """S-CTL-DESCRIBE-2: rbac.BreakdownRule then CompactRules: one row per resource (and
    name), the verbs of two rules on one resource merged, rows sorted by the rule's String()
    (verbs first), non-resource URLs one per row."""
    role = types_pb2.ClusterRole()
    role.metadata.name = "r"
    role.rules.add(verbs=["get"], api_groups=[""], resources=["pods", "pods/log"])
    role.rules.add(verbs=["list"], api_groups=[""], resources=["pods"])
    role.rules.add(verbs=["get"], non_resource_urls=["/healthz"])
    rows = describe.describe_role(role).splitlines()[6:]
    assert [r.split() for r in rows] == [
        ["pods", "[]", "[]", "[get", "list]"],
        ["[/healthz]", "[]", "[get]"],
        ["pods/log", "[]", "[]", "[get]"],
    ]


def test_s_ctl_describe_3_smart_label() -> None:
    """S-CTL-DESCRIBE-3: smartLabelFor as kubectl's generic describer titles fields."""
    assert describe.smart_label("apiVersion") == "API Version"
    assert describe.smart_label("creationTimestamp") == "Creation Timestamp"
    assert describe.smart_label("podCIDRs") == "Pod CIDRs"
    assert describe.smart_label("caBundle") == "Ca Bundle"
    assert describe.smart_label("x-kubernetes-a") == "X - Kubernetes - A"
    assert describe.smart_label("key_1") == "key_1"
    assert describe.smart_label("uid") == "UID"


def test_s_ctl_describe_4_endpoints_of_slices() -> None:
    """S-CTL-DESCRIBE-4: formatEndpointSlices: ready endpoints of the named port, three then
    `+ N more...`."""
    eps = types_pb2.EndpointSlice(address_type="IPv4")
    eps.ports.add(name="http", port=80)
    for i in range(5):
        e = eps.endpoints.add(addresses=[f"10.0.0.{i}"])
        e.conditions.ready = i != 1
    assert describe.format_endpoint_slices([eps], {"http"}) == (
        "10.0.0.0:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
    )
    assert describe.format_endpoint_slices([eps], {"other"}) == ""
    assert describe.format_endpoint_slices([], None) == "<none>"


def test_s_ctl_describe_5_hpa_with_current_metrics_and_behavior() -> None:
    """S-CTL-DESCRIBE-5: describeHorizontalPodAutoscalerV2 with the status's current metrics
    (utilization with its average value, an average value), a behavior, and conditions."""
    hpa = types_pb2.HorizontalPodAutoscaler()
    hpa.metadata.name, hpa.metadata.namespace = "web", "d"
    hpa.metadata.creation_timestamp.seconds = 1_700_000_000
    spec = hpa.spec
    spec.scale_target_ref.kind, spec.scale_target_ref.name = "Deployment", "web"
    spec.min_replicas, spec.max_replicas = 1, 4
    cpu = spec.metrics.add(type="Resource")
    cpu.resource.name = "cpu"
    cpu.resource.target.type, cpu.resource.target.average_utilization = "Utilization", 50
    mem = spec.metrics.add(type="Resource")
    mem.resource.name = "memory"
    mem.resource.target.type, mem.resource.target.average_value = "AverageValue", "100Mi"
    up = spec.behavior.scale_up
    up.stabilization_window_seconds = 0
    up.policies.add(type="Pods", value=4, period_seconds=15)
    st = hpa.status
    st.current_replicas, st.desired_replicas = 2, 3
    c0 = st.current_metrics.add(type="Resource")
    c0.resource.name = "cpu"
    c0.resource.current.average_utilization, c0.resource.current.average_value = 90, "90m"
    c1 = st.current_metrics.add(type="Resource")
    c1.resource.name = "memory"
    c1.resource.current.average_value = "52428800"
    st.conditions.add(type="AbleToScale", status="True", reason="ReadyForNewScale", message="ok")
    lines = [line.rstrip() for line in describe.describe_hpa(hpa, [], NOW).splitlines()]
    assert lines[5:] == [
        "Reference:                                             Deployment/web",
        "Metrics:                                               ( current / target )",
        "  resource cpu on pods  (as a percentage of request):  90% (90m) / 50%",
        "  resource memory on pods:                             52428800 / 100Mi",
        "Min replicas:                                          1",
        "Max replicas:                                          4",
        "Behavior:",
        "  Scale Up:",
        "    Stabilization Window: 0 seconds",
        "    Select Policy: Max",
        "    Policies:",
        "      - Type: Pods  Value: 4  Period: 15 seconds",
        "Deployment pods:    2 current / 3 desired",
        "Conditions:",
        "  Type         Status  Reason            Message",
        "  ----         ------  ------            -------",
        "  AbleToScale  True    ReadyForNewScale  ok",
        "Events:        <none>",
    ]
