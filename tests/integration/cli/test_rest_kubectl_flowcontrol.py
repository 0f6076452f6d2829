"""flowcontrol.apiserver.k8s.io/v1 through the REST edge with the real kubectl (issue #58 item 3):
upstream's bootstrap FlowSchemas and PriorityLevelConfigurations on a fresh cluster with
upstream's columns, the ensurer restoring a deleted or changed mandatory object and leaving a
suggested one whose `apf.kubernetes.io/autoupdate-spec` is "false", the Dangling condition, and
validation's field names. The cluster runs on virtual time, held: each test moves it past the
ensurer's one-minute period (apiserver/flowcontrol_bootstrap.py).

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster
from kemu.testing.processes import python_env, run_python_module
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

ENSURE_PERIOD = 60.0
"""The ensurer's period (upstream's wait.PollImmediateUntil(time.Minute, ...))."""

FLOW_SCHEMAS = {
    # name: (priority level, precedence, distinguisher), upstream's default.go
    "exempt": ("exempt", "1", "<none>"),
    "probes": ("exempt", "2", "<none>"),
    "system-leader-election": ("leader-election", "100", "ByUser"),
    "endpoint-controller": ("workload-high", "150", "ByUser"),
    "workload-leader-election": ("leader-election", "200", "ByUser"),
    "system-node-high": ("node-high", "400", "ByUser"),
    "system-nodes": ("system", "500", "ByUser"),
    "kube-controller-manager": ("workload-high", "800", "ByNamespace"),
    "kube-scheduler": ("workload-high", "800", "ByNamespace"),
    "kube-system-service-accounts": ("workload-high", "900", "ByNamespace"),
    "service-accounts": ("workload-low", "9000", "ByUser"),
    "global-default": ("global-default", "9900", "ByUser"),
    "catch-all": ("catch-all", "10000", "ByUser"),
}
PRIORITY_LEVELS = {
    # name: (type, nominal shares, queues, hand size, queue length limit)
    "exempt": ("Exempt", "<none>", "<none>", "<none>", "<none>"),
    "catch-all": ("Limited", "5", "<none>", "<none>", "<none>"),
    "system": ("Limited", "30", "64", "6", "50"),
    "node-high": ("Limited", "40", "64", "6", "50"),
    "leader-election": ("Limited", "10", "16", "4", "50"),
    "workload-high": ("Limited", "40", "128", "6", "50"),
    "workload-low": ("Limited", "100", "128", "6", "50"),
    "global-default": ("Limited", "20", "128", "6", "50"),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("flowcontrol"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as client:
        await client.set_clock_rate(0)
        yield client


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


def rows_of(kubectl: Kubectl, resource: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = kubectl.run("get", resource).stdout.splitlines()
    return lines[0].split(), {line.split()[0]: line.split() for line in lines[1:]}


async def test_apf_bootstrap_1_flow_schemas_listed(kubectl: Kubectl) -> None:
    """A fresh cluster lists upstream's bootstrap FlowSchemas with upstream's columns; none
    is dangling."""
    header, got = rows_of(kubectl, "flowschemas")
    assert header == [
        "NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"
    ]  # fmt: skip
    assert got.keys() == FLOW_SCHEMAS.keys()
    for name, (level, precedence, method) in FLOW_SCHEMAS.items():
        row = got[name]
        assert row[1:4] == [level, precedence, method], row
        assert row[5] == "False", row
    fs = kubectl.json("get", "flowschema", "exempt")
    assert fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true"
    assert fs["spec"]["rules"][0]["subjects"] == [
        {"kind": "Group", "group": {"name": "system:masters"}}
    ]
    (cond,) = fs["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Dangling", "False", "Found")


async def test_apf_bootstrap_2_priority_levels_listed(kubectl: Kubectl) -> None:
    header, got = rows_of(kubectl, "prioritylevelconfigurations")
    assert header == [
        "NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT",
        "AGE",
    ]  # fmt: skip
    assert got.keys() == PRIORITY_LEVELS.keys()
    for name, cells in PRIORITY_LEVELS.items():
        assert tuple(got[name][1:6]) == cells, got[name]
    pl = kubectl.json("get", "prioritylevelconfiguration", "workload-low")
    assert pl["spec"]["limited"]["lendablePercent"] == 90
    assert pl["spec"]["limited"]["limitResponse"]["type"] == "Queue"


async def test_apf_ensure_1_mandatory_restored(kubectl: Kubectl, client: Client) -> None:
    """A mandatory object's spec cannot change (422: upstream's fixed value); a deleted one
    comes back at the ensurer's next pass; a suggested one changed by a user (generation 2)
    with autoupdate-spec "true" is restored too."""
    proc = kubectl.run(
        "patch", "prioritylevelconfiguration", "catch-all", "--type", "merge",
        "-p", '{"spec":{"limited":{"nominalConcurrencyShares":7}}}',
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "spec of 'catch-all' must equal the fixed value" in proc.stderr, proc.stderr
    kubectl.run("delete", "flowschema", "catch-all")
    kubectl.run("delete", "prioritylevelconfiguration", "catch-all")
    kubectl.run(
        "patch", "flowschema", "service-accounts", "--type", "merge",
        "-p", '{"spec":{"matchingPrecedence":9001}}',
    )  # fmt: skip
    fs = kubectl.json("get", "flowschema", "service-accounts")
    assert fs["spec"]["matchingPrecedence"] == 9001
    assert kubectl.run("get", "flowschema", "catch-all", check=False).returncode != 0
    await client.advance_clock(ENSURE_PERIOD + 1)
    fs = kubectl.json("get", "flowschema", "catch-all")
    assert fs["spec"]["matchingPrecedence"] == 10000
    pl = kubectl.json("get", "prioritylevelconfiguration", "catch-all")
    assert pl["spec"]["limited"]["nominalConcurrencyShares"] == 5
    fs = kubectl.json("get", "flowschema", "service-accounts")
    assert fs["spec"]["matchingPrecedence"] == 9000


async def test_apf_ensure_2_suggested_autoupdate_false_left_alone(
    kubectl: Kubectl, client: Client
) -> None:
    kubectl.run(
        "annotate", "--overwrite", "flowschema", "global-default",
        "apf.kubernetes.io/autoupdate-spec=false",
    )  # fmt: skip
    kubectl.run(
        "patch", "flowschema", "global-default", "--type", "merge",
        "-p", '{"spec":{"matchingPrecedence":9950}}',
    )  # fmt: skip
    kubectl.run("delete", "prioritylevelconfiguration", "workload-low")
    await client.advance_clock(ENSURE_PERIOD + 1)
    fs = kubectl.json("get", "flowschema", "global-default")
    assert fs["spec"]["matchingPrecedence"] == 9950
    assert fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "false"
    # (a deleted suggested object is made again, as upstream's ensurer creates a missing one)
    assert (
        kubectl.json("get", "prioritylevelconfiguration", "workload-low")["spec"]["type"]
        == "Limited"
    )


async def test_apf_dangling_1_missing_priority_level(kubectl: Kubectl, client: Client) -> None:
    """A FlowSchema naming no existing level is Dangling (MISSINGPL True) after a pass."""
    kubectl.run(
        "apply", "-f", "-",
        stdin="""apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: orphan}
spec:
  priorityLevelConfiguration: {name: nowhere}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
""",
    )  # fmt: skip
    fs = kubectl.json("get", "flowschema", "orphan")
    assert fs["spec"]["matchingPrecedence"] == 1000  # defaulted
    await client.advance_clock(ENSURE_PERIOD + 1)
    _, got = rows_of(kubectl, "flowschemas")
    assert got["orphan"][1:4] == ["nowhere", "1000", "<none>"] and got["orphan"][5] == "True"
    (cond,) = kubectl.json("get", "flowschema", "orphan")["status"]["conditions"]
    assert (cond["status"], cond["reason"]) == ("True", "NotFound")
    assert cond["message"] == (
        'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" '
        "but there is no such object"
    )


async def test_apf_validation_1_field_names(kubectl: Kubectl) -> None:
    """A 422 names upstream's fields (pkg/apis/flowcontrol/validation)."""
    proc = kubectl.run(
        "apply", "-f", "-",
        stdin="""apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: bad}
spec:
  type: Limited
  limited:
    lendablePercent: 120
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 5}}
""",
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "spec.limited.lendablePercent" in proc.stderr, proc.stderr
    assert "spec.limited.limitResponse.queuing.handSize" in proc.stderr, proc.stderr
    proc = kubectl.run(
        "patch", "flowschema", "probes", "--type", "merge",
        "-p", '{"spec":{"matchingPrecedence":10001,"distinguisherMethod":{"type":"ByGroup"}}}',
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert (
        "spec.matchingPrecedence" in proc.stderr and "spec.distinguisherMethod.type" in proc.stderr
    )


async def test_apf_bootstrap_3_kemuctl_through_the_grpc_edge(cluster: Cluster) -> None:
    """kemuctl (gRPC) lists the bootstrap objects with the same columns."""
    env = python_env({"KEMU_SERVER": cluster.server})
    done = run_python_module("kemu.ctl", ("get", "prioritylevelconfigurations"), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES"]
    assert {line.split()[0] for line in lines[1:]} >= PRIORITY_LEVELS.keys() - {"workload-low"}
    done = run_python_module("kemu.ctl", ("get", "flowschema", "probes"), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[:4] == ["probes", "exempt", "2", "<none>"]


@pytest.fixture(scope="module")
def kubectl_1_28(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with Cluster(tmp_path_factory.mktemp("flowcontrol-1.28")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True, emulated_version="1.28")
        c.write_kubeconfig()
        yield Kubectl(c)


async def test_apf_versions_1_v1beta3_before_1_29(kubectl_1_28: Kubectl) -> None:
    """At 1.28 the kinds are served as v1beta3 only, on by default (upstream's
    legacyBetaEnabledByDefaultResources), with the same bootstrap objects."""
    out = kubectl_1_28.run("api-resources", "--api-group", "flowcontrol.apiserver.k8s.io").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["flowschemas"][-3:] == [
        "flowcontrol.apiserver.k8s.io/v1beta3", "false", "FlowSchema"
    ]  # fmt: skip
    fs = kubectl_1_28.json("get", "flowschema", "catch-all")
    assert fs["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1beta3"
    assert fs["spec"]["matchingPrecedence"] == 10000
    _, got = rows_of(kubectl_1_28, "prioritylevelconfigurations")
    assert got.keys() == PRIORITY_LEVELS.keys()
