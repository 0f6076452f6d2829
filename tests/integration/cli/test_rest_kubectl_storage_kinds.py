"""Issue #34's kinds through the REST edge with the real kubectl (1.32): a Helm-rendered
manifest holding a StorageClass, a PersistentVolume, a PersistentVolumeClaim, a CSINode, a
ServiceAccount, a Secret with stringData, a StatefulSet with a volumeClaimTemplate and a
CronJob is applied, listed (tables and -o wide), explained, refused when invalid (422 naming
the field), written in protobuf by kubectl's typed clients (create secret|serviceaccount|
cronjob, scale sts) and deleted.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.processes import python_env, run_python_module
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rest-storage")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        # a new claim or volume carries its protection finalizer (StorageObjectInUseProtection
        # admission): deleting it needs its controller, as upstream's
        c.start_controllermanager(
            extra_args=["--controllers", "pvc-protection,pv-protection"], cluster_cidr=None
        )
        c.write_kubeconfig()
        yield c


@pytest.fixture
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


def chart(ns: str, suffix: str) -> str:
    """What `helm template db ./chart` renders (its comments, labels and separators)."""
    labels = """
    app.kubernetes.io/name: db
    app.kubernetes.io/instance: db
    app.kubernetes.io/managed-by: Helm
    helm.sh/chart: db-0.1.0"""
    return f"""---
# Source: db/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: db
  namespace: {ns}
  labels:{labels}
automountServiceAccountToken: false
---
# Source: db/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db-auth
  namespace: {ns}
  labels:{labels}
type: Opaque
data:
  user: {base64.b64encode(b"admin").decode()}
stringData:
  password: "s3cret"
---
# Source: db/templates/storageclass.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast-{suffix}
  labels:{labels}
provisioner: csi.kemu.io
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
parameters:
  type: ssd
---
# Source: db/templates/pv.yaml
apiVersion: v1
kind: PersistentVolume
metadata:
  name: local-{suffix}
spec:
  capacity:
    storage: 5Gi
  accessModes: [ReadWriteOnce]
  storageClassName: fast-{suffix}
  local:
    path: /mnt/disks/ssd1
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {{key: kubernetes.io/hostname, operator: In, values: [n1]}}
---
# Source: db/templates/pvc.yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: db-backup
  namespace: {ns}
  labels:{labels}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast-{suffix}
  resources:
    requests:
      storage: 1Gi
---
# Source: db/templates/csinode.yaml
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node-{suffix}
spec:
  drivers:
  - name: csi.kemu.io
    nodeID: node-{suffix}
    topologyKeys: [topology.kubernetes.io/zone]
    allocatable:
      count: 16
---
# Source: db/templates/statefulset.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: {ns}
  labels:{labels}
spec:
  serviceName: db
  selector:
    matchLabels:
      app.kubernetes.io/name: db
      app.kubernetes.io/instance: db
  template:
    metadata:
      labels:{labels.replace(chr(10) + "    ", chr(10) + "        ")}
    spec:
      serviceAccountName: db
      containers:
      - name: db
        image: postgres:16
        env:
        - name: POSTGRES_PASSWORD
          valueFrom:
            secretKeyRef: {{name: db-auth, key: password}}
        volumeMounts:
        - {{name: data, mountPath: /var/lib/postgresql/data}}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: fast-{suffix}
      resources:
        requests:
          storage: 2Gi
---
# Source: db/templates/backup-cronjob.yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: db-backup
  namespace: {ns}
  labels:{labels}
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Berlin
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: backup
            image: postgres:16
            command: [pg_dump]
"""


def test_a_charts_manifest_of_every_new_kind_applies_lists_and_deletes(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("chart")
    suffix = ns.rsplit("-", 1)[-1]
    manifest = chart(ns, suffix)
    applied = kubectl.run("apply", "-f", "-", stdin=manifest).stdout.splitlines()
    assert sorted(line.split()[0] for line in applied) == sorted(
        [
            "serviceaccount/db",
            "secret/db-auth",
            f"storageclass.storage.k8s.io/fast-{suffix}",
            f"persistentvolume/local-{suffix}",
            "persistentvolumeclaim/db-backup",
            f"csinode.storage.k8s.io/node-{suffix}",
            "statefulset.apps/db",
            "cronjob.batch/db-backup",
        ]
    )
    assert all(line.endswith(" created") for line in applied), applied

    def versions() -> list[str]:
        return [
            kubectl.json("get", kind, name, "-n", ns)["metadata"]["resourceVersion"]
            for kind, name in (("secret", "db-auth"), ("statefulset", "db"))
        ]

    before = versions()
    again = kubectl.run("apply", "-f", "-", stdin=manifest).stdout.splitlines()
    # As against upstream: kubectl's three-way merge sends the Secret's stringData (never
    # stored) and the StatefulSet's volumeClaimTemplates (an atomic list, defaulted by the
    # server) again each time and says "configured"; the writes change nothing.
    assert sorted(again) == sorted(
        line.replace(" created", " unchanged")
        .replace("secret/db-auth unchanged", "secret/db-auth configured")
        .replace("statefulset.apps/db unchanged", "statefulset.apps/db configured")
        for line in applied
    )
    assert versions() == before
    secret = kubectl.json("get", "secret", "db-auth", "-n", ns)
    assert secret["type"] == "Opaque" and "stringData" not in secret
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == {
        "user": "admin",
        "password": "s3cret",
    }
    sts = kubectl.json("get", "statefulset", "db", "-n", ns)
    spec = sts["spec"]
    assert spec["replicas"] == 1 and spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["spec"]["volumeMode"], claim["status"]) == ("Filesystem", {"phase": "Pending"})
    assert sts["metadata"]["generation"] == 1
    cron = kubectl.json("get", "cronjob", "db-backup", "-n", ns)["spec"]
    assert (
        cron["suspend"],
        cron["successfulJobsHistoryLimit"],
        cron["failedJobsHistoryLimit"],
    ) == (
        False,
        3,
        1,
    )
    pv = kubectl.json("get", "pv", f"local-{suffix}")
    assert pv["status"]["phase"] == "Pending" and "lastPhaseTransitionTime" in pv["status"]
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert kubectl.json("get", "pvc", "db-backup", "-n", ns)["status"] == {"phase": "Pending"}
    sc = kubectl.json("get", "storageclass", f"fast-{suffix}")
    assert sc["reclaimPolicy"] == "Delete" and sc["volumeBindingMode"] == "WaitForFirstConsumer"

    # tables, -o wide
    def table(*args: str) -> list[list[str]]:
        return [line.split() for line in kubectl.run("get", *args).stdout.splitlines()]

    pvs = table("pv", f"local-{suffix}", "-o", "wide")
    assert pvs[0] == [
        "NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
        "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE", "VOLUMEMODE",
    ]  # fmt: skip
    row = pvs[1]
    assert row[:6] == [f"local-{suffix}", "5Gi", "RWO", "Retain", "Pending", f"fast-{suffix}"]
    assert (row[6], row[-1]) == ("<unset>", "Filesystem")
    pvcs = table("pvc", "-n", ns, "-o", "wide")
    assert pvcs[0][:3] == ["NAME", "STATUS", "VOLUME"] and pvcs[0][-1] == "VOLUMEMODE"
    assert pvcs[1][:3] == ["db-backup", "Pending", f"fast-{suffix}"]
    scs = table("sc", f"fast-{suffix}")
    assert scs[1][:5] == [f"fast-{suffix}", "csi.kemu.io", "Delete", "WaitForFirstConsumer", "true"]
    assert table("csinode", f"node-{suffix}")[1][:2] == [f"node-{suffix}", "1"]
    stss = table("sts", "-n", ns, "-o", "wide")
    assert stss[0] == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert stss[1][:2] == ["db", "0/1"] and stss[1][-2:] == ["db", "postgres:16"]
    assert table("sa", "db", "-n", ns)[1][:2] == ["db", "0"]
    assert table("secret", "db-auth", "-n", ns)[1][:3] == ["db-auth", "Opaque", "2"]
    cjs = table("cj", "-n", ns, "-o", "wide")
    assert cjs[0][:3] == ["NAME", "SCHEDULE", "TIMEZONE"]
    assert cjs[1][:8] == ["db-backup", "0", "3", "*", "*", "*", "Europe/Berlin", "False"]

    # describe (kubectl's describers read each kind with its typed client)
    for args in (
        ["sts", "db", "-n", ns],
        ["pvc", "db-backup", "-n", ns],
        ["pv", f"local-{suffix}"],
        ["sc", f"fast-{suffix}"],
        ["sa", "db", "-n", ns],
        ["cronjob", "db-backup", "-n", ns],
        ["csinode", f"node-{suffix}"],
    ):
        assert kubectl.run("describe", *args).stdout.startswith("Name:"), args
    described = kubectl.run("describe", "secret", "db-auth", "-n", ns).stdout
    assert "password:  6 bytes" in described and "s3cret" not in described

    # delete
    kubectl.run("delete", "-f", "-", stdin=manifest)
    for kind, name, scope in (
        ("statefulset", "db", ["-n", ns]),
        ("secret", "db-auth", ["-n", ns]),
        ("pv", f"local-{suffix}", []),
        ("csinode", f"node-{suffix}", []),
    ):
        gone = kubectl.run("get", kind, name, *scope, check=False)
        assert gone.returncode == 1 and "not found" in gone.stderr, (kind, gone.stderr)


def test_kubectl_refuses_invalid_new_kinds_naming_the_field(
    kubectl: Kubectl, cluster: Cluster
) -> None:
    ns = kubectl.namespace("bad")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}}},
    }
    out = kubectl.run("create", "-f", "-", stdin=json.dumps(claim), check=False)
    assert out.returncode == 1
    assert "spec.resources[storage]: Required value" in out.stderr
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": ns},
        "spec": {
            "schedule": "every day",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}],
            }}}},
        },
    }  # fmt: skip
    out = kubectl.run("create", "-f", "-", stdin=json.dumps(cron), check=False)
    assert out.returncode == 1
    assert 'spec.schedule: Invalid value: "every day": expected exactly 5 fields' in out.stderr
    request = urllib.request.Request(
        f"{cluster.rest_url}/api/v1/namespaces/{ns}/persistentvolumeclaims",
        data=json.dumps(claim).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    status = json.loads(err.value.read())
    assert (err.value.code, status["code"], status["reason"]) == (422, 422, "Invalid")
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Required value",
            "field": "spec.resources[storage]",
        }
    ]


def test_kubectl_typed_clients_write_the_new_kinds_in_protobuf(kubectl: Kubectl) -> None:
    """kubectl create secret|serviceaccount|cronjob send protobuf bodies; scale sts goes
    through statefulsets/scale."""
    ns = kubectl.namespace("pb")
    kubectl.run("create", "secret", "generic", "s", "-n", ns, "--from-literal=k=v")
    kubectl.run("create", "serviceaccount", "sa", "-n", ns)
    kubectl.run(
        "create", "cronjob", "cj", "-n", ns, "--image=busybox", "--schedule=*/5 * * * *",
        "--", "date",
    )  # fmt: skip
    secret = kubectl.json("get", "secret", "s", "-n", ns)
    assert (secret["type"], base64.b64decode(secret["data"]["k"])) == ("Opaque", b"v")
    assert kubectl.json("get", "sa", "sa", "-n", ns)["metadata"]["name"] == "sa"
    cj = kubectl.json("get", "cronjob", "cj", "-n", ns)["spec"]
    assert cj["schedule"] == "*/5 * * * *" and cj["concurrencyPolicy"] == "Allow"
    container = cj["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["command"]) == ("busybox", ["date"])

    sts: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(sts))
    kubectl.run("scale", "sts", "web", "-n", ns, "--replicas=3")
    got = kubectl.json("get", "sts", "web", "-n", ns)
    assert (got["spec"]["replicas"], got["metadata"]["generation"]) == (3, 2)
    scale = json.loads(
        kubectl.run("get", "--raw", f"/apis/apps/v1/namespaces/{ns}/statefulsets/web/scale").stdout
    )
    assert (scale["spec"], scale["status"]["selector"]) == ({"replicas": 3}, "app=web")
    sts["spec"]["serviceName"] = "other"
    refused = kubectl.run("apply", "-f", "-", stdin=json.dumps(sts), check=False)
    assert refused.returncode == 1
    assert "spec: Forbidden: updates to statefulset spec for fields other than" in refused.stderr


def test_kubectl_explain_the_new_kinds(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "statefulset.spec.volumeClaimTemplates").stdout
    assert "KIND:" in out and "StatefulSet" in out
    assert "FIELD: volumeClaimTemplates" in out
    pvc = kubectl.run("explain", "pvc.spec.accessModes").stdout
    assert "PersistentVolumeClaim" in pvc and "accessModes" in pvc
    cron = kubectl.run("explain", "cronjob.spec.schedule").stdout
    assert "CronJob" in cron and "schedule" in cron
    sc = kubectl.run("explain", "storageclass.volumeBindingMode").stdout
    assert "StorageClass" in sc and "volumeBindingMode" in sc


def test_kubectl_get_all_lists_the_workloads_of_category_all(kubectl: Kubectl) -> None:
    """Upstream's category "all": pods, services and the workload kinds, StatefulSets and
    CronJobs among them (not Secrets, ServiceAccounts or claims)."""
    ns = kubectl.namespace("all")
    kubectl.run("create", "cronjob", "cj", "-n", ns, "--image=busybox", "--schedule=@daily")
    kubectl.run("create", "secret", "generic", "s", "-n", ns, "--from-literal=k=v")
    kubectl.run("create", "deployment", "d", "-n", ns, "--image=nginx")
    listed = kubectl.run("get", "all", "-n", ns, "-o", "name").stdout.split()
    assert sorted(listed) == ["cronjob.batch/cj", "deployment.apps/d"]


def test_kemuctl_applies_and_lists_the_chart_through_the_grpc_edge(
    kubectl: Kubectl, cluster: Cluster
) -> None:
    """kemuctl (gRPC) applies the same manifest (created, then unchanged: it compares the
    defaulted objects, stringData merged) and prints the tables."""
    ns = kubectl.namespace("ctl")
    suffix = ns.rsplit("-", 1)[-1] + "c"
    manifest = chart(ns, suffix)
    env = python_env({"KEMU_SERVER": cluster.server})

    def kemuctl(*args: str) -> str:
        done = run_python_module("kemu.ctl", args, env=env, stdin=manifest)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = kemuctl("apply", "-f", "-").splitlines()
    assert len(first) == 8 and all(line.endswith(" created") for line in first), first
    again = kemuctl("apply", "-f", "-").splitlines()
    assert all(line.endswith(" unchanged") for line in again), again
    claims = kemuctl("get", "pvc", "-n", ns).splitlines()
    assert claims[1].split()[:3] == ["db-backup", "Pending", f"fast-{suffix}"]
    assert kemuctl("get", "sts", "-n", ns).splitlines()[1].split()[:2] == ["db", "0/1"]
    assert kemuctl("get", "cj", "-n", ns).splitlines()[1].split()[0] == "db-backup"
    assert f"fast-{suffix}" in kemuctl("get", "sc")
    kemuctl("delete", "-f", "-")
    assert "db-backup" not in kemuctl("get", "pvc", "-n", ns)
