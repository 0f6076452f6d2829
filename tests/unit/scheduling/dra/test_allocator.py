"""S-DRA-ALLOC-*: the structured allocator, after upstream's allocator_test.go cases
(staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go): pools, exact count and All, claims sharing pools, in-use devices,
errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.scheduling.dra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceID,
    FailedAllocationOnNode,
    Features,
)
from kemu.scheduling.dra.cel_cache import CelCache
from tests.unit.scheduling.dra.builders import (
    CLASS,
    DRIVER,
    DRIVER2,
    NODE,
    NODE2,
    REQ,
    REQ1,
    FakeEvaluator,
    allocated,
    claim,
    device,
    device_class,
    first_available,
    label_selector,
    node,
    picked,
    request,
    slice_,
    sub_request,
)

ALL = Features.all()


def allocate(
    claims: Sequence[types_pb2.ResourceClaim],
    slices: Sequence[types_pb2.ResourceSlice],
    *,
    classes: Sequence[types_pb2.DeviceClass] = (),
    features: Features = ALL,
    allocated_claims: Sequence[types_pb2.ResourceClaim] = (),
    on: types_pb2.Node | None = None,
    evaluator: FakeEvaluator | None = None,
) -> list[types_pb2.AllocationResult] | None:
    class_map: Mapping[str, types_pb2.DeviceClass] = {
        c.metadata.name: c for c in (classes or [device_class()])
    }
    ids = iter(f"share-{i}" for i in range(1000))
    alloc = Allocator(
        features,
        claims,
        AllocatedState.from_claims(allocated_claims),
        class_map,
        slices,
        CelCache(evaluator or FakeEvaluator()),
        share_id=lambda: next(ids),
    )
    return alloc.allocate(on or node())


def test_s_dra_alloc_1_empty_claims_allocate_nothing() -> None:
    assert allocate([], [slice_("s", ["dev-1"])]) == []


def test_s_dra_alloc_2_one_device_on_the_node() -> None:
    results = allocate([claim()], [slice_("s", ["dev-1", "dev-2"])])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1")]]
    assert results is not None
    # A node-local slice: the allocation is pinned to the node.
    term = results[0].node_selector.node_selector_terms[0]
    assert [(f.key, f.operator, list(f.values)) for f in term.match_fields] == [
        ("metadata.name", "In", [NODE])
    ]


def test_s_dra_alloc_3_other_nodes_slices_do_not_count() -> None:
    assert allocate([claim()], [slice_("s", ["dev-1"], node_name=NODE2, pool=NODE2)]) is None


def test_s_dra_alloc_4_exact_count_needs_enough_devices() -> None:
    assert allocate([claim("c", request(count=2))], [slice_("s", ["dev-1"])]) is None
    results = allocate([claim("c", request(count=2))], [slice_("s", ["dev-1", "dev-2", "dev-3"])])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1"), (REQ, DRIVER, NODE, "dev-2")]]


def test_s_dra_alloc_5_two_claims_get_different_devices() -> None:
    results = allocate([claim("a"), claim("b")], [slice_("s", ["dev-1", "dev-2"])])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1")], [(REQ, DRIVER, NODE, "dev-2")]]
    assert allocate([claim("a"), claim("b")], [slice_("s", ["dev-1"])]) is None


def test_s_dra_alloc_6_allocated_devices_are_skipped() -> None:
    used = allocated(claim("old"), (DRIVER, NODE, "dev-1"))
    results = allocate([claim()], [slice_("s", ["dev-1", "dev-2"])], allocated_claims=[used])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-2")]]
    both = allocated(claim("old"), (DRIVER, NODE, "dev-1"), (DRIVER, NODE, "dev-2"))
    assert allocate([claim()], [slice_("s", ["dev-1", "dev-2"])], allocated_claims=[both]) is None


def test_s_dra_alloc_7_missing_class_is_an_error() -> None:
    with pytest.raises(AllocationError) as e:
        allocate([claim("c", request(class_name="nope"))], [slice_("s", ["dev-1"])])
    assert str(e.value) == (
        "claim default/c, request req-0: could not retrieve device class nope: "
        'deviceclass.resource.k8s.io "nope" not found'
    )


def test_s_dra_alloc_8_two_requests_backtrack_across_pools() -> None:
    # Two drivers' pools; a request per class.
    classes = [
        device_class(CLASS, ["d1"]),
        device_class("class-b", ["d2"]),
    ]
    ev = FakeEvaluator({"d1": lambda d, _: d == DRIVER, "d2": lambda d, _: d == DRIVER2})
    slices = [
        slice_("s1", ["dev-1"], driver=DRIVER),
        slice_("s2", ["dev-1"], driver=DRIVER2),
    ]
    results = allocate(
        [claim("c", request(REQ), request(REQ1, "class-b"))],
        slices,
        classes=classes,
        evaluator=ev,
    )
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1"), (REQ1, DRIVER2, NODE, "dev-1")]]


def test_s_dra_alloc_9_all_mode_takes_every_matching_device() -> None:
    c = claim("c", request(mode="All"))
    results = allocate([c], [slice_("s", ["dev-1", "dev-2"])])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1"), (REQ, DRIVER, NODE, "dev-2")]]
    # No device at all: does not fit.
    assert allocate([c], []) is None
    # One of them in use: does not fit.
    used = allocated(claim("old"), (DRIVER, NODE, "dev-2"))
    assert allocate([c], [slice_("s", ["dev-1", "dev-2"])], allocated_claims=[used]) is None


def test_s_dra_alloc_10_all_mode_and_an_incomplete_pool_is_an_error() -> None:
    c = claim("c", request(mode="All"))
    with pytest.raises(AllocationError) as e:
        allocate([c], [slice_("s", ["dev-1"], count=2)])
    assert str(e.value) == (
        "claim default/c, request req-0: asks for all devices, but resource pool "
        f"{DRIVER}/{NODE} is currently being updated"
    )


def test_s_dra_alloc_11_incomplete_pools_are_not_allocated_from() -> None:
    assert allocate([claim()], [slice_("s", ["dev-1"], count=2)]) is None
    # Complete once the second slice is there (on another node: counted, not used).
    slices = [
        slice_("s", ["dev-1"], count=2, pool="pool"),
        slice_("t", ["dev-2"], count=2, pool="pool", node_name=NODE2),
    ]
    assert picked(allocate([claim()], slices)) == [[(REQ, DRIVER, "pool", "dev-1")]]


def test_s_dra_alloc_12_only_the_newest_generation_counts() -> None:
    slices = [
        slice_("old", ["dev-old"], generation=1),
        slice_("new", ["dev-new"], generation=2),
    ]
    assert picked(allocate([claim()], slices)) == [[(REQ, DRIVER, NODE, "dev-new")]]
    # A newer generation published only for another node obsoletes the pool here.
    slices = [
        slice_("old", ["dev-old"], generation=1, count=2, pool="p"),
        slice_("new", ["dev-new"], generation=2, count=2, pool="p", node_name=NODE2),
    ]
    assert allocate([claim()], slices) is None


def test_s_dra_alloc_13_duplicate_device_names_make_the_pool_invalid() -> None:
    slices = [
        slice_("s", ["dev-1"], count=2, pool="p"),
        slice_("t", ["dev-1"], count=2, pool="p"),
    ]
    with pytest.raises(FailedAllocationOnNode) as e:
        allocate([claim()], slices)
    assert str(e.value) == "invalid resource pools were encountered"
    with pytest.raises(AllocationError, match="is currently invalid"):
        allocate([claim("c", request(mode="All"))], slices)
    # Another pool that fits: no error.
    ok = allocate([claim()], [*slices, slice_("u", ["dev-2"], pool="q")])
    assert picked(ok) == [[(REQ, DRIVER, "q", "dev-2")]]


def test_s_dra_alloc_14_all_nodes_and_node_selector_slices() -> None:
    everywhere = slice_("s", ["dev-1"], all_nodes=True, pool="net")
    results = allocate([claim()], [everywhere], on=node(NODE2))
    assert picked(results) == [[(REQ, DRIVER, "net", "dev-1")]]
    assert results is not None and not results[0].HasField("node_selector")

    zone = slice_("z", ["dev-1"], node_selector=label_selector("zone", "a"), pool="zone-a")
    assert allocate([claim()], [zone], on=node(NODE, {"zone": "b"})) is None
    results = allocate([claim()], [zone], on=node(NODE, {"zone": "a"}))
    assert picked(results) == [[(REQ, DRIVER, "zone-a", "dev-1")]]
    assert results is not None
    expr = results[0].node_selector.node_selector_terms[0].match_expressions[0]
    assert (expr.key, expr.operator, list(expr.values)) == ("zone", "In", ["a"])


def test_s_dra_alloc_15_per_device_node_selection() -> None:
    s = slice_(
        "s",
        [device("dev-1", node_name=NODE2), device("dev-2", node_name=NODE)],
        per_device=True,
        pool="p",
    )
    results = allocate([claim()], [s])
    assert picked(results) == [[(REQ, DRIVER, "p", "dev-2")]]
    assert allocate([claim()], [s], features=Features()) is None  # needs DRAPartitionableDevices


def test_s_dra_alloc_16_more_than_32_devices_is_an_error() -> None:
    with pytest.raises(AllocationError) as e:
        allocate([claim("c", request(count=33))], [slice_("s", ["dev-1"])])
    assert str(e.value) == (
        "claim default/c: number of requested devices 33 exceeds the claim limit of 32"
    )


def test_s_dra_alloc_17_unknown_mode_and_empty_selector_are_errors() -> None:
    with pytest.raises(AllocationError, match="unsupported count mode Some"):
        allocate([claim("c", request(mode="Some"))], [slice_("s", ["dev-1"])])
    r = request()
    r.exactly.selectors.add()  # no CEL
    with pytest.raises(AllocationError, match=r"selector #0: CEL expression empty"):
        allocate([claim("c", r)], [slice_("s", ["dev-1"])])


def test_s_dra_alloc_18_allocated_state_from_claims() -> None:
    shared = claim("shared")
    r = shared.status.allocation.devices.results.add(
        request=REQ, driver=DRIVER, pool="p", device="d", share_id="u-1"
    )
    r.consumed_capacity["memory"] = "1Gi"
    admin = allocated(claim("admin"), (DRIVER, "p", "a"), admin=True)
    plain = allocated(claim("plain"), (DRIVER, "p", "x"))
    state = AllocatedState.from_claims([shared, admin, plain, claim("pending")])
    assert state.allocated_devices == {DeviceID(DRIVER, "p", "x")}
    assert state.shared_devices == {(DeviceID(DRIVER, "p", "d"), "u-1")}
    assert str(state.aggregated_capacity[DeviceID(DRIVER, "p", "d")][f"{DRIVER}/memory"]) == "1Gi"
    # Without DRAConsumableCapacity a share is an ordinary allocated device.
    state = AllocatedState.from_claims([shared], consumable_capacity=False)
    assert state.allocated_devices == {DeviceID(DRIVER, "p", "d")}


def test_s_dra_alloc_19_features_from_gates() -> None:
    f = Features.from_gates(FeatureGates.for_version(Version(1, 37)))
    assert f == Features.all()
    # 1.34: admin access and prioritized lists beta (on), the rest alpha (off).
    f = Features.from_gates(FeatureGates.for_version(Version(1, 34)))
    assert (f.admin_access, f.prioritized_list, f.device_taints, f.consumable_capacity) == (
        True,
        True,
        False,
        False,
    )


def test_s_dra_alloc_20_candidates_combine_not_permute() -> None:
    # Three devices, two per claim request: only combinations are tried, and a later request's
    # failure backtracks the earlier one (upstream's startLocation).
    ev = FakeEvaluator({"odd": lambda _, d: d.name in ("dev-1", "dev-3")})
    c = claim("c", request(REQ, count=1), request(REQ1, count=2, selectors=["odd"]))
    results = allocate([c], [slice_("s", ["dev-1", "dev-2", "dev-3"])], evaluator=ev)
    assert picked(results) == [
        [
            (REQ, DRIVER, NODE, "dev-2"),
            (REQ1, DRIVER, NODE, "dev-1"),
            (REQ1, DRIVER, NODE, "dev-3"),
        ]
    ]


def test_s_dra_alloc_58_network_attached_devices_union_their_selectors() -> None:
    # upstream "many-network-attached-devices" and "local-and-network-attached-devices".
    on = node(NODE, {"region": "r1", "planet": "earth"})
    name = types_pb2.NodeSelector()
    name.node_selector_terms.add().match_fields.add(
        key="metadata.name", operator="In", values=[NODE]
    )
    slices = [
        slice_("a", ["dev-1"], node_selector=label_selector("region", "r1"), pool="p1"),
        slice_("b", ["dev-1"], all_nodes=True, pool="p2"),
        slice_("c", ["dev-1"], node_selector=label_selector("planet", "earth"), pool="p3"),
        slice_("d", ["dev-1"], node_selector=name, pool="p4"),
    ]
    results = allocate([claim("c", request(count=4))], slices, on=on)
    assert results is not None
    term = results[0].node_selector.node_selector_terms
    assert len(term) == 1
    assert [(e.key, list(e.values)) for e in term[0].match_expressions] == [
        ("region", ["r1"]),
        ("planet", ["earth"]),
    ]
    assert [(f.key, list(f.values)) for f in term[0].match_fields] == [("metadata.name", [NODE])]
    # Once a device is node-local, the allocation is for that node only.
    local = [slices[0], slice_("e", ["dev-1"], pool="p5")]
    results = allocate([claim("c", request(count=2))], local, on=on)
    assert results is not None
    only = results[0].node_selector.node_selector_terms
    assert not only[0].match_expressions
    assert [list(f.values) for f in only[0].match_fields] == [[NODE]]


def test_s_dra_alloc_62_multi_host_pools_across_generations() -> None:
    # upstream "multi-host-resource-pool-*": a complete old generation on this node is still
    # used; a newer generation elsewhere obsoletes an incomplete one here; a newer incomplete
    # generation here is not used.
    def gen(name: str, dev: str, on: str, generation: int) -> types_pb2.ResourceSlice:
        return slice_(name, [dev], node_name=on, pool="p", generation=generation, count=2)

    complete_old = [
        gen("a", "dev-1", NODE, 1),
        gen("b", "dev-2", NODE, 1),
        gen("c", "dev-1", NODE2, 2),
        gen("d", "dev-2", NODE2, 2),
    ]
    assert picked(allocate([claim()], complete_old)) == [[(REQ, DRIVER, "p", "dev-1")]]
    stale = [gen("a", "dev-1", NODE, 1), gen("c", "dev-2", NODE2, 2)]
    assert allocate([claim()], stale) is None
    incomplete_new = [
        gen("a", "dev-1", NODE2, 1),
        gen("b", "dev-2", NODE2, 1),
        gen("c", "dev-1", NODE, 2),
    ]
    assert allocate([claim()], incomplete_new) is None


def test_s_dra_alloc_63_counters_consumed_by_devices_on_other_nodes() -> None:
    # upstream "partitionable-devices-devices-on-different-nodes-consume-same-counter-set".
    ev = FakeEvaluator(
        {
            "6Gi": lambda _, d: d.capacity["memory"].value in ("6Gi",),
            "2Gi": lambda _, d: d.capacity["memory"].value in ("6Gi", "2Gi"),
        }
    )
    slices = [
        slice_("counters", shared_counters={"cs": {"memory": "8Gi"}}, pool="p", count=3),
        slice_(
            "here",
            [
                device("dev-1", capacity={"memory": "6Gi"}, counters={"cs": {"memory": "6Gi"}}),
                device("dev-2", capacity={"memory": "2Gi"}, counters={"cs": {"memory": "2Gi"}}),
            ],
            pool="p",
            count=3,
        ),
        slice_(
            "there",
            [device("dev-3", counters={"cs": {"memory": "6Gi"}})],
            node_name=NODE2,
            pool="p",
            count=3,
        ),
    ]
    used = allocated(claim("old"), (DRIVER, "p", "dev-3"))
    c = claim(
        "c",
        first_available(
            REQ, sub_request("big", selectors=["6Gi"]), sub_request("small", selectors=["2Gi"])
        ),
    )
    results = allocate([c], slices, allocated_claims=[used], evaluator=ev)
    assert picked(results) == [[(f"{REQ}/small", DRIVER, "p", "dev-2")]]


def test_s_dra_alloc_64_invalid_counter_references_anywhere_in_the_pool() -> None:
    # upstream "partitionable-devices-same-counter-set-name-in-different-resource-slices",
    # "...-references-counter-set-in-other-pool", "...-validation-error-on-non-targeting-slice".
    twice = [
        slice_("a", ["dev-1"], pool="p", count=4),
        slice_("b", shared_counters={"cs": {"memory": "1Gi"}}, pool="p", count=4),
        slice_("c", ["dev-2"], pool="p", count=4),
        slice_("d", shared_counters={"cs": {"memory": "1Gi"}}, pool="p", count=4),
    ]
    other_pool = [
        slice_("a", [device("dev-1", counters={"cs": {"memory": "8Gi"}})], pool="p"),
        slice_("b", shared_counters={"cs": {"memory": "8Gi"}}, pool="q"),
    ]
    elsewhere = [
        slice_("a", shared_counters={"cs": {"memory": "8Gi"}}, pool="p", count=3),
        slice_("b", [device("dev-1", counters={"cs": {"memory": "6Gi"}})], pool="p", count=3),
        slice_(
            "c",
            [device("dev-3", counters={"other": {"memory": "6Gi"}})],
            node_name=NODE2,
            pool="p",
            count=3,
        ),
    ]
    for slices in (twice, other_pool, elsewhere):
        with pytest.raises(FailedAllocationOnNode):
            allocate([claim()], slices)
