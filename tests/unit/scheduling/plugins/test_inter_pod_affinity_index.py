"""InterPodAffinity on the snapshot's pre-computed counts (kemu.scheduling.topology_counts)
against the walk over every pod (upstream's PreFilter/PreScore), on random clusters and pods
with (anti-)affinity terms (hypothesis): the same PreFilter status, the same Filter Status on
every node, before and after AddPod/RemovePod on cloned states (preemption's dry run, the
nominated pods), the batch Filter and its rejections equal to the per-node Filter, the same raw and normalized
scores per node and over columns; and the index kept row by row equal to one built afresh."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kemu.api.v1 import types_pb2
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import inter_pod_affinity as ipa
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.topology_counts import AffinityIndex
from kemu.scheduling.types import NodeInfo, NodeScore, PodInfo
from kemu.testing.builders import make_node
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory

HOST = "kubernetes.io/hostname"
ZONE = "zone"
RACK = "rack"
KEYS = (HOST, ZONE, RACK)
NAMESPACES = ("default", "ns1", "ns2")


def _namespace(name: str, **labels: str) -> types_pb2.Namespace:
    ns = types_pb2.Namespace()
    ns.metadata.name = name
    ns.metadata.labels.update(labels)
    return ns


NAMESPACE_OBJECTS = (
    _namespace("default"),
    _namespace("ns1", team="x"),
    _namespace("ns2", team="y"),
)


@dataclass(frozen=True)
class Term:
    selector: str  # "a", "b", "a|b" (In), "exists", "notb" (NotIn), "all" (empty), "none"
    key: str
    scope: str  # "own", "ns1", "all" (empty namespaceSelector), "teamx"


@dataclass(frozen=True)
class PodSpec:
    namespace: str
    app: str  # "" for no label
    req_aff: tuple[Term, ...]
    req_anti: tuple[Term, ...]
    pref_aff: tuple[tuple[Term, int], ...]
    pref_anti: tuple[tuple[Term, int], ...]


@dataclass(frozen=True)
class NodeSpec:
    host: bool
    zone: str
    rack: str


terms_st = st.builds(
    Term,
    selector=st.sampled_from(["a", "a", "b", "a|b", "exists", "notb", "all", "none"]),
    key=st.sampled_from(KEYS),
    scope=st.sampled_from(["own", "own", "ns1", "all", "teamx"]),
)
weighted_st = st.tuples(terms_st, st.integers(1, 100))
pods_st = st.builds(
    PodSpec,
    namespace=st.sampled_from(NAMESPACES),
    app=st.sampled_from(["", "a", "b"]),
    req_aff=st.lists(terms_st, max_size=2).map(tuple),
    req_anti=st.lists(terms_st, max_size=2).map(tuple),
    pref_aff=st.lists(weighted_st, max_size=2).map(tuple),
    pref_anti=st.lists(weighted_st, max_size=2).map(tuple),
)
plain_or_pods_st = st.one_of(
    pods_st,
    st.builds(
        PodSpec,
        st.sampled_from(NAMESPACES),
        st.sampled_from(["", "a", "b"]),
        st.just(()),
        st.just(()),
        st.just(()),
        st.just(()),
    ),  # fmt: skip
)
nodes_st = st.builds(
    NodeSpec,
    host=st.sampled_from([True, True, True, False]),
    zone=st.sampled_from(["", "z0", "z1"]),
    rack=st.sampled_from(["", "r0", "r1", "r2"]),
)


def _term(t: Term, out: types_pb2.PodAffinityTerm) -> None:
    out.topology_key = t.key
    sel = t.selector
    if sel == "none":
        pass  # no labelSelector: matches nothing
    elif sel == "all":
        out.label_selector.SetInParent()
    elif sel in ("a", "b"):
        out.label_selector.match_labels["app"] = sel
    else:
        e = out.label_selector.match_expressions.add()
        e.key = "app"
        if sel == "a|b":
            e.operator = "In"
            e.values.extend(["a", "b"])
        elif sel == "exists":
            e.operator = "Exists"
        else:
            e.operator = "NotIn"
            e.values.append("b")
    if t.scope == "ns1":
        out.namespaces.append("ns1")
    elif t.scope == "all":
        out.namespace_selector.SetInParent()
    elif t.scope == "teamx":
        out.namespace_selector.match_labels["team"] = "x"


def pod_obj(name: str, spec: PodSpec, node: str = "") -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name = name
    pod.metadata.namespace = spec.namespace
    pod.metadata.uid = f"uid-{name}"
    if spec.app:
        pod.metadata.labels["app"] = spec.app
    c = pod.spec.containers.add()
    c.name = "c"
    aff = pod.spec.affinity
    for t in spec.req_aff:
        _term(t, aff.pod_affinity.required_during_scheduling_ignored_during_execution.add())
    for t in spec.req_anti:
        _term(t, aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution.add())
    for t, w in spec.pref_aff:
        wt = aff.pod_affinity.preferred_during_scheduling_ignored_during_execution.add()
        wt.weight = w
        _term(t, wt.pod_affinity_term)
    for t, w in spec.pref_anti:
        wt = aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution.add()
        wt.weight = w
        _term(t, wt.pod_affinity_term)
    if node:
        pod.spec.node_name = node
    return pod


def node_obj(i: int, spec: NodeSpec) -> types_pb2.Node:
    b = make_node(f"n{i}").allocatable(cpu="4", memory="8Gi", pods="110")
    if spec.host:
        b = b.label(HOST, f"n{i}")
    if spec.zone:
        b = b.label(ZONE, spec.zone)
    if spec.rack:
        b = b.label(RACK, spec.rack)
    return b.obj()


def plugin(snap: Snapshot, *, use_index: bool, hard: int = 1) -> ipa.InterPodAffinity:
    handle = FakeHandle(informers=FakeInformerFactory(*NAMESPACE_OBJECTS))
    handle.shared_lister = snap  # type: ignore[assignment]  # a Snapshot is a SharedLister
    return ipa.InterPodAffinity(
        handle,
        hard_pod_affinity_weight=hard,
        skip_deferred=resize_preemption_enabled(handle.gates),
        use_index=use_index,
    )


def statuses(
    p: ipa.InterPodAffinity, state: CycleState, pod: types_pb2.Pod, infos: list[NodeInfo]
) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for ni in infos:
        s = p.filter(state, pod, ni)
        out.append((s.code.name, s.reasons))
    return out


def build(nodes: list[NodeSpec], bound: list[tuple[int, PodSpec]]) -> Snapshot:
    node_objs = [node_obj(i, n) for i, n in enumerate(nodes)]
    pods = [pod_obj(f"b{k}", spec, f"n{i % len(nodes)}") for k, (i, spec) in enumerate(bound)]
    return Snapshot.from_objects(pods, node_objs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=10),
    bound=st.lists(st.tuples(st.integers(0, 100), plain_or_pods_st), max_size=14),
    incoming=plain_or_pods_st,
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, 100), plain_or_pods_st, st.integers(0, 100)),
        max_size=4,
    ),
    hard=st.sampled_from([0, 1, 5]),
)
def test_index_and_walk_filter_and_score_alike(
    nodes: list[NodeSpec],
    bound: list[tuple[int, PodSpec]],
    incoming: PodSpec,
    ops: list[tuple[bool, int, PodSpec, int]],
    hard: int,
) -> None:
    snap = build(nodes, bound)
    infos = snap.list()
    pod = pod_obj("incoming", incoming)
    walk, fast = plugin(snap, use_index=False, hard=hard), plugin(snap, use_index=True, hard=hard)
    ws, fs = CycleState(), CycleState()
    _, w_status = walk.pre_filter(ws, pod, infos)
    _, f_status = fast.pre_filter(fs, pod, infos)
    assert (w_status.code, w_status.reasons) == (f_status.code, f_status.reasons)
    if w_status.is_success():
        f_state = fs.read(ipa.PRE_FILTER_STATE_KEY)
        assert isinstance(f_state, ipa.PreFilterState) and f_state.index is not None
        w_state = ws.read(ipa.PRE_FILTER_STATE_KEY)
        assert isinstance(w_state, ipa.PreFilterState) and w_state.index is None
        for name in ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts"):
            assert getattr(f_state, name).items() == getattr(w_state, name).items(), name
        assert f_state.existing_anti_affinity_keys == w_state.existing_anti_affinity_keys
        expected = statuses(walk, ws, pod, infos)
        assert statuses(fast, fs, pod, infos) == expected
        columns = snap.columns()
        rows = np.arange(len(infos), dtype=np.int64)
        mask = fast.filter_columns(fs, pod, columns, rows)
        assert mask is not None
        assert mask.tolist() == [code == "SUCCESS" for code, _ in expected]
        rejected = fast.reject_columns(fs, pod, columns, rows)
        assert rejected is not None
        rejected_which, known = rejected
        got = [
            ("SUCCESS", ()) if k < 0 else (known[k].code.name, known[k].reasons)
            for k in rejected_which.tolist()
        ]
        assert got == expected  # every rejection known from the counts, the per-node Status
        # AddPod/RemovePod on clones (preemption's dry run, the nominated pods' pass): the
        # clone changes, the original does not.
        wc, fc = ws.clone(), fs.clone()
        for add, at, spec, which in ops:
            ni = infos[at % len(infos)]
            if add:
                pi = PodInfo(pod_obj(f"added{which}", spec, ni.name))
                assert walk.add_pod(wc, pod, pi, ni).is_success()
                assert fast.add_pod(fc, pod, pi, ni).is_success()
            elif ni.pods:
                pi = ni.pods[which % len(ni.pods)]
                assert walk.remove_pod(wc, pod, pi, ni).is_success()
                assert fast.remove_pod(fc, pod, pi, ni).is_success()
            assert statuses(fast, fc, pod, infos) == statuses(walk, wc, pod, infos)
            fmask = fast.filter_columns(fc, pod, columns, rows)
            assert fmask is not None
            assert fmask.tolist() == [c == "SUCCESS" for c, _ in statuses(walk, wc, pod, infos)]
        assert statuses(fast, fs, pod, infos) == expected

    ws, fs = CycleState(), CycleState()
    w_status = walk.pre_score(ws, pod, infos)
    f_status = fast.pre_score(fs, pod, infos)
    assert w_status.code == f_status.code
    if not w_status.is_success():
        return
    w_scores = [NodeScore(ni.name, walk.score(ws, pod, ni)[0]) for ni in infos]
    f_scores = [NodeScore(ni.name, fast.score(fs, pod, ni)[0]) for ni in infos]
    assert f_scores == w_scores
    columns = snap.columns()
    rows = np.arange(len(infos), dtype=np.int64)
    raw = fast.score_columns(fs, pod, columns, rows)
    assert raw is not None and raw.tolist() == [s.score for s in w_scores]
    w_norm, _ = walk.normalize_score(ws, pod, w_scores)
    normalized = fast.normalize_columns(fs, pod, raw)
    assert normalized is not None and normalized.tolist() == [s.score for s in w_norm]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=8),
    bound=st.lists(st.tuples(st.integers(0, 100), pods_st), max_size=10),
    changes=st.lists(
        st.tuples(
            st.integers(0, 100), st.sampled_from(["add", "remove", "relabel"]), pods_st, nodes_st
        ),
        max_size=6,
    ),
    queried=st.lists(pods_st, min_size=1, max_size=3),
)
def test_index_kept_row_by_row_equals_a_fresh_one(
    nodes: list[NodeSpec],
    bound: list[tuple[int, PodSpec]],
    changes: list[tuple[int, str, PodSpec, NodeSpec]],
    queried: list[PodSpec],
) -> None:
    snap = build(nodes, bound)
    index = snap.affinity_index()
    p = plugin(snap, use_index=True)
    incoming = [pod_obj(f"q{k}", spec) for k, spec in enumerate(queried)]
    for pod in incoming:  # registers the queries and the domains of the keys
        p.pre_filter(CycleState(), pod, snap.list())
        p.pre_score(CycleState(), pod, snap.list())
    for k, (at, what, spec, node_spec) in enumerate(changes):
        i = at % len(nodes)
        old = snap.list()[i]
        clone = old.clone()
        if what == "add":
            clone.add_pod(pod_obj(f"c{k}", spec, old.name))
        elif what == "remove" and old.pods:
            clone.remove_pod(old.pods[0].pod)
        else:
            clone.set_node(node_obj(i, node_spec))
        snap.replace(old.name, clone)
    assert snap.affinity_index() is index  # kept, not rebuilt
    fresh = AffinityIndex(snap.list())
    got = {k: v.tolist() for k, v in index.groups().items() if v.any()}
    assert got == {k: v.tolist() for k, v in fresh.groups().items() if v.any()}
    for pod in incoming:  # the same answers as a fresh index and as the walk
        for use in (True, False):
            q = plugin(snap, use_index=use)
            st_a, st_b = CycleState(), CycleState()
            q.pre_filter(st_a, pod, snap.list())
            p.pre_filter(st_b, pod, snap.list())
            a, b = st_a.read(ipa.PRE_FILTER_STATE_KEY), st_b.read(ipa.PRE_FILTER_STATE_KEY)
            if a is None or b is None:
                assert a is b
                continue
            assert isinstance(a, ipa.PreFilterState) and isinstance(b, ipa.PreFilterState)
            for name in (
                "existing_anti_affinity_counts",
                "affinity_counts",
                "anti_affinity_counts",
            ):
                assert getattr(a, name).items() == getattr(b, name).items()
    for key in KEYS:
        d, f = index.domains(key), fresh.domains(key)
        names = {i: v for v, i in d.ids.items()}
        fnames = {i: v for v, i in f.ids.items()}
        assert [names.get(int(r)) for r in d.row_ids] == [fnames.get(int(r)) for r in f.row_ids]


def test_plain_pod_on_a_cluster_without_terms_skips_without_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_counting(*args: object, **kwargs: object) -> None:
        raise AssertionError("counted: the fast path did not skip")

    plain = PodSpec("default", "a", (), (), (), ())
    snap = build([NodeSpec(True, "z0", "r0"), NodeSpec(True, "z1", "r1")], [(0, plain)])
    infos = snap.list()
    index = snap.affinity_index()
    assert not index.groups() and not index.has_required_anti_affinity()
    fast = plugin(snap, use_index=True)
    monkeypatch.setattr(ipa, "PreFilterState", no_counting)
    monkeypatch.setattr(ipa, "_TopologyScorer", no_counting)
    state = CycleState()
    _, status = fast.pre_filter(state, pod_obj("incoming", plain), infos)
    assert status.code.name == "SKIP"
    assert state.read(ipa.PRE_FILTER_STATE_KEY) is None
    assert fast.pre_score(state, pod_obj("incoming", plain), infos).code.name == "SKIP"
    assert state.read(ipa.PRE_SCORE_STATE_KEY) is None


def test_existing_required_anti_affinity_term_takes_the_counting_path() -> None:
    # The existing pod's term selects app=b: the plain app=a pod is not selected, so the
    # counts are empty and PreFilter skips as upstream; an app=b pod is counted and filtered.
    guard = PodSpec("default", "", (), (Term("b", HOST, "own"),), (), ())
    snap = build([NodeSpec(True, "z0", "r0"), NodeSpec(True, "z1", "r1")], [(0, guard)])
    infos = snap.list()
    assert snap.affinity_index().has_required_anti_affinity()
    fast, walk = plugin(snap, use_index=True), plugin(snap, use_index=False)
    for app, code in (("a", "SKIP"), ("b", "SUCCESS")):
        pod = pod_obj("incoming", PodSpec("default", app, (), (), (), ()))
        fs, ws = CycleState(), CycleState()
        assert fast.pre_filter(fs, pod, infos)[1].code.name == code
        assert walk.pre_filter(ws, pod, infos)[1].code.name == code
        if code == "SUCCESS":
            assert statuses(fast, fs, pod, infos) == statuses(walk, ws, pod, infos)
            assert statuses(fast, fs, pod, infos)[0][0] == "UNSCHEDULABLE"
