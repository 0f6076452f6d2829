"""kemuctl against a real cluster, as a user runs it: a separate process per command (the
README's preemption stories, on clusters of their own: test_kemuctl_stories.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import yaml

from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
)
from kemu.testing import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.names import unique_name
from kemu.testing.processes import REPO_ROOT, python_env, run_python_module

pytestmark = pytest.mark.integration

EXAMPLES = Path(REPO_ROOT) / "examples"
# Wall seconds between two polls that each start a kemuctl process (~0.4 s of CPU): polled
# back to back, a wait on a 20 s shutdown kept most of a core busy starting them.
PROCESS_POLL: Final = 0.5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("kemuctl")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        yield c


def kemuctl(
    cluster: Cluster, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = python_env({"KEMU_SERVER": cluster.server})
    return run_python_module("kemu.ctl", args, env=env, stdin=stdin)


def kemuctl_create_namespace(cluster: Cluster, prefix: str) -> str:
    """A fresh namespace, made as a user makes one: `kemuctl create namespace NAME`."""
    name = unique_name(prefix)
    done = kemuctl(cluster, "create", "namespace", name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"namespace/{name} created"
    return name


def test_manifest_round_trip_through_apply_and_get(cluster):
    ns = kemuctl_create_namespace(cluster, "ctl")
    done = kemuctl(cluster, "apply", "-f", str(EXAMPLES / "priorityclasses.yaml"))
    assert done.returncode == 0, done.stderr
    manifest = yaml.safe_load((EXAMPLES / "pod.yaml").read_text())
    done = kemuctl(cluster, "apply", "-n", ns, "-f", str(EXAMPLES / "pod.yaml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pod/web created"
    again = kemuctl(cluster, "apply", "-n", ns, "-f", str(EXAMPLES / "pod.yaml"))
    assert again.stdout.strip() == "pod/web unchanged"

    got = json.loads(kemuctl(cluster, "get", "pod", "web", "-n", ns, "-o", "json").stdout)
    assert got["apiVersion"] == "v1" and got["kind"] == "Pod"
    assert got["metadata"]["labels"] == manifest["metadata"]["labels"]
    assert (
        got["spec"]["containers"][0]["resources"] == manifest["spec"]["containers"][0]["resources"]
    )
    assert got["spec"]["priority"] == 1000 and got["spec"]["priorityClassName"] == "high"
    assert got["status"]["phase"] == "Pending"
    assert got["metadata"]["resourceVersion"].isdigit() and got["metadata"]["uid"]
    # The YAML printed by get applies unchanged (server fields included).
    as_yaml = kemuctl(cluster, "get", "pod", "web", "-n", ns, "-o", "yaml").stdout
    assert kemuctl(cluster, "apply", "-f", "-", stdin=as_yaml).returncode == 0

    table = kemuctl(cluster, "get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "READY", "STATUS"] and "NOMINATED" in table[0]
    assert table[1].split()[0] == "web"


def test_nominated_node_shows_in_get_wide_and_describe(cluster):
    ns = kemuctl_create_namespace(cluster, "ctl")
    assert kemuctl(cluster, "apply", "-f", str(EXAMPLES / "priorityclasses.yaml")).returncode == 0
    assert kemuctl(cluster, "apply", "-n", ns, "-f", str(EXAMPLES / "pod.yaml")).returncode == 0
    patched = kemuctl(
        cluster,
        "patch",
        "pod",
        "web",
        "-n",
        ns,
        "--subresource",
        "status",
        "-p",
        '{"status":{"nominatedNodeName":"node-a"}}',
    )
    assert patched.returncode == 0, patched.stderr
    described = kemuctl(cluster, "describe", "pod", "web", "-n", ns).stdout
    assert "Nominated Node Name:" in described and "node-a" in described
    waited = kemuctl(
        cluster,
        "wait",
        "pod/web",
        "-n",
        ns,
        "--for=jsonpath={.status.nominatedNodeName}=node-a",
        "--timeout",
        "10s",
    )
    assert waited.returncode == 0, waited.stderr


def test_resize_from_the_command_line(cluster):
    ns = kemuctl_create_namespace(cluster, "ctl")
    assert kemuctl(cluster, "apply", "-f", str(EXAMPLES / "priorityclasses.yaml")).returncode == 0
    assert kemuctl(cluster, "apply", "-n", ns, "-f", str(EXAMPLES / "pod.yaml")).returncode == 0
    done = kemuctl(cluster, "resize", "pod", "web", "-n", ns, "--requests", "cpu=1")
    assert done.returncode == 0, done.stderr
    got = json.loads(kemuctl(cluster, "get", "pod", "web", "-n", ns, "-o", "json").stdout)
    assert got["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    bad = kemuctl(cluster, "resize", "pod", "web", "-n", ns, "--requests", "cpu=lots")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, bogus: 1}]}\n",
            "bogus",
        ),
        ("apiVersion: v1\nkind: Widget\nmetadata: {name: x}\n", "Widget"),
        ("kind: Pod\nmetadata: {name: x\n", "yaml"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c}]}\n",
            "metadata.name",
        ),
    ],
)
def test_a_bad_manifest_gives_one_line_and_exit_code_1(cluster, tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    done = kemuctl(cluster, "apply", "-f", str(path))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:")
    assert needle.lower() in lines[0].lower()


def test_version_lists_server_and_components(cluster):
    def listed() -> str:
        done = kemuctl(cluster, "version", "-o", "json")
        assert done.returncode == 0, done.stderr
        text = json.dumps(json.loads(done.stdout))
        assert "kube-controller-manager" in text
        return text

    text = eventually_sync(listed, timeout=15, interval=PROCESS_POLL)
    assert "1.37" in text and "kube-apiserver" in text
    assert CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING in text
    plain = kemuctl(cluster, "version").stdout
    assert "Client Version" in plain and "Server Version" in plain


def test_unreachable_server_is_one_line(cluster):
    env_server = "127.0.0.1:1"
    done = run_python_module("kemu.ctl", ["--server", env_server, "get", "nodes"])
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot reach" in done.stderr


def test_namespaces_services_and_config_maps_from_the_command_line(cluster):
    ns = kemuctl_create_namespace(cluster, "objs")
    manifest = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
        "spec: {selector: {app: web}, ports: [{port: 80}]}\n"
        "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '1', b: '2'}\n"
    )
    done = kemuctl(cluster, "apply", "-n", ns, "-f", "-", stdin=manifest)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["service/web created", "configmap/cfg created"]
    svc = kemuctl(cluster, "get", "svc", "-n", ns).stdout.splitlines()
    assert svc[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    name, kind, ip, external, ports, _ = svc[1].split()
    assert (name, kind, external, ports) == ("web", "ClusterIP", "<none>", "80/TCP")
    assert ip.startswith("10.")
    cm = kemuctl(cluster, "get", "cm", "-n", ns).stdout.splitlines()
    # every namespace also has the root CA publisher's kube-root-ca.crt (as upstream)
    rows = [line.split()[:2] for line in cm]
    assert rows[0] == ["NAME", "DATA"] and ["cfg", "2"] in rows[1:]
    assert all(r == ["cfg", "2"] or r == ["kube-root-ca.crt", "1"] for r in rows[1:]), rows
    namespaces = kemuctl(cluster, "get", "namespaces").stdout.splitlines()
    assert namespaces[0].split() == ["NAME", "STATUS", "AGE"]
    listed = {line.split()[0]: line.split()[1] for line in namespaces[1:]}
    assert listed[ns] == "Active" and listed["kube-node-lease"] == "Active"
    refused = kemuctl(cluster, "delete", "namespace", "default")
    assert refused.returncode == 1
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in refused.stderr
    deleted = kemuctl(cluster, "delete", "namespace", ns, "--wait", "--timeout", "30s")
    assert deleted.returncode == 0, deleted.stderr
    missing = kemuctl(cluster, "apply", "-n", ns, "-f", "-", stdin=manifest)
    assert missing.returncode == 1 and f'namespaces "{ns}" not found' in missing.stderr


def test_describe_node_shows_the_autoscalers_taints_and_annotations(cluster):
    """As kubectl: taints sorted by effect then key and annotations `key: value`, continuation
    lines aligned under the first value."""
    name = unique_name("tainted")
    manifest = f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations:
    cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"
    kemu.io/note: hello
spec:
  taints:
  - {{key: DeletionCandidateOfClusterAutoscaler, value: "1700000000", effect: PreferNoSchedule}}
  - {{key: ToBeDeletedByClusterAutoscaler, value: "1700000100", effect: NoSchedule}}
"""
    done = kemuctl(cluster, "apply", "-f", "-", stdin=manifest)
    assert done.returncode == 0, done.stderr
    done = kemuctl(cluster, "describe", "node", name)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    i = next(n for n, li in enumerate(lines) if li.startswith("Annotations:"))
    column = lines[i].index("cluster-autoscaler.kubernetes.io/")
    assert lines[i][column:] == "cluster-autoscaler.kubernetes.io/scale-down-disabled: true"
    assert lines[i + 1] == " " * column + "kemu.io/note: hello"
    i = next(n for n, li in enumerate(lines) if li.startswith("Taints:"))
    assert lines[i][column:] == "ToBeDeletedByClusterAutoscaler=1700000100:NoSchedule"
    assert lines[i + 1] == (
        " " * column + "DeletionCandidateOfClusterAutoscaler=1700000000:PreferNoSchedule"
    )
    assert kemuctl(cluster, "delete", "node", name).returncode == 0
