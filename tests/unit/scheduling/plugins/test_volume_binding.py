"""VolumeBinding: cases after upstream's volumebinding/volume_binding_test.go (TestVolumeBinding:
no claims, claim not found, unbound immediate claims, bound claims and their PVs' node
affinity, a PV that does not exist, WaitForFirstConsumer claims with static volumes and with
provisioning) and binder_test.go (the smallest matching volume, assume and revert,
checkBindings and the bind timeout)."""

from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
)
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import volume_binder, volume_binding
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
)
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo
from kemu.testing import storage
from kemu.testing.builders import make_node, make_pod
from kemu.testing.eventually import eventually
from tests.unit.scheduling.plugins.fakes import FakeHandle
from tests.unit.scheduling.plugins.volume_fakes import (
    Lister,
    available,
    bound_claim,
    listers,
    unbound_claim,
)

WFFC = storage.storage_class("wait")
IMMEDIATE = storage.storage_class("immediate", wait_for_first_consumer=False)
PROVISIONED = storage.storage_class("dynamic", "csi.example.com")


def pod(*claims: str) -> types_pb2.Pod:
    p = make_pod("p").uid("p").namespace("default").obj()
    for i, name in enumerate(claims):
        p.spec.volumes.add(name=f"v{i}").persistent_volume_claim.claim_name = name
    return p


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo(make_node(name).labels(labels).obj())


def plugin(
    ls: VolumeListers, handle: FakeHandle | None = None, timeout: float = 600
) -> volume_binding.VolumeBinding:
    return volume_binding.VolumeBinding(handle or FakeHandle(), ls, bind_timeout=timeout)


def filter_on(
    pl: volume_binding.VolumeBinding, p: types_pb2.Pod, *nodes: NodeInfo
) -> tuple[CycleState, list[tuple[Code, tuple[str, ...]]]]:
    state = CycleState()
    _, s = pl.pre_filter(state, p, list(nodes))
    assert s.code is Code.SUCCESS, s
    out = []
    for n in nodes:
        f = pl.filter(state, p, n)
        out.append((f.code, f.reasons))
    return state, out


def test_pod_without_claims_skips() -> None:
    pl = plugin(listers())
    state = CycleState()
    _, s = pl.pre_filter(state, pod(), [node("n")])
    assert s.code is Code.SKIP
    assert pl.pre_bind_pre_flight(state, pod(), "n").code is Code.SKIP
    assert pl.reserve(state, pod(), "n").code is Code.SUCCESS


def test_claim_not_found_and_unbound_immediate() -> None:
    pl = plugin(listers(classes=[IMMEDIATE], claims=[unbound_claim("c", "immediate")]))
    _, s = pl.pre_filter(CycleState(), pod("missing"), [])
    assert (s.code, s.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ('persistentvolumeclaim "missing" not found',),
    )
    _, s = pl.pre_filter(CycleState(), pod("c"), [])
    assert (s.code, s.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (volume_binder.ERR_REASON_UNBOUND_IMMEDIATE,),
    )


def test_bound_claims_follow_their_volumes_node_affinity() -> None:
    pv = available(storage.volume("pv", "sc", node="n2"))
    pl = plugin(listers(claims=[bound_claim("c", "pv"), bound_claim("gone", "nope")], volumes=[pv]))
    state, got = filter_on(pl, pod("c"), node("n1"), node("n2"))
    assert got == [
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_binder.ERR_REASON_NODE_CONFLICT,)),
        (Code.SUCCESS, ()),
    ]
    pl.reserve(state, pod("c"), "n2")
    assert pl.pre_bind_pre_flight(state, pod("c"), "n2").code is Code.SKIP
    _, got = filter_on(pl, pod("gone"), node("n1"))
    assert got == [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_binder.ERR_REASON_PV_NOT_EXIST,))]


def test_static_binding_picks_the_smallest_matching_volume_and_assumes_it() -> None:
    small = available(storage.volume("small", "wait", size="1Gi", node="n1"))
    big = available(storage.volume("big", "wait", size="10Gi"))
    too_small = available(storage.volume("tiny", "wait", size="100Mi"))
    other_class = available(storage.volume("other", "sc", size="1Gi"))
    rwx = available(storage.volume("rwx", "wait", access_modes=["ReadWriteMany"]))
    ls = listers(
        claims=[unbound_claim("c", "wait"), unbound_claim("d", "wait")],
        volumes=[small, big, too_small, other_class, rwx],
        classes=[WFFC],
    )
    pl = plugin(ls)
    state, got = filter_on(pl, pod("c"), node("n1"), node("n2"))
    assert got == [(Code.SUCCESS, ()), (Code.SUCCESS, ())]
    assert pl.reserve(state, pod("c"), "n1").code is Code.SUCCESS
    assert pl.pre_bind_pre_flight(state, pod("c"), "n1").code is Code.SUCCESS
    assumed = pl.binder.volumes.get("small")
    assert assumed is not None and assumed.spec.claim_ref.name == "c"
    assert assumed.spec.claim_ref.uid == "uid-c"
    # The next pod's claim cannot have the assumed volume: only "big" remains (on any node).
    _, got = filter_on(pl, pod("d"), node("n1"))
    assert got == [(Code.SUCCESS, ())]
    # Unreserve gives it back.
    pl.unreserve(state, pod("c"), "n1")
    again = pl.binder.volumes.get("small")
    assert again is not None and not again.spec.claim_ref.name


def test_no_volume_and_no_provisioner_is_a_bind_conflict() -> None:
    ls = listers(claims=[unbound_claim("c", "wait")], classes=[WFFC])
    _, got = filter_on(plugin(ls), pod("c"), node("n1"))
    assert got == [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_binder.ERR_REASON_BIND_CONFLICT,))]


def test_provisioning_respects_allowed_topologies_and_the_selected_node() -> None:
    sc = storage.storage_class("dynamic", "csi.example.com")
    term = sc.allowed_topologies.add()
    term.match_label_expressions.add(key="zone", values=["a"])
    selected = unbound_claim("s", "dynamic")
    selected.metadata.annotations[ANN_SELECTED_NODE] = "n2"
    ls = listers(claims=[unbound_claim("c", "dynamic"), selected], classes=[sc])
    _, got = filter_on(plugin(ls), pod("c"), node("n1", zone="a"), node("n2", zone="b"))
    assert [c for c, _ in got] == [Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    _, got = filter_on(plugin(ls), pod("s"), node("n1", zone="a"))
    assert got == [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_binder.ERR_REASON_BIND_CONFLICT,))]


def test_a_selected_node_is_looked_at_before_the_static_volumes() -> None:
    """binder.go FindPodVolumes: a claim with the selected-node annotation refuses every other
    node before any volume is matched (its fast path), and on its node it is provisioned even
    where a static volume would match; the pod's other claims still take static volumes."""
    sc = storage.storage_class("dynamic", "csi.example.com")
    on_n1 = available(storage.volume("pv1", "dynamic", node="n1"))
    on_n2 = available(storage.volume("pv2", "dynamic", node="n2"))
    selected = unbound_claim("s", "dynamic")
    selected.metadata.annotations[ANN_SELECTED_NODE] = "n2"
    ls = listers(
        claims=[selected, unbound_claim("c", "dynamic")], volumes=[on_n1, on_n2], classes=[sc]
    )
    pl = plugin(ls)
    state, got = filter_on(pl, pod("s", "c"), node("n1"), node("n2"))
    assert got == [
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_binder.ERR_REASON_BIND_CONFLICT,)),
        (Code.SUCCESS, ()),
    ]
    assert pl.reserve(state, pod("s", "c"), "n2").code is Code.SUCCESS
    # "s" is provisioned on n2 (pv2 stays free), "c" takes pv2: the one volume left on n2.
    assumed = pl.binder.volumes.get("pv2")
    assert assumed is not None and assumed.spec.claim_ref.name == "c"
    claim = pl.binder.claims.get("s", "default")
    assert claim is not None and claim.metadata.annotations[ANN_SELECTED_NODE] == "n2"


async def test_pre_bind_writes_the_selected_node_and_waits_for_the_binding() -> None:
    handle = FakeHandle(nodes=[node("n1")])
    claim = unbound_claim("c", "dynamic")
    claim.metadata.resource_version = ""
    created = await handle.client.create(claim)
    claims = Lister([created])
    ls = VolumeListers(claims, Lister(), Lister([PROVISIONED]), Lister())
    pl = plugin(ls, handle)
    state, got = filter_on(pl, pod("c"), node("n1"))
    assert got == [(Code.SUCCESS, ())]
    pl.reserve(state, pod("c"), "n1")
    assert pl.pre_bind_pre_flight(state, pod("c"), "n1").code is Code.SUCCESS
    result = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result.append(await pl.pre_bind(state, pod("c"), "n1"))

        tg.start_soon(run)
        # PreBind wrote the annotation and polls.
        await eventually(lambda: handle.clock.sleepers > 0, timeout=5)
        written = await handle.client.get(types_pb2.PersistentVolumeClaim, "c", "default")
        assert written.metadata.annotations[ANN_SELECTED_NODE] == "n1"
        # The provisioner and the PV controller bind it; the informer shows it.
        pv = storage.volume("pv", "dynamic", node="n1", driver="csi.example.com")
        ls.volumes.put(pv)  # type: ignore[attr-defined]
        bound = types_pb2.PersistentVolumeClaim()
        bound.CopyFrom(written)
        bound.spec.volume_name = "pv"
        bound.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
        bound.metadata.resource_version = str(int(written.metadata.resource_version) + 1)
        claims.put(bound)
        handle.clock.advance(1.0)
    assert result[0].code is Code.SUCCESS, result[0]


async def test_pre_bind_times_out_after_bind_timeout_seconds() -> None:
    handle = FakeHandle(nodes=[node("n1")])
    claim = unbound_claim("c", "dynamic")
    claim.metadata.resource_version = ""
    created = await handle.client.create(claim)
    ls = VolumeListers(Lister([created]), Lister(), Lister([PROVISIONED]), Lister())
    pl = plugin(ls, handle, timeout=0)
    state, _ = filter_on(pl, pod("c"), node("n1"))
    pl.reserve(state, pod("c"), "n1")
    s = await pl.pre_bind(state, pod("c"), "n1")
    assert s.code is Code.ERROR
    assert "binding volumes: context deadline exceeded" in s.message()
    pl.unreserve(state, pod("c"), "n1")
    assert pl.binder.claims.assumed_count() == 0


def test_args() -> None:
    assert volume_binding.new({}, FakeHandle()).bind_timeout == 600
    assert volume_binding.new({"bindTimeoutSeconds": 5}, FakeHandle()).bind_timeout == 5
    with pytest.raises(ValueError, match="bindTimeoutSeconds"):
        volume_binding.new({"bindTimeoutSeconds": -1}, FakeHandle())
    with pytest.raises(ValueError, match='unknown field "bogus"'):
        volume_binding.new({"bogus": 1}, FakeHandle())


def test_assume_cache() -> None:
    base = available(storage.volume("pv", "sc"))
    lister = Lister([base])
    cache: volume_binder.AssumeCache[types_pb2.PersistentVolume] = volume_binder.AssumeCache(lister)
    local = types_pb2.PersistentVolume()
    local.CopyFrom(base)
    local.spec.claim_ref.name = "c"
    cache.assume(local)
    got = cache.get("pv")
    assert got is not None and got.spec.claim_ref.name == "c"  # same version: the assumption
    # The API's answer is newer; the informer has not seen it yet.
    written = types_pb2.PersistentVolume()
    written.CopyFrom(local)
    written.metadata.resource_version = "2"
    cache.assume(written, from_api=True)
    got = cache.get("pv")
    assert got is not None and got.metadata.resource_version == "2"
    # The informer catches up: its version, the assumption dropped.
    lister.put(written)
    assert cache.get("pv") is written and cache.assumed_count() == 0
    # An object deleted takes its assumption with it.
    cache.assume(local)
    del lister.objs[("", "pv")]
    cache.prune()
    assert cache.assumed_count() == 0 and cache.get("pv") is None
