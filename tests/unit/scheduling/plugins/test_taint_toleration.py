from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import taint_toleration
from kemu.scheduling.plugins.helpers import tolerates_taint
from kemu.scheduling.status import Code
from kemu.scheduling.types import MAX_NODE_SCORE, NodeInfo, NodeScore
from tests.unit.scheduling.plugins.fakes import FakeHandle

T = types_pb2.Taint
Tol = types_pb2.Toleration


def node(name: str, *taints: types_pb2.Taint) -> types_pb2.Node:
    n = types_pb2.Node(metadata=types_pb2.ObjectMeta(name=name))
    n.spec.taints.extend(taints)
    return n


def pod(*tolerations: types_pb2.Toleration, uid: str = "uid-p") -> types_pb2.Pod:
    p = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="pod1", namespace="default", uid=uid))
    p.spec.tolerations.extend(tolerations)
    return p


UNTOLERATED = "node(s) had untolerated taint(s)"

# Upstream TestTaintTolerationFilter (the Gt/Lt toleration cases need the alpha
# TaintTolerationComparisonOperators gate, which kemu does not emulate).
FILTER_CASES = [
    pytest.param(
        pod(),
        node("nodeA", T(key="dedicated", value="user1", effect="NoSchedule")),
        UNTOLERATED,
        id="no tolerations, node with taints",
    ),
    pytest.param(
        pod(Tol(key="dedicated", value="user1", effect="NoSchedule")),
        node("nodeA", T(key="dedicated", value="user1", effect="NoSchedule")),
        None,
        id="toleration for the dedicated node with effect NoSchedule",
    ),
    pytest.param(
        pod(Tol(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")),
        node("nodeA", T(key="dedicated", value="user1", effect="NoSchedule")),
        UNTOLERATED,
        id="toleration for another user",
    ),
    pytest.param(
        pod(Tol(key="foo", operator="Exists", effect="NoSchedule")),
        node("nodeA", T(key="foo", value="bar", effect="NoSchedule")),
        None,
        id="operator Exists tolerates any value",
    ),
    pytest.param(
        pod(
            Tol(key="dedicated", operator="Equal", value="user2", effect="NoSchedule"),
            Tol(key="foo", operator="Exists", effect="NoSchedule"),
        ),
        node(
            "nodeA",
            T(key="dedicated", value="user2", effect="NoSchedule"),
            T(key="foo", value="bar", effect="NoSchedule"),
        ),
        None,
        id="multiple tolerations tolerate all taints",
    ),
    pytest.param(
        pod(Tol(key="foo", operator="Equal", value="bar", effect="PreferNoSchedule")),
        node("nodeA", T(key="foo", value="bar", effect="NoSchedule")),
        UNTOLERATED,
        id="key and value match but the non-empty effect does not",
    ),
    pytest.param(
        pod(Tol(key="foo", operator="Equal", value="bar")),
        node("nodeA", T(key="foo", value="bar", effect="NoSchedule")),
        None,
        id="empty effect matches every effect",
    ),
    pytest.param(
        pod(Tol(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")),
        node("nodeA", T(key="dedicated", value="user1", effect="PreferNoSchedule")),
        None,
        id="untolerated PreferNoSchedule taint does not filter",
    ),
    pytest.param(
        pod(),
        node("nodeA", T(key="dedicated", value="user1", effect="PreferNoSchedule")),
        None,
        id="no toleration, only a PreferNoSchedule taint",
    ),
    pytest.param(
        pod(),
        node("nodeA", T(key="evict", value="now", effect="NoExecute")),
        UNTOLERATED,
        id="NoExecute taints filter too",
    ),
    pytest.param(
        pod(Tol(operator="Exists")),
        node("nodeA", T(key="a", effect="NoSchedule"), T(key="b", value="x", effect="NoExecute")),
        None,
        id="empty key with Exists tolerates everything",
    ),
]


@pytest.mark.parametrize(("p", "n", "reason"), FILTER_CASES)
def test_filter(p: types_pb2.Pod, n: types_pb2.Node, reason: str | None) -> None:
    pl = taint_toleration.new({}, FakeHandle())
    status = pl.filter(CycleState(), p, NodeInfo(n))
    if reason is None:
        assert status.is_success(), status
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == reason


def test_unknown_toleration_operator_tolerates_nothing() -> None:
    assert not tolerates_taint(
        Tol(key="sla", operator="Gt", value="1", effect="NoSchedule"),
        T(key="sla", value="5", effect="NoSchedule"),
    )


# Upstream TestTaintTolerationScore.
SCORE_CASES = [
    pytest.param(
        pod(Tol(key="foo", operator="Equal", value="bar", effect="PreferNoSchedule")),
        [
            node("nodeA", T(key="foo", value="bar", effect="PreferNoSchedule")),
            node("nodeB", T(key="foo", value="blah", effect="PreferNoSchedule")),
        ],
        [MAX_NODE_SCORE, 0],
        id="tolerated taints score higher than intolerable ones",
    ),
    pytest.param(
        pod(
            Tol(key="cpu-type", operator="Equal", value="arm64", effect="PreferNoSchedule"),
            Tol(key="disk-type", operator="Equal", value="ssd", effect="PreferNoSchedule"),
        ),
        [
            node("nodeA"),
            node("nodeB", T(key="cpu-type", value="arm64", effect="PreferNoSchedule")),
            node(
                "nodeC",
                T(key="cpu-type", value="arm64", effect="PreferNoSchedule"),
                T(key="disk-type", value="ssd", effect="PreferNoSchedule"),
            ),
        ],
        [MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
        id="how many tolerated taints a node has does not matter",
    ),
    pytest.param(
        pod(Tol(key="foo", operator="Equal", value="bar", effect="PreferNoSchedule")),
        [
            node("nodeA"),
            node("nodeB", T(key="cpu-type", value="arm64", effect="PreferNoSchedule")),
            node(
                "nodeC",
                T(key="cpu-type", value="arm64", effect="PreferNoSchedule"),
                T(key="disk-type", value="ssd", effect="PreferNoSchedule"),
            ),
        ],
        [MAX_NODE_SCORE, 50, 0],
        id="the more intolerable taints, the lower the score",
    ),
    pytest.param(
        pod(
            Tol(key="cpu-type", operator="Equal", value="arm64", effect="NoSchedule"),
            Tol(key="disk-type", operator="Equal", value="ssd", effect="NoSchedule"),
        ),
        [
            node("nodeA"),
            node("nodeB", T(key="cpu-type", value="arm64", effect="NoSchedule")),
            node(
                "nodeC",
                T(key="cpu-type", value="arm64", effect="PreferNoSchedule"),
                T(key="disk-type", value="ssd", effect="PreferNoSchedule"),
            ),
        ],
        [MAX_NODE_SCORE, MAX_NODE_SCORE, 0],
        id="only PreferNoSchedule taints and tolerations count",
    ),
    pytest.param(
        pod(),
        [node("nodeA"), node("nodeB", T(key="cpu-type", value="arm64", effect="PreferNoSchedule"))],
        [MAX_NODE_SCORE, 0],
        id="no taints and tolerations: lands on the node without taints",
    ),
]


@pytest.mark.parametrize(("p", "nodes", "want"), SCORE_CASES)
def test_score(p: types_pb2.Pod, nodes: list[types_pb2.Node], want: list[int]) -> None:
    pl = taint_toleration.new({}, FakeHandle())
    infos = [NodeInfo(n) for n in nodes]
    state = CycleState()
    assert pl.pre_score(state, p, infos).is_success()
    raw = []
    for ni in infos:
        score, status = pl.score(state, p, ni)
        assert status.is_success(), status
        raw.append(NodeScore(ni.name, score))
    ext = pl.score_extensions()
    assert ext is not None
    normalized, status = ext.normalize_score(state, p, raw)
    assert status.is_success()
    assert normalized == [NodeScore(n.metadata.name, s) for n, s in zip(nodes, want, strict=True)]


def test_score_without_pre_score_is_an_error() -> None:
    pl = taint_toleration.new({}, FakeHandle())
    _, status = pl.score(CycleState(), pod(), NodeInfo(node("n")))
    assert status.is_error()


def test_pre_score_state_clone_is_safe() -> None:
    pl = taint_toleration.new({}, FakeHandle())
    state = CycleState()
    pl.pre_score(state, pod(Tol(key="a", effect="PreferNoSchedule")), [])
    clone = state.clone()
    assert pl.score(clone, pod(), NodeInfo(node("n")))[1].is_success()


NS = T(key="dedicated", value="user1", effect="NoSchedule")
TOLERATING = pod(Tol(key="dedicated", value="user1", effect="NoSchedule"))


@pytest.mark.parametrize(
    ("p", "old", "new", "want"),
    [
        (pod(), None, node("n"), QueueingHint.QUEUE),  # untainted node added
        (pod(), None, node("n", NS), QueueingHint.SKIP),  # untolerated taint
        (TOLERATING, None, node("n", NS), QueueingHint.QUEUE),  # tolerated taint
        (pod(), node("n", NS), node("n"), QueueingHint.QUEUE),  # taint removed
        (pod(), node("n"), node("n"), QueueingHint.SKIP),  # was already tolerated
        (pod(), node("n", NS), node("n", NS), QueueingHint.SKIP),  # still untolerated
        (
            pod(),
            node("n", NS),
            node("n", T(key="soft", effect="PreferNoSchedule")),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_node_hint(
    p: types_pb2.Pod, old: types_pb2.Node | None, new: types_pb2.Node, want: QueueingHint
) -> None:
    pl = taint_toleration.new({}, FakeHandle())
    assert pl.is_schedulable_after_node_change(p, old, new) == want


def test_pod_toleration_hint_queues_only_the_pod_itself() -> None:
    pl = taint_toleration.new({}, FakeHandle())
    p = pod()
    assert pl.is_schedulable_after_pod_toleration_change(p, p, TOLERATING) == QueueingHint.QUEUE
    other = pod(uid="other")
    assert pl.is_schedulable_after_pod_toleration_change(p, other, other) == QueueingHint.SKIP


def test_events_registered() -> None:
    pl = taint_toleration.new({}, FakeHandle())
    events = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert events == {
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
    }
