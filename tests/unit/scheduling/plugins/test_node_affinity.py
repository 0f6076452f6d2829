from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_affinity
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PreFilterResult
from tests.unit.scheduling.plugins.fakes import FakeHandle

ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_CONFLICT = "pod affinity terms conflict"


def pod(spec: dict[str, Any] | None = None) -> types_pb2.Pod:
    p = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="default", uid="uid-p"))
    if spec:
        convert.fill_message(p.spec, spec)
    return p


def node(name: str = "", labels: dict[str, str] | None = None) -> types_pb2.Node:
    n = types_pb2.Node(metadata=types_pb2.ObjectMeta(name=name))
    n.metadata.labels.update(labels or {})
    return n


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def required(*terms: dict[str, Any], node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return spec


def terms(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def fields(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchFields": list(exprs)}


_ADDED_NODE2 = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [fields(name_in("node2"))]
    }
}

# Upstream TestNodeAffinity: (pod spec, node labels, node name, want Filter reason,
# want PreFilter status (None: Success), want PreFilter node names, args, run PreFilter).
FILTER_CASES = [
    pytest.param({"nodeSelector": {"foo": "bar"}}, {}, "", ERR_POD, None, None, {}, True,
                 id="missing labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", None, None, None, {}, True,
                 id="same labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", None, None,
                 None, {}, True, id="node labels are superset"),
    pytest.param({"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "", ERR_POD,
                 None, None, {}, True, id="node labels are subset"),
    pytest.param(required(terms(expr("foo", "In", "bar", "value2"))), {"foo": "bar"}, "", None,
                 None, None, {}, True, id="In matches"),
    pytest.param(required(terms(expr("kernel-version", "Gt", "0204"))),
                 {"kernel-version": "0206"}, "", None, None, None, {}, True, id="Gt matches"),
    pytest.param(required(terms(expr("kernel-version", "Lt", "0204"))),
                 {"kernel-version": "0206"}, "", ERR_POD, None, None, {}, True,
                 id="Lt does not match"),
    pytest.param(required(terms(expr("mem-type", "NotIn", "DDR", "DDR2"))),
                 {"mem-type": "DDR3"}, "", None, None, None, {}, True, id="NotIn matches"),
    pytest.param(required(terms(expr("GPU", "Exists"))), {"GPU": "NVIDIA-GRID-K1"}, "", None,
                 None, None, {}, True, id="Exists matches"),
    pytest.param(required(terms(expr("GPU", "DoesNotExist"))), {"GPU": "NVIDIA-GRID-K1"}, "",
                 ERR_POD, None, None, {}, True, id="DoesNotExist does not match"),
    pytest.param(required(terms(expr("foo", "In", "value1", "value2"))), {"foo": "bar"}, "",
                 ERR_POD, None, None, {}, True, id="affinity not matching the labels"),
    pytest.param(required(terms()), {"foo": "bar"}, "", ERR_POD, None, None, {}, True,
                 id="empty matchExpressions match no objects"),
    pytest.param({}, {"foo": "bar"}, "", None, Status(Code.SKIP), None, {}, True,
                 id="no affinity: PreFilter skips"),
    pytest.param({"affinity": {"nodeAffinity": {}}}, {"foo": "bar"}, "", None, Status(Code.SKIP),
                 None, {}, True, id="affinity with nil required node selector: skip"),
    pytest.param(required(terms(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
                 {"GPU": "NVIDIA-GRID-K1"}, "", None, None, None, {}, True,
                 id="expressions are ANDed and match"),
    pytest.param(required(terms(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
                 {"GPU": "NVIDIA-GRID-K1"}, "", ERR_POD, None, None, {}, True,
                 id="expressions are ANDed and do not match"),
    pytest.param(required(terms(expr("foo", "In", "bar", "value2")),
                          terms(expr("diffkey", "In", "wrong", "value2"))),
                 {"foo": "bar"}, "", None, None, None, {}, True, id="terms are ORed"),
    pytest.param(required(terms(expr("foo", "Exists")), node_selector={"foo": "bar"}),
                 {"foo": "bar"}, "", None, None, None, {}, True,
                 id="affinity and nodeSelector both satisfied"),
    pytest.param(required(terms(expr("foo", "Exists")), node_selector={"foo": "bar"}),
                 {"foo": "barrrrrr"}, "", ERR_POD, None, None, {}, True,
                 id="affinity matches but nodeSelector does not"),
    pytest.param(required(terms(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
                 {"foo": "bar"}, "", ERR_POD, None, None, {}, True,
                 id="invalid value in a term matches nothing"),
    pytest.param(required(terms(expr("foo", "Bogus", "x"))), {"foo": "x"}, "", ERR_POD, None,
                 None, {}, True, id="invalid operator matches nothing"),
    pytest.param(required(fields(name_in("node1"))), {}, "node1", None, None, {"node1"}, {}, True,
                 id="matchFields In matches the node"),
    pytest.param(required(fields(name_in("node1"))), {}, "node2", ERR_POD, None, {"node1"}, {},
                 True, id="matchFields In does not match the node"),
    pytest.param(required(fields(name_in("node1"), name_in("node2")),
                          terms(expr("foo", "In", "bar"))),
                 {"foo": "bar"}, "node2", None, None, None, {}, True,
                 id="two terms: fields do not match, expressions do"),
    pytest.param(required({**fields(name_in("node1")), **terms(expr("foo", "In", "bar"))}),
                 {"foo": "bar"}, "node2", ERR_POD, None, {"node1"}, {}, True,
                 id="one term: fields do not match, expressions do"),
    pytest.param(required({**fields(name_in("node1")), **terms(expr("foo", "In", "bar"))}),
                 {"foo": "bar"}, "node1", None, None, {"node1"}, {}, True,
                 id="one term: both fields and expressions match"),
    pytest.param(required(fields(name_in("node1")), terms(expr("foo", "In", "not-match-to-bar"))),
                 {"foo": "bar"}, "node2", ERR_POD, None, None, {}, True,
                 id="two terms: neither matches"),
    pytest.param(required(fields(name_in("node1")), fields(name_in("node2"))), {}, "node2", None,
                 None, {"node1", "node2"}, {}, True, id="two terms of node name affinity"),
    pytest.param(required(fields(name_in("node1"), name_in("node2"))), {"foo": "bar"}, "node2",
                 ERR_POD, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_CONFLICT,)), None, {},
                 True, id="two conflicting matchFields requirements"),
    pytest.param(required(terms(expr("zone", "In", "foo"))), {"zone": "foo"}, "node2", None, None,
                 None, {"addedAffinity": _ADDED_NODE2}, True,
                 id="matches added affinity and the pod's"),
    pytest.param(required(terms(expr("zone", "In", "bar"))), {"zone": "foo"}, "node2", ERR_POD,
                 None, None, {"addedAffinity": _ADDED_NODE2}, True,
                 id="matches added affinity but not the pod's"),
    pytest.param({}, {"zone": "foo"}, "node2", ERR_ENFORCED, None, None,
                 {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [terms(expr("zone", "In", "bar"))]}}},
                 True, id="does not match added affinity"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", None, None,
                 None, {}, False, id="node selector matches without PreFilter"),
    pytest.param(required(terms(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
                 {"GPU": "NVIDIA-GRID-K1"}, "", None, None, None, {}, False,
                 id="node affinity matches without PreFilter"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "labels", "node_name", "reason", "pre_status", "pre_names", "args", "run_pre"),
    FILTER_CASES,
)
def test_filter(
    spec: dict[str, Any],
    labels: dict[str, str],
    node_name: str,
    reason: str | None,
    pre_status: Status | None,
    pre_names: set[str] | None,
    args: dict[str, Any],
    run_pre: bool,
) -> None:
    pl = node_affinity.new(args, FakeHandle())
    p = pod(spec)
    ni = NodeInfo(node(node_name, labels))
    state = CycleState()
    if run_pre:
        result, status = pl.pre_filter(state, p, [ni])
        assert status == (pre_status or Status()), status
        if pre_names is None:
            assert result is None
        else:
            assert result == PreFilterResult(frozenset(pre_names))
    status = pl.filter(state, p, ni)
    if reason is None:
        assert status.is_success(), status
    else:
        assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))


def preferred(*weighted: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"weight": w, "preference": t} for w, t in weighted]


AFFINITY1 = preferred((2, terms(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, terms(expr("foo", "In", "bar"))),
    (4, terms(expr("key", "In", "value"))),
    (5, terms(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def pref_spec(p: Any) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": p}}}


# Upstream TestNodeAffinityPriority.
SCORE_CASES = [
    pytest.param({}, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0], {},
                 True, id="no node affinity: all nodes score the same"),
    pytest.param(pref_spec(AFFINITY1), [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
                 [0, 0, 0], {}, True, id="no node matches the preferred terms"),
    pytest.param(pref_spec(AFFINITY1), [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
                 [MAX_NODE_SCORE, 0, 0], {}, True, id="only node1 matches"),
    pytest.param(pref_spec(AFFINITY2), [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
                 [18, MAX_NODE_SCORE, 36], {}, True, id="all match with different weights"),
    pytest.param({}, [("node1", LABEL1), ("node2", LABEL2)], [MAX_NODE_SCORE, 0],
                 {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": AFFINITY1}},
                 True, id="added affinity"),
    pytest.param(pref_spec(AFFINITY1), [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
                 [40, 60, MAX_NODE_SCORE],
                 {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
                     (3, terms(expr("key", "In", "value"))))}},
                 True, id="added affinity and the pod's"),
    pytest.param(pref_spec(AFFINITY2), [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
                 [18, MAX_NODE_SCORE, 36], {}, False, id="scores correctly without PreScore"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "nodes", "want", "args", "run_pre"), SCORE_CASES)
def test_score(
    spec: dict[str, Any],
    nodes: list[tuple[str, dict[str, str]]],
    want: list[int],
    args: dict[str, Any],
    run_pre: bool,
) -> None:
    pl = node_affinity.new(args, FakeHandle())
    p = pod(spec)
    infos = [NodeInfo(node(n, labels)) for n, labels in nodes]
    state = CycleState()
    if run_pre:
        status = pl.pre_score(state, p, infos)
        if not spec and not args:
            assert status.is_skip()
        else:
            assert status.is_success(), status
    raw = []
    for ni in infos:
        score, status = pl.score(state, p, ni)
        assert status.is_success(), status
        raw.append(NodeScore(ni.name, score))
    ext = pl.score_extensions()
    assert ext is not None
    normalized, status = ext.normalize_score(state, p, raw)
    assert status.is_success()
    assert [s.score for s in normalized] == want


def test_pre_score_with_an_invalid_preferred_term_is_an_error() -> None:
    pl = node_affinity.new({}, FakeHandle())
    p = pod(pref_spec(preferred((1, terms(expr("foo", "Gt", "notanumber"))))))
    status = pl.pre_score(CycleState(), p, [])
    assert status.is_error()
    assert "preferredDuringSchedulingIgnoredDuringExecution[0].preference" in status.message()


def test_preferred_terms_with_zero_weight_are_ignored() -> None:
    pl = node_affinity.new({}, FakeHandle())
    p = pod(pref_spec(preferred((0, terms(expr("foo", "In", "bar"))))))
    state = CycleState()
    assert pl.pre_score(state, p, []).is_success()
    assert pl.score(state, p, NodeInfo(node("n", LABEL1))) == (0, Status())


@pytest.mark.parametrize(
    ("spec", "old", "new", "want"),
    [
        # Upstream TestNodeAffinity_isSchedulableAfterNodeChange.
        (required(terms(expr("foo", "In", "bar"))), None, node("n", {"foo": "bar"}),
         QueueingHint.QUEUE),
        (required(terms(expr("foo", "In", "bar"))), None, node("n", {"foo": "baz"}),
         QueueingHint.SKIP),
        (required(terms(expr("foo", "In", "bar"))), node("n", {"foo": "baz"}),
         node("n", {"foo": "bar"}), QueueingHint.QUEUE),
        (required(terms(expr("foo", "In", "bar"))), node("n", {"foo": "bar"}),
         node("n", {"foo": "bar", "x": "y"}), QueueingHint.SKIP),
        (required(terms(expr("foo", "In", "bar"))), node("n", {"foo": "bar"}),
         node("n", {"foo": "baz"}), QueueingHint.SKIP),
        ({"nodeSelector": {"foo": "bar"}}, node("n", {}), node("n", {"foo": "bar"}),
         QueueingHint.QUEUE),
        ({}, None, node("n"), QueueingHint.QUEUE),
    ],
)  # fmt: skip
def test_node_hint(
    spec: dict[str, Any], old: types_pb2.Node | None, new: types_pb2.Node, want: QueueingHint
) -> None:
    pl = node_affinity.new({}, FakeHandle())
    assert pl.is_schedulable_after_node_change(pod(spec), old, new) == want


def test_node_hint_skips_nodes_outside_the_added_affinity() -> None:
    pl = node_affinity.new(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [terms(expr("zone", "In", "a"))]
                }
            }
        },
        FakeHandle(),
    )
    p = pod({"nodeSelector": {"foo": "bar"}})
    assert pl.is_schedulable_after_node_change(p, None, node("n", {"foo": "bar"})) == (
        QueueingHint.SKIP
    )
    assert pl.is_schedulable_after_node_change(p, None, node("n", {"foo": "bar", "zone": "a"})) == (
        QueueingHint.QUEUE
    )


def test_events_registered() -> None:
    pl = node_affinity.new({}, FakeHandle())
    (ev,) = pl.events_to_register()
    assert ev.event.resource == EventResource.NODE
    assert ev.event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"addedAffinity": {"bogus": 1}}, "addedAffinity.bogus"),
        ({"unknown": 1}, "unknown"),
        (
            {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [terms(expr("zone", "Near", "a"))]}}},
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator",
        ),
        (
            {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": []}}},
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        ),
        (
            {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
                (1, fields(expr("metadata.name", "In", "a", "b"))))}},
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
            ".matchFields[0].values",
        ),
    ],
)  # fmt: skip
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        node_affinity.new(args, FakeHandle())


def test_args_may_carry_api_version_and_kind() -> None:
    node_affinity.new(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs"}, FakeHandle()
    )


def test_pre_filter_state_survives_clone() -> None:
    pl = node_affinity.new({}, FakeHandle())
    p = pod({"nodeSelector": {"foo": "bar"}})
    state = CycleState()
    pl.pre_filter(state, p, [])
    clone = state.clone()
    assert pl.filter(clone, p, NodeInfo(node("n", {"foo": "bar"}))).is_success()
    assert not pl.filter(clone, p, NodeInfo(node("n", {"foo": "x"}))).is_success()
