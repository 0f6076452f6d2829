"""VolumeRestrictions: cases after upstream's volumerestrictions/volume_restrictions_test.go
(TestAccessModeConflicts: ReadWriteOncePod claims in use, PreFilter's Skip, AddPod/RemovePod
for preemption's dry run, a claim that does not exist) and its queueing hints."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import volume_restrictions
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, PodInfo
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle
from tests.unit.scheduling.plugins.volume_fakes import bound_claim, listers

RWOP = ("ReadWriteOncePod",)
CLAIMS = [
    bound_claim("rwop", "pv1", access_modes=RWOP),
    bound_claim("rwop2", "pv2", access_modes=RWOP),
    bound_claim("rwo", "pv3"),
]


def pod(name: str, *claims: str) -> types_pb2.Pod:
    p = make_pod(name).uid(name).namespace("default").obj()
    for i, c in enumerate(claims):
        p.spec.volumes.add(name=f"v{i}").persistent_volume_claim.claim_name = c
    return p


def plugin(*nodes: NodeInfo) -> volume_restrictions.VolumeRestrictions:
    return volume_restrictions.VolumeRestrictions(FakeHandle(nodes=nodes), listers(claims=CLAIMS))


def node_with(*pods: types_pb2.Pod) -> NodeInfo:
    n = NodeInfo(make_node("n").obj())
    for p in pods:
        n.add_pod(p)
    return n


def test_skip_without_conflicting_claims() -> None:
    holder = node_with(pod("holder", "rwo"))
    pl = plugin(holder)
    for p in (pod("none"), pod("rwo-user", "rwo"), pod("free", "rwop2")):
        _, s = pl.pre_filter(CycleState(), p, [holder])
        assert s.code is Code.SKIP, p.metadata.name


def test_claim_not_found() -> None:
    _, s = plugin().pre_filter(CycleState(), pod("p", "missing"), [])
    assert (s.code, s.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ('persistentvolumeclaim "missing" not found',),
    )


def test_conflict_on_every_node_until_the_holder_is_removed() -> None:
    holder = pod("holder", "rwop")
    n = node_with(holder)
    other = NodeInfo(make_node("other").obj())
    pl = plugin(n, other)
    state = CycleState()
    p = pod("p", "rwop", "rwo")
    _, s = pl.pre_filter(state, p, [n, other])
    assert s.code is Code.SUCCESS
    for ni in (n, other):
        f = pl.filter(state, p, ni)
        assert (f.code, f.reasons) == (
            Code.UNSCHEDULABLE,
            (volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,),
        )
    # Preemption's dry run on the holder's node (on a clone of the state).
    dry = state.clone()
    assert pl.remove_pod(dry, p, PodInfo(holder), n).code is Code.SUCCESS
    assert pl.filter(dry, p, n).code is Code.SUCCESS
    assert pl.add_pod(dry, p, PodInfo(holder), n).code is Code.SUCCESS
    assert pl.filter(dry, p, n).code is Code.UNSCHEDULABLE
    # The original state is untouched.
    assert pl.filter(state, p, n).code is Code.UNSCHEDULABLE


def test_hints() -> None:
    pl = plugin()
    p = pod("p", "rwop")
    assert pl.is_schedulable_after_pod_deleted(p, pod("h", "rwop"), None) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_deleted(p, pod("h", "rwo"), None) is QueueingHint.SKIP
    assert pl.is_schedulable_after_claim_change(p, None, CLAIMS[0]) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_claim_change(p, None, CLAIMS[2]) is QueueingHint.SKIP


def test_a_deferred_resize_of_a_rwop_claims_holder_is_not_its_own_conflict() -> None:
    """KEP-5836: the pod holding a ReadWriteOncePod claim is cycled on its own node for its
    deferred resize; counted as the claim's user it conflicts with itself (every node
    Unschedulable, its resize never preempts). With resize preemption on, the volume plugins
    Skip it at PreFilter."""
    holder = pod("holder", "rwop")
    holder.spec.node_name = "n"
    holder.status.conditions.add(type="PodResizePending", status="True", reason="Deferred")
    n = node_with(holder)
    off = plugin(n)
    state = CycleState()
    _, s = off.pre_filter(state, holder, [n])
    assert s.code is Code.SUCCESS
    assert off.filter(state, holder, n).code is Code.UNSCHEDULABLE
    on = volume_restrictions.VolumeRestrictions(
        FakeHandle(nodes=(n,)), listers(claims=CLAIMS), skip_deferred=True
    )
    assert on.pre_filter(CycleState(), holder, [n])[1].code is Code.SKIP
    # an ordinary pod of the claim still conflicts with the holder
    assert on.pre_filter(CycleState(), pod("p", "rwop"), [n])[1].code is Code.SUCCESS


@pytest.mark.parametrize(
    ("minor", "reason"),
    [
        (32, volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_BEFORE_1_33),
        (33, volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
        (37, volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
    ],
)
def test_conflict_reason_by_version(
    minor: int, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubernetes#129145 (1.33) rewrote the conflict's text; the plugin made at each version
    writes that version's."""
    monkeypatch.setattr(volume_restrictions, "volume_listers", lambda _: listers(claims=CLAIMS))
    holder = pod("holder", "rwop")
    n = node_with(holder)
    handle = FakeHandle(nodes=[n])
    handle.fake_gates = FeatureGates.for_version(Version(1, minor))
    pl = volume_restrictions.new({}, handle)
    state = CycleState()
    p = pod("p", "rwop")
    assert pl.pre_filter(state, p, [n])[1].code is Code.SUCCESS
    assert pl.filter(state, p, n).reasons == (reason,)
