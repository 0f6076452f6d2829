"""The scheduler's decision log: bounded per pod and in pods, found by the pod's latest name,
served as JSON with the documented keys, and bad queries refused with a 400's message."""

from __future__ import annotations

import pytest

from kemu.component.health import DebugRequestError
from scheduler.decisions import (
    SCHEDULE,
    SCHEDULED,
    UNSCHEDULABLE,
    Attempt,
    DecisionLog,
    Victim,
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
    a.victims = (Victim("ns/low", 10),)
    doc = log.report({"pod": "ns/p"})["attempts"][0]
    assert doc["result"] == "unschedulable" and doc["node"] is None
    assert doc["nominatedNodeName"] == "n1" and doc["victims"] == ["ns/low"]
    assert doc["exampleNodes"] == {"Insufficient cpu": ["n1", "n3"]}
    assert doc["preemption"] == {
        "nominatedNodeName": "n2",
        "victims": [{"pod": "ns/low", "priority": 10}],
        "pdbViolations": 0,
    }
    b = begin(log, "u", "ns/p")
    assert log.report({"pod": "ns/p"})["attempts"][1]["result"] == "running"
    b.result, b.node, b.bound = SCHEDULED, "n2", True
    doc = log.report({"pod": "ns/p"})["attempts"][1]
    assert (doc["result"], doc["node"], doc["bound"]) == ("scheduled", "n2", True)
    assert "preemption" not in doc


@pytest.mark.parametrize("bad", ["a", "/a", "ns/", "ns/a/b"])
def test_a_pod_that_is_not_namespace_slash_name_is_refused(bad: str) -> None:
    with pytest.raises(DebugRequestError, match="pod: .* is not NAMESPACE/NAME"):
        DecisionLog().report({"pod": bad})


def test_a_log_keeps_at_least_one_of_each() -> None:
    with pytest.raises(ValueError):
        DecisionLog(max_pods=0)
