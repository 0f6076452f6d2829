"""FindMatchingVolume and the controller's findBestMatchForClaim (component-helpers
storage/volume, persistentvolume/index.go): the smallest fit of the claim's class, selector and
volume mode; pre-bound volumes first; access-mode groups with the fewest modes first; node
affinity on the scheduler's path."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.storage import claim_class, default_class
from kemu.scheduling.pv_helpers import (
    find_best_match_for_claim,
    find_matching_volume,
)
from kemu.testing.builders import make_node
from tests.unit.controllermanager.pv_objects import ROX, RWO, RWX, claim, storage_class, volume


def names(v: types_pb2.PersistentVolume | None) -> str | None:
    return None if v is None else v.metadata.name


def test_the_smallest_volume_of_the_class_that_covers_the_request_is_chosen() -> None:
    c = claim("c", "1500Mi", storage_class="slow")
    volumes = [
        volume("too-small", "1Gi", storage_class="slow"),
        volume("big", "5Gi", storage_class="slow"),
        volume("fits", "2Gi", storage_class="slow"),
        volume("other-class", "1600Mi", storage_class="fast"),
        volume("not-available", "1600Mi", storage_class="slow", phase="Released"),
    ]
    assert names(find_matching_volume(c, volumes)) == "fits"


def test_selector_volume_mode_and_deletion_filter_volumes() -> None:
    c = claim("c", "1Gi", storage_class="", selector={"tier": "gold"})
    deleting = volume("deleting", "1Gi", labels={"tier": "gold"})
    deleting.metadata.deletion_timestamp.GetCurrentTime()
    volumes = [
        volume("silver", "1Gi", labels={"tier": "silver"}),
        volume("block", "1Gi", labels={"tier": "gold"}, volume_mode="Block"),
        deleting,
        volume("gold", "3Gi", labels={"tier": "gold"}),
    ]
    assert names(find_matching_volume(c, volumes)) == "gold"


def test_a_volume_pre_bound_to_the_claim_wins_even_when_larger_or_delayed() -> None:
    c = claim("c", "1Gi", storage_class="slow")
    c.metadata.uid = "u1"
    prebound = volume("prebound", "10Gi", storage_class="slow", claim=c, phase="Bound")
    other = types_pb2.PersistentVolumeClaim()
    other.CopyFrom(c)
    other.metadata.name, other.metadata.uid = "other", "u2"
    volumes = [
        volume("small", "1Gi", storage_class="slow"),
        volume("taken", "1Gi", storage_class="slow", claim=other, phase="Bound"),
        prebound,
    ]
    assert names(find_matching_volume(c, volumes)) == "prebound"
    # WaitForFirstConsumer: the controller binds only what is pre-bound.
    assert names(find_matching_volume(c, volumes, delay_binding=True)) == "prebound"
    assert names(find_matching_volume(c, volumes[:2], delay_binding=True)) is None


def test_the_access_mode_group_with_the_fewest_modes_is_searched_first() -> None:
    c = claim("c", "1Gi", storage_class="", modes=(RWO,))
    volumes = [
        volume("many-modes-small", "1Gi", modes=(RWO, ROX, RWX)),
        volume("rwo-large", "8Gi", modes=(RWO,)),
        volume("rox-only", "1Gi", modes=(ROX,)),
    ]
    assert names(find_best_match_for_claim(c, volumes, delay_binding=False)) == "rwo-large"
    rwx = claim("x", "1Gi", storage_class="", modes=(RWX,))
    assert names(find_best_match_for_claim(rwx, volumes, delay_binding=False)) == (
        "many-modes-small"
    )


def test_on_the_scheduler_path_node_affinity_and_access_modes_count() -> None:
    c = claim("c", "1Gi", storage_class="local", modes=(RWO,))
    elsewhere = volume("elsewhere", "1Gi", storage_class="local")
    term = elsewhere.spec.node_affinity.required.node_selector_terms.add()
    term.match_expressions.add(key="kubernetes.io/hostname", operator="In", values=["n2"])
    here = volume("here", "2Gi", storage_class="local")
    term = here.spec.node_affinity.required.node_selector_terms.add()
    term.match_expressions.add(key="kubernetes.io/hostname", operator="In", values=["n1"])
    wrong_modes = volume("wrong-modes", "1Gi", storage_class="local", modes=(ROX,))
    n1 = make_node("n1").label("kubernetes.io/hostname", "n1").obj()
    volumes = [elsewhere, wrong_modes, here]
    assert names(find_matching_volume(c, volumes, node=n1)) == "here"
    assert names(find_matching_volume(c, volumes)) == "elsewhere"


def test_claim_class_and_the_default_class() -> None:
    assert claim_class(claim("c", "1Gi")) == ""
    beta = claim("c", "1Gi", storage_class="spec")
    beta.metadata.annotations["volume.beta.kubernetes.io/storage-class"] = "beta"
    assert claim_class(beta) == "beta"
    old = storage_class("old", default=True)
    old.metadata.creation_timestamp.seconds = 100
    new = storage_class("new", default=True)
    new.metadata.creation_timestamp.seconds = 200
    assert default_class([old, new, storage_class("plain")]) is new
    assert default_class([storage_class("plain")]) is None
