"""The REST edge's pure parts: paths, discovery, the protobuf bodies of kubectl's typed
clients, Table output and OpenAPI."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from apiserver.authorization import modes
from apiserver.endpoints.rest import (
    authorization,
    discovery,
    events,
    metrics,
    openapi,
    openapi_v2,
    protobuf,
    protobuf_schema,
)
from apiserver.endpoints.rest.request import parse_json
from apiserver.endpoints.rest.server import parse_other_path, parse_path
from apiserver.endpoints.rest.table import table, wants_table
from apiserver.storage.encoding import field_bytes, varint
from kemu.api.v1 import types_pb2
from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.jsonvalue import JSON
from kemu.machinery.kinds import BY_RESOURCE, KINDS, Served
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.machinery.usage import CPU_USAGE_ANNOTATION
from kemu.machinery.user import UserInfo
from kemu.testing.builders import make_pod

_USER = UserInfo("jane", ("system:authenticated",))
_ALLOW = modes.build(modes.DEFAULT_MODES, {})
API_ALL = RuntimeConfig.parse(["api/all=true"])
"""Every group version on: what is served is then the version's and the gates'."""


def _served(doc: JSON) -> Any:
    """A document the REST edge serves, read as its clients read it: untyped JSON."""
    return doc


def test_paths_name_kinds_namespaces_names_and_subresources() -> None:
    t = parse_path("api v1 namespaces ns pods p status".split())
    assert t is not None and (t.kind.resource, t.namespace, t.name, t.subresource) == (
        "pods", "ns", "p", "status",
    )  # fmt: skip
    ns = parse_path("api v1 namespaces ns".split())  # a namespace, not a namespaced list
    assert ns is not None and (ns.kind.resource, ns.name) == ("namespaces", "ns")
    deploys = parse_path("apis apps v1 deployments".split())
    assert deploys is not None and deploys.namespace == "" and deploys.name == ""
    assert parse_path("api v1 namespaces ns nodes".split()) is None  # nodes are not namespaced
    assert parse_path("apis apps v1 pods".split()) is None
    assert parse_path("api v1 pods p bogus".split()) is None


def test_discovery_lists_every_kind_once_per_version_with_subresources() -> None:
    names = []
    for group, versions in discovery.group_versions().items():
        for version in versions:
            doc = _served(discovery.resource_list(group, version))
            assert doc is not None
            names += [r["name"] for r in doc["resources"] if "/" not in r["name"]]
    others = [r.resource for r in discovery.OTHER_RESOURCES if r.served_at(37)]
    per_version = [k.resource for k in KINDS for _ in k.api_versions_at(37)]
    assert sorted(names) == sorted(per_version + others)
    core = _served(discovery.resource_list("", "v1"))
    assert core is not None
    subs = {r["name"] for r in core["resources"] if "/" in r["name"]}
    assert {"pods/status", "pods/binding", "pods/eviction", "pods/resize"} <= subs


def test_discovery_lists_the_other_resources_in_their_group_versions() -> None:
    groups = {g["name"]: g for g in _served(discovery.api_group_list())["groups"]}
    assert groups["metrics.k8s.io"]["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    assert groups["authorization.k8s.io"]["versions"] == [
        {"groupVersion": "authorization.k8s.io/v1", "version": "v1"}
    ]
    assert discovery.api_group("events.k8s.io") is not None
    assert _served(discovery.resource_list("metrics.k8s.io", "v1")) is None
    doc = _served(discovery.resource_list("authorization.k8s.io", "v1"))
    assert doc is not None
    verbs = {r["name"]: r["verbs"] for r in doc["resources"]}
    assert verbs == {
        "selfsubjectaccessreviews": ["create"],
        "selfsubjectrulesreviews": ["create"],
        "subjectaccessreviews": ["create"],
        "localsubjectaccessreviews": ["create"],
    }
    metrics = _served(discovery.resource_list("metrics.k8s.io", "v1beta1"))
    assert metrics is not None
    assert {(r["name"], r["kind"], r["namespaced"]) for r in metrics["resources"]} == {
        ("nodes", "NodeMetrics", False),
        ("pods", "PodMetrics", True),
    }


def test_other_paths_name_their_resource_namespace_and_name() -> None:
    assert parse_other_path("apis metrics.k8s.io v1beta1 namespaces ns pods p".split()) == (
        discovery.POD_METRICS, "ns", "p",
    )  # fmt: skip
    assert parse_other_path("apis metrics.k8s.io v1beta1 nodes".split()) == (
        discovery.NODE_METRICS, "", "",
    )  # fmt: skip
    assert parse_other_path("apis metrics.k8s.io v1beta1 namespaces ns nodes".split()) is None
    assert parse_other_path("apis metrics.k8s.io v1 nodes".split()) is None
    assert parse_other_path("apis events.k8s.io v1 events e x".split()) is None


def test_self_subject_access_review_is_allowed_and_echoes_its_spec() -> None:
    r = discovery.SELF_SUBJECT_ACCESS_REVIEWS
    spec = {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "ns"}}
    answer = authorization.access_review({"spec": spec, "metadata": {"name": ""}}, r, _USER, _ALLOW)
    assert answer["kind"] == "SelfSubjectAccessReview"
    assert answer["apiVersion"] == "authorization.k8s.io/v1"
    assert answer["spec"] == spec and answer["status"] == {"allowed": True}
    url = {"nonResourceAttributes": {"path": "/logs", "verb": "get"}}
    assert authorization.access_review({"spec": url}, r, _USER, _ALLOW)["status"]["allowed"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"spec": {}}, "spec.resourceAttributes"),
        (
            {"spec": {"resourceAttributes": {}, "nonResourceAttributes": {}}},
            "spec.nonResourceAttributes",
        ),
        ({"spec": {"resourceAttributes": {}}, "metadata": {"name": "x"}}, "metadata"),
    ],
)
def test_self_subject_access_review_is_validated_as_upstream(body: object, field: str) -> None:
    with pytest.raises(Invalid) as e:
        authorization.access_review(body, discovery.SELF_SUBJECT_ACCESS_REVIEWS, _USER, _ALLOW)
    assert [c.field for c in e.value.causes] == [field]


def test_self_subject_access_review_refuses_another_kind_or_shape() -> None:
    r = discovery.SELF_SUBJECT_ACCESS_REVIEWS
    bodies: list[object] = [
        {"kind": "Pod", "spec": {}},
        {"spec": "x"},
        {"spec": {"resourceAttributes": 1}},
    ]
    for body in bodies:
        with pytest.raises(BadRequest):
            authorization.access_review(body, r, _USER, _ALLOW)


def test_self_subject_rules_review_allows_everything_in_a_namespace() -> None:
    r = discovery.SELF_SUBJECT_RULES_REVIEWS
    status = authorization.rules_review({"spec": {"namespace": "default"}}, r, _USER, _ALLOW)[
        "status"
    ]
    assert status == {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
    with pytest.raises(BadRequest, match="no namespace on request"):
        authorization.rules_review({"spec": {}}, r, _USER, _ALLOW)


def test_protobuf_self_subject_access_review_as_kubectl_auth_can_i_sends_it() -> None:
    attributes = field_bytes(1, b"ns") + field_bytes(2, b"create") + field_bytes(5, b"pods")
    meta = field_bytes(1, b"") + field_bytes(8, b"")  # empty name, zero creationTimestamp
    body = field_bytes(1, meta) + field_bytes(2, field_bytes(1, attributes))
    decoded = protobuf.decode(
        _k8s_protobuf("authorization.k8s.io/v1", "SelfSubjectAccessReview", body)
    )
    assert decoded is not None
    assert decoded["metadata"] == {"name": ""}
    assert decoded["spec"] == {
        "resourceAttributes": {"namespace": "ns", "verb": "create", "resource": "pods"}
    }
    answer = authorization.access_review(
        decoded, discovery.SELF_SUBJECT_ACCESS_REVIEWS, _USER, _ALLOW
    )
    assert answer["status"]["allowed"] is True


def test_aggregated_discovery_as_kubectl_asks_for_it() -> None:
    accept = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json"
    )
    assert discovery.aggregated_version(accept) == "v2"
    assert discovery.aggregated_version(accept.split(",", 1)[1]) == "v2beta1"
    assert discovery.aggregated_version("application/json") is None
    core = _served(discovery.aggregated(True, "v2"))
    apis = _served(discovery.aggregated(False, "v2"))
    assert core["apiVersion"] == "apidiscovery.k8s.io/v2"
    served = {
        (item["metadata"].get("name", ""), r["resource"])
        for doc in (core, apis)
        for item in doc["items"]
        for v in item["versions"]
        for r in v["resources"]
    }
    assert served == {(discovery.group_version(k)[0], k.resource) for k in KINDS} | {
        (r.group, r.resource) for r in discovery.OTHER_RESOURCES
    }
    metrics = next(i for i in apis["items"] if i["metadata"]["name"] == "metrics.k8s.io")
    assert [v["version"] for v in metrics["versions"]] == ["v1beta1"]
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    eviction = next(s for s in pods["subresources"] if s["subresource"] == "eviction")
    assert eviction["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert pods["scope"] == "Namespaced" and pods["categories"] == ["all"]


def _k8s_protobuf(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field_bytes(1, api_version.encode()) + field_bytes(2, kind.encode())
    return b"k8s\x00" + field_bytes(1, type_meta) + field_bytes(2, raw)


def test_protobuf_eviction_and_namespace_bodies() -> None:
    meta = field_bytes(1, b"p") + field_bytes(3, b"ns")
    grace = bytes([1 << 3]) + varint(5)
    preconditions = field_bytes(2, field_bytes(1, b"uid-1"))
    body = field_bytes(1, meta) + field_bytes(2, grace + preconditions)
    assert protobuf.decode(_k8s_protobuf("policy/v1", "Eviction", body)) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "ns"},
        "deleteOptions": {"gracePeriodSeconds": 5, "preconditions": {"uid": "uid-1"}},
    }
    label = field_bytes(11, field_bytes(1, b"a") + field_bytes(2, b"b"))
    ns = protobuf.decode(
        _k8s_protobuf("v1", "Namespace", field_bytes(1, field_bytes(1, b"x") + label))
    )
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "x", "labels": {"a": "b"}},
    }
    assert (
        protobuf.decode(_k8s_protobuf("v1", "ComponentStatus", b"")) is None
    )  # not a kemu kind: a 415


def test_protobuf_deployment_body_in_upstream_field_numbers() -> None:
    """What `kubectl create deployment d --image=nginx` sends, with a few more field types."""
    labels = field_bytes(11, field_bytes(1, b"app") + field_bytes(2, b"d"))
    quantity = field_bytes(1, b"100m")
    resources = field_bytes(2, field_bytes(1, b"cpu") + field_bytes(2, quantity))  # requests
    env_from = field_bytes(2, field_bytes(1, field_bytes(1, b"cm")))  # configMapRef, inlined name
    container = (
        field_bytes(1, b"nginx") + field_bytes(2, b"nginx") + field_bytes(8, resources)
        + field_bytes(19, env_from)
    )  # fmt: skip
    template = field_bytes(1, labels) + field_bytes(2, field_bytes(2, container))
    max_surge = bytes([1 << 3]) + varint(1) + field_bytes(3, b"25%")  # IntOrString, a string
    spec = (
        bytes([1 << 3]) + varint(0)  # replicas: 0, present
        + field_bytes(2, field_bytes(1, field_bytes(1, b"app") + field_bytes(2, b"d")))
        + field_bytes(3, template)
        + field_bytes(4, field_bytes(2, field_bytes(2, max_surge)))
        + bytes([7 << 3]) + varint(1)  # paused
    )  # fmt: skip
    body = field_bytes(1, field_bytes(1, b"d") + bytes([10 << 3]) + varint(2**64 - 1))
    body += field_bytes(2, spec)
    assert protobuf.decode(_k8s_protobuf("apps/v1", "Deployment", body)) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "deletionGracePeriodSeconds": -1},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx",
                            "resources": {"requests": {"cpu": "100m"}},
                            "envFrom": [{"configMapRef": {"name": "cm"}}],
                        }
                    ]
                },
            },
            "strategy": {"rollingUpdate": {"maxSurge": "25%"}},
            "paused": True,
        },
    }


def test_protobuf_schema_covers_every_kind() -> None:
    # (but the CRD: its clients send JSON; its recursive JSONSchemaProps is not in the table)
    json_only = {"CustomResourceDefinition"}
    assert {k.kind for k in KINDS} - json_only <= protobuf_schema.SCHEMA.keys()
    for name, fields in protobuf_schema.SCHEMA.items():
        for json_name, typ in fields.values():
            target = typ.removeprefix("[]").removeprefix("~").removeprefix("map_")
            assert target in protobuf_schema.SCHEMA or target in {
                "string", "int", "bool", "bytes", "double", "time", "quantity", "int_or_string",
                "map", "raw",
            }, (name, json_name, typ)  # fmt: skip


def test_table_has_the_wide_pod_columns_at_priority_1() -> None:
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not wants_table("application/json")
    pod = make_pod("p").node("n1").obj()
    out = _served(table(BY_RESOURCE["pods"], [pod], now=0.0))
    wide = [c["name"] for c in out["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert out["rows"][0]["cells"][0] == "p"
    assert out["rows"][0]["object"]["metadata"]["name"] == "p"


def test_openapi_tags_every_kind_and_lists_field_validation_on_patch() -> None:
    """S-API-OPENAPI-1: upstream's definitions, descriptions and patch strategies included."""
    index = _served(openapi.index())
    assert "api/v1" in index["paths"] and "apis/apps/v1" in index["paths"]
    doc = openapi.document("", "v1")
    assert doc is not None
    parsed = json.loads(doc)
    pod = parsed["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "version": "v1", "kind": "Pod"}]
    patch = parsed["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    schemas = parsed["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["description"].startswith("List of containers belonging to the pod.")
    assert containers["items"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]
    }
    ports = schemas["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]
    assert ports["x-kubernetes-patch-merge-key"] == "port"
    status = schemas["io.k8s.api.core.v1.ContainerStatus"]
    assert {"imageID", "restartCount"} <= set(status["required"])
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    refs = json.dumps(schemas)
    referenced = set(re.findall(r'"#/components/schemas/([^"]+)"', refs))
    assert referenced and referenced <= schemas.keys()  # every reference resolves


def test_openapi_v2_has_the_v3_schemas_in_swagger_shape() -> None:
    doc = _served(openapi_v2.document())
    assert doc["swagger"] == "2.0"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "version": "v1", "kind": "Pod"}]
    spec = pod["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    assert spec["description"].startswith("Specification of the desired behavior of the pod.")
    refs = json.dumps(doc)
    # (no v3 reference, no allOf wrapper: a JSONSchemaProps property named allOf is the CRD's)
    assert "#/components/" not in refs and '"allOf": [' not in refs
    top = protobuf.fields(openapi_v2.protobuf_bytes())  # gnostic's Document
    assert top[1] == [b"2.0"]
    names = [protobuf.fields(d)[1][0] for d in protobuf.fields(top[9][0])[1]]
    assert b"io.k8s.api.core.v1.Pod" in names and len(names) == len(doc["definitions"])
    assert openapi_v2.wants_protobuf(openapi_v2.PROTOBUF_TYPE + ",application/json")


def test_duplicate_fields_are_listed_by_path_and_the_last_value_kept() -> None:
    raw = b'{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"image":"x","image":"y"}]}}'
    unknown = UnknownFields(strict=True)
    data = parse_json(raw, unknown)
    assert data["metadata"] == {"name": "b"}
    assert data["spec"]["containers"] == [{"image": "y"}]
    assert unknown.found == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.containers[0].image"',
    ]
    with pytest.raises(BadRequest, match='strict decoding error: duplicate field "metadata.name"'):
        unknown.check()
    assert parse_json(b'{"a":1,"a":2}') == {"a": 2}  # without fieldValidation: JSON's rule


def test_events_v1_view_renames_core_fields_as_upstream_conversion() -> None:
    ev = types_pb2.Event(reason="Scheduled", message="m", type="Normal", action="Binding", count=2)
    ev.metadata.name, ev.metadata.namespace = "e", "ns"
    ev.involved_object.kind, ev.involved_object.name = "Pod", "p"
    ev.source.component, ev.reporting_component = "default-scheduler", "default-scheduler"
    ev.first_timestamp.seconds = ev.last_timestamp.seconds = 1_700_000_000
    out = _served(events.to_events_v1(ev))
    assert (out["apiVersion"], out["kind"]) == ("events.k8s.io/v1", "Event")
    assert out["note"] == "m" and out["regarding"] == {"kind": "Pod", "name": "p"}
    assert out["reportingController"] == "default-scheduler"
    assert out["deprecatedSource"] == {"component": "default-scheduler"}
    assert out["deprecatedCount"] == 2
    assert (
        out["deprecatedFirstTimestamp"] == out["deprecatedLastTimestamp"] == "2023-11-14T22:13:20Z"
    )
    assert out["eventTime"] is None
    assert not {"message", "involvedObject", "source", "count", "reportingComponent"} & out.keys()
    assert _served(events.to_events_v1(types_pb2.Event()))["regarding"] == {}


def test_events_v1_field_selectors_are_renamed_to_the_stored_labels() -> None:
    view = events.EVENTS_V1_VIEW
    assert view.field_selector("regarding.name=p,type!=Normal,reportingController=x") == (
        "involvedObject.name=p,type!=Normal,reportingComponent=x"
    )
    with pytest.raises(BadRequest, match="field label not supported: involvedObject.name"):
        view.field_selector("involvedObject.name=p")
    with pytest.raises(BadRequest, match="can't understand"):
        view.field_selector("regarding.name")


def test_node_metrics_sum_the_running_pods_bound_to_the_node() -> None:
    now = 1_700_000_000.0
    running = make_pod("a").req(cpu="1", memory="2Gi").node("n1").phase("Running").obj()
    other = make_pod("b").req(cpu="1").annotation(CPU_USAGE_ANNOTATION, "3").node("n1")
    pending = make_pod("c").req(cpu="8").node("n1").phase("Pending").obj()
    elsewhere = make_pod("d").req(cpu="8").node("n2").phase("Running").obj()
    pods = [running, other.phase("Running").obj(), pending, elsewhere]
    node = types_pb2.Node()
    node.metadata.name = "n1"
    node.metadata.labels["zone"] = "z"
    out = _served(metrics.node_metrics(node, pods, now))
    assert out["usage"] == {"cpu": "3500m", "memory": "1Gi"}
    assert (out["kind"], out["apiVersion"]) == ("NodeMetrics", "metrics.k8s.io/v1beta1")
    assert out["metadata"] == {
        "name": "n1", "creationTimestamp": "2023-11-14T22:13:20Z", "labels": {"zone": "z"},
    }  # fmt: skip
    assert (out["timestamp"], out["window"]) == ("2023-11-14T22:13:20Z", "15s")
    assert _served(metrics.node_metrics(node, [], now))["usage"] == {"cpu": "0", "memory": "0"}
    assert [metrics.has_metrics(p) for p in pods] == [True, True, False, True]
    assert not metrics.has_metrics(make_pod("e").phase("Running").obj())  # not bound


def test_pod_metrics_list_each_running_container() -> None:
    pod = make_pod("p").req(cpu="250m", memory="100Mi").container("b").node("n1").obj()
    out = _served(metrics.pod_metrics(pod, 1_700_000_000.0))
    assert out["metadata"]["namespace"] == "default" and out["metadata"]["name"] == "p"
    assert out["containers"] == [
        {"name": "c", "usage": {"cpu": "125m", "memory": "50Mi"}},
        {"name": "b", "usage": {"cpu": "0", "memory": "0"}},
    ]


def test_paths_of_the_workload_api_follow_the_served_versions() -> None:
    at_36 = Served.at(36, lambda gate: True, API_ALL)
    t = parse_path(
        "apis scheduling.k8s.io v1alpha2 namespaces ns podgroups g status".split(), at_36
    )
    assert t is not None and t.kind.kind == "PodGroup" and t.subresource == "status"
    assert t.api_version == "scheduling.k8s.io/v1alpha2"
    assert parse_path("apis scheduling.k8s.io v1beta1 podgroups".split(), at_36) is None
    at_37 = Served.at(37, lambda gate: True, API_ALL)
    own = parse_path("apis scheduling.k8s.io v1beta1 workloads".split(), at_37)
    assert own is not None and own.served_as == ""  # the message's own version
    off = Served.at(37, lambda gate: False, API_ALL)
    assert parse_path("apis scheduling.k8s.io v1beta1 workloads".split(), off) is None
    assert discovery.resource_list("scheduling.k8s.io", "v1beta1", off) is None
    assert openapi.document("scheduling.k8s.io", "v1beta1", off) is None
    versions = discovery.group_versions(Served.at(35, lambda gate: True, API_ALL))[
        "scheduling.k8s.io"
    ]
    assert versions == ["v1", "v1alpha1"]


def test_s_eps_8_v1_endpoints_warn_as_deprecated_from_1_33() -> None:
    """KEP-4974 (kubernetes/kubernetes#130098): every request for v1 Endpoints at 1.33 or
    later carries upstream's deprecation warning; before 1.33, and other kinds, none."""
    from apiserver.endpoints.rest import deprecation
    from kemu.component.version import Version

    text = deprecation.warning("v1", "Endpoints", Version(1, 37))
    assert text == "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    assert deprecation.warning("v1", "Endpoints", Version(1, 33)) == text
    assert deprecation.warning("v1", "Endpoints", Version(1, 32)) is None
    assert deprecation.warning("discovery.k8s.io/v1", "EndpointSlice", Version(1, 37)) is None
