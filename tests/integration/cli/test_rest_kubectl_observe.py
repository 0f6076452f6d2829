"""kubectl's commands for looking at a running cluster, as on any cluster: `kubectl events`
(and events.k8s.io/v1), against a real etcd, apiserver, scheduler and kubelet.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kemu.testing import eventually_sync
from kemu.testing.cluster import Cluster
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]
NODE = "n1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("observe")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_scheduler()
        c.start_kubelet(NODE, extra_args=["--capacity", "cpu=8,memory=16Gi,pods=110"])
        c.write_kubeconfig()
        yield c


@pytest.fixture
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


def pod(
    name: str, ns: str, requests: list[dict[str, str]], annotations: dict[str, str] | None = None
) -> str:
    containers = [
        {"name": f"c{i}", "image": "nginx", "resources": {"requests": r}}
        for i, r in enumerate(requests)
    ]
    meta: dict[str, Any] = {"name": name, "namespace": ns, "annotations": annotations or {}}
    return json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": containers}}
    )


def running(kubectl: Kubectl, ns: str, *names: str) -> None:
    def check() -> bool:
        pods = kubectl.json("get", "pods", "-n", ns)["items"]
        phases = {p["metadata"]["name"]: p["status"].get("phase") for p in pods}
        assert all(phases.get(n) == "Running" for n in names), phases
        return True

    eventually_sync(check, timeout=20)


def _rows(text: str) -> list[list[str]]:
    return [line.split(None, 4) for line in text.splitlines()[1:]]


def test_kubectl_events_lists_and_filters_a_scheduled_pods_events(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("events")
    kubectl.run("apply", "-f", "-", stdin=pod("a", ns, [{"cpu": "100m"}]))
    kubectl.run("apply", "-f", "-", stdin=pod("b", ns, [{"cpu": "100m"}]))
    running(kubectl, ns, "a", "b")

    def scheduled() -> list[list[str]]:
        out = kubectl.run("events", "-n", ns).stdout
        assert out.splitlines()[0].split() == [
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "MESSAGE",
        ]
        rows = [r for r in _rows(out) if r[2] == "Scheduled"]
        assert {r[3] for r in rows} == {"Pod/a", "Pod/b"}, out
        return rows

    rows = eventually_sync(scheduled, timeout=10)
    assert f"Successfully assigned {ns}/a to {NODE}" in {r[4] for r in rows}
    only_a = _rows(kubectl.run("events", "-n", ns, "--for", "pod/a").stdout)
    assert only_a and {r[3] for r in only_a} == {"Pod/a"}
    assert "Scheduled" in {r[2] for r in only_a}


def test_events_k8s_io_v1_is_a_view_of_the_core_events(kubectl: Kubectl, cluster: Cluster) -> None:
    ns = kubectl.namespace("evv1")
    kubectl.run("apply", "-f", "-", stdin=pod("p", ns, [{"cpu": "100m"}]))
    running(kubectl, ns, "p")

    def v1_events() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = kubectl.json(
            "get", "events.events.k8s.io", "-n", ns, "--field-selector", "regarding.name=p"
        )["items"]
        assert any(e["reason"] == "Scheduled" for e in items), items
        return items

    event = next(e for e in eventually_sync(v1_events, timeout=10) if e["reason"] == "Scheduled")
    name = event["metadata"]["name"]
    core = kubectl.json("get", "events", name, "-n", ns)
    assert event["apiVersion"] == "events.k8s.io/v1" and event["kind"] == "Event"
    assert event["note"] == core["message"]
    assert event["regarding"] == core["involvedObject"]
    assert event["reportingController"] == core["reportingComponent"] == "default-scheduler"
    assert event["deprecatedSource"] == core["source"]
    assert event["deprecatedCount"] == core["count"]
    assert event["deprecatedFirstTimestamp"] == core["firstTimestamp"]
    assert event["deprecatedLastTimestamp"] == core["lastTimestamp"]
    assert event["eventTime"] is None
    assert (event["type"], event["action"]) == (core["type"], core["action"])
    assert "message" not in event and "involvedObject" not in event
    one = kubectl.json("get", f"events.events.k8s.io/{name}", "-n", ns)
    assert one["note"] == event["note"]
    table = kubectl.run("get", "events.events.k8s.io", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("Scheduled" in row and "pod/p" in row for row in table[1:]), table
    # core's field labels are not events.k8s.io/v1's (upstream's conversion refuses them)
    refused = kubectl.run(
        "get", "events.events.k8s.io", "-n", ns, "--field-selector", "involvedObject.name=p",
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "field label not supported: involvedObject.name" in refused.stderr
    # a watch sends the same view
    url = (
        f"{cluster.rest_url}/apis/events.k8s.io/v1/namespaces/{ns}/events?watch=1&timeoutSeconds=1"
    )
    with urllib.request.urlopen(url, timeout=10) as r:
        watched = [json.loads(line) for line in r.read().splitlines()]
    assert {(w["type"], w["object"]["apiVersion"]) for w in watched} == {
        ("ADDED", "events.k8s.io/v1")
    }
    assert name in {w["object"]["metadata"]["name"] for w in watched}


def _table(text: str) -> dict[str, list[str]]:
    lines = text.splitlines()
    return {row.split()[0]: row.split()[1:] for row in lines[1:]}


def test_kubectl_top_pods_and_nodes_from_the_simulated_usage(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("top")
    halves = [{"cpu": "300m", "memory": "64Mi"}, {"cpu": "100m", "memory": "32Mi"}]
    kubectl.run("apply", "-f", "-", stdin=pod("halves", ns, halves))
    usage = {"kubelet.kemu.io/cpu-usage": "1500m", "kubelet.kemu.io/memory-usage": "1Gi"}
    kubectl.run("apply", "-f", "-", stdin=pod("annotated", ns, [{}, {}], usage))
    running(kubectl, ns, "halves", "annotated")

    top = kubectl.run("top", "pods", "-n", ns).stdout
    assert top.splitlines()[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert _table(top) == {"halves": ["200m", "48Mi"], "annotated": ["1500m", "1024Mi"]}
    containers = kubectl.run("top", "pods", "-n", ns, "--containers").stdout.splitlines()
    assert [r.split() for r in containers[1:]] == [
        ["annotated", "c0", "750m", "512Mi"],
        ["annotated", "c1", "750m", "512Mi"],
        ["halves", "c0", "150m", "32Mi"],
        ["halves", "c1", "50m", "16Mi"],
    ]
    missing = kubectl.run("top", "pod", "nope", "-n", ns, check=False)
    assert (
        missing.returncode != 0 and 'podmetrics.metrics.k8s.io "nope" not found' in missing.stderr
    )

    # the node: the sum over every running pod bound to it (the module's other pods too)
    cpu = memory = 0
    for line in kubectl.run("top", "pods", "-A", "--no-headers").stdout.splitlines():
        _, _, c, m = line.split()
        cpu += int(c.removesuffix("m"))
        memory += int(m.removesuffix("Mi"))  # every pod here uses whole MiB
    assert cpu >= 1700
    nodes = _table(kubectl.run("top", "nodes").stdout)
    assert nodes[NODE][0] == f"{cpu}m" and nodes[NODE][2] == f"{memory}Mi", nodes
    assert nodes[NODE][1] == f"{cpu * 100 // 8000}%"  # of the allocatable 8 cpus

    # a usage annotation changed on a running pod changes what top shows
    kubectl.run("annotate", "pod", "halves", "-n", ns, "--overwrite", "kubelet.kemu.io/cpu-usage=2")
    assert _table(kubectl.run("top", "pods", "-n", ns).stdout)["halves"] == ["2000m", "48Mi"]
    bad = kubectl.run(
        "annotate", "pod", "halves", "-n", ns, "--overwrite", "kubelet.kemu.io/memory-usage=lots",
        check=False,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "metadata.annotations[kubelet.kemu.io/memory-usage]: Invalid value" in bad.stderr


def test_kubectl_logs_shows_the_simulated_containers_lines(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("logs")
    kubectl.run("apply", "-f", "-", stdin=pod("two", ns, [{}, {}]))
    ends = {"kubelet.kemu.io/run-duration": "3s", "kubelet.kemu.io/exit-code": "3"}
    one = json.loads(pod("ends", ns, [{}], ends))
    one["spec"]["restartPolicy"] = "Never"
    running(kubectl, ns, "two")

    first = kubectl.run("logs", "two", "-n", ns)
    assert first.stdout.splitlines() == [
        "kemu: container c0 started (image nginx, restart count 0); "
        "a simulated container runs no process"
    ]
    assert 'Defaulted container "c0" out of: c0, c1' in first.stderr
    stamped = kubectl.run("logs", "two", "-n", ns, "-c", "c1", "--timestamps").stdout
    at, text = stamped.rstrip("\n").split(" ", 1)
    assert text.startswith("kemu: container c1 started") and at.endswith("Z") and "T" in at
    started = kubectl.json("get", "pod", "two", "-n", ns)["status"]["containerStatuses"][1]
    assert at.startswith(started["state"]["running"]["startedAt"].removesuffix("Z"))
    for args, message in (
        (("-c", "nope"), "container nope is not valid for pod two"),
        (("-c", "c0", "--previous"), 'previous terminated container "c0" in pod "two" not found'),
    ):
        proc = kubectl.run("logs", "two", "-n", ns, *args, check=False)
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr

    # -f follows the container until it exits
    kubectl.run("apply", "-f", "-", stdin=json.dumps(one))
    running(kubectl, ns, "ends")
    followed = kubectl.run("logs", "-f", "ends", "-n", ns, timeout=20).stdout.splitlines()
    assert len(followed) == 2 and followed[0].startswith("kemu: container c0 started")
    assert followed[1] == "kemu: container c0 exited with code 3 (Error)"
    assert kubectl.run("logs", "ends", "-n", ns, "--tail", "1").stdout.splitlines() == followed[1:]
