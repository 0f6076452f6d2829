"""A trace's objects as kemu's, and CLUSTER.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.trace import cluster_config, objects, simkube
from kemu.trace.model import Lifecycle, Trace, TraceEvent

FIXTURES = Path(__file__).parents[2] / "fixtures" / "simkube"
EXAMPLES = Path(__file__).parents[3] / "examples" / "traces"


def _pod(**spec: JSON) -> JSONObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "9"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
        "status": {"phase": "Running"},
    }


def test_what_the_recorded_cluster_wrote_is_stripped_and_unknown_fields_listed() -> None:
    obj = _pod(nodeName="n1", priority=0, someNewField={"x": 1})
    obj["spec"]["containers"][0]["futureKnob"] = True  # type: ignore[index, call-overload]
    prepared = objects.prepare(obj)
    assert prepared is not None
    pod = prepared.obj
    assert isinstance(pod, types_pb2.Pod)
    assert pod.spec.node_name == "" and not pod.spec.HasField("priority")
    assert pod.metadata.uid == "" and pod.metadata.resource_version == ""
    assert pod.status.phase == ""
    assert sorted(prepared.dropped) == ["spec.containers[].futureKnob", "spec.someNewField"]
    assert (prepared.namespace, prepared.name) == ("ns", "p")


def test_a_kind_kemu_does_not_run_is_not_prepared() -> None:
    template: JSONObject = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "c"},
    }
    assert objects.prepare(template) is None
    # the same kind under another group is not kemu's either
    assert objects.prepare({"apiVersion": "extensions/v1beta1", "kind": "Deployment"}) is None


def test_every_object_of_the_simkube_examples_applies_unchanged() -> None:
    for name in ("bare-pods.sktrace", "dsb-scaling.sktrace"):
        trace = simkube.read((FIXTURES / name).read_bytes())
        for event in trace.events:
            for obj in event.applied:
                prepared = objects.prepare(obj)
                assert prepared is not None and prepared.dropped == (), obj["metadata"]


def test_the_cronjob_example_runs_its_recorded_30_s_on_the_job_template() -> None:
    trace = simkube.read((FIXTURES / "cronjob.sktrace").read_bytes())
    (cronjob,) = [obj for event in trace.events for obj in event.applied]
    assert objects.run_duration(trace, cronjob) == 30
    prepared = objects.prepare(cronjob, run_duration=30)
    assert prepared is not None and prepared.kind.kind == "CronJob"
    template = prepared.obj.spec.job_template.spec.template  # type: ignore[attr-defined]
    assert template.metadata.annotations[objects.RUN_DURATION] == "30s"


def test_a_finished_lifecycle_becomes_the_kubelets_run_duration() -> None:
    trace = simkube.read((FIXTURES / "bare-pods.sktrace").read_bytes())
    first = trace.events[0].applied[0]
    assert objects.run_duration(trace, first) == 12
    prepared = objects.prepare(first, run_duration=12)
    assert prepared is not None
    assert prepared.obj.metadata.annotations[objects.RUN_DURATION] == "12s"  # type: ignore[attr-defined]
    last = trace.events[-1].applied[0]  # still running at the end of the trace
    assert objects.run_duration(trace, last) is None
    job: JSONObject = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }
    traced = Trace(
        events=[TraceEvent(0, applied=[job])],
        pod_lifecycles={("batch/v1.Job", "ns/j"): {1: [Lifecycle(5), Lifecycle(6, 16)]}},
    )
    assert objects.run_duration(traced, job) == 10
    prepared = objects.prepare(job, run_duration=10)
    assert prepared is not None
    template = prepared.obj.spec.template  # type: ignore[attr-defined]
    assert template.metadata.annotations[objects.RUN_DURATION] == "10s"


def test_peak_demand_follows_scaling_and_deletion() -> None:
    trace = simkube.read((FIXTURES / "dsb-scaling.sktrace").read_bytes())
    requests, pods = objects.peak_demand(trace)
    assert pods == 52 and requests["cpu"] == 52_000
    config = cluster_config.fitted(requests, pods)
    assert config.node_count() == 15  # 13 nodes of 4 cpu, and a tenth more
    assert not config.autoscaling


def test_the_readme_cluster_example_parses() -> None:
    text = (EXAMPLES / "cluster.yaml").read_text()
    config = cluster_config.parse(text)
    assert [p.name for p in config.nodes] == ["small", "big"]
    assert config.nodes[0].taints == ("dedicated=batch:NoSchedule",)
    assert config.autoscaling and config.scheduler_config is not None
    assert config.versions == {"scheduler": "1.36"}
    assert config.autoscaler_flags == ("--scan-interval", "10s", "--expander", "least-waste")
    assert config.nodes[0].kubelet_args == ("--node-lease-duration-seconds", "40")
    assert config.args == {"controllermanager": ("--node-monitor-grace-period", "50s")}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: [{name: a, count: 0}]", r"nodes\[0\]\.count: must be an integer >= 1"),
        ("nodes: [{count: 2}]", r"nodes\[0\]\.name: required"),
        ("nodes: [{name: a, capacity: {cpu: lots}}]", r"nodes\[0\]\.capacity\.cpu"),
        ("nodes: [{name: a, taints: [{key: k, effect: Never}]}]", r"taints\[0\]\.effect"),
        ("versions: {scheduler: '1.99'}", r"versions\.scheduler: emulated version 1\.99"),
        ("versions: {etcd: '1.30'}", r"versions\.etcd: unknown component"),
        ("featureGates: {scheduler: {NoSuchGate: true}}", r"featureGates\.scheduler: .*NoSuchGate"),
        ("schedulerConfig: {kind: Other}", r"schedulerConfig: "),
        ("nodeGroups: [{name: g, minSize: 0}]", r"nodeGroups\[0\]\.maxSize"),
        ("autoscaler: {expander: random}", r"autoscaler: its flags need nodeGroups"),
        ("node: []", r"node: unknown key"),
        ("seed: -1", r"seed: "),
        (
            "nodes: [{name: a, kubeletArgs: [--node-lease-duration-seconds, '0']}]",
            r"nodes\[0\]\.kubeletArgs: --node-lease-duration-seconds: must be at least 1",
        ),
        (
            "nodes: [{name: a, kubeletArgs: [--no-such-flag]}]",
            r"nodes\[0\]\.kubeletArgs: unrecognized arguments: --no-such-flag",
        ),
        ("nodes: [{name: a, kubeletArgs: [--server=x]}]", r"kubeletArgs\[0\]: --server is set"),
        (
            "nodes: [{name: a, kubeletArgs: [--node-control, stdin]}]",
            r"kubeletArgs\[0\]: --node-control is set",
        ),
        (
            "args: {controllermanager: [--node-monitor-grace-period, five]}",
            r"args\.controllermanager: argument --node-monitor-grace-period: ",
        ),
        ("args: {kubelet: []}", r"args\.kubelet: unknown component"),
        ("args: {scheduler: [--config, x.yaml]}", r"args\.scheduler\[0\]: --config is set"),
        ("args: {apiserver: [--emulated-version, '1.30']}", r"versions or featureGates"),
        ("latency: {apiserver: 5}", r"latency\.apiserver: expected a latency such as 200ms"),
        ("latency: {etcd: gauss:1s}", r"latency\.etcd: 'gauss:1s': unknown distribution"),
        ("latency: {kubelet: 1s}", r"latency\.kubelet: unknown key \(known: apiserver, etcd\)"),
        ("args: {scheduler: [--apiserver-latency, 1s]}", r"--apiserver-latency is set"),
        ("args: {apiserver: [--etcd-latency=1s]}", r"--etcd-latency is set"),
    ],
)
def test_a_bad_cluster_file_names_the_key(text: str, message: str) -> None:
    with pytest.raises(cluster_config.ClusterConfigError, match=message):
        cluster_config.parse(text)


def test_further_flags_are_taken_as_each_component_parses_them() -> None:
    text = "args: {apiserver: [--max-requests-inflight, '10'], scheduler: [--leader-elect]}"
    assert cluster_config.parse(text).args == {
        "apiserver": ("--max-requests-inflight", "10"),
        "scheduler": ("--leader-elect",),
    }


def test_the_api_paths_latency_is_drawn_from_the_files_seed() -> None:
    from kemu.machinery.latency import Latency, PathLatency

    config = cluster_config.parse("seed: 4\nlatency: {apiserver: uniform:100ms-300ms, etcd: 2ms}")
    assert config.latency == PathLatency(
        Latency.parse("uniform:100ms-300ms"), Latency.parse("2ms"), seed=4
    )
    assert cluster_config.parse("").latency.none
