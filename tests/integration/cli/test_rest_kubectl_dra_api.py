"""Issue #56's resource.k8s.io/v1 kinds (Dynamic Resource Allocation) through both edges of one
apiserver at 1.37 (DynamicResourceAllocation GA): every kind created over gRPC (kemuctl) and
over REST (the real kubectl), a bad CEL selector refused naming its field, ResourceSlices
selected by spec.nodeName, and `kubectl get resourceclaims` printing upstream's STATE column
as the claim's status changes (S-DRA-API-11..13).

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.processes import python_env, run_python_module
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with Cluster(tmp_path_factory.mktemp("dra-api")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True, emulated_version="1.37")
        c.write_kubeconfig()
        yield Kubectl(c)


def kemuctl(kubectl: Kubectl, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """kemuctl over the gRPC edge of the same apiserver: its stdout, or stderr on failure."""
    env = python_env({"KEMU_SERVER": kubectl.cluster.server})
    done = run_python_module("kemu.ctl", args, env=env, stdin=stdin)
    if check:
        assert done.returncode == 0, done.stderr
        return done.stdout
    assert done.returncode != 0, done.stdout
    return done.stderr


def manifest(suffix: str, ns: str, expression: str = 'device.driver == "gpu.example.com"') -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu-{suffix}.example.com
spec:
  selectors:
  - cel:
      expression: '{expression}'
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-{suffix}-gpu
spec:
  driver: gpu.example.com
  nodeName: node-{suffix}
  pool:
    name: node-{suffix}
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    attributes:
      model: {{string: A100}}
      driverVersion: {{version: 1.2.3}}
    capacity:
      memory: {{value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-{suffix}
  namespace: {ns}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu-{suffix}.example.com
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim-{suffix}
  namespace: {ns}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu-{suffix}.example.com
        selectors:
        - cel:
            expression: '{expression}'
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: taint-{suffix}
spec:
  deviceSelector:
    driver: gpu.example.com
    pool: node-{suffix}
  taint:
    key: example.com/maintenance
    effect: NoSchedule
"""


def test_s_dra_api_11_every_kind_through_both_edges(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("dra")
    kemuctl(kubectl, "apply", "-f", "-", stdin=manifest("grpc", ns))
    applied = kubectl.run("apply", "-f", "-", stdin=manifest("rest", ns)).stdout.split()
    assert "resourceclaim.resource.k8s.io/claim-rest" in applied
    namespaced = kubectl.json("get", "resourceclaims,resourceclaimtemplates", "-n", ns)["items"]
    cluster = kubectl.json("get", "deviceclasses,resourceslices,devicetaintrules")["items"]
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in namespaced + cluster}
    for suffix in ("grpc", "rest"):
        claim = by_name["ResourceClaim", f"claim-{suffix}"]
        exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
        assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
        assert by_name["ResourceClaimTemplate", f"gpu-{suffix}"]["apiVersion"] == (
            "resource.k8s.io/v1"
        )
        assert ("DeviceClass", f"gpu-{suffix}.example.com") in by_name
        assert "timeAdded" in by_name["DeviceTaintRule", f"taint-{suffix}"]["spec"]["taint"]
        device = by_name["ResourceSlice", f"node-{suffix}-gpu"]["spec"]["devices"][0]
        assert device["attributes"]["driverVersion"] == {"version": "1.2.3"}
    slices = kubectl.run("get", "resourceslices", "--field-selector", "spec.nodeName=node-rest")
    lines = slices.stdout.splitlines()
    assert lines[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["node-rest-gpu", "node-rest", "gpu.example.com", "node-rest"]
    ]
    # The spec is immutable.
    patched = kubectl.run(
        "patch",
        "resourceclaim",
        "claim-rest",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"x","count":2}}]}}}',
        check=False,
    )
    assert patched.returncode != 0 and "spec: Invalid value" in patched.stderr
    assert "field is immutable" in patched.stderr


def test_s_dra_api_12_bad_cel_selector_refused_with_its_field_path(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("dra-bad")
    bad = manifest("bad", ns, expression="device.nope == 1")
    refused = kubectl.run("apply", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    # (upstream's text: the kind qualified by its group)
    assert 'DeviceClass.resource.k8s.io "gpu-bad.example.com" is invalid' in refused.stderr
    assert "spec.selectors[0].cel.expression: Invalid value" in refused.stderr
    assert "compilation failed: ERROR: <input>:1:7: undefined field 'nope'" in refused.stderr
    assert (
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value"
        in refused.stderr
    )
    grpc = kemuctl(kubectl, "apply", "-f", "-", stdin=bad, check=False)
    assert "spec.selectors[0].cel.expression" in grpc and "compilation failed" in grpc


def test_s_dra_api_13_get_resourceclaims_prints_state(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("dra-state")
    kubectl.run("apply", "-f", "-", stdin=manifest("state", ns))

    def state() -> str:
        out = kubectl.run("get", "resourceclaims", "-n", ns).stdout.splitlines()
        assert out[0].split() == ["NAME", "STATE", "AGE"]
        return out[1].split()[1]

    assert state() == "pending"
    status = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": "node-state",
                            "device": "gpu-0",
                        }
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "a-uid"}],
        }
    }
    kubectl.run(
        "patch",
        "resourceclaim",
        "claim-state",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    assert state() == "allocated,reserved"
    # reservedFor without an allocation is refused by the status strategy's validation.
    refused = kubectl.run(
        "patch",
        "resourceclaim",
        "claim-state",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"allocation":null}}',
        check=False,
    )
    assert refused.returncode != 0
    assert "status.reservedFor: Forbidden: may not be specified when `allocated` is not set" in (
        refused.stderr
    )


BETA1 = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata:
  name: old-slice
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes:
        model: {string: A100}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata:
  name: old-claim
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      count: 2
"""


def test_s_dra_api_15_v1beta1_and_v1beta2_at_1_33(tmp_path_factory: pytest.TempPathFactory) -> None:
    """1.33: DynamicResourceAllocation beta (off by default) with resource.k8s.io/v1beta1 and
    v1beta2 enabled by --runtime-config; no v1. One object, two shapes."""
    with Cluster(tmp_path_factory.mktemp("dra-133")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(
            rest=True,
            emulated_version="1.33",
            feature_gates={"DynamicResourceAllocation": True},
            runtime_config={"resource.k8s.io/v1beta1": "true", "resource.k8s.io/v1beta2": "true"},
        )
        c.write_kubeconfig()
        kubectl = Kubectl(c)
        kubectl.run("apply", "-f", "-", stdin=BETA1)
        again = kubectl.run("apply", "-f", "-", stdin=BETA1.replace("A100", "H100")).stdout
        assert "resourceslice.resource.k8s.io/old-slice configured" in again, again
        beta1 = kubectl.json("get", "resourceclaims.v1beta1.resource.k8s.io", "old-claim")
        assert beta1["spec"]["devices"]["requests"][0]["count"] == 2
        beta2 = kubectl.json("get", "resourceclaims.v1beta2.resource.k8s.io", "old-claim")
        assert beta2["apiVersion"] == "resource.k8s.io/v1beta2"
        exactly = beta2["spec"]["devices"]["requests"][0]["exactly"]
        assert (exactly["deviceClassName"], exactly["count"]) == ("gpu.example.com", 2)
        device = kubectl.json("get", "resourceslices.v1beta1.resource.k8s.io", "old-slice")["spec"][
            "devices"
        ][0]
        assert device == {"name": "gpu-0", "basic": {"attributes": {"model": {"string": "H100"}}}}
        missing = kubectl.run("get", "resourceclaims.v1.resource.k8s.io", check=False)
        assert missing.returncode != 0


ADMIN_CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: admin
  namespace: {ns}
spec:
  devices:
    requests:
    - name: all
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: All
        adminAccess: true
"""


def test_s_dra_api_17_admin_access_needs_the_namespace_label(kubectl: Kubectl) -> None:
    """resourceclaim/strategy.go authorizedForAdmin (DRAAdminAccess GA at 1.36), and
    AuthorizedForAdminStatus for an allocation granting it."""
    ns = kubectl.namespace("dra-plain")
    kubectl.run("apply", "-f", "-", stdin=manifest("plain", ns))
    granted = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": "node-plain",
                            "device": "gpu-0",
                            "adminAccess": True,
                        }
                    ]
                }
            }
        }
    }
    refused_status = kubectl.run(
        "patch",
        "resourceclaim",
        "claim-plain",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(granted),
        check=False,
    )
    assert refused_status.returncode != 0
    assert (
        "status.allocation.devices.results[0].adminAccess: Forbidden: admin access to devices "
        "requires the `resource.kubernetes.io/admin-access: true` label"
    ) in refused_status.stderr
    ns = kubectl.namespace("dra-admin")
    refused = kubectl.run("apply", "-f", "-", stdin=ADMIN_CLAIM.format(ns=ns), check=False)
    assert refused.returncode != 0
    assert (
        "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace"
    ) in refused.stderr
    kubectl.run("label", "namespace", ns, "resource.kubernetes.io/admin-access=true")
    kubectl.run("apply", "-f", "-", stdin=ADMIN_CLAIM.format(ns=ns))
    claim = kubectl.json("get", "resourceclaim", "admin", "-n", ns)
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
