"""NodeVolumeLimits: cases after upstream's nodevolumelimits/csi_test.go (TestCSILimits: the
CSINode's allocatable count per driver, volumes counted once per unique handle, unbound
claims counted through their class's provisioner, no CSINode or no count means no limit)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_volume_limits
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo
from kemu.testing import storage
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.volume_fakes import bound_claim, listers, unbound_claim

DRIVER = "csi.example.com"
OTHER = "other.example.com"
VOLUMES = [
    storage.volume("a", "sc", driver=DRIVER),
    storage.volume("b", "sc", driver=DRIVER),
    storage.volume("o", "sc", driver=OTHER),
    storage.volume("local", "sc"),
]
CLAIMS = [bound_claim(f"c-{pv.metadata.name}", pv.metadata.name) for pv in VOLUMES] + [
    unbound_claim("new", "csi")
]
CLASSES = [storage.storage_class("csi", DRIVER)]


def pod(name: str, *claims: str) -> types_pb2.Pod:
    p = make_pod(name).uid(name).namespace("default").obj()
    for i, c in enumerate(claims):
        p.spec.volumes.add(name=f"v{i}").persistent_volume_claim.claim_name = c
    return p


def csi_node(count: int | None) -> types_pb2.CSINode:
    n = types_pb2.CSINode()
    n.metadata.name = "n"
    d = n.spec.drivers.add(name=DRIVER, node_id="n")
    if count is not None:
        d.allocatable.count = count
    return n


def run(p: types_pb2.Pod, existing: list[types_pb2.Pod], count: int | None) -> Code:
    csi_nodes = [] if count == -1 else [csi_node(count)]
    pl = node_volume_limits.NodeVolumeLimits(
        listers(claims=CLAIMS, volumes=VOLUMES, classes=CLASSES, csi_nodes=csi_nodes)
    )
    ni = NodeInfo(make_node("n").obj())
    for e in existing:
        ni.add_pod(e)
    state = CycleState()
    _, s = pl.pre_filter(state, p, [ni])
    if s.code is Code.SKIP:
        return Code.SUCCESS
    f = pl.filter(state, p, ni)
    if f.code is Code.UNSCHEDULABLE:
        assert f.reasons == (node_volume_limits.ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)
    return f.code


def test_limits() -> None:
    running = [pod("r", "c-a")]
    assert run(pod("p", "c-b"), running, 1) is Code.UNSCHEDULABLE
    assert run(pod("p", "c-b"), running, 2) is Code.SUCCESS
    # The same volume is attached once: sharing it needs no more room.
    assert run(pod("p", "c-a"), running, 1) is Code.SUCCESS
    # Another driver's and non-CSI volumes are not counted against this driver.
    assert run(pod("p", "c-o", "c-local"), running, 1) is Code.SUCCESS
    # An unbound claim counts through its class's provisioner.
    assert run(pod("p", "new"), running, 1) is Code.UNSCHEDULABLE
    # No count, or no CSINode: no limit.
    assert run(pod("p", "c-b"), running, None) is Code.SUCCESS
    assert run(pod("p", "c-b"), running, -1) is Code.SUCCESS
    assert run(pod("p"), running, 0) is Code.SUCCESS


def test_missing_claim() -> None:
    pl = node_volume_limits.NodeVolumeLimits(listers(csi_nodes=[csi_node(1)]))
    ni = NodeInfo(make_node("n").obj())
    f = pl.filter(CycleState(), pod("p", "nope"), ni)
    assert (f.code, f.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ('persistentvolumeclaim "nope" not found',),
    )


def test_pod_deleted_hint() -> None:
    pl = node_volume_limits.NodeVolumeLimits(listers())
    bound = pod("gone", "c-a")
    bound.spec.node_name = "n"
    assert pl.is_schedulable_after_pod_deleted(pod("p", "c-b"), bound, None) is QueueingHint.QUEUE
    unbound = pod("pending", "c-a")
    assert pl.is_schedulable_after_pod_deleted(pod("p", "c-b"), unbound, None) is QueueingHint.SKIP
    plain = pod("plain")
    plain.spec.node_name = "n"
    assert pl.is_schedulable_after_pod_deleted(pod("p", "c-b"), plain, None) is QueueingHint.SKIP


def _ebs(name: str, volume_id: str) -> types_pb2.PersistentVolume:
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = name
    pv.spec.storage_class_name = "sc"
    pv.spec.capacity["storage"] = "1Gi"
    pv.spec.access_modes.append("ReadWriteOnce")
    pv.spec.aws_elastic_block_store.volume_id = volume_id
    return pv


def test_in_tree_ebs_counts_as_the_csi_driver_only_where_the_node_migrated_it() -> None:
    """csi.go getCSIDriverInfo: an in-tree EBS volume is ebs.csi.aws.com's (its handle the
    volume ID, an aws://zone/ prefix dropped) on a node whose CSINode lists
    kubernetes.io/aws-ebs as migrated; on another node it is not counted."""
    volumes = [_ebs("e1", "vol-1"), _ebs("e2", "aws://us-east-1a/vol-2"), _ebs("e3", "vol-1")]
    claims = [bound_claim(f"c-{pv.metadata.name}", pv.metadata.name) for pv in volumes]

    def filter_code(migrated: bool) -> Code:
        n = types_pb2.CSINode()
        n.metadata.name = "n"
        n.spec.drivers.add(name="ebs.csi.aws.com", node_id="n").allocatable.count = 1
        if migrated:
            n.metadata.annotations["storage.alpha.kubernetes.io/migrated-plugins"] = (
                "kubernetes.io/aws-ebs"
            )
        pl = node_volume_limits.NodeVolumeLimits(
            listers(claims=claims, volumes=volumes, csi_nodes=[n])
        )
        ni = NodeInfo(make_node("n").obj())
        ni.add_pod(pod("r", "c-e1"))
        return pl.filter(CycleState(), pod("p", "c-e2"), ni).code

    assert filter_code(migrated=True) is Code.UNSCHEDULABLE
    assert filter_code(migrated=False) is Code.SUCCESS
    # The same volume ID is one attachment.
    assert node_volume_limits.ebs_volume_handle("aws://us-east-1a/vol-2") == "vol-2"
