"""DynamicResources (upstream dynamicresources_test.go's shapes): claims named and generated,
PreEnqueue's and PreFilter's messages, Filter over the allocator, the in-flight allocations
between Reserve and PreBind, Unreserve, the queueing hints, binding conditions, args."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.component.featuregate import DRA_PREEMPTION, FeatureGates
from kemu.component.version import Version
from kemu.machinery.resourceclaim import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ClaimNameError,
    pod_claim_name,
)
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import dynamic_resources as dr
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, NodeScore, PodInfo
from kemu.testing import dra
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import wait_until
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeObjects

NS = "default"
CLS = "gpu.example.com"
DRIVER = "gpu.example.com"


def pod(name: str, *claims: str, uid: str = "") -> types_pb2.Pod:
    p = make_pod(name).namespace(NS).obj()
    p.metadata.uid = uid or f"uid-{name}"
    for c in claims:
        dra.with_claim(p, c, entry=c)
    return p


def claim(name: str, *, uid: str = "", count: int = 1) -> types_pb2.ResourceClaim:
    c = dra.claim(NS, name, CLS, count=count)
    c.metadata.uid = uid or f"cuid-{name}"
    c.metadata.resource_version = "1"
    return c


def plugin(*objs: Any, binding_timeout: float = 600.0) -> tuple[dr.DynamicResources, FakeObjects]:
    claims = FakeObjects(*[o for o in objs if isinstance(o, types_pb2.ResourceClaim)])
    slices = FakeObjects(*[o for o in objs if isinstance(o, types_pb2.ResourceSlice)])
    classes = FakeObjects(*[o for o in objs if isinstance(o, types_pb2.DeviceClass)])
    for o in classes.objs:
        o.metadata.namespace = "default"  # FakeObjects' lookup (a class is cluster-scoped)
    manager = DraManager(claims, slices, _Classes(classes))
    pl = dr.DynamicResources(
        FakeHandle(), manager, enabled=True, binding_timeout=binding_timeout, filter_timeout=0
    )
    return pl, claims


class _Classes:
    """A cluster-scoped lister over FakeObjects."""

    def __init__(self, objs: FakeObjects) -> None:
        self.objs = objs

    def get(self, name: str, namespace: str = "") -> Any:
        return self.objs.get(name, "default")

    def list(self, namespace: str | None = None) -> list[Any]:
        return self.objs.list()


def node(name: str) -> NodeInfo:
    return NodeInfo(make_node(name).obj())


def cycle(
    pl: dr.DynamicResources, p: types_pb2.Pod, nodes: list[NodeInfo]
) -> tuple[CycleState, dict[str, Code]]:
    state = CycleState()
    _, status = pl.pre_filter(state, p, nodes)
    assert status.code in (Code.SUCCESS, Code.SKIP), status
    return state, {n.name: pl.filter(state, p, n).code for n in nodes}


def test_pod_claim_name_named_generated_and_missing() -> None:
    p = pod("p")
    p.spec.resource_claims.add(name="a", resource_claim_name="claim-a")
    p.spec.resource_claims.add(name="t", resource_claim_template_name="tmpl")
    assert pod_claim_name(p, p.spec.resource_claims[0]) == ("claim-a", False)
    with pytest.raises(ClaimNameError, match='pod "default/p": ResourceClaim not created yet'):
        pod_claim_name(p, p.spec.resource_claims[1])
    p.status.resource_claim_statuses.add(name="t", resource_claim_name="p-t-abc")
    assert pod_claim_name(p, p.spec.resource_claims[1]) == ("p-t-abc", True)
    p.spec.resource_claims.add(name="x")
    with pytest.raises(ClaimNameError, match='spec.resourceClaim "x": none of the supported'):
        pod_claim_name(p, p.spec.resource_claims[2])


def test_s_dra_sched_u1_pre_enqueue_messages() -> None:
    """Upstream's PreEnqueue reasons: a missing claim, one being deleted, a generated claim
    the pod does not own."""
    c = claim("c1")
    gone = claim("gone")
    gone.metadata.deletion_timestamp.GetCurrentTime()
    pl, _ = plugin(c, gone, dra.device_class(CLS))
    assert pl.pre_enqueue(pod("p", "c1")).is_success()
    assert pl.pre_enqueue(pod("p", "missing")).message() == (
        'could not find ResourceClaim "default/missing"'
    )
    assert pl.pre_enqueue(pod("p", "gone")).message() == 'resourceclaim "gone" is being deleted'
    p = pod("p")
    p.spec.resource_claims.add(name="t", resource_claim_template_name="tmpl")
    p.status.resource_claim_statuses.add(name="t", resource_claim_name="c1")
    assert pl.pre_enqueue(p).message() == (
        "ResourceClaim default/c1 was not created for pod default/p (pod is not owner)"
    )
    assert pl.pre_enqueue(pod("no-claims")).is_success()


def test_s_dra_sched_u2_filter_allocates_per_node_and_in_flight_blocks_others() -> None:
    """Filter allocates on each node (the node's slice has the device, the other has none);
    after Reserve the allocation is in flight: a second pod sees the device taken ("cannot
    allocate all claims"); Unreserve gives it back."""
    n0, n1 = node("n0"), node("n1")
    objs = (
        dra.device_class(CLS),
        dra.resource_slice("n1", DRIVER, ["gpu-0"]),
        claim("c1"),
        claim("c2"),
    )
    pl, _ = plugin(*objs)
    p1 = pod("p1", "c1")
    state, codes = cycle(pl, p1, [n0, n1])
    assert codes == {"n0": Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "n1": Code.SUCCESS}
    assert pl.filter(state, p1, n0).message() == dr.MSG_CANNOT_ALLOCATE
    assert pl.reserve(state, p1, "n1").is_success()
    assert pl.manager.claim_has_pending_allocation("cuid-c1")
    # PreBindPreFlight: the pod has claims, so PreBind has work (KEP-5278's nomination).
    assert pl.pre_bind_pre_flight(state, p1, "n1").is_success()

    p2 = pod("p2", "c2")
    _, codes2 = cycle(pl, p2, [n0, n1])
    assert codes2 == {
        "n0": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }
    # A pod sharing the claim in flight waits for it.
    _, status = pl.pre_filter(CycleState(), pod("p3", "c1"), [n0, n1])
    assert status.message() == "resource claim default/c1 is in the process of being allocated"

    pl.unreserve(state, p1, "n1")
    assert not pl.manager.claim_has_pending_allocation("cuid-c1")
    _, codes3 = cycle(pl, p2, [n0, n1])
    assert codes3["n1"] == Code.SUCCESS


def test_s_dra_sched_u3_allocated_claims_constrain_nodes() -> None:
    """An allocated claim reserved for the pod: its node selector decides ("resourceclaim not
    available on the node" elsewhere); reserved to capacity for other pods: "resourceclaim in
    use"."""
    c = claim("c1")
    term = c.status.allocation.node_selector.node_selector_terms.add()
    term.match_fields.add(key="metadata.name", operator="In", values=["n1"])
    c.status.allocation.devices.results.add(request="req-0", driver=DRIVER, pool="n1", device="d")
    p = pod("p", "c1")
    c.status.reserved_for.add(resource="pods", name="p", uid=p.metadata.uid)
    pl, _ = plugin(c, dra.device_class(CLS))
    state, codes = cycle(pl, p, [node("n0"), node("n1")])
    assert codes == {"n0": Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "n1": Code.SUCCESS}
    assert pl.filter(state, p, node("n0")).message() == dr.MSG_NOT_AVAILABLE

    full = claim("full")
    full.status.allocation.devices.results.add(request="r", driver=DRIVER, pool="n1", device="d")
    for i in range(256):
        full.status.reserved_for.add(resource="pods", name=f"o{i}", uid=f"o{i}")
    pl2, _ = plugin(full)
    _, status = pl2.pre_filter(CycleState(), pod("q", "full"), [node("n0")])
    assert status.message() == dr.MSG_IN_USE


def test_s_dra_sched_u4_claim_hint_follows_upstreams_order() -> None:
    c1, other = claim("c1"), claim("other")
    pl, _ = plugin(c1, other)
    p = pod("p", "c1")
    hint = pl.is_schedulable_after_claim_change
    assert hint(p, None, c1) == QueueingHint.QUEUE  # the pod's claim created
    assert hint(p, None, other) == QueueingHint.SKIP  # someone else's
    freed = claim("other")
    freed.status.allocation.devices.results.add(request="r", driver=DRIVER, pool="n", device="d")
    assert hint(p, freed, other) == QueueingHint.QUEUE  # deallocated: devices freed
    finalized = claim("c1")
    finalized.metadata.finalizers.append(dr.DELETE_PROTECTION_FINALIZER)
    assert hint(p, c1, finalized) == QueueingHint.SKIP  # same status
    assert hint(pod("q", "missing"), None, c1) == QueueingHint.SKIP  # still waiting for a claim
    # The pod's own generated claim named in its status.
    t = pod("t")
    t.spec.resource_claims.add(name="g", resource_claim_template_name="tmpl")
    named = types_pb2.Pod()
    named.CopyFrom(t)
    named.status.resource_claim_statuses.add(name="g")  # no claim needed
    assert pl.is_schedulable_after_pod_change(t, t, named) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(t, t, t) == QueueingHint.SKIP


def test_binding_check_ready_pending_failed() -> None:
    c = claim("c1")
    r = c.status.allocation.devices.results.add(request="r", driver=DRIVER, pool="n", device="d")
    r.binding_conditions.append("Attached")
    r.binding_failure_conditions.append("Failed")
    assert dr.binding_check(c) == dr.BindingCheck(False)
    d = c.status.devices.add(driver=DRIVER, pool="n", device="d")
    d.conditions.add(type="Attached", status="True")
    assert dr.binding_check(c) == dr.BindingCheck(True)
    d.conditions.add(type="Failed", status="True", reason="R", message="m")
    assert dr.binding_check(c).failure == 'claim c1 binding failed: reason=R, message="m"'


def test_args_are_validated_as_upstream() -> None:
    handle = FakeHandle()
    with pytest.raises(ValueError, match="bindingTimeout: Invalid value: 0.0: must be at least 1"):
        dr.new({"bindingTimeout": 0}, handle)
    with pytest.raises(ValueError, match="filterTimeout: Invalid value: -1.0: must be zero or"):
        dr.new({"filterTimeout": -1}, handle)
    pl = dr.new({"bindingTimeout": "30s", "filterTimeout": "5s"}, handle)
    assert (pl.binding_timeout, pl.filter_timeout) == (30.0, 5.0)
    assert dr.new({}, handle).binding_timeout == dr.DEFAULT_BINDING_TIMEOUT_SECONDS


def test_s_dra_sched_u5_binding_timed_out_claim_is_not_available() -> None:
    """An allocated claim whose binding conditions are not met bindingTimeout after its
    allocationTimestamp: Filter marks it unavailable (PostFilter then deallocates it)."""
    c = claim("c1")
    r = c.status.allocation.devices.results.add(
        request="req-0", driver=DRIVER, pool="n0", device="d"
    )
    r.binding_conditions.append("Attached")
    p = pod("p", "c1")
    c.status.reserved_for.add(resource="pods", name="p", uid=p.metadata.uid)
    pl, _ = plugin(c, dra.device_class(CLS), binding_timeout=60)
    pl.binding_conditions = True
    now = pl.handle.clock.now()
    c.status.allocation.allocation_timestamp.FromSeconds(int(now) - 30)
    _, codes = cycle(pl, p, [node("n0")])
    assert codes == {"n0": Code.SUCCESS}
    c.status.allocation.allocation_timestamp.FromSeconds(int(now) - 61)
    state, codes = cycle(pl, p, [node("n0")])
    assert codes == {"n0": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
    assert pl.filter(state, p, node("n0")).message() == dr.MSG_NOT_AVAILABLE


def test_s_dra_sched_u6_request_kinds_at_pre_filter() -> None:
    """PreFilter's request checks: firstAvailable's subrequest classes; a request of neither
    kind is "unknown request type"."""
    c = claim("c1")
    req = c.spec.devices.requests[0]
    req.ClearField("exactly")
    req.first_available.add(name="big", device_class_name="nope")
    pl, _ = plugin(c, dra.device_class(CLS))
    _, status = pl.pre_filter(CycleState(), pod("p", "c1"), [node("n0")])
    assert status.message() == "request req-0/big: device class nope does not exist"
    del req.first_available[:]
    _, status = pl.pre_filter(CycleState(), pod("p", "c1"), [node("n0")])
    assert status.message() == "resource claim default/c1, request req-0: unknown request type"


def test_s_dra_sched_u7_score_prefers_earlier_alternatives() -> None:
    """Score (1.36+): a node whose devices satisfy the first firstAvailable alternative scores
    8, one satisfying only the second 7; normalized to 100 and 87. A pod without
    firstAvailable requests skips Score."""
    big, small = f"{CLS}.big", f"{CLS}.small"
    c = claim("c1")
    req = c.spec.devices.requests[0]
    req.ClearField("exactly")
    req.first_available.add(
        name="big", device_class_name=big, allocation_mode="ExactCount", count=1
    )
    req.first_available.add(
        name="small", device_class_name=small, allocation_mode="ExactCount", count=1
    )
    slices = (
        dra.resource_slice("n0", "big.example.com", ["b"]),
        dra.resource_slice("n1", "small.example.com", ["s"]),
    )
    big_class = dra.device_class(big, selectors=['device.driver == "big.example.com"'])
    small_class = dra.device_class(small, selectors=['device.driver == "small.example.com"'])
    pl, _ = plugin(c, big_class, small_class, *slices)
    p = pod("p", "c1")
    nodes = [node("n0"), node("n1")]
    state, codes = cycle(pl, p, nodes)
    assert codes == {"n0": Code.SUCCESS, "n1": Code.SUCCESS}
    assert pl.pre_score(state, p, nodes).is_success()
    raw = [pl.score(state, p, n)[0] for n in nodes]
    assert raw == [8, 7]
    normalized, _ = pl.normalize_score(
        state, p, [NodeScore(n.name, r) for n, r in zip(nodes, raw, strict=True)]
    )
    assert [s.score for s in normalized] == [100, 87]
    plain, _ = plugin(claim("c2"), dra.device_class(CLS), dra.resource_slice("n0", DRIVER, ["d"]))
    state2, _ = cycle(plain, pod("q", "c2"), nodes)
    assert plain.pre_score(state2, pod("q", "c2"), nodes).is_skip()


def preempting_plugin(*objs: Any) -> dr.DynamicResources:
    """The plugin with DRAPreemption on (alpha at 1.37)."""
    pl, _ = plugin(*objs)
    handle = FakeHandle()
    handle.fake_gates = FeatureGates.for_version(Version(1, 37), {DRA_PREEMPTION: True})
    return dr.DynamicResources(
        handle, pl.manager, enabled=True, binding_timeout=600.0, filter_timeout=0
    )


def held(name: str, device: str, *users: types_pb2.Pod) -> types_pb2.ResourceClaim:
    c = claim(name)
    c.status.allocation.devices.results.add(
        request="req-0", driver=DRIVER, pool="n1", device=device
    )
    for u in users:
        c.status.reserved_for.add(resource="pods", name=u.metadata.name, uid=u.metadata.uid)
    return c


def test_s_dra_preempt_u1_remove_pod_releases_the_victims_devices() -> None:
    """DRAPreemption: Filter's "cannot allocate all claims" is Unschedulable; RemovePod of
    the pod holding the device frees it for the dry run (Filter then succeeds), AddPod takes it
    back; a clone of the state keeps its own simulation (upstream
    dynamicresources_preemption_test.go TestPreemptionEndToEnd)."""
    victim = pod("victim", "vc")
    objs = (
        dra.device_class(CLS),
        dra.resource_slice("n1", DRIVER, ["gpu-0"]),
        held("vc", "gpu-0", victim),
        claim("mine"),
    )
    pl = preempting_plugin(*objs)
    assert pl.pre_filter_extensions() is pl
    p, n1 = pod("p", "mine"), node("n1")
    state, codes = cycle(pl, p, [n1])
    assert codes == {"n1": Code.UNSCHEDULABLE}
    assert pl.filter(state, p, n1).message() == dr.MSG_CANNOT_ALLOCATE
    dry = state.clone()
    assert pl.remove_pod(dry, p, PodInfo(victim), n1).is_success()
    assert pl.filter(dry, p, n1).is_success()
    assert pl.filter(state, p, n1).code == Code.UNSCHEDULABLE  # the cycle's state untouched
    assert pl.add_pod(dry, p, PodInfo(victim), n1).is_success()
    assert pl.filter(dry, p, n1).code == Code.UNSCHEDULABLE

    # Without the gate (1.37's default; 1.34-1.36): UnschedulableAndUnresolvable, no extensions.
    off, _ = plugin(*objs)
    assert off.pre_filter_extensions() is None
    assert cycle(off, p, [n1])[1] == {"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


def test_s_dra_preempt_u2_shared_and_pod_group_claims() -> None:
    """A shared claim is released only once every pod of reservedFor (by UID) is removed; a
    claim reserved for a PodGroup never is (upstream TestRemovePod)."""
    a, b, other = pod("a", "shared"), pod("b", "shared"), pod("c", "spurious")
    group = held("group", "gpu-2")
    group.status.reserved_for.add(
        api_group="scheduling.k8s.io", resource="podgroups", name="g", uid="g-uid"
    )
    objs = (
        dra.device_class(CLS),
        held("shared", "gpu-0", a, b),
        held("spurious", "gpu-1", pod("never-removed")),
        group,
        claim("mine"),
    )
    pl = preempting_plugin(*objs)
    p, n1 = pod("p", "mine"), node("n1")
    state, _ = cycle(pl, p, [n1])
    s = state.read(dr.STATE_KEY)
    assert isinstance(s, dr._State)
    pl.remove_pod(state, p, PodInfo(a), n1)
    assert s.released == set()
    pl.remove_pod(state, p, PodInfo(b), n1)
    assert s.released == {"cuid-shared"}
    pl.add_pod(state, p, PodInfo(a), n1)
    assert s.released == set() and s.removed_for_claim == {"cuid-shared": {b.metadata.uid}}
    pl.remove_pod(state, p, PodInfo(other), n1)
    assert "cuid-spurious" not in s.released
    pl.remove_pod(state, p, PodInfo(pod("g1", "group")), n1)
    assert "cuid-group" not in s.released


def test_s_dra_ext_u2_special_claim_requests_per_node() -> None:
    """DRAExtendedResource: the special claim's requests on a node without the resource in
    allocatable, one per container and backed resource, named container-<i>-request-<j> (i
    over initContainers then containers, j the resource's index in the container's sorted
    requests), allocated with ExactCount; a node with a device plugin's count gets none; a
    special claim left with requests from an earlier cycle is "cannot schedule extended
    resource claim" (upstream extendedresources.go)."""
    gpu = "example.com/gpu"
    dc = dra.device_class(CLS)
    dc.spec.extended_resource_name = gpu
    pl, _ = plugin(dc, dra.resource_slice("n1", DRIVER, ["gpu-0", "gpu-1", "gpu-2"]))
    p = make_pod("p").namespace(NS).req({"cpu": "100m", gpu: "2"}).obj()
    p.metadata.uid = "uid-p"
    init = p.spec.init_containers.add(name="init")
    init.resources.requests[gpu] = "1"
    n1 = node("n1")
    plugged = NodeInfo(make_node("plugged").capacity(cpu="4", memory="8Gi", **{gpu: "4"}).obj())
    state, codes = cycle(pl, p, [n1, plugged])
    assert codes == {"n1": Code.SUCCESS, "plugged": Code.SUCCESS}
    s = state.read(dr.STATE_KEY)
    assert isinstance(s, dr._State) and s.extended is not None
    assert s.extended.metadata.name == dr.SPECIAL_CLAIM_NAME
    assert s.extended.metadata.generate_name == "p-extended-resources-"
    assert "plugged" not in s.node_extended
    reqs = s.node_extended["n1"].spec.devices.requests
    assert [(r.name, r.exactly.device_class_name, r.exactly.count) for r in reqs] == [
        ("container-0-request-0", CLS, 1),
        ("container-1-request-1", CLS, 2),
    ]
    [allocation] = s.node_allocations["n1"]
    assert len(allocation.devices.results) == 3

    stale = claim("p-extended-resources-x")
    stale.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] = "true"
    stale.metadata.owner_references.add(kind="Pod", name="p", uid="uid-p", controller=True)
    pl2, _ = plugin(dc, stale, dra.resource_slice("n1", DRIVER, ["gpu-0"]))
    state2, codes2 = cycle(pl2, p, [n1])
    assert pl2.filter(state2, p, n1).message() == dr.MSG_STALE_EXTENDED_CLAIM


def _allocated(name: str, node_name: str, device: str) -> types_pb2.ResourceClaim:
    c = claim(name)
    r = c.status.allocation.devices.results.add(
        request="req-0", driver=DRIVER, pool=node_name, device=device
    )
    assert r.device == device
    return c


def test_s_dra_perf_4_filter_over_columns_agrees_with_filter_per_node() -> None:
    """S-DRA-PERF-4: DynamicResources' batch Filter (filter_columns, reject_columns over the
    cycle's NodeColumns) on random clusters: a row it passes is one `filter` passes, a row
    it rejects gets `filter`'s Status; Reserve on a node passed only over columns allocates
    what the per-node path allocates there; for a claim and for DRAExtendedResource's
    special claim (a node with a device plugin's count left to the per-node path)."""
    import random

    import numpy as np

    from kemu.scheduling.columns import NodeColumns

    gpu = "example.com/gpu"
    passed = rejected = 0
    for seed in range(40):
        rng = random.Random(seed)
        dc = dra.device_class(CLS)
        dc.spec.extended_resource_name = gpu
        infos: list[NodeInfo] = []
        objs: list[Any] = [dc]
        for i in range(rng.randint(1, 8)):
            name = f"n{i}"
            if rng.random() < 0.15:
                plugged = make_node(name).capacity(cpu="4", memory="8Gi", **{gpu: "4"}).obj()
                infos.append(NodeInfo(plugged))
                continue
            infos.append(node(name))
            devices = [f"gpu-{j}" for j in range(rng.randint(0, 4))]
            if devices:
                objs.append(dra.resource_slice(name, DRIVER, devices))
            for d in devices:
                if rng.random() < 0.4:
                    objs.append(_allocated(f"taken-{name}-{d}", name, d))
        count = rng.randint(1, 3)
        objs.append(claim("mine", count=count))
        pl, _ = plugin(*objs)
        with_claim = pod("p", "mine")
        extended = make_pod("e").namespace(NS).req({"cpu": "100m", gpu: str(count)}).obj()
        extended.metadata.uid = "uid-e"
        columns = NodeColumns(infos, {ni.name: row for row, ni in enumerate(infos)})
        rows = np.arange(len(infos), dtype=np.int64)
        for p in (with_claim, extended):
            by_columns = CycleState()
            _, status = pl.pre_filter(by_columns, p, infos)
            assert status.is_success(), status
            mask = pl.filter_columns(by_columns, p, columns, rows)
            known = pl.reject_columns(by_columns, p, columns, rows)
            assert mask is not None and known is not None
            which, statuses = known
            per_node, codes = cycle(pl, p, infos)
            for row, ni in enumerate(infos):
                want = pl.filter(per_node, p, ni)
                assert want.code is codes[ni.name]
                if mask[row]:
                    passed += 1
                    assert want.is_success(), (seed, ni.name)
                    assert _reserved(pl, p, infos, ni, columns) == _reserved(pl, p, infos, ni)
                elif which[row] >= 0:
                    rejected += 1
                    s = statuses[int(which[row])]
                    assert (s.code, s.message()) == (want.code, want.message()), (seed, ni.name)
    assert passed and rejected


def _reserved(
    pl: dr.DynamicResources,
    p: types_pb2.Pod,
    infos: list[NodeInfo],
    ni: NodeInfo,
    columns: Any = None,
) -> list[bytes]:
    """A fresh cycle's allocation on `ni` by Reserve after Filter over `columns` (or per node
    on `ni` without them), Unreserve'd after."""
    import numpy as np

    state = CycleState()
    assert pl.pre_filter(state, p, infos)[1].is_success()
    if columns is not None:
        pl.filter_columns(state, p, columns, np.arange(len(infos), dtype=np.int64))
    else:
        assert pl.filter(state, p, ni).is_success()
    assert pl.reserve(state, p, ni.name).is_success()
    s = state.read(dr.STATE_KEY)
    assert isinstance(s, dr._State)
    out = [r.SerializeToString() for r in s.node_allocations[ni.name]]
    pl.unreserve(state, p, ni.name)
    return out


def test_s_dra_perf_5_claim_hint_shortcut_gives_upstreams_answer() -> None:
    """S-DRA-PERF-5: the claim queueing hint's shortcut (a claim the pod cannot name is
    skipped before its claims are looked up) answers as upstream's order does, on random
    pods (named and template claims, generated or not) and claim events (added, status
    changed or not, deallocated, other namespaces and names)."""
    import random

    def reference(pl: dr.DynamicResources, p: types_pb2.Pod, old: Any, new: Any) -> Any:
        claims = pl._pod_claims_or_none(p)
        if claims is None:
            return QueueingHint.SKIP
        if old is not None and old.status.HasField("allocation"):
            if not new.status.HasField("allocation"):
                return QueueingHint.QUEUE
        if all(c.metadata.uid != new.metadata.uid for c in claims):
            return QueueingHint.SKIP
        if old is None or old.status == new.status:
            return QueueingHint.QUEUE if old is None else QueueingHint.SKIP
        return QueueingHint.QUEUE

    answers = set()
    for seed in range(300):
        rng = random.Random(seed)
        names = ["a", "b", "p-t-1", "p-t-2"]
        existing = [claim(n) for n in names if rng.random() < 0.7]
        for c in existing:
            if c.metadata.name.startswith("p-t") and rng.random() < 0.8:
                c.metadata.owner_references.add(kind="Pod", name="p", uid="uid-p", controller=True)
        pl, _ = plugin(dra.device_class(CLS), *existing)
        p = pod("p", *rng.sample(["a", "b"], rng.randint(0, 2)))
        if rng.random() < 0.6:
            p.spec.resource_claims.add(name="t", resource_claim_template_name="tmpl")
            if rng.random() < 0.7:
                p.status.resource_claim_statuses.add(name="t", resource_claim_name="p-t-1")
        new = claim(rng.choice([*names, "other"]), uid=f"uid-new-{seed}")
        if rng.random() < 0.2:
            new.metadata.namespace = "elsewhere"
        for c in existing:
            if (c.metadata.namespace, c.metadata.name) == (
                new.metadata.namespace,
                new.metadata.name,
            ):
                new.metadata.uid = c.metadata.uid
        old = None
        if rng.random() < 0.7:
            old = types_pb2.ResourceClaim()
            old.CopyFrom(new)
            if rng.random() < 0.5:
                old.status.allocation.devices.results.add(request="req-0", device="d")
            if rng.random() < 0.5:
                new.status.reserved_for.add(resource="pods", name="p", uid="uid-p")
        got = pl.is_schedulable_after_claim_change(p, old, new)
        assert got == reference(pl, p, old, new), seed
        answers.add(got)
    assert answers == {QueueingHint.QUEUE, QueueingHint.SKIP}


@pytest.mark.anyio
async def test_s_dra_ext_u3_devices_stay_in_flight_until_the_created_claim_is_in_the_informer() -> (
    None
):
    """DRAExtendedResource PreBind: the special claim is created, allocated and reserved, and
    its devices stay in flight (the Reserve-time temporary uid) until the claims' informer
    holds the created claim and the API's answer is assumed over it, looked at once and then
    every second (upstream bindClaim's deferred PollUntilContextTimeout over
    AssumeClaimAfterAPICall): a second pod's cycle in between finds the node's only device
    taken, not free."""
    gpu = "example.com/gpu"
    dc = dra.device_class(CLS)
    dc.spec.extended_resource_name = gpu
    pl, informer = plugin(dc, dra.resource_slice("n1", DRIVER, ["gpu-0"]))
    client = pl.handle.client
    assert isinstance(client, FakeClient) and isinstance(pl.handle.clock, FakeClock)
    clock = pl.handle.clock
    n1 = node("n1")

    def gpu_pod(name: str) -> types_pb2.Pod:
        p = make_pod(name).namespace(NS).req({gpu: "1"}).obj()
        p.metadata.uid = f"uid-{name}"
        return p

    p1, p2 = gpu_pod("p1"), gpu_pod("p2")
    client.add(p1)
    state, codes = cycle(pl, p1, [n1])
    assert codes == {"n1": Code.SUCCESS}
    assert pl.reserve(state, p1, "n1").is_success()

    results: list[Code] = []

    async def pre_bind() -> None:
        results.append((await pl.pre_bind(state, p1, "n1")).code)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pre_bind)
        await wait_until(lambda: clock.sleepers)  # written; waiting for the informer
        [created] = (await client.list(types_pb2.ResourceClaim, NS)).items
        assert created.status.allocation.devices.results[0].device == "gpu-0"
        assert not informer.list()
        _, in_between = cycle(pl, p2, [n1])
        assert in_between == {"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
        assert pl.manager.pending_allocations() == 1

        informer.objs.append(created)  # the informer's event arrives
        clock.advance(1.0)
    assert results == [Code.SUCCESS]
    assert pl.manager.pending_allocations() == 0
    _, after = cycle(pl, p2, [n1])
    assert after == {"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}  # allocated, as the informer says
    stored = await client.get(types_pb2.Pod, "p1", NS)
    assert stored.status.extended_resource_claim_status.resource_claim_name == (
        created.metadata.name
    )


@pytest.mark.anyio
async def test_s_dra_ext_u3_an_informer_that_never_catches_up_ends_the_wait_after_120s() -> None:
    """Upstream's AssumeExtendedResourceTimeoutDefaultSeconds: PreBind succeeds after 120 s
    (only logged) and the in-flight devices are released."""
    gpu = "example.com/gpu"
    dc = dra.device_class(CLS)
    dc.spec.extended_resource_name = gpu
    pl, _ = plugin(dc, dra.resource_slice("n1", DRIVER, ["gpu-0"]))
    client, clock = pl.handle.client, pl.handle.clock
    assert isinstance(client, FakeClient) and isinstance(clock, FakeClock)
    p1 = make_pod("p1").namespace(NS).req({gpu: "1"}).obj()
    p1.metadata.uid = "uid-p1"
    client.add(p1)
    state, _ = cycle(pl, p1, [node("n1")])
    assert pl.reserve(state, p1, "n1").is_success()
    results: list[Code] = []

    async def pre_bind() -> None:
        results.append((await pl.pre_bind(state, p1, "n1")).code)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pre_bind)
        for _ in range(120):
            await wait_until(lambda: clock.sleepers)
            assert not results and pl.manager.pending_allocations() == 1
            clock.advance(1.0)
    assert results == [Code.SUCCESS]
    assert pl.manager.pending_allocations() == 0
