"""DynamicResources (upstream dynamicresources_test.go's shapes): claims named and generated,
PreEnqueue's and PreFilter's messages, Filter over the allocator, the in-flight allocations
between Reserve and PreBind, Unreserve, the queueing hints, binding conditions, args."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.resourceclaim import ClaimNameError, pod_claim_name
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import dynamic_resources as dr
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, NodeScore
from kemu.testing import dra
from kemu.testing.builders import make_node, make_pod
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
