"""The core/v1 PodSpec and Container: JSON both ways, upstream's defaults, validation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.pod_defaults import default_image_pull_policy, default_pod_spec
from kemu.machinery.validation.objects import validate_object

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "nginx-pod.yaml"
POD = kinds.kind_of(types_pb2.Pod())


def nginx_manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return data


def with_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """The nginx example's spec as upstream's apiserver stores it (priority aside)."""
    out = copy.deepcopy(spec)
    c = out["containers"][0]
    c["imagePullPolicy"] = "IfNotPresent"
    c["terminationMessagePath"] = "/dev/termination-log"
    c["terminationMessagePolicy"] = "File"
    c["ports"][0]["protocol"] = "TCP"
    c["env"][1]["valueFrom"]["fieldRef"]["apiVersion"] = "v1"
    c["readinessProbe"].update(timeoutSeconds=1, successThreshold=1, failureThreshold=3)
    c["readinessProbe"]["httpGet"]["scheme"] = "HTTP"
    out.update(
        dnsPolicy="ClusterFirst",
        enableServiceLinks=True,
        restartPolicy="Always",
        schedulerName="default-scheduler",
        securityContext={},
        terminationGracePeriodSeconds=30,
    )
    return out


def test_nginx_manifest_round_trips_with_upstreams_defaults() -> None:
    manifest = nginx_manifest()
    pod = convert.from_dict(POD, manifest)
    assert isinstance(pod, types_pb2.Pod)
    pod.metadata.namespace = "default"
    assert convert.to_dict(pod)["spec"] == manifest["spec"]  # nothing lost or renamed
    default_pod_spec(pod.spec)
    assert convert.to_dict(pod)["spec"] == with_defaults(manifest["spec"])
    assert validate_object(pod) == []
    # Defaulting is idempotent (the apiserver applies it on every update).
    again = types_pb2.Pod()
    again.CopyFrom(pod)
    default_pod_spec(again.spec)
    assert again == pod


def test_kubernetes_json_names_with_initialisms() -> None:
    data = {
        "metadata": {"name": "p"},
        "spec": {
            "hostPID": True,
            "hostIPC": True,
            "setHostnameAsFQDN": True,
            "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostIP": "1.2.3.4"}]}],
            "volumes": [{"name": "v", "downwardAPI": {"items": []}}],
        },
        "status": {"hostIP": "10.0.0.1", "podIP": "10.1.0.1"},
    }
    pod = convert.from_dict(POD, data)
    out: Any = convert.to_dict(pod)
    assert out["spec"]["hostPID"] and out["spec"]["hostIPC"] and out["spec"]["setHostnameAsFQDN"]
    assert out["spec"]["containers"][0]["ports"][0]["hostIP"] == "1.2.3.4"
    assert out["spec"]["volumes"][0] == {"name": "v", "downwardAPI": {}}
    assert out["status"] == {"hostIP": "10.0.0.1", "podIP": "10.1.0.1"}


def test_unknown_fields_are_still_errors_naming_the_field() -> None:
    data = nginx_manifest()
    data["spec"]["containers"][0]["readinessProbe"]["httpGet"]["bogus"] = 1
    with pytest.raises(Invalid) as e:
        convert.from_dict(POD, data)
    assert e.value.causes[0].field == "spec.containers[0].readinessProbe.httpGet.bogus"
    assert 'unknown field "bogus"' in e.value.causes[0].message


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("localhost:5000/nginx", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("localhost:5000/nginx:1.27", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ],
)
def test_image_pull_policy_defaults_by_tag(image: str, policy: str) -> None:
    assert default_image_pull_policy(image) == policy


def test_volume_probe_and_host_network_defaults() -> None:
    spec = types_pb2.PodSpec(host_network=True)
    c = spec.containers.add(name="c", image="i")
    c.ports.add(container_port=53, protocol="UDP")
    c.liveness_probe.grpc.port = 9000
    c.lifecycle.pre_stop.http_get.port.int_val = 80
    spec.volumes.add(name="scratch")
    spec.volumes.add(name="cfg").config_map.name = "cm"
    tok = spec.volumes.add(name="tok").projected.sources.add().service_account_token
    tok.path = "token"
    spec.service_account = "legacy"
    default_pod_spec(spec)
    assert c.ports[0].host_port == 53  # hostNetwork: hostPort follows containerPort
    assert c.liveness_probe.grpc.HasField("service") and c.liveness_probe.period_seconds == 10
    assert c.lifecycle.pre_stop.http_get.path == "/"
    assert spec.volumes[0].HasField("empty_dir")  # a volume without a source is an emptyDir
    assert spec.volumes[1].config_map.default_mode == 0o644
    assert spec.volumes[2].projected.sources[0].service_account_token.expiration_seconds == 3600
    assert spec.service_account_name == spec.service_account == "legacy"


def pod_with(**container: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", **container}]},
    }


def causes_of(data: dict[str, Any]) -> dict[str, str]:
    pod = convert.from_dict(POD, data)
    assert isinstance(pod, types_pb2.Pod)
    default_pod_spec(pod.spec)
    return {c.field: c.message for c in validate_object(pod)}


C = "spec.containers[0]"


@pytest.mark.parametrize(
    ("container", "field", "message"),
    [
        ({"ports": [{"containerPort": 0}]}, f"{C}.ports[0].containerPort", "Required value"),
        (
            {"ports": [{"containerPort": 70000}]},
            f"{C}.ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            {"ports": [{"containerPort": 80, "hostPort": -1}]},
            f"{C}.ports[0].hostPort",
            "Invalid value: -1: must be between 1 and 65535, inclusive",
        ),
        (
            {"ports": [{"containerPort": 80, "name": "http--x"}]},
            f"{C}.ports[0].name",
            'Invalid value: "http--x": must not contain consecutive hyphens',
        ),
        (
            {"ports": [{"containerPort": 80, "name": "h"}, {"containerPort": 81, "name": "h"}]},
            f"{C}.ports[1].name",
            'Duplicate value: "h"',
        ),
        (
            {
                "ports": [
                    {"containerPort": 80, "hostPort": 80},
                    {"containerPort": 81, "hostPort": 80},
                ]
            },
            f"{C}.ports[1].hostPort",
            'Duplicate value: "TCP//80"',
        ),
        (
            {"ports": [{"containerPort": 80, "protocol": "HTTP"}]},
            f"{C}.ports[0].protocol",
            'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        ),
        ({"env": [{"name": "1X", "value": "v"}]}, f"{C}.env[0].name", 'Invalid value: "1X"'),
        (
            {
                "env": [
                    {
                        "name": "X",
                        "value": "v",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                    }
                ]
            },
            f"{C}.env[0].valueFrom",
            'Invalid value: "": may not be specified when `value` is not empty',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]},
            f"{C}.env[0].valueFrom.fieldRef.fieldPath",
            'Unsupported value: "spec.bogus"',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm"}}}]},
            f"{C}.env[0].valueFrom.configMapKeyRef.key",
            "Required value",
        ),
        (
            {"volumeMounts": [{"name": "missing", "mountPath": "/m"}]},
            f"{C}.volumeMounts[0].name",
            'Not found: "missing"',
        ),
        (
            {"volumeMounts": [{"name": "", "mountPath": ""}]},
            f"{C}.volumeMounts[0].mountPath",
            "Required value",
        ),
        (
            {"readinessProbe": {"periodSeconds": 5}},
            f"{C}.readinessProbe",
            "Required value: must specify a handler type",
        ),
        (
            {"livenessProbe": {"exec": {"command": ["x"]}, "tcpSocket": {"port": 80}}},
            f"{C}.livenessProbe.tcpSocket",
            "Forbidden: may not specify more than 1 handler type",
        ),
        (
            {"livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 2}},
            f"{C}.livenessProbe.successThreshold",
            "Invalid value: 2: must be 1",
        ),
        (
            {"readinessProbe": {"httpGet": {"port": "no_such"}}},
            f"{C}.readinessProbe.httpGet.port",
            'Invalid value: "no_such": must contain only alpha-numeric characters (a-z, 0-9), '
            "and hyphens (-)",
        ),
        (
            {"readinessProbe": {"exec": {"command": ["x"]}, "initialDelaySeconds": -1}},
            f"{C}.readinessProbe.initialDelaySeconds",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"imagePullPolicy": "Sometimes"},
            f"{C}.imagePullPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
        ),
        (
            {"resources": {"requests": {"cpu": "lots"}}},
            f"{C}.resources.requests[cpu]",
            "quantities must match the regular expression",
        ),
        (
            {"securityContext": {"privileged": True, "allowPrivilegeEscalation": False}},
            f"{C}.securityContext",
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        ),
    ],
)
def test_container_validation(container: dict[str, Any], field: str, message: str) -> None:
    causes = causes_of(pod_with(**container))
    assert field in causes, causes
    assert message in causes[field]


def spec_causes(spec: dict[str, Any]) -> dict[str, str]:
    data = pod_with()
    data["spec"].update(spec)
    return causes_of(data)


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"volumes": [{"name": "Bad"}]}, "spec.volumes[0].name", 'Invalid value: "Bad"'),
        (
            {"volumes": [{"name": "v"}, {"name": "v"}]},
            "spec.volumes[1].name",
            'Duplicate value: "v"',
        ),
        (
            {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]},
            "spec.volumes[0].emptyDir",
            "Forbidden: may not specify more than 1 volume type",
        ),
        (
            {"volumes": [{"name": "v", "persistentVolumeClaim": {}}]},
            "spec.volumes[0].persistentVolumeClaim.claimName",
            "Required value",
        ),
        (
            {"volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 1000}}]},
            "spec.volumes[0].configMap.defaultMode",
            "must be a number between 0 and 0777 (octal), both inclusive",
        ),
        (
            {"dnsPolicy": "Cluster"},
            "spec.dnsPolicy",
            'Unsupported value: "Cluster"',
        ),
        (
            {"dnsPolicy": "None"},
            "spec.dnsConfig",
            "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
        ),
        ({"hostname": "Host_1"}, "spec.hostname", 'Invalid value: "Host_1"'),
        ({"serviceAccountName": "SA"}, "spec.serviceAccountName", 'Invalid value: "SA"'),
        (
            {"readinessGates": [{"conditionType": "a/b/c"}]},
            "spec.readinessGates[0].conditionType",
            'Invalid value: "a/b/c"',
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "spec.topologySpreadConstraints[0].maxSkew",
            "Invalid value: 0: must be greater than zero",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "minDomains": 2,
                    }
                ]
            },
            "spec.topologySpreadConstraints[0].minDomains",
            "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ]
            },
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
            'Duplicate value: "{zone, DoNotSchedule}"',
        ),
        (
            {"securityContext": {"runAsUser": -1}},
            "spec.securityContext.runAsUser",
            "Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ),
        (
            {"activeDeadlineSeconds": 0},
            "spec.activeDeadlineSeconds",
            "Invalid value: 0: must be between 1 and 2147483647, inclusive",
        ),
        (
            {
                "initContainers": [
                    {"name": "i", "image": "i", "readinessProbe": {"exec": {"command": ["x"]}}}
                ]
            },
            "spec.initContainers[0].readinessProbe",
            "Forbidden: may not be set for init containers without restartPolicy=Always",
        ),
    ],
)
def test_pod_spec_validation(spec: dict[str, Any], field: str, message: str) -> None:
    causes = spec_causes(spec)
    assert field in causes, causes
    assert message in causes[field]


def test_host_network_ports_must_match() -> None:
    causes = spec_causes(
        {
            "hostNetwork": True,
            "containers": [
                {"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 81}]}
            ],
        }
    )
    assert causes == {
        f"{C}.ports[0].hostPort": "Invalid value: 81: must match `containerPort` when "
        "`hostNetwork` is true"
    }


def test_a_full_manifest_is_valid_and_its_causes_are_causes() -> None:
    spec: dict[str, Any] = {
        "serviceAccountName": "web",
        "automountServiceAccountToken": False,
        "hostname": "web-0",
        "subdomain": "web",
        "runtimeClassName": "runc",
        "imagePullSecrets": [{"name": "regcred"}],
        "readinessGates": [{"conditionType": "example.com/ready"}],
        "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "runAsNonRoot": True},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 2,
                "nodeAffinityPolicy": "Honor",
                "nodeTaintsPolicy": "Ignore",
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
        "volumes": [
            {"name": "cfg", "configMap": {"name": "web", "items": [{"key": "a", "path": "a"}]}},
            {"name": "sec", "secret": {"secretName": "web"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                },
            },
            {
                "name": "proj",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "audience": "api"}},
                        {"configMap": {"name": "web"}},
                    ]
                },
            },
        ],
        "initContainers": [
            {
                "name": "side",
                "image": "envoy:1",
                "restartPolicy": "Always",
                "startupProbe": {"tcpSocket": {"port": 9901}},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
            }
        ],
        "containers": [
            {
                "name": "c",
                "image": "web:1",
                "envFrom": [{"configMapRef": {"name": "web"}, "prefix": "WEB_"}],
                "env": [
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "web", "key": "s"}}},
                    {
                        "name": "L",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}},
                    },
                ],
                "livenessProbe": {"grpc": {"port": 9000}},
                "lifecycle": {"postStart": {"exec": {"command": ["true"]}}},
                "securityContext": {
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True,
                },
                "volumeMounts": [
                    {"name": n, "mountPath": f"/{n}", "readOnly": True}
                    for n in ("cfg", "sec", "data", "host", "info", "proj")
                ],
            }
        ],
    }
    data = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    assert causes_of(data) == {}
    pod = convert.from_dict(POD, data)
    assert convert.to_dict(pod)["spec"] == spec
    # A cause is a Cause, with the upstream field path.
    spec["containers"][0]["volumeMounts"][0]["name"] = "nope"
    pod = convert.from_dict(POD, data)
    assert isinstance(pod, types_pb2.Pod)
    assert Cause(f"{C}.volumeMounts[0].name", 'Not found: "nope"') in validate_object(pod)
