"""VolumeZone: cases after upstream's volumezone/volume_zone_test.go (TestSingleZone,
TestMultiZone with "__"-joined zones, beta labels against GA node labels, nodes without zone
labels, WaitForFirstConsumer claims left to VolumeBinding, the not-found errors)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import volume_zone
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo
from kemu.testing import storage
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.volume_fakes import bound_claim, listers, unbound_claim

ZONE = LABEL_TOPOLOGY_ZONE
BETA_ZONE = volume_zone.LABEL_FAILURE_DOMAIN_BETA_ZONE
REGION = LABEL_TOPOLOGY_REGION

VOLUMES = [
    storage.volume("in-a", "sc", labels={ZONE: "a"}),
    storage.volume("in-a-or-b", "sc", labels={ZONE: "a__b"}),
    storage.volume("beta-a", "sc", labels={BETA_ZONE: "a"}),
    storage.volume("region-r", "sc", labels={REGION: "r"}),
    storage.volume("nowhere", "sc"),
]
CLAIMS = [bound_claim(f"c-{pv.metadata.name}", pv.metadata.name) for pv in VOLUMES] + [
    unbound_claim("wffc", "wait"),
    unbound_claim("immediate", "immediate"),
    unbound_claim("classless", ""),
    bound_claim("dangling", "missing-pv"),
]
CLASSES = [
    storage.storage_class("wait"),
    storage.storage_class("immediate", wait_for_first_consumer=False),
]


def run(claim: str, **labels: str) -> tuple[Code, tuple[str, ...]]:
    pl = volume_zone.VolumeZone(listers(claims=CLAIMS, volumes=VOLUMES, classes=CLASSES))
    p = make_pod("p").namespace("default").obj()
    p.spec.volumes.add(name="v").persistent_volume_claim.claim_name = claim
    n = NodeInfo(make_node("n").labels(labels).obj())
    state = CycleState()
    _, s = pl.pre_filter(state, p, [n])
    if s.code is not Code.SUCCESS:
        return s.code, s.reasons
    f = pl.filter(state, p, n)
    return f.code, f.reasons


CONFLICT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volume_zone.ERR_REASON_CONFLICT,))


@pytest.mark.parametrize(
    ("claim", "labels", "want"),
    [
        ("c-in-a", {ZONE: "a"}, (Code.SUCCESS, ())),
        ("c-in-a", {ZONE: "b"}, CONFLICT),
        ("c-in-a", {}, (Code.SUCCESS, ())),  # a node without zones: single-zone cluster
        ("c-in-a", {REGION: "r"}, CONFLICT),  # the node has zones, not the volume's
        ("c-in-a-or-b", {ZONE: "b"}, (Code.SUCCESS, ())),
        ("c-beta-a", {ZONE: "a"}, (Code.SUCCESS, ())),  # beta volume label, GA node label
        ("c-region-r", {REGION: "r", ZONE: "x"}, (Code.SUCCESS, ())),
        ("c-nowhere", {ZONE: "b"}, (Code.SKIP, ())),
        ("wffc", {ZONE: "b"}, (Code.SKIP, ())),
        (
            "immediate",
            {},
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("PersistentVolume had no name",)),
        ),
        (
            "classless",
            {},
            (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ("PersistentVolumeClaim had no pv name and storageClass name",),
            ),
        ),
        (
            "dangling",
            {},
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolume "missing-pv" not found',)),
        ),
        (
            "missing",
            {},
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "missing" not found',)),
        ),
    ],
)
def test_volume_zone(
    claim: str, labels: dict[str, str], want: tuple[Code, tuple[str, ...]]
) -> None:
    assert run(claim, **labels) == want


def test_pod_without_claims_skips() -> None:
    pl = volume_zone.VolumeZone(listers())
    _, s = pl.pre_filter(CycleState(), types_pb2.Pod(), [])
    assert s.code is Code.SKIP
