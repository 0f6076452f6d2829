"""The scheduler's decision log: bounded per pod and in pods, found by the pod's latest name,
served as JSON with the documented keys, and bad queries refused with a 400's message."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kemu.component.health import DebugRequestError
from kemu.scheduling.arrays import IntArray
from kemu.scheduling.runtime import NodePluginScores
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node
from scheduler.decisions import (
    RESERVE,
    SCHEDULE,
    SCHEDULED,
    UNSCHEDULABLE,
    Attempt,
    DecisionLog,
    Phase,
    PodGroupOutcome,
    ScoredNode,
    Victim,
    deep_size,
    top_column_scores,
    top_node_scores,
)


def begin(log: DecisionLog, uid: str, key: str, t: float = 1.0) -> Attempt:
    return log.begin(uid, key, time=t, profile="default-scheduler", cycle=SCHEDULE, nominated="")


def test_the_log_keeps_the_last_attempts_of_the_last_pods() -> None:
    log = DecisionLog(max_pods=2, max_attempts_per_pod=3)
    for t in range(5):
        begin(log, "u1", "ns/a", float(t))
    found = log.attempts("ns/a")
    assert found is not None and [a.time for a in found[1]] == [2.0, 3.0, 4.0]
    begin(log, "u2", "ns/b")
    begin(log, "u1", "ns/a")  # a is the most recent again
    begin(log, "u3", "ns/c")  # b, the least recently attempted, goes
    assert log.attempts("ns/b") is None
    assert log.attempts("ns/a") is not None and log.attempts("ns/c") is not None
    summary = log.report({})
    assert summary.pop("bytesPerAttempt") > 0
    assert summary == {"pods": 2, "attempts": 4, "maxPods": 2, "maxAttemptsPerPod": 3}


def test_a_recreated_pod_is_found_by_its_name_at_its_latest_uid() -> None:
    log = DecisionLog()
    begin(log, "old", "ns/a")
    begin(log, "new", "ns/a")
    assert log.report({"pod": "ns/a"})["uid"] == "new"
    assert len(log.report({"pod": "ns/a"})["attempts"]) == 1
    assert log.report({"pod": "ns/none"}) == {"pod": "ns/none", "uid": None, "attempts": []}


def test_an_attempt_as_json() -> None:
    log = DecisionLog()
    a = log.begin("u", "ns/p", time=5.0, profile="p", cycle=SCHEDULE, nominated="n1")
    a.result, a.nodes, a.evaluated = UNSCHEDULABLE, 3, 3
    a.reasons = {"Insufficient cpu": 2, "node(s) had untolerated taint {x: y}": 1}
    a.examples = {"Insufficient cpu": ("n1", "n3")}
    a.post_filter_nominated = "n2"
    a.victims = (Victim("ns/low", 10, ("ns/budget",)), Victim("ns/lower", 5))
    a.pdb_violations = 1
    a.preemption_candidates, a.preemption_criterion = 2, "fewestPDBViolations"
    a.cleared_nominations = ("ns/nominated",)
    doc = log.report({"pod": "ns/p"})["attempts"][0]
    assert doc["result"] == "unschedulable" and doc["node"] is None
    assert doc["nominatedNodeName"] == "n1" and doc["victims"] == ["ns/low", "ns/lower"]
    assert doc["exampleNodes"] == {"Insufficient cpu": ["n1", "n3"]}
    assert doc["preFilterNodes"] is None and doc["candidates"] == [] and doc["phases"] == []
    assert doc["rejectedBy"] == {}
    assert doc["preemption"] == {
        "nominatedNodeName": "n2",
        "victims": [
            {"pod": "ns/low", "priority": 10, "pdbs": ["ns/budget"]},
            {"pod": "ns/lower", "priority": 5, "pdbs": []},
        ],
        "pdbViolations": 1,
        "candidates": 2,
        "criterion": "fewestPDBViolations",
        "clearedNominations": ["ns/nominated"],
    }
    b = begin(log, "u", "ns/p")
    assert log.report({"pod": "ns/p"})["attempts"][1]["result"] == "running"
    b.result, b.node, b.bound, b.pre_filter_nodes = SCHEDULED, "n2", True, 4
    b.candidates, b.score_plugins = (ScoredNode("n2", 150, (100, 50)),), ("A", "B")
    b.phases = (Phase(RESERVE, "Success", 0.001), Phase("PreBind", "Error", 2.5, "SlowPreBind"))
    doc = log.report({"pod": "ns/p"})["attempts"][1]
    assert (doc["result"], doc["node"], doc["bound"]) == ("scheduled", "n2", True)
    assert doc["preFilterNodes"] == 4
    assert doc["candidates"] == [{"node": "n2", "total": 150, "scores": {"A": 100, "B": 50}}]
    assert doc["phases"] == [
        {"point": "Reserve", "code": "Success", "seconds": 0.001},
        {"point": "PreBind", "code": "Error", "seconds": 2.5, "plugin": "SlowPreBind"},
    ]
    assert "preemption" not in doc


def test_deep_size_counts_each_object_once() -> None:
    name = "a-node-name-long-enough-to-count"
    one = deep_size([(name,)])
    assert deep_size([(name,), (name,)]) == one + sys.getsizeof((name,))  # the name once
    attempt = Attempt(1.0, "p", SCHEDULE, "")
    bare = deep_size([attempt])
    attempt.phases = (Phase(RESERVE, "Success", 0.5),)
    assert deep_size([attempt]) > bare  # dataclass fields are followed


def _nodes(*names: str) -> list[NodeInfo]:
    out = []
    for name in names:
        info = NodeInfo()
        info.set_node(make_node(name).obj())
        out.append(info)
    return out


def test_the_batch_paths_candidates_are_the_chosen_node_then_the_best_others() -> None:
    feasible = _nodes("a", "b", "c", "d", "e")
    fit = np.array([10, 90, 50, 70, 30], dtype=np.int64)
    per_plugin: dict[str, IntArray | int] = {"Fit": fit, "Constant": 7}
    totals = fit + 7
    # A tie-broken choice that is not the best: it still comes first.
    got, plugins = top_column_scores(feasible, totals, per_plugin, 2)
    assert [(c.node, c.total) for c in got] == [("c", 57), ("b", 97), ("d", 77)]
    assert plugins == ("Fit", "Constant") and got[1].scores == (90, 7)
    alone, _ = top_column_scores(feasible[:1], totals[:1], per_plugin, 0)
    assert [c.node for c in alone] == ["a"]


def test_the_per_node_paths_candidates_carry_each_plugins_weighted_score() -> None:
    per_plugin = (("Fit", [20, 80, 60]), ("Spread", [10, 0, 30]))
    scores = [
        NodePluginScores(name, total, i, per_plugin)
        for i, (name, total) in enumerate([("a", 30), ("b", 80), ("c", 90)])
    ]
    got, plugins = top_node_scores(scores, "b")
    assert [(c.node, c.total) for c in got] == [("b", 80), ("c", 90), ("a", 30)]
    assert plugins == ("Fit", "Spread") and got[1].scores == (60, 30)


@pytest.mark.parametrize("bad", ["a", "/a", "ns/", "ns/a/b"])
def test_a_pod_that_is_not_namespace_slash_name_is_refused(bad: str) -> None:
    with pytest.raises(DebugRequestError, match="pod: .* is not NAMESPACE/NAME"):
        DecisionLog().report({"pod": bad})


def test_a_log_keeps_at_least_one_of_each() -> None:
    with pytest.raises(ValueError):
        DecisionLog(max_pods=0)


def test_a_pod_held_at_pre_enqueue_then_tried_in_its_groups_cycle() -> None:
    # Gated (no attempt yet): the first hold's time is kept while the same plugin holds it.
    log = DecisionLog()
    log.gate("u1", "ns/a", time=1.0, plugin="GangScheduling", message="waiting (1 of 3)")
    log.gate("u1", "ns/a", time=2.0, plugin="GangScheduling", message="waiting (2 of 3)")
    assert log.latest("u1") is None
    report = log.report({"pod": "ns/a"})
    assert report["attempts"] == []
    assert report["gated"] == {
        "since": 1.0,
        "plugin": "GangScheduling",
        "message": "waiting (2 of 3)",
    }
    # Its group's cycle: an attempt with the group's outcome; the hold is over.
    attempt = log.begin("u1", "ns/a", time=3.0, profile="p", cycle="pod-group", nominated="")
    attempt.pod_group = PodGroupOutcome("ns/g", 3, UNSCHEDULABLE, "minCount (3) ...")
    report = log.report({"pod": "ns/a"})
    assert "gated" not in report
    assert report["attempts"][0]["podGroup"] == {
        "group": "ns/g",
        "members": 3,
        "result": UNSCHEDULABLE,
        "message": "minCount (3) ...",
    }
