"""Alibaba's GPU trace of 2023 ("openb") as a kemu trace: the columns, the times, GPUs as
nvidia.com/gpu, the GPU-sharing rule, the nodes as CLUSTER.yaml, and bad rows named. The
files are tests/fixtures/openb's synthetic pair (the data set's columns, none of its data)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds
from kemu.machinery.validation.node import validate_node
from kemu.machinery.validation.pod import validate_pod
from kemu.trace import cluster_config, files, objects, openb
from kemu.trace.__main__ import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "openb"
NODES = FIXTURES / "openb_node_list_test.csv"
PODS = FIXTURES / "openb_pod_list_test.csv"
T0 = openb.EPOCH


def _pods() -> list[openb.PodRow]:
    return openb.read_pods(PODS.read_text(), PODS.name)


def _nodes() -> list[openb.NodeRow]:
    return openb.read_nodes(NODES.read_text(), NODES.name)


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _converted(**options: Any) -> openb.Converted:
    return openb.convert(_nodes(), _pods(), openb.Options(**options))


def _by_name(converted: openb.Converted) -> dict[str, dict[str, Any]]:
    return {_name(o): o for e in converted.trace.events for o in e.applied}


def _requests(pod: dict[str, Any]) -> dict[str, str]:
    requests: dict[str, str] = pod["spec"]["containers"][0]["resources"]["requests"]
    return requests


def test_every_column_of_both_files_is_read() -> None:
    nodes = _nodes()
    assert [(n.sn, n.cpu_milli, n.memory_mib, n.gpu, n.model, n.line) for n in nodes] == [
        ("openb-node-0000", 8000, 32768, 0, "", 2),
        ("openb-node-0001", 16000, 65536, 1, "T4", 3),
        ("openb-node-0002", 32000, 131072, 2, "V100M32", 4),
    ]
    pods = {p.name: p for p in _pods()}
    assert len(pods) == 12
    p = pods["openb-pod-0002"]
    assert (p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, p.qos, p.pod_phase) == (
        1000,
        2048,
        1,
        500,
        "BE",
        "Running",
    )
    assert (p.creation_time, p.deletion_time, p.scheduled_time) == (20, None, 21)
    assert p.shares_gpu
    # gpu_spec: the models, each once; a Pending pod has no scheduled_time; 0 is no deletion
    assert pods["openb-pod-0009"].gpu_spec == ("T4", "V100M32")
    assert pods["openb-pod-0006"].scheduled_time is None
    assert pods["openb-pod-0010"].deletion_time is None
    assert not pods["openb-pod-0001"].shares_gpu and pods["openb-pod-0001"].gpu_milli == 1000
    assert pods["openb-pod-0000"].gpu_milli == 0 and not pods["openb-pod-0000"].shares_gpu


def test_pods_are_created_and_deleted_at_their_times_in_one_namespace() -> None:
    converted = _converted()
    trace = converted.trace
    assert trace.kinds() == {"v1.Pod": 12}
    assert trace.namespaces() == ["openb"]
    created = {_name(o): e.ts - T0 for e in trace.events for o in e.applied}
    deleted = {_name(o): e.ts - T0 for e in trace.events for o in e.deleted}
    assert created["openb-pod-0000"] == 0 and created["openb-pod-0011"] == 620
    assert deleted == {
        "openb-pod-0000": 600,
        "openb-pod-0001": 400,
        "openb-pod-0004": 500,
        "openb-pod-0006": 200,
        "openb-pod-0007": 500,
        "openb-pod-0008": 80,
        "openb-pod-0009": 650,
    }
    # created and deleted at one instant: applied first, in one event
    (same,) = [e for e in trace.events if e.ts == T0 + 80]
    assert [_name(o) for o in same.applied] == ["openb-pod-0008"]
    assert [_name(o) for o in same.deleted] == ["openb-pod-0008"]
    assert [e.ts for e in trace.events] == sorted({e.ts for e in trace.events})
    assert trace.span == 650
    assert sorted(trace.index["v1.Pod"]) == sorted(f"openb/{n}" for n in created)
    assert not trace.pod_lifecycles  # a pod runs until its deletion
    s = converted.summary
    assert (s.pods_read, s.pods, s.deletions, s.sharing, s.gpu_requests) == (12, 12, 7, 3, 11)


def test_gpus_are_whole_nvidia_gpus_requested_and_limited() -> None:
    pods = _by_name(_converted())
    two = pods["openb-pod-0001"]["spec"]["containers"][0]["resources"]
    assert two["requests"] == {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}
    assert two["limits"] == two["requests"]
    assert _requests(pods["openb-pod-0000"]) == {"cpu": "2", "memory": "4Gi"}
    assert _requests(pods["openb-pod-0005"]) == {"cpu": "500m", "memory": "1Gi"}
    assert _requests(pods["openb-pod-0006"])["nvidia.com/gpu"] == "4"
    annotations = pods["openb-pod-0003"]["metadata"]["annotations"]
    assert annotations == {
        "kubelet.kemu.io/shutdown-duration": "0s",  # its GPUs are free at its deletion_time
        "openb.kemu.io/qos": "LS",
        "openb.kemu.io/pod-phase": "Running",
        "openb.kemu.io/creation-time": "30",
        "openb.kemu.io/scheduled-time": "400",
        "openb.kemu.io/gpu-spec": "V100M32",
    }
    assert "affinity" not in pods["openb-pod-0001"]["spec"]


def test_a_pod_sharing_a_gpu_asks_for_a_whole_one_and_keeps_its_share_or_is_skipped() -> None:
    pods = _by_name(_converted())
    shared = pods["openb-pod-0002"]
    assert _requests(shared)["nvidia.com/gpu"] == "1"
    assert shared["metadata"]["annotations"]["alibabacloud.com/gpu-milli"] == "500"
    whole = pods["openb-pod-0003"]
    assert "alibabacloud.com/gpu-milli" not in whole["metadata"]["annotations"]

    skipped = _converted(gpu_sharing=openb.GpuSharing.SKIP)
    assert sorted(set(pods) - set(_by_name(skipped))) == [
        "openb-pod-0002",
        "openb-pod-0004",
        "openb-pod-0011",
    ]
    assert (skipped.summary.sharing, skipped.summary.sharing_skipped) == (3, 3)
    # the deletion of a skipped pod is gone with it
    assert all(_name(o) != "openb-pod-0004" for e in skipped.trace.events
               for o in e.deleted)  # fmt: skip
    assert "3 sharing a GPU skipped" in openb.describe(skipped.summary, openb.GpuSharing.SKIP)


def test_a_gpu_spec_is_a_required_affinity_to_the_nodes_gpu_model_label() -> None:
    pod = _by_name(_converted())["openb-pod-0009"]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {
                    "key": "alibabacloud.com/gpu-card-model",
                    "operator": "In",
                    "values": ["T4", "V100M32"],
                }
            ]
        }
    ]


def test_every_pod_is_a_valid_kemu_pod_with_no_field_dropped() -> None:
    for obj in _by_name(_converted()).values():
        prepared = objects.prepare(obj)
        assert prepared is not None and prepared.dropped == ()
        pod = prepared.obj
        assert isinstance(pod, types_pb2.Pod)
        assert validate_pod(pod) == [], obj["metadata"]["name"]
    gpu_pod = objects.prepare(_by_name(_converted())["openb-pod-0001"])
    assert gpu_pod is not None
    limits = gpu_pod.obj.spec.containers[0].resources.limits  # type: ignore[attr-defined]
    assert limits["nvidia.com/gpu"] == "2"


def test_the_nodes_are_pools_of_cluster_yaml_with_gpus_and_the_model_label() -> None:
    converted = _converted()
    config = cluster_config.parse(converted.cluster_yaml())
    pools = {p.name: p for p in config.nodes}
    assert list(pools) == ["cpu-8c-32g", "t4x1-16c-64g", "v100m32x2-32c-128g"]
    v100 = pools["v100m32x2-32c-128g"]
    assert dict(v100.capacity) == {
        "cpu": "32",
        "memory": "128Gi",
        "nvidia.com/gpu": "2",
        "pods": "110",
    }
    assert dict(v100.labels) == {"alibabacloud.com/gpu-card-model": "V100M32"}
    assert "nvidia.com/gpu" not in pools["cpu-8c-32g"].capacity
    assert dict(pools["cpu-8c-32g"].labels) == {}
    assert (converted.summary.nodes, converted.summary.pools, converted.summary.gpus) == (3, 3, 3)
    # a node with those capacities and labels is one kemu's apiserver accepts
    node = convert.from_dict(
        kinds.BY_KIND["Node"],
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "v100m32x2-32c-128g-0", "labels": dict(v100.labels)},
            "status": {"capacity": dict(v100.capacity), "allocatable": dict(v100.capacity)},
        },
    )
    assert isinstance(node, types_pb2.Node)
    assert validate_node(node) == []


def test_nodes_of_one_shape_are_one_pool_with_their_count() -> None:
    text = (
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "a,96000,393216,8,G2\nb,96000,393216,8,G2\nc,32000,262144,0,nan\nd,96000,393216,8,G2\n"
    )
    pools = openb.pools_of(openb.read_nodes(text, "n.csv"))
    assert [(p["name"], p["count"]) for p in pools] == [("g2x8-96c-384g", 3), ("cpu-32c-256g", 1)]


def test_start_end_and_limit_choose_pods_by_creation_time() -> None:
    window = _converted(start=30, end=600)
    names = sorted(_by_name(window))
    assert names == [f"openb-pod-{i:04}" for i in range(3, 9)]
    assert window.summary.outside_window == 6
    # deletions at or after --end are left out: those pods run to the end
    deleted = {_name(o) for e in window.trace.events for o in e.deleted}
    assert deleted == {"openb-pod-0004", "openb-pod-0006", "openb-pod-0007", "openb-pod-0008"}
    assert window.summary.deletions_dropped == 0
    late = _converted(end=450)
    assert late.summary.deletions_dropped == 3  # 0000 at 600, 0004 and 0007 at 500
    limited = _converted(limit=2)
    assert sorted(_by_name(limited)) == ["openb-pod-0000", "openb-pod-0001"]
    assert limited.summary.over_limit == 10


def test_a_pod_list_without_times_is_created_at_once_in_file_order_and_never_deleted() -> None:
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "openb-pod-0001,1000,1024,8,1000\nopenb-pod-0000,1000,1024,1,300\n"
    )
    pods = openb.read_pods(text, "multigpu.csv")
    assert pods[0].creation_time is None and pods[1].gpu_spec == ()
    trace = openb.convert(_nodes(), pods, openb.Options()).trace
    assert len(trace.events) == 1 and trace.events[0].ts == T0
    assert [_name(o) for o in trace.events[0].applied] == [
        "openb-pod-0001",
        "openb-pod-0000",
    ]
    assert trace.objects_deleted() == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "p.csv: empty (expected the header name,cpu_milli,memory_mib,num_gpu,gpu_milli)"),
        (
            "name,cpu_milli,memory_mib,gpu_milli\nx,1,1,1\n",
            "p.csv: line 1: missing column num_gpu (expected "
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli; found name,cpu_milli,memory_mib,"
            "gpu_milli)",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0,1,1,0,0\nopenb-pod-1,abc,1,0,0\n",
            "p.csv: line 3: column cpu_milli: 'abc' is not an integer >= 0",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0,1,1,-1,0\n",
            "p.csv: line 2: column num_gpu: '-1' is not an integer >= 0",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0,1,1,1,1500\n",
            "p.csv: line 2: column gpu_milli: 1500 is more than one GPU (1000)",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nOpenB_Pod,1,1,1,1000\n",
            "p.csv: line 2: column name: 'OpenB_Pod' is not a pod name (lower case letters, "
            "digits and '-')",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0,1,1,0,0\nopenb-pod-0,1,1,0,0\n",
            "p.csv: line 3: column name: 'openb-pod-0' is also on line 2",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
            "openb-pod-0,1,1,0,0,,\n",
            "p.csv: line 2: column creation_time: empty is not an integer >= 0",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
            "openb-pod-0,1,1,0,0,50,40\n",
            "p.csv: line 2: column deletion_time: 40 is before creation_time 50",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0,1,1\n",
            "p.csv: line 2: 3 fields, the header has 5",
        ),
    ],
)
def test_a_bad_pod_list_is_an_error_naming_the_line_and_column(text: str, message: str) -> None:
    with pytest.raises(openb.OpenbError) as e:
        openb.read_pods(text, "p.csv")
    assert str(e.value) == message


def test_a_bad_node_list_is_an_error_naming_the_line_and_column() -> None:
    with pytest.raises(openb.OpenbError, match=r"^n.csv: line 1: missing column gpu \(expected"):
        openb.read_nodes("sn,cpu_milli,memory_mib,num_gpu,model\n", "n.csv")
    with pytest.raises(openb.OpenbError, match="^n.csv: line 3: column memory_mib: '1.5' is not"):
        openb.read_nodes("sn,cpu_milli,memory_mib,gpu,model\na,1,1,0,\nb,1,1.5,0,\n", "n.csv")


def test_integers_pandas_wrote_back_as_floats_are_read() -> None:
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
        "openb-pod-0,1000.0,10,1,1000,5.0,9.0,\n"
    )
    (pod,) = openb.read_pods(text, "p.csv")
    assert (pod.cpu_milli, pod.creation_time, pod.deletion_time, pod.scheduled_time) == (
        1000,
        5,
        9,
        None,
    )


def test_the_command_writes_the_trace_and_the_cluster_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "openb.sktrace"
    argv = ["convert-openb", "--nodes", str(NODES), "--pods", str(PODS), "--out", str(out)]
    assert main(argv) == 0
    trace, fmt = files.load(out)
    assert fmt == "simkube" and trace.kinds() == {"v1.Pod": 12}
    config = cluster_config.parse((tmp_path / "openb.cluster.yaml").read_text())
    assert config.node_count() == 3
    err = capsys.readouterr().err
    assert "12 of 12 pods (11 GPUs asked for); 3 sharing a GPU asking for a whole GPU each" in err
    assert main([*argv, "--cluster-out", str(tmp_path / "c.yaml"), "--gpu-sharing", "skip",
                 "--start", "1m", "--end", "600", "--limit", "3"]) == 0  # fmt: skip
    trace, _ = files.load(out)
    assert trace.objects_applied() == 3
    assert cluster_config.parse((tmp_path / "c.yaml").read_text()).node_count() == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pods", "missing.csv"], "--pods: missing.csv: No such file or directory"),
        (["--limit", "0"], "--limit: must be >= 1"),
        (["--start", "100", "--end", "50"], "--end: 50 is not after --start 100"),
        (["--start", "soon"], '--start: time: invalid duration "soon"'),
        (["--namespace", "Open_B"], "--namespace: 'Open_B' is not a namespace name"),
        (["--start", "9999"], "no pod to convert (0 of 12 pods"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["convert-openb", "--nodes", str(NODES), "--pods", str(PODS)]
    argv += ["--out", str(tmp_path / "t.sktrace"), *extra]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "t.sktrace").exists()


def test_a_bad_row_fails_the_command_naming_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "openb_pod_list_bad.csv"
    lines = PODS.read_text().splitlines()
    lines[4] = lines[4].replace(",1,1000,V100M32,", ",one,1000,V100M32,")
    bad.write_text("\n".join(lines) + "\n")
    argv = ["convert-openb", "--nodes", str(NODES), "--pods", str(bad)]
    with pytest.raises(SystemExit) as e:
        main([*argv, "--out", str(tmp_path / "t.sktrace")])
    assert e.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m kemu.trace: error: {bad}: line 5: column num_gpu: 'one' is not an "
        "integer >= 0\n"
    )
