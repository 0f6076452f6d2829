"""A replay's report from what was observed, and the difference of two reports."""

from __future__ import annotations

from kemu.trace import diff, report
from kemu.trace.observe import NodeRecord, Observed, PodRecord, Preemption


def test_step_series_counts_open_intervals_at_every_change() -> None:
    series = report.step_series([(0, 10), (5, None), (5, 5), (20, 30)], end=40)
    assert series == [[0, 1], [5, 2], [10, 1], [20, 2], [30, 1], [40, 1]]
    assert report.step_series([], end=10) == []


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert report.percentile(values, 50) == 50
    assert report.percentile(values, 99) == 99
    assert report.percentile([], 50) is None


def _observed() -> Observed:
    o = Observed()
    o.replica_set_owners["ns/web-1"] = ("Deployment", "web")
    o.pods["u1"] = PodRecord("ns/web-1-a", "u1", 100.0, 10, "ReplicaSet", "web-1", "n1", 102.0)
    o.pods["u2"] = PodRecord("ns/web-1-b", "u2", 100.0, 11, "ReplicaSet", "web-1", "", None)
    o.pods["u3"] = PodRecord("ns/low", "u3", 90.0, 5, node="n1", bound=90.0, deleted=115.0)
    o.pods["u3"].preempted = 110.0
    o.pods["u4"] = PodRecord("ns/high", "u4", 105.0, 12, node="n1", bound=120.0)
    o.pods["u4"].nominated = ["n1", ""]
    o.preemptions[("u4", "n1")] = Preemption(110.0, "u4", "ns/high", "n1", ["ns/low"])
    o.nodes["n1"] = NodeRecord("n1", "", 50.0)
    o.nodes["g-0"] = NodeRecord("g-0", "g", 130.0, deleted=160.0)
    return o


def _build(o: Observed) -> report.Report:
    return report.build(
        o,
        origin=100.0,
        end=200.0,
        span=90.0,
        wall=3.0,
        startup=1.0,
        objects=[report.ObjectState("Deployment", "ns", "web", 2)],
        unsupported={"kinds": {}, "fields": {}},
        refused=[],
        trace_info={
            "file": "t.json",
            "format": "simkube",
            "events": 3,
            "applied": 3,
            "deleted": 0,
            "kinds": {},
        },
        cluster_info={},
    )


def test_the_report_has_the_documented_keys_and_figures() -> None:
    r = _build(_observed())
    for key in (
        "span_s",
        "wall_s",
        "startup_s",
        "objects",
        "pods",
        "unsupported",
        "pods_created",
        "pods_bound",
        "time_to_bind_s",
        "pending_over_time",
        "preemptions",
        "victims",
        "nominated_node_name_s",
        "nodes_over_time",
        "node_hours",
        "evictions",
        "unschedulable_at_end",
    ):
        assert key in r, key
    assert (r["pods_created"], r["pods_bound"]) == (4, 3)
    assert r["time_to_bind_s"]["max"] == 15.0  # high: created at 105, bound at 120
    assert r["victims"] == ["ns/low"]
    assert r["preemptions"] == [
        {"at": 10.0, "preemptor": "ns/high", "node": "n1", "victims": ["ns/low"]}
    ]
    assert r["nominated_node_name_s"]["p50"] == 10.0  # from the preemption to the binding
    assert r["unschedulable_at_end"] == ["ns/web-1-b"]
    assert r["objects"] == [
        {
            "kind": "Deployment",
            "namespace": "ns",
            "name": "web",
            "desired_replicas": 2,
            "pods_bound": 1,
        }
    ]
    assert r["pods"][1]["owner"] == "Deployment/ns/web"
    assert r["nodes_over_time"] == [[-50.0, 1], [30.0, 2], [60.0, 1], [100.0, 1]]
    assert r["node_hours"] == round((150 + 30) / 3600, 4)
    assert r["speedup"] == 30.0
    assert "pods created/bound        4 / 3" in report.table(r)


def test_a_report_compared_with_itself_differs_in_nothing() -> None:
    r = _build(_observed())
    assert diff.diff(r, r) == []


def test_pods_are_matched_by_owner_and_creation_order_whatever_their_names() -> None:
    a = _build(_observed())
    other = _observed()
    other.pods["u1"].key = "ns/web-1-zz"  # another generated name, the same pod
    other.pods["u1"].node = "n2"
    other.pods["u1"].bound = 108.0  # 6 s later than in a
    other.pods["u3"].preempted = None
    other.pods["u2"].bound, other.pods["u2"].node = 101.0, "n1"
    b = _build(other)
    found = {(d["pod"], d["what"]) for d in diff.diff(a, b)}
    assert found == {
        ("Deployment/ns/web#0", "node"),
        ("Deployment/ns/web#0", "bound"),
        ("Deployment/ns/web#1", "node"),
        ("Deployment/ns/web#1", "unschedulable"),
        ("ns/low", "preempted"),
    }
    assert diff.diff(a, b, bind_threshold=10.0) != [] and all(
        d["what"] != "bound" for d in diff.diff(a, b, bind_threshold=10.0)
    )
    del other.pods["u2"]
    c = _build(other)
    assert ("Deployment/ns/web#1", "only_in_a") in {(d["pod"], d["what"]) for d in diff.diff(a, c)}
