"""TokenFilter: PreFilter counts and its own rejection, Filter codes, the AddPod/RemovePod
extensions on cloned state, queueing hints, bad labels and annotations, and the real Framework
doing what preemption does (S-PRE-2 / S-PRE-3 of the reference)."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.config import API_VERSION, KIND, config_from_dict, scheduler_registry
from kemu.scheduling.emulation import token_filter as tf
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.runtime import Framework
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo, PodInfo
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.fakes import FakeNominator
from tests.unit.scheduling.plugins.fakes import FakeHandle

TOKENS = tf.LABEL_TOKENS
TOKEN = tf.LABEL_TOKEN
CHECK = tf.ANNOTATION_CHECK
UNRESOLVABLE = tf.ANNOTATION_UNRESOLVABLE


def node(name: str, tokens: str | None = None) -> types_pb2.Node:
    b = make_node(name).capacity(cpu="4", memory="8Gi", pods="110")
    if tokens is not None:
        b.label(TOKENS, tokens)
    return b.obj()


def pod(
    name: str,
    *,
    token: bool = True,
    annotations: dict[str, str] | None = None,
    priority: int = 0,
    node_name: str = "",
) -> types_pb2.Pod:
    b = make_pod(name).uid(f"uid-{name}").req(cpu="200m").priority(priority)
    if token:
        b.label(TOKEN, "true")
    for k, v in (annotations or {}).items():
        b.annotation(k, v)
    if node_name:
        b.node(node_name)
    return b.obj()


def info(n: types_pb2.Node, *pods: types_pb2.Pod) -> NodeInfo:
    ni = NodeInfo(n)
    for p in pods:
        ni.add_pod(p)
    return ni


def plugin() -> tf.TokenFilter:
    return tf.TokenFilter()


def used(state: CycleState) -> dict[str, int]:
    s = state.read(tf.PRE_FILTER_STATE_KEY)
    assert isinstance(s, tf.TokenState)
    return s.used


def codes(p: types_pb2.Pod, infos: list[NodeInfo]) -> dict[str, tuple[Code, tuple[str, ...]]]:
    pl = plugin()
    state = CycleState()
    _, status = pl.pre_filter(state, p, infos)
    assert status.is_success(), status
    out = {}
    for ni in infos:
        s = pl.filter(state, p, ni)
        out[ni.name] = (s.code, s.reasons)
    return out


OK = (Code.SUCCESS, ())
FULL = (Code.UNSCHEDULABLE, (tf.ERR_REASON_NO_FREE_TOKEN,))
FULL_UNRESOLVABLE = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (tf.ERR_REASON_NO_FREE_TOKEN,))


# ---------------------------------------------------------------- factory


def test_no_args_are_accepted() -> None:
    assert tf.new({}, FakeHandle()).name() == "TokenFilter"
    assert tf.new({"apiVersion": "v1", "kind": "TokenFilterArgs"}, FakeHandle()).name() == tf.NAME
    with pytest.raises(ValueError, match='TokenFilter args: unknown field "tokens"'):
        tf.new({"tokens": 1}, FakeHandle())


# ---------------------------------------------------------------- PreFilter


def test_pods_that_do_not_take_part_are_skipped_and_get_no_state() -> None:
    state = CycleState()
    for labels in ({}, {TOKEN: "false"}, {TOKEN: "True"}):
        p = make_pod("p").labels(labels).obj()
        result, status = plugin().pre_filter(state, p, [info(node("n1", "0"))])
        assert result is None and status.is_skip()
    assert state.read(tf.PRE_FILTER_STATE_KEY) is None


def test_pre_filter_counts_taking_part_pods_on_every_node() -> None:
    infos = [
        info(node("n1", "2"), pod("a", node_name="n1"), pod("b", token=False, node_name="n1")),
        info(node("n2"), pod("c", node_name="n2"), pod("d", node_name="n2")),
        info(node("n3", "1")),
    ]
    state = CycleState()
    result, status = plugin().pre_filter(state, pod("p"), infos)
    assert result is None and status.is_success()
    assert used(state) == {"n1": 1, "n2": 2, "n3": 0}


@pytest.mark.parametrize(
    ("nodes", "annotations", "want"),
    [
        # One labelled node with a free token is enough.
        ([("n1", "1", 1), ("n2", "2", 1)], {}, None),
        # An unlabelled node has unlimited tokens.
        ([("n1", "1", 1), ("n2", None, 5)], {}, None),
        # Every node full: rejected, Unschedulable unless the pod asks otherwise.
        ([("n1", "1", 1), ("n2", "0", 0)], {}, Code.UNSCHEDULABLE),
        ([("n1", "1", 1)], {UNRESOLVABLE: "true"}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        # No nodes at all: it fits nowhere.
        ([], {}, Code.UNSCHEDULABLE),
    ],
)
def test_pre_filter_check_rejects_only_when_no_node_has_a_free_token(
    nodes: list[tuple[str, str | None, int]], annotations: dict[str, str], want: Code | None
) -> None:
    infos = [
        info(node(name, tokens), *(pod(f"{name}-{i}", node_name=name) for i in range(held)))
        for name, tokens, held in nodes
    ]
    state = CycleState()
    _, status = plugin().pre_filter(
        state, pod("p", annotations={CHECK: "prefilter", **annotations}), infos
    )
    if want is None:
        assert status.is_success(), status
    else:
        assert status == Status(want, (tf.ERR_REASON_PRE_FILTER,))
    # The state is there either way: preemption filters clones of it after a rejection.
    assert used(state) == {name: held for name, _, held in nodes}


def test_without_the_check_annotation_pre_filter_leaves_the_decision_to_filter() -> None:
    for given in ({}, {CHECK: "filter"}):
        _, status = plugin().pre_filter(
            CycleState(), pod("p", annotations=given), [info(node("n1", "0"))]
        )
        assert status.is_success()


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({CHECK: "PreFilter"}, f'annotation {CHECK}: "PreFilter" is not "filter" or "prefilter"'),
        ({UNRESOLVABLE: "yes"}, f'annotation {UNRESOLVABLE}: "yes" is not "true" or "false"'),
    ],
)
def test_bad_annotations_are_an_error_at_pre_filter(
    annotations: dict[str, str], message: str
) -> None:
    _, status = plugin().pre_filter(
        CycleState(), pod("p", annotations=annotations), [info(node("n1"))]
    )
    assert status.code is Code.ERROR and status.message() == message


def test_pre_filter_check_names_a_bad_label() -> None:
    _, status = plugin().pre_filter(
        CycleState(), pod("p", annotations={CHECK: "prefilter"}), [info(node("n1", "many"))]
    )
    assert status.code is Code.ERROR
    assert status.message() == (
        f'label {TOKENS} of node "n1": "many" is not a non-negative integer'
    )


# ---------------------------------------------------------------- Filter


@pytest.mark.parametrize(
    ("tokens", "held", "annotations", "want"),
    [
        (None, 3, {}, OK),
        ("2", 1, {}, OK),
        ("2", 2, {}, FULL),
        ("1", 2, {}, FULL),  # over-committed (the label was lowered): still full
        ("0", 0, {}, FULL),
        ("1", 1, {UNRESOLVABLE: "true"}, FULL_UNRESOLVABLE),
        ("1", 1, {UNRESOLVABLE: "false"}, FULL),
        ("1", 0, {UNRESOLVABLE: "true"}, OK),
    ],
)
def test_filter(
    tokens: str | None, held: int, annotations: dict[str, str], want: tuple[Code, Any]
) -> None:
    n = info(node("n1", tokens), *(pod(f"h{i}", node_name="n1") for i in range(held)))
    # Pods that do not take part hold no token.
    n.add_pod(pod("other", token=False, node_name="n1"))
    assert codes(pod("p", annotations=annotations), [n]) == {"n1": want}


@pytest.mark.parametrize("value", ["-1", "x", "", "1.5", " 2", "+2", "1_0", "\u0662"])
def test_a_label_that_does_not_parse_is_an_error_naming_label_and_node(value: str) -> None:
    pl = plugin()
    state = CycleState()
    n = info(node("n1", value))
    _, status = pl.pre_filter(state, pod("p"), [n])
    assert status.is_success()
    s = pl.filter(state, pod("p"), n)
    assert s.code is Code.ERROR
    assert s.message() == f'label {TOKENS} of node "n1": "{value}" is not a non-negative integer'


def test_filter_without_pre_filter_state_is_an_error() -> None:
    s = plugin().filter(CycleState(), pod("p"), info(node("n1", "1")))
    assert s.code is Code.ERROR and "not found" in s.message()


def test_filter_counts_a_node_pre_filter_was_not_shown() -> None:
    pl = plugin()
    state = CycleState()
    pl.pre_filter(state, pod("p"), [])
    assert not pl.filter(
        state, pod("p"), info(node("n9", "1"), pod("a", node_name="n9"))
    ).is_success()
    assert pl.filter(state, pod("p"), info(node("n9", "2"), pod("a", node_name="n9"))).is_success()


# ---------------------------------------------------------------- PreFilter extensions


@pytest.mark.parametrize(
    ("op", "other_takes_part", "before", "after", "want"),
    [
        ("remove", True, 2, 1, OK),
        ("remove", False, 1, 1, OK),
        ("add", True, 1, 2, FULL),
        ("add", False, 1, 1, OK),
    ],
)
def test_add_and_remove_pod_change_the_count_on_a_clone_only(
    op: str, other_takes_part: bool, before: int, after: int, want: tuple[Code, Any]
) -> None:
    pl = plugin()
    assert pl.pre_filter_extensions() is pl
    other = pod("other", token=other_takes_part, node_name="n1")
    n = info(node("n1", "2"), pod("held", node_name="n1"))
    if op == "remove":
        n.add_pod(other)
    state = CycleState()
    incoming = pod("p")
    pl.pre_filter(state, incoming, [n])
    assert used(state) == {"n1": before}
    status_before = pl.filter(state, incoming, n)

    # What preemption and the nominated-pods filter do: change clones, then tell the plugin.
    n2, state2 = n.clone(), state.clone()
    if op == "remove":
        n2.remove_pod(other)
        s = pl.remove_pod(state2, incoming, PodInfo(other), n2)
    else:
        n2.add_pod(other)
        s = pl.add_pod(state2, incoming, PodInfo(other), n2)
    assert s.is_success()
    assert used(state2) == {"n1": after}
    got = pl.filter(state2, incoming, n2)
    assert (got.code, got.reasons) == want
    # The original state is untouched.
    assert used(state) == {"n1": before}
    assert pl.filter(state, incoming, n) == status_before


def test_extensions_on_a_node_pre_filter_was_not_shown_count_its_pods() -> None:
    pl = plugin()
    state = CycleState()
    incoming = pod("p")
    pl.pre_filter(state, incoming, [])
    n = info(node("n9", "2"), pod("a", node_name="n9"))
    added = pod("b", node_name="n9")
    n.add_pod(added)  # the node already has the pod when the extension hears of it
    assert pl.add_pod(state, incoming, PodInfo(added), n).is_success()
    assert used(state) == {"n9": 2}


def test_extensions_without_state_are_an_error() -> None:
    pl = plugin()
    n = info(node("n1", "1"))
    assert pl.add_pod(CycleState(), pod("p"), PodInfo(pod("a")), n).code is Code.ERROR
    assert pl.remove_pod(CycleState(), pod("p"), PodInfo(pod("a")), n).code is Code.ERROR


def test_state_clone_copies_the_counts() -> None:
    s = tf.TokenState({"n1": 1}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    c = s.clone()
    c.used["n1"] = 0
    assert s.used == {"n1": 1}
    assert c.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# ---------------------------------------------------------------- queueing hints


def test_events_registered() -> None:
    events = {(e.event.resource, e.event.action) for e in plugin().events_to_register()}
    assert events == {
        (EventResource.ASSIGNED_POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    }


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        (pod("a", node_name="n1"), QueueingHint.QUEUE),
        (pod("a"), QueueingHint.QUEUE),  # a withdrawn nomination frees its token too
        (pod("a", token=False, node_name="n1"), QueueingHint.SKIP),
        (None, QueueingHint.QUEUE),  # unknown: queue
    ],
)
def test_pod_delete_hint(deleted: types_pb2.Pod | None, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_delete(pod("p"), deleted, None) is want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, node("n1"), QueueingHint.QUEUE),  # a new unlimited node
        (None, node("n1", "1"), QueueingHint.QUEUE),
        (None, node("n1", "0"), QueueingHint.SKIP),
        (None, node("n1", "x"), QueueingHint.SKIP),
        (node("n1", "1"), node("n1", "2"), QueueingHint.QUEUE),
        (node("n1", "2"), node("n1", "1"), QueueingHint.SKIP),
        (node("n1", "1"), node("n1", "1"), QueueingHint.SKIP),  # another label changed
        (node("n1", "1"), node("n1"), QueueingHint.QUEUE),  # label removed: unlimited
        (node("n1"), node("n1", "5"), QueueingHint.SKIP),  # unlimited became limited
        (node("n1"), node("n1"), QueueingHint.SKIP),
        (node("n1", "x"), node("n1", "1"), QueueingHint.QUEUE),  # a bad label fixed
        (None, None, QueueingHint.QUEUE),  # unknown: queue
    ],
)
def test_node_change_hint(
    old: types_pb2.Node | None, new: types_pb2.Node | None, want: QueueingHint
) -> None:
    assert plugin().is_schedulable_after_node_change(pod("p"), old, new) is want


def test_hints_skip_pods_that_do_not_take_part() -> None:
    other = pod("p", token=False)
    pl = plugin()
    assert pl.is_schedulable_after_pod_delete(other, pod("a"), None) is QueueingHint.SKIP
    assert pl.is_schedulable_after_node_change(other, None, node("n1")) is QueueingHint.SKIP


# ---------------------------------------------------------------- with the real Framework


def framework(*nodes: NodeInfo, nominated: dict[str, list[PodInfo]] | None = None) -> Framework:
    registry = scheduler_registry()
    config = config_from_dict(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": tf.NAME}]}}}],
        },
        registry,
    )
    (profile,) = config.profiles
    assert tf.NAME in profile.enabled["preFilter"] and tf.NAME in profile.enabled["filter"]
    assert "NodeResourcesFit" in profile.enabled["filter"]  # the defaults are still there
    snapshot = Snapshot.from_objects(
        [pi.pod for ni in nodes for pi in ni.pods], [ni.node for ni in nodes if ni.node]
    )
    return Framework(profile, registry, snapshot=snapshot, nominator=FakeNominator(nominated or {}))


@pytest.mark.parametrize("check", ["filter", "prefilter"])
def test_s_pre_2_framework_rejects_a_full_node_and_accepts_it_once_the_victim_is_removed(
    check: str,
) -> None:
    victim = pod("victim", priority=100, node_name="n1")
    preemptor = pod("preemptor", priority=1000, annotations={CHECK: check})
    fwk = framework(info(node("n1", "1"), victim))
    n1 = fwk.snapshot_shared_lister().node_infos().get("n1")
    assert n1 is not None
    state = CycleState()
    _, status, rejectors = fwk.run_pre_filter_plugins(state, preemptor, [n1])
    if check == "prefilter":
        assert status.code is Code.UNSCHEDULABLE and status.plugin == tf.NAME
        assert status.reasons == (tf.ERR_REASON_PRE_FILTER,)
        assert rejectors == {tf.NAME}
    else:
        assert status.is_success()

    s = fwk.run_filter_plugins_with_nominated_pods(state, preemptor, n1)
    assert (s.code, s.reasons, s.plugin) == (
        Code.UNSCHEDULABLE,
        (tf.ERR_REASON_NO_FREE_TOKEN,),
        tf.NAME,
    )

    # SelectVictimsOnNode: remove the victim from clones and tell the PreFilter extensions.
    n1_copy, state_copy = n1.clone(), state.clone()
    n1_copy.remove_pod(victim)
    assert fwk.run_pre_filter_extension_remove_pod(
        state_copy, preemptor, PodInfo(victim), n1_copy
    ).is_success()
    assert fwk.run_filter_plugins_with_nominated_pods(state_copy, preemptor, n1_copy).is_success()
    # The cycle's own state and node are untouched.
    assert not fwk.run_filter_plugins_with_nominated_pods(state, preemptor, n1).is_success()
    assert len(n1.pods) == 1


def test_s_pre_3_unresolvable_rejection_comes_through_the_framework() -> None:
    victim = pod("victim", priority=100, node_name="n1")
    preemptor = pod("preemptor", priority=1000, annotations={UNRESOLVABLE: "true"})
    fwk = framework(info(node("n1", "1"), victim))
    n1 = fwk.snapshot_shared_lister().node_infos().get("n1")
    assert n1 is not None
    state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(state, preemptor, [n1])
    assert status.is_success()
    s = fwk.run_filter_plugins_with_nominated_pods(state, preemptor, n1)
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tf.NAME)


def test_a_higher_priority_pod_nominated_to_the_node_holds_its_token() -> None:
    nominated = PodInfo(pod("nominated", priority=2000))
    preemptor = pod("preemptor", priority=1000)
    fwk = framework(info(node("n1", "1")), nominated={"n1": [nominated]})
    n1 = fwk.snapshot_shared_lister().node_infos().get("n1")
    assert n1 is not None
    state = CycleState()
    fwk.run_pre_filter_plugins(state, preemptor, [n1])
    # The first pass adds the nominated pod (AddPod) on clones: no token left.
    s = fwk.run_filter_plugins_with_nominated_pods(state, preemptor, n1)
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE, tf.NAME)
    assert used(state) == {"n1": 0}
    # A pod that does not take part is not affected.
    free = pod("free", token=False, priority=1000)
    free_state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(free_state, free, [n1])
    assert status.is_success() and tf.NAME in free_state.skip_filter_plugins
    assert fwk.run_filter_plugins_with_nominated_pods(free_state, free, n1).is_success()
