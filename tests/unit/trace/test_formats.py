"""SimKube's trace format and kube-scheduler-simulator's record, read and written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import msgpack
import pytest

from kemu.machinery.jsonvalue import JSONObject
from kemu.trace import files, kss, simkube
from kemu.trace.model import Lifecycle, Trace, TraceEvent, TrackedObject

FIXTURES = Path(__file__).parents[2] / "fixtures" / "simkube"


def _read(name: str) -> Trace:
    return simkube.read((FIXTURES / name).read_bytes())


def test_the_bare_pods_example_has_four_pods_with_their_lifecycles() -> None:
    trace = _read("bare-pods.sktrace")
    assert [len(e.applied) for e in trace.events] == [1, 1, 1, 1]
    assert trace.kinds() == {"v1.Pod": 4}
    assert trace.namespaces() == ["testing"]
    assert trace.span == 162
    assert trace.tracked["v1.Pod"] == TrackedObject(("",), track_lifecycle=True, skip_owned=True)
    assert trace.lifecycles_of("v1.Pod", "testing/bare-pod-1781282449") == [
        Lifecycle(1781282468, 1781282480)
    ]
    assert trace.lifecycles_of("v1.Pod", "testing/bare-pod-1781282630") == [Lifecycle(1781282631)]


def test_the_cronjob_example_has_its_three_finished_jobs_and_an_empty_first_event() -> None:
    trace = _read("cronjob.sktrace")
    assert [(len(e.applied), len(e.deleted)) for e in trace.events] == [(0, 0), (1, 0), (0, 1)]
    assert trace.kinds() == {"batch/v1.CronJob": 1}
    runs = trace.lifecycles_of("batch/v1.CronJob", "default/hello-simkube")
    assert [lc.duration for lc in runs] == [30, 30, 30]
    # a tracked kind without paths gets SimKube's default ones (its normalize())
    assert trace.tracked["apps/v1.StatefulSet"].pod_spec_template_paths == ("/spec/template",)


def test_the_dsb_example_holds_helm_rendered_deployments_scaled_over_time() -> None:
    trace = _read("dsb-scaling.sktrace")
    assert len(trace.events) == 19
    assert trace.kinds() == {"apps/v1.Deployment": 46}
    assert len(trace.events[1].applied) == 27
    assert len(trace.index["apps/v1.Deployment"]) == 27
    assert trace.pod_lifecycles == {}


@pytest.mark.parametrize("name", ["bare-pods.sktrace", "cronjob.sktrace", "dsb-scaling.sktrace"])
def test_a_simkube_trace_written_back_reads_equal(name: str) -> None:
    trace = _read(name)
    assert simkube.read(simkube.write(trace)) == trace


def test_a_kemu_written_trace_has_simkubes_field_names_and_reads_back_equal() -> None:
    pod: JSONObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
    }
    trace = Trace(
        tracked={"v1.Pod": TrackedObject(("",), track_lifecycle=True, skip_owned=True)},
        events=[TraceEvent(100), TraceEvent(100, applied=[pod]), TraceEvent(160, deleted=[pod])],
        index={"v1.Pod": {"ns/p": 2**64 - 1}},
        pod_lifecycles={
            ("v1.Pod", "ns/p"): {0: [Lifecycle(101, 131), Lifecycle(140), Lifecycle()]}
        },
    )
    data = simkube.write(trace)
    assert simkube.read(data) == trace
    raw = msgpack.unpackb(data, strict_map_key=False, use_list=False)
    assert list(raw) == ["version", "config", "events", "index", "pod_lifecycles"]
    assert raw["config"] == {
        "trackedObjects": {
            "v1.Pod": {"podSpecTemplatePaths": ("",), "trackLifecycle": True, "skipOwned": True}
        }
    }
    assert raw["events"][1]["ts"] == 100 and set(raw["events"][1]) == {
        "ts",
        "applied_objs",
        "deleted_objs",
    }
    assert raw["pod_lifecycles"][("v1.Pod", "ns/p")][0] == (
        {"Finished": (101, 131)},
        {"Running": 140},
        "Empty",
    )


def test_another_version_or_a_broken_file_is_an_error_naming_what() -> None:
    with pytest.raises(simkube.TraceFormatError, match="version: 1 is not supported"):
        simkube.read(msgpack.packb({"version": 1}))
    bad = {"version": 2, "config": {}, "events": [{"ts": "x"}], "index": {}, "pod_lifecycles": {}}
    with pytest.raises(simkube.TraceFormatError, match=r"events\[0\]\.ts: expected an integer"):
        simkube.read(msgpack.packb(bad))
    with pytest.raises(simkube.TraceFormatError, match="not a msgpack"):
        simkube.read(b"\x81\xc1")


def _record(time: str, event: str, resource: Mapping[str, object]) -> str:
    return json.dumps({"time": time, "event": event, "resource": resource})


def test_a_kss_record_keeps_adds_spec_changes_and_deletions_not_pod_updates() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "4"}},
    }
    heartbeat = {**node, "metadata": {"name": "n1", "resourceVersion": "2"}}
    tainted = {**node, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    bound = {**pod, "spec": {"nodeName": "n1"}}
    text = "\n".join(
        [
            _record("2024-05-01T10:00:00Z", "Add", node),
            _record("2024-05-01T10:00:00.5Z", "Add", pod),
            _record("2024-05-01T10:00:01Z", "Update", bound),
            _record("2024-05-01T10:00:02Z", "Update", heartbeat),
            _record("2024-05-01T10:00:03Z", "Update", tainted),
            _record("2024-05-01T10:00:04Z", "Delete", pod),
        ]
    )
    trace = kss.read(text)
    assert [(e.ts - 1714557600, len(e.applied), len(e.deleted)) for e in trace.events] == [
        (0.0, 1, 0),
        (0.5, 1, 0),
        (3.0, 1, 0),
        (4.0, 0, 1),
    ]
    assert set(trace.tracked) == {"v1.Node", "v1.Pod"}
    with pytest.raises(kss.KssFormatError, match="line 2: event"):
        kss.read(_record("2024-05-01T10:00:00Z", "Add", pod) + "\n" + '{"event": "Nope"}')


def test_files_are_told_apart_by_their_first_bytes(tmp_path: Path) -> None:
    trace, fmt = files.load(FIXTURES / "bare-pods.sktrace")
    assert fmt == "simkube" and len(trace.events) == 4
    record = tmp_path / "record.jsonl"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}}
    record.write_text(_record("2024-05-01T10:00:00Z", "Add", pod) + "\n")
    assert files.load(record)[1] == "kss"
    other = tmp_path / "other"
    other.write_text("hello")
    with pytest.raises(files.TraceFileError, match="neither a SimKube trace"):
        files.load(other)
    written = tmp_path / "out.sktrace"
    files.save(written, trace)
    assert files.load(written)[0] == trace
