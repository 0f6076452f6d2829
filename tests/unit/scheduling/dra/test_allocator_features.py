"""S-DRA-ALLOC-2x..: the allocator's features, after upstream's allocator_test.go cases:
selectors and CEL errors, matchAttribute and distinctAttribute, firstAvailable (prioritized
lists), admin access, device taints, partitionable devices (counters), consumable capacity,
binding conditions, configuration."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    new_cel_cache,
)
from kemu.scheduling.dra.cel_cache import CelCache
from kemu.scheduling.dra.taints import TaintedSlices, apply_taint_rules
from tests.unit.scheduling.dra.builders import (
    CLASS,
    DRIVER,
    DRIVER2,
    NODE,
    REQ,
    REQ1,
    FakeEvaluator,
    allocated,
    claim,
    device,
    device_class,
    first_available,
    node,
    picked,
    request,
    slice_,
    sub_request,
    toleration,
)
from tests.unit.scheduling.dra.test_allocator import ALL, allocate


def model(name: str) -> FakeEvaluator:
    return FakeEvaluator(
        {
            "model": lambda _, d: d.attributes["model"].string_value == name,
            "missing": lambda _, d: dict(d.attributes)["nope"].bool_value,
        }
    )


# ---------------------------------------------------------------- selectors


def test_s_dra_alloc_21_class_and_request_selectors_filter() -> None:
    devs = [device("dev-1", attrs={"model": "a"}), device("dev-2", attrs={"model": "b"})]
    results = allocate(
        [claim()],
        [slice_("s", devs)],
        classes=[device_class(CLASS, ["model"])],
        evaluator=model("b"),
    )
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-2")]]
    results = allocate(
        [claim("c", request(selectors=["model"]))], [slice_("s", devs)], evaluator=model("a")
    )
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1")]]


def test_s_dra_alloc_22_cel_errors_abort_with_upstreams_messages() -> None:
    s = slice_("s", ["dev-1"])
    with pytest.raises(AllocationError) as e:
        allocate([claim()], [s], classes=[device_class(CLASS, ["missing"])], evaluator=model("a"))
    assert str(e.value) == (
        f"class {CLASS}: selector #0 on device {DRIVER}/{NODE}/dev-1: CEL runtime error: "
        "no such key: nope"
    )
    with pytest.raises(AllocationError) as e:
        allocate([claim("c", request(selectors=["bogus"]))], [s], evaluator=model("a"))
    assert str(e.value).startswith("claim default/c: selector #0: CEL compile error: ")


def test_s_dra_alloc_23_selector_results_are_cached_across_calls() -> None:
    ev = model("a")
    cache = CelCache(ev)
    slices = [slice_("s", [device(f"dev-{i}", attrs={"model": "a"}) for i in range(4)])]
    classes = {CLASS: device_class(CLASS, ["model"])}
    for _ in range(3):
        alloc = Allocator(
            ALL, [claim("c", request(count=4))], AllocatedState(), classes, slices, cache
        )
        assert alloc.allocate(node()) is not None
    assert ev.calls == 4  # once per device, not per call


# ---------------------------------------------------------------- constraints


def test_s_dra_alloc_24_match_attribute_backtracks_to_a_matching_pair() -> None:
    devs = [
        device("dev-1", attrs={"numa": 0}),
        device("dev-2", attrs={"numa": 1}),
        device("dev-3", attrs={"numa": 1}),
    ]
    ev = FakeEvaluator({"numa1": lambda _, d: d.attributes["numa"].int_value == 1})
    c = claim(
        "c",
        request(REQ),
        request(REQ1, selectors=["numa1"]),
        match_attribute=[(f"{DRIVER}/numa", [])],
    )
    results = allocate([c], [slice_("s", devs)], evaluator=ev)
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-2"), (REQ1, DRIVER, NODE, "dev-3")]]
    # A device without the attribute never satisfies the constraint.
    bare = [device("dev-1"), device("dev-2")]
    c2 = claim("c", request(count=2), match_attribute=[(f"{DRIVER}/numa", [REQ])])
    assert allocate([c2], [slice_("s", bare)]) is None


def test_s_dra_alloc_25_match_attribute_only_for_the_named_requests() -> None:
    devs = [device("dev-1", attrs={"numa": 0}), device("dev-2"), device("dev-3", attrs={"numa": 0})]
    c = claim(
        "c",
        request(REQ),
        request(REQ1),
        request("req-2"),
        match_attribute=[(f"{DRIVER}/numa", [REQ, "req-2"])],
    )
    results = allocate([c], [slice_("s", devs)])
    assert picked(results) == [
        [
            (REQ, DRIVER, NODE, "dev-1"),
            (REQ1, DRIVER, NODE, "dev-2"),
            ("req-2", DRIVER, NODE, "dev-3"),
        ]
    ]


def test_s_dra_alloc_26_match_attribute_with_all_is_an_error_when_unsatisfiable() -> None:
    devs = [device("dev-1", attrs={"numa": 0}), device("dev-2", attrs={"numa": 1})]
    c = claim("c", request(mode="All"), match_attribute=[(f"{DRIVER}/numa", [])])
    with pytest.raises(AllocationError) as e:
        allocate([c], [slice_("s", devs)])
    assert str(e.value) == (
        f"claim default/c, request req-0: cannot add device {DRIVER}/{NODE}/dev-2 because a "
        "claim constraint would not be satisfied"
    )


def test_s_dra_alloc_27_distinct_attribute() -> None:
    devs = [
        device("dev-1", attrs={"nic": "a"}),
        device("dev-2", attrs={"nic": "a"}),
        device("dev-3", attrs={"nic": "b"}),
    ]
    c = claim("c", request(count=2), distinct_attribute=[(f"{DRIVER}/nic", [])])
    assert picked(allocate([c], [slice_("s", devs)])) == [
        [(REQ, DRIVER, NODE, "dev-1"), (REQ, DRIVER, NODE, "dev-3")]
    ]


def test_s_dra_alloc_28_empty_constraint_is_an_error() -> None:
    c = claim("c")
    c.spec.devices.constraints.add()
    with pytest.raises(AllocationError, match=r"constraint #0: empty constraint"):
        allocate([c], [slice_("s", ["dev-1"])])


# ---------------------------------------------------------------- firstAvailable


def test_s_dra_alloc_29_first_available_takes_the_first_subrequest_that_fits() -> None:
    c = claim("c", first_available(REQ, sub_request("big", count=3), sub_request("small", count=1)))
    results = allocate([c], [slice_("s", ["dev-1", "dev-2"])])
    assert picked(results) == [[(f"{REQ}/small", DRIVER, NODE, "dev-1")]]
    results = allocate([c], [slice_("s", ["dev-1", "dev-2", "dev-3"])])
    assert picked(results) == [[(f"{REQ}/big", DRIVER, NODE, f"dev-{i}") for i in (1, 2, 3)]]


def test_s_dra_alloc_30_first_available_backtracks_for_a_later_request() -> None:
    # The first subrequest fits alone but leaves nothing for the next request.
    ev = FakeEvaluator({"two": lambda _, d: d.name == "dev-2"})
    c = claim(
        "c",
        first_available(REQ, sub_request("any", count=2), sub_request("one", count=1)),
        request(REQ1, selectors=["two"]),
    )
    results = allocate([c], [slice_("s", ["dev-1", "dev-2"])], evaluator=ev)
    assert picked(results) == [
        [(f"{REQ}/one", DRIVER, NODE, "dev-1"), (REQ1, DRIVER, NODE, "dev-2")]
    ]


def test_s_dra_alloc_31_first_available_needs_the_gate() -> None:
    c = claim("c", first_available(REQ, sub_request("one")))
    with pytest.raises(AllocationError) as e:
        allocate([c], [slice_("s", ["dev-1"])], features=replace(ALL, prioritized_list=False))
    assert str(e.value) == (
        "claim default/c, request req-0: has subrequests, but the DRAPrioritizedList feature is "
        "disabled"
    )


def test_s_dra_alloc_32_first_available_match_attribute_names_the_subrequest() -> None:
    devs = [
        device("dev-1", attrs={"numa": 0}),
        device("dev-2", attrs={"numa": 1}),
        device("dev-3", attrs={"numa": 1}),
    ]
    ev = FakeEvaluator({"n1": lambda _, d: d.attributes["numa"].int_value == 1})
    c = claim(
        "c",
        first_available(REQ, sub_request("a", selectors=["n1"])),
        request(REQ1),
        match_attribute=[(f"{DRIVER}/numa", [f"{REQ}/a", REQ1])],
    )
    results = allocate([c], [slice_("s", devs)], evaluator=ev)
    assert picked(results) == [[(f"{REQ}/a", DRIVER, NODE, "dev-2"), (REQ1, DRIVER, NODE, "dev-3")]]


# ---------------------------------------------------------------- admin access


def test_s_dra_alloc_33_admin_access_may_take_a_device_in_use() -> None:
    used = allocated(claim("old"), (DRIVER, NODE, "dev-1"))
    c = claim("c", request(admin_access=True))
    results = allocate([c], [slice_("s", ["dev-1"])], allocated_claims=[used])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1")]]
    assert results is not None and results[0].devices.results[0].admin_access is True
    # An admin-access allocation does not make the device in use for others.
    admin = allocated(claim("adm"), (DRIVER, NODE, "dev-1"), admin=True)
    assert picked(allocate([claim()], [slice_("s", ["dev-1"])], allocated_claims=[admin])) == [
        [(REQ, DRIVER, NODE, "dev-1")]
    ]
    # Not the same device twice in one claim.
    c2 = claim("c", request(count=2, admin_access=True))
    assert allocate([c2], [slice_("s", ["dev-1"])], allocated_claims=[used]) is None


def test_s_dra_alloc_34_admin_access_needs_the_gate() -> None:
    c = claim("c", request(admin_access=True))
    with pytest.raises(AllocationError) as e:
        allocate([c], [slice_("s", ["dev-1"])], features=replace(ALL, admin_access=False))
    assert str(e.value) == (
        "claim default/c, request req-0: admin access is requested, but the feature is disabled"
    )


# ---------------------------------------------------------------- taints


def test_s_dra_alloc_35_taints_block_unless_tolerated() -> None:
    devs = [
        device("dev-1", taints=[("broken", "yes", "NoSchedule")]),
        device("dev-2", taints=[("gone", "", "NoExecute")]),
        device("dev-3", taints=[("info", "", "None")]),
    ]
    assert picked(allocate([claim()], [slice_("s", devs)])) == [[(REQ, DRIVER, NODE, "dev-3")]]
    tolerant = claim("c", request(tolerations=[toleration("broken", "Equal", "yes")]))
    results = allocate([tolerant], [slice_("s", devs)])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1")]]
    assert results is not None
    assert [t.key for t in results[0].devices.results[0].tolerations] == ["broken"]
    everything = claim("c", request(count=3, tolerations=[toleration(operator="Exists")]))
    assert len(picked(allocate([everything], [slice_("s", devs)]))[0]) == 3
    # The gate off: taints are ignored.
    assert picked(
        allocate([claim()], [slice_("s", devs)], features=replace(ALL, device_taints=False))
    ) == [[(REQ, DRIVER, NODE, "dev-1")]]


def test_s_dra_alloc_36_device_taint_rules_add_taints() -> None:
    rule = types_pb2.DeviceTaintRule()
    rule.spec.device_selector.driver = DRIVER
    rule.spec.device_selector.device = "dev-1"
    rule.spec.taint.key = "maintenance"
    rule.spec.taint.effect = "NoSchedule"
    original = slice_("s", ["dev-1", "dev-2"])
    untouched = slice_("t", ["dev-1"], driver="other.example.com", pool="o")
    tainted = apply_taint_rules([original, untouched], [rule])
    assert tainted[1] is untouched
    assert not original.spec.devices[0].taints  # copied, not changed
    assert [t.key for t in tainted[0].spec.devices[0].taints] == ["maintenance"]
    assert picked(allocate([claim()], tainted[:1])) == [[(REQ, DRIVER, NODE, "dev-2")]]


# ---------------------------------------------------------------- partitionable devices


def counters_slices(*devices: types_pb2.Device) -> list[types_pb2.ResourceSlice]:
    return [
        slice_("counters", shared_counters={"gpu-0": {"memory": "8Gi"}}, pool="p", count=2),
        slice_("devices", list(devices), pool="p", count=2),
    ]


def test_s_dra_alloc_37_partitions_share_a_counter_set() -> None:
    whole = device("whole", counters={"gpu-0": {"memory": "8Gi"}})
    half1 = device("half-1", counters={"gpu-0": {"memory": "4Gi"}})
    half2 = device("half-2", counters={"gpu-0": {"memory": "4Gi"}})
    slices = counters_slices(whole, half1, half2)
    results = allocate([claim("c", request(count=2))], slices)
    assert picked(results) == [[(REQ, DRIVER, "p", "half-1"), (REQ, DRIVER, "p", "half-2")]]
    # The whole device is taken: its counters are gone, no partition fits.
    used = allocated(claim("old"), (DRIVER, "p", "whole"))
    assert allocate([claim()], slices, allocated_claims=[used]) is None
    # One half taken: the other half fits, the whole does not.
    used = allocated(claim("old"), (DRIVER, "p", "half-1"))
    assert picked(allocate([claim()], slices, allocated_claims=[used])) == [
        [(REQ, DRIVER, "p", "half-2")]
    ]


def test_s_dra_alloc_38_counters_need_the_gate_and_valid_references() -> None:
    part = device("part", counters={"gpu-0": {"memory": "4Gi"}})
    plain = slice_("plain", [part], pool="q")
    assert allocate([claim()], [plain], features=replace(ALL, partitionable_devices=False)) is None
    bad = device("bad", counters={"gpu-9": {"memory": "1Gi"}})
    with pytest.raises(AllocationError, match="invalid resource pools"):
        allocate([claim()], counters_slices(bad))


# ---------------------------------------------------------------- consumable capacity


def shared_device(name: str = "nic", **policy: object) -> types_pb2.Device:
    d = device(name, capacity={"bandwidth": "10G"}, multi=True)
    rp = d.capacity["bandwidth"].request_policy
    if "default" in policy:
        rp.default_value = str(policy["default"])
    if "step" in policy:
        rp.valid_range.min = str(policy.get("min", "1G"))
        rp.valid_range.step = str(policy["step"])
    if "max" in policy:
        rp.valid_range.max = str(policy["max"])
    return d


def test_s_dra_alloc_39_a_shared_device_serves_several_claims() -> None:
    s = slice_("s", [shared_device()])
    a = claim("a", request(capacity={"bandwidth": "4G"}))
    b = claim("b", request(capacity={"bandwidth": "6G"}))
    results = allocate([a, b], [s])
    assert picked(results) == [[(REQ, DRIVER, NODE, "nic")], [(REQ, DRIVER, NODE, "nic")]]
    assert results is not None
    first, second = results[0].devices.results[0], results[1].devices.results[0]
    assert (first.share_id, dict(first.consumed_capacity)) == ("share-0", {"bandwidth": "4G"})
    assert (second.share_id, dict(second.consumed_capacity)) == ("share-1", {"bandwidth": "6G"})
    # 11G in all does not fit.
    c = claim("c", request(capacity={"bandwidth": "7G"}))
    assert allocate([a, c], [s]) is None
    # What allocated claims consumed counts.
    old = claim("old")
    r = old.status.allocation.devices.results.add(
        request=REQ, driver=DRIVER, pool=NODE, device="nic", share_id="u"
    )
    r.consumed_capacity["bandwidth"] = "8G"
    assert allocate([a], [s], allocated_claims=[old]) is None


def test_s_dra_alloc_40_request_policy_rounds_up() -> None:
    s = slice_("s", [shared_device(step="2G", min="2G", max="8G")])
    results = allocate([claim("c", request(capacity={"bandwidth": "3G"}))], [s])
    assert results is not None
    assert dict(results[0].devices.results[0].consumed_capacity) == {"bandwidth": "4G"}
    # Above the range's max: does not fit.
    assert allocate([claim("c", request(capacity={"bandwidth": "9G"}))], [s]) is None
    # No request: the policy's default; no policy: the whole capacity.
    s2 = slice_("s", [shared_device(default="1G")])
    results = allocate([claim()], [s2])
    assert results is not None
    assert dict(results[0].devices.results[0].consumed_capacity) == {"bandwidth": "1G"}


def test_s_dra_alloc_41_capacity_requests_on_exclusive_devices_filter() -> None:
    devs = [device("small", capacity={"memory": "8Gi"}), device("big", capacity={"memory": "80Gi"})]
    results = allocate([claim("c", request(capacity={"memory": "40Gi"}))], [slice_("s", devs)])
    assert picked(results) == [[(REQ, DRIVER, NODE, "big")]]
    assert results is not None and not results[0].devices.results[0].HasField("share_id")


def test_s_dra_alloc_42_capacity_requests_need_the_gate() -> None:
    c = claim("c", request(capacity={"memory": "1Gi"}))
    with pytest.raises(
        AllocationError, match="has capacity requests, but the DRAConsumableCapacity"
    ):
        allocate([c], [slice_("s", ["dev-1"])], features=replace(ALL, consumable_capacity=False))


# ---------------------------------------------------------------- binding conditions


def test_s_dra_alloc_43_binding_conditions_copied_and_tried_last() -> None:
    attach = device(
        "fabric",
        binding_conditions=["Attached"],
        binding_failure_conditions=["AttachFailed"],
        binds_to_node=True,
    )
    fabric = slice_("f", [attach], all_nodes=True, pool="fabric")
    local = slice_("s", ["dev-1"], pool="a-local")
    # Pools without binding conditions first.
    assert picked(allocate([claim()], [fabric, local])) == [[(REQ, DRIVER, "a-local", "dev-1")]]
    results = allocate([claim()], [fabric])
    assert results is not None
    r = results[0].devices.results[0]
    assert (list(r.binding_conditions), list(r.binding_failure_conditions)) == (
        ["Attached"],
        ["AttachFailed"],
    )
    # bindsToNode pins the allocation to the node even for an all-nodes slice.
    field = results[0].node_selector.node_selector_terms[0].match_fields[0]
    assert list(field.values) == [NODE]
    # The feature off: such devices cannot be selected.
    assert allocate([claim()], [fabric], features=replace(ALL, binding_conditions=False)) is None


# ---------------------------------------------------------------- configuration


def test_s_dra_alloc_44_class_and_claim_config_in_the_allocation() -> None:
    cls_a = device_class(CLASS, configs=['{"a":1}'])
    cls_b = device_class("class-b", configs=['{"b":1}'])
    c = claim(
        "c",
        request(REQ),
        request(REQ1, "class-b"),
        request("req-2"),
        configs=[([], '{"all":1}'), ([REQ1], '{"one":1}')],
    )
    results = allocate([c], [slice_("s", ["dev-1", "dev-2", "dev-3"])], classes=[cls_a, cls_b])
    assert results is not None
    got = [(x.source, list(x.requests), x.opaque.parameters.raw) for x in results[0].devices.config]
    assert got == [
        ("FromClass", [REQ, "req-2"], '{"a":1}'),
        ("FromClass", [REQ1], '{"b":1}'),
        ("FromClaim", [], '{"all":1}'),
        ("FromClaim", [REQ1], '{"one":1}'),
    ]


def test_s_dra_alloc_45_class_config_names_its_requests() -> None:
    # upstream "with-class-device-config-with-multiple-request-and-configs": one entry per
    # class, naming the requests that use it (even when that is every request).
    cls_a = device_class(CLASS, configs=['{"a":1}'])
    cls_b = device_class("class-b", configs=['{"b":1}'], driver="driver-b.example.com")
    c = claim("c", request(REQ), request(REQ1), request("req-2", "class-b"))
    results = allocate([c], [slice_("s", ["d0", "d1", "d2"])], classes=[cls_a, cls_b])
    assert results is not None
    assert [(x.source, list(x.requests)) for x in results[0].devices.config] == [
        ("FromClass", [REQ, REQ1]),
        ("FromClass", ["req-2"]),
    ]
    single = allocate([claim()], [slice_("s", ["d0"])], classes=[cls_a])
    assert single is not None
    assert [list(x.requests) for x in single[0].devices.config] == [[REQ]]


def test_s_dra_alloc_46_subrequest_config_by_its_full_name() -> None:
    c = claim(
        "c",
        first_available(REQ, sub_request("a"), sub_request("b")),
        request(REQ1),
        configs=[([f"{REQ}/a"], '{"sub":1}'), ([f"{REQ}/b"], '{"other":1}')],
    )
    results = allocate([c], [slice_("s", ["d1", "d2"])])
    assert results is not None
    claim_configs = [x for x in results[0].devices.config if x.source == "FromClaim"]
    assert [x.opaque.parameters.raw for x in claim_configs] == ['{"sub":1}']


# ---------------------------------------------------------------- real CEL


def test_s_dra_alloc_47_real_cel_selectors() -> None:
    devs = [
        device("small", attrs={"model": "T4"}, capacity={"memory": "16Gi"}),
        device("big", attrs={"model": "A100"}, capacity={"memory": "80Gi"}),
    ]
    cls = device_class(CLASS, [f'device.driver == "{DRIVER}"'])
    c = claim(
        "c",
        request(
            selectors=[
                f'device.attributes["{DRIVER}"].model == "A100"',
                f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
            ]
        ),
    )
    cache = new_cel_cache(ALL)
    alloc = Allocator(ALL, [c], AllocatedState(), {CLASS: cls}, [slice_("s", devs)], cache)
    assert picked(alloc.allocate(node())) == [[(REQ, DRIVER, NODE, "big")]]
    # A missing attribute is a runtime error that aborts, with upstream's wrapping.
    bad = claim("c", request(selectors=[f'device.attributes["{DRIVER}"].nope == 1']))
    alloc = Allocator(ALL, [bad], AllocatedState(), {CLASS: cls}, [slice_("s", devs)], cache)
    with pytest.raises(AllocationError) as e:
        alloc.allocate(node())
    assert str(e.value).startswith(
        f"claim default/c: selector #0 on device {DRIVER}/{NODE}/small: CEL runtime error: "
    )
    # The short-circuit idiom avoids it.
    ok = claim("c", request(selectors=[f'device.attributes["{DRIVER}"].?nope.orValue(0) == 0']))
    alloc = Allocator(ALL, [ok], AllocatedState(), {CLASS: cls}, [slice_("s", devs)], cache)
    assert picked(alloc.allocate(node())) == [[(REQ, DRIVER, NODE, "small")]]


def test_s_dra_alloc_48_tainted_slices_stay_the_same_objects() -> None:
    rule = types_pb2.DeviceTaintRule()
    rule.spec.device_selector.device = "dev-1"
    rule.spec.taint.key = "maintenance"
    rule.spec.taint.effect = "NoExecute"
    s, t = slice_("s", ["dev-1"]), slice_("t", ["dev-2"], pool="q")
    tainted = TaintedSlices()
    first = tainted.apply([s, t], [rule])
    again = tainted.apply([s, t], [rule])
    assert first[0] is again[0] and first[0] is not s and again[1] is t
    # Another rule object (an update): taints computed again.
    rule2 = types_pb2.DeviceTaintRule()
    rule2.CopyFrom(rule)
    rule2.spec.taint.key = "other"
    third = tainted.apply([s, t], [rule2])
    assert [x.key for x in third[0].spec.devices[0].taints] == ["other"]
    assert tainted.apply([s, t], []) == [s, t]


def counter_device(name: str, **by_set: dict[str, str]) -> types_pb2.Device:
    return device(name, counters=by_set)


def test_s_dra_alloc_49_partitionable_two_requests_skip_the_partition_that_overflows() -> None:
    # upstream "partitionable-devices-multiple-devices": 8Gi shared by 4Gi, 6Gi, 4Gi partitions.
    slices = [
        slice_(
            "devices",
            [
                counter_device("dev-1", cs1={"memory": "4Gi"}),
                counter_device("dev-2", cs1={"memory": "6Gi"}),
                counter_device("dev-3", cs1={"memory": "4Gi"}),
            ],
            pool="p",
            count=2,
        ),
        slice_("counters", shared_counters={"cs1": {"memory": "8Gi"}}, pool="p", count=2),
    ]
    c = claim("c", request(REQ), request(REQ1))
    assert picked(allocate([c], slices)) == [
        [(REQ, DRIVER, "p", "dev-1"), (REQ1, DRIVER, "p", "dev-3")]
    ]


def test_s_dra_alloc_50_partitionable_pools_with_allocated_devices() -> None:
    # upstream "partitionable-devices-multiple-pools": pool p1's cpus are used up by allocated
    # partitions; p2 has room for exactly two small ones.
    def pool(name: str, devices: list[types_pb2.Device]) -> list[types_pb2.ResourceSlice]:
        return [
            slice_(f"{name}-devices", devices, pool=name, count=2),
            slice_(
                f"{name}-counters",
                shared_counters={"cs1": {"cpus": "8", "memory": "18Gi"}},
                pool=name,
                count=2,
            ),
        ]

    p1 = pool(
        "p1",
        [
            counter_device("dev-1", cs1={"cpus": "6", "memory": "4Gi"}),
            counter_device("dev-2", cs1={"cpus": "4", "memory": "6Gi"}),
            counter_device("dev-3", cs1={"cpus": "4", "memory": "4Gi"}),
        ],
    )
    p2 = pool(
        "p2",
        [
            counter_device("dev-1", cs1={"cpus": "6", "memory": "4Gi"}),
            counter_device("dev-2", cs1={"cpus": "1", "memory": "7Gi"}),
            counter_device("dev-3", cs1={"cpus": "1", "memory": "7Gi"}),
        ],
    )
    used = allocated(
        claim("old"), (DRIVER, "p1", "dev-2"), (DRIVER, "p1", "dev-3"), (DRIVER, "p2", "dev-1")
    )
    c = claim("c", request(REQ), request(REQ1))
    assert picked(allocate([c], p1 + p2, allocated_claims=[used])) == [
        [(REQ, DRIVER, "p2", "dev-2"), (REQ1, DRIVER, "p2", "dev-3")]
    ]


def test_s_dra_alloc_51_partitionable_off_the_counter_slice_still_completes_the_pool() -> None:
    # upstream "partitionable-devices-disabled-other-device-do-not-consume-counters".
    slices = [
        slice_(
            "devices",
            [counter_device("dev-1", cs1={"memory": "4Gi"}), device("dev-2")],
            pool="p",
            count=2,
        ),
        slice_("counters", shared_counters={"cs1": {"memory": "18Gi"}}, pool="p", count=2),
    ]
    off = replace(ALL, partitionable_devices=False)
    assert picked(allocate([claim()], slices, features=off)) == [[(REQ, DRIVER, "p", "dev-2")]]


def real(
    claims: list[types_pb2.ResourceClaim],
    slices: list[types_pb2.ResourceSlice],
    classes: list[types_pb2.DeviceClass] | None = None,
) -> list[types_pb2.AllocationResult] | None:
    class_map = {c.metadata.name: c for c in (classes or [device_class()])}
    ids = iter(f"share-{i}" for i in range(100))
    alloc = Allocator(
        ALL,
        claims,
        AllocatedState(),
        class_map,
        slices,
        new_cel_cache(ALL),
        share_id=lambda: next(ids),
    )
    return alloc.allocate(node())


def test_s_dra_alloc_52_distinct_attribute_with_subrequests_on_shared_devices() -> None:
    # upstream "with-distinct-constraints-with-subrequests": three requests prefer a device
    # whose boolAttribute is true; only the first two must differ.
    prefer = f'device.attributes["{DRIVER}"].boolAttribute'
    devs = [
        device("dev-1", attrs={"boolAttribute": True}, multi=True),
        device("dev-2", attrs={"boolAttribute": False}, multi=True),
    ]
    c = claim(
        "c",
        *(
            first_available(r, sub_request("sub-0", selectors=[prefer]), sub_request("sub-1"))
            for r in (REQ, REQ1, "req-2")
        ),
        distinct_attribute=[(f"{DRIVER}/boolAttribute", [REQ, REQ1])],
    )
    results = real([c], [slice_("s", devs)])
    assert picked(results) == [
        [
            (f"{REQ}/sub-0", DRIVER, NODE, "dev-1"),
            (f"{REQ1}/sub-1", DRIVER, NODE, "dev-2"),
            ("req-2/sub-0", DRIVER, NODE, "dev-1"),
        ]
    ]
    assert results is not None
    assert [r.share_id for r in results[0].devices.results] == ["share-0", "share-1", "share-2"]
    assert not any(r.consumed_capacity for r in results[0].devices.results)


def test_s_dra_alloc_53_distinct_attribute_keeps_one_shared_device_from_two_requests() -> None:
    # upstream "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint" and
    # its two-device sibling.
    one = [device("dev-1", attrs={"s": "v1"}, capacity={"cap": "4"}, multi=True)]
    c = claim(
        "c",
        request(REQ, capacity={"cap": "2"}),
        request(REQ1, capacity={"cap": "2"}),
        distinct_attribute=[(f"{DRIVER}/s", [])],
    )
    assert allocate([c], [slice_("s", one)]) is None
    two = [*one, device("dev-2", attrs={"s": "v2"}, capacity={"cap": "4"}, multi=True)]
    results = allocate([c], [slice_("s", two)])
    assert picked(results) == [[(REQ, DRIVER, NODE, "dev-1"), (REQ1, DRIVER, NODE, "dev-2")]]
    assert results is not None
    assert [dict(r.consumed_capacity) for r in results[0].devices.results] == [
        {"cap": "2"},
        {"cap": "2"},
    ]


def test_s_dra_alloc_54_distinct_attribute_of_no_known_type_is_an_error() -> None:
    d = device("dev-1", multi=True)
    d.attributes["b"].SetInParent()  # an attribute without a value
    c = claim("c", request(), distinct_attribute=[(f"{DRIVER}/b", [REQ])])
    with pytest.raises(AllocationError, match="unsupported attribute value"):
        allocate([c], [slice_("s", [d])])


def ranged(name: str, value: str, attrs: dict[str, object] | None = None) -> types_pb2.Device:
    """A shared device whose capacity `cap` is taken in steps of 2 from 2 up to 4 (upstream's
    withCapacityRequestPolicyRange)."""
    d = device(name, capacity={"cap": value}, multi=True, attrs=attrs)
    policy = d.capacity["cap"].request_policy
    policy.default_value = "2"
    policy.valid_range.min = "2"
    policy.valid_range.step = "2"
    policy.valid_range.max = "4"
    return d


def valued(name: str, value: str, default: str, *values: str) -> types_pb2.Device:
    d = device(name, capacity={"cap": value}, multi=True)
    policy = d.capacity["cap"].request_policy
    policy.default_value = default
    policy.valid_values.extend([default, *values])
    return d


def consumed(results: list[types_pb2.AllocationResult] | None) -> list[list[dict[str, str]]]:
    assert results is not None
    return [[dict(r.consumed_capacity) for r in res.devices.results] for res in results]


def test_s_dra_alloc_55_consumable_capacity_policies_as_upstreams_cases() -> None:
    s = [slice_("s", [ranged("dev-1", "10")])]
    # Rounded up to the range's minimum, then by step; above max: refused though it fits.
    one = claim("a", request(capacity={"cap": "1"}))
    assert consumed(allocate([one, claim("b", request(capacity={"cap": "1"}))], s)) == [
        [{"cap": "2"}],
        [{"cap": "2"}],
    ]
    assert consumed(allocate([claim("c", request(capacity={"cap": "3"}))], s)) == [[{"cap": "4"}]]
    assert allocate([claim("c", request(capacity={"cap": "6"}))], s) is None
    # validValues: the smallest valid value at least the request; none: refused.
    assert consumed(
        allocate(
            [claim("c", request(capacity={"cap": "2"}))],
            [slice_("s", [valued("d", "3", "1", "3")])],
        )
    ) == [[{"cap": "3"}]]
    assert (
        allocate(
            [claim("c", request(capacity={"cap": "1"}))], [slice_("s", [valued("d", "1", "0")])]
        )
        is None
    )


def test_s_dra_alloc_56_consumable_capacity_backtracks_with_match_attribute() -> None:
    # upstream "consumable-capacity-with-multi-allocatable-device-backtrack".
    devs = [
        ranged("dev-2", "2", {"s": "v1"}),
        ranged("dev-1", "4", {"s": "v2"}),
    ]
    a = claim(
        "a",
        request(REQ, capacity={"cap": "2"}),
        request(REQ1, capacity={"cap": "2"}),
        match_attribute=[(f"{DRIVER}/s", [])],
    )
    b = claim("b", request(REQ, capacity={"cap": "2"}))
    assert picked(allocate([a, b], [slice_("s", devs)])) == [
        [(REQ, DRIVER, NODE, "dev-1"), (REQ1, DRIVER, NODE, "dev-1")],
        [(REQ, DRIVER, NODE, "dev-2")],
    ]


def test_s_dra_alloc_57_consumable_capacity_all_mode_and_subrequests() -> None:
    # "All" with a capacity request takes only the devices that have room.
    devs = [
        device("dev-1", capacity={"cap": "2"}, multi=True),
        device("dev-2", capacity={"cap": "1"}, multi=True),
        device("dev-3", multi=True),
    ]
    c = claim("c", request(mode="All", capacity={"cap": "2"}))
    assert consumed(allocate([c], [slice_("s", devs)])) == [[{"cap": "2"}]]
    # A subrequest whose capacity does not fit gives way to the next.
    s = [slice_("s", [ranged("dev-1", "2")])]
    c = claim(
        "c",
        first_available(
            REQ,
            sub_request("big", capacity={"cap": "4"}),
            sub_request("small", capacity={"cap": "2"}),
        ),
    )
    assert picked(allocate([c], s)) == [[(f"{REQ}/small", DRIVER, NODE, "dev-1")]]


def drivers_evaluator() -> FakeEvaluator:
    return FakeEvaluator({"a": lambda d, _: d == DRIVER, "b": lambda d, _: d == DRIVER2})


def allocate_counting(
    claims: list[types_pb2.ResourceClaim],
    slices: list[types_pb2.ResourceSlice],
) -> tuple[list[types_pb2.AllocationResult] | None, int]:
    classes = {CLASS: device_class(CLASS, ["a"]), "class-b": device_class("class-b", ["b"])}
    alloc = Allocator(ALL, claims, AllocatedState(), classes, slices, CelCache(drivers_evaluator()))
    return alloc.allocate(node()), alloc.allocate_one_calls


def devices(n: int) -> list[str]:
    return [f"device-{i}" for i in range(n)]


def test_s_dra_alloc_59_exactly_32_devices_fit() -> None:
    # upstream "max-number-devices".
    results, _ = allocate_counting([claim("c", request(count=32))], [slice_("s", devices(32))])
    assert len(picked(results)[0]) == 32


def test_s_dra_alloc_60_first_available_past_the_device_limit_in_upstreams_steps() -> None:
    # upstream "prioritized-list-max-allocation-limit-request": two requests of 32 or 16
    # devices; 32 + anything passes the limit, so both take 16, found in 75 allocateOne calls.
    c = claim(
        "c",
        first_available(REQ, sub_request("s0", count=32), sub_request("s1", count=16)),
        first_available(REQ1, sub_request("s0", count=32), sub_request("s1", count=16)),
    )
    results, calls = allocate_counting([c], [slice_("s", devices(64))])
    got = picked(results)[0]
    assert got[:16] == [(f"{REQ}/s1", DRIVER, NODE, f"device-{i}") for i in range(16)]
    assert got[16:] == [(f"{REQ1}/s1", DRIVER, NODE, f"device-{i}") for i in range(16, 32)]
    assert calls == 75


def test_s_dra_alloc_61_first_available_all_mode_past_the_limit_in_upstreams_steps() -> None:
    # upstream "prioritized-list-max-allocation-allocation-mode-all": "All" 31 devices plus 2
    # more passes 32, so the 2-device subrequest is taken; 42 allocateOne calls.
    c = claim(
        "c",
        first_available(REQ, sub_request("s0", mode="All"), sub_request("s1", count=2)),
        request(REQ1, "class-b", count=2),
    )
    slices = [
        slice_("s", devices(31)),
        slice_("t", devices(2), driver=DRIVER2, pool="pool-2"),
    ]
    results, calls = allocate_counting([c], slices)
    assert picked(results) == [
        [
            (f"{REQ}/s1", DRIVER, NODE, "device-0"),
            (f"{REQ}/s1", DRIVER, NODE, "device-1"),
            (REQ1, DRIVER2, "pool-2", "device-0"),
            (REQ1, DRIVER2, "pool-2", "device-1"),
        ]
    ]
    assert calls == 42


def test_s_dra_alloc_65_invalid_cel_in_a_claim_or_class_is_an_error() -> None:
    # upstream "invalid-CEL-one-device", "-one-device-class", "-all-devices".
    s = [slice_("s", ["dev-1"])]
    bad_request = claim("c", request(selectors=["noSuchVar"]))
    bad_all = claim("c", request(mode="All", selectors=["noSuchVar"]))
    for c in (bad_request, bad_all):
        with pytest.raises(AllocationError, match="undeclared reference"):
            real([c], s)
    with pytest.raises(AllocationError, match=f"class {CLASS}: selector #0: CEL compile error"):
        real([claim()], s, [device_class(CLASS, ["noSuchVar"])])


def test_s_dra_alloc_66_first_available_config_of_the_chosen_subrequest_only() -> None:
    # upstream "prioritized-list-class-config" and "prioritized-list-device-config".
    classes = [
        device_class(CLASS, ["a"], configs=['"foo"']),
        device_class("class-b", ["b"], configs=['"bar"'], driver=DRIVER2),
    ]
    c = claim(
        "c",
        first_available(
            REQ, sub_request("s0", CLASS, count=2), sub_request("s1", "class-b", count=2)
        ),
        configs=[([f"{REQ}/s0"], '"claim-foo"'), ([f"{REQ}/s1"], '"claim-bar"')],
    )
    slices = [
        slice_("b", ["dev-1", "dev-2"], driver=DRIVER2, pool="p1"),
        slice_("a", ["dev-3"], pool="p2"),
    ]
    results = allocate([c], slices, classes=classes, evaluator=drivers_evaluator())
    assert picked(results) == [
        [(f"{REQ}/s1", DRIVER2, "p1", "dev-1"), (f"{REQ}/s1", DRIVER2, "p1", "dev-2")]
    ]
    assert results is not None
    assert [
        (x.source, list(x.requests), x.opaque.parameters.raw) for x in results[0].devices.config
    ] == [
        ("FromClass", [f"{REQ}/s1"], '"bar"'),
        ("FromClaim", [f"{REQ}/s1"], '"claim-bar"'),
    ]


def test_s_dra_alloc_67_taints_with_subrequests_admin_access_and_all() -> None:
    # upstream "tainted-two-devices-prioritized-list-tolerated", "tainted-admin-access",
    # "tainted-all-devices-single".
    no_exec = toleration("taint-key", "Equal", "value-2", "NoExecute")
    devs = [
        device("dev-1", taints=[("taint-key", "value", "NoSchedule")]),
        device("dev-2", taints=[("taint-key", "value-2", "NoExecute")]),
    ]
    s = [slice_("s", devs)]
    sub = types_pb2.DeviceSubRequest(name="s1", device_class_name=CLASS, count=1)
    sub.allocation_mode = "ExactCount"
    sub.tolerations.append(no_exec)
    c = claim("c", first_available(REQ, sub_request("s0"), sub))
    results = allocate([c], s)
    assert picked(results) == [[(f"{REQ}/s1", DRIVER, NODE, "dev-2")]]
    assert results is not None
    assert list(results[0].devices.results[0].tolerations) == [no_exec]
    # Admin access does not pass a taint.
    used = allocated(claim("old"), (DRIVER, NODE, "dev-1"))
    admin = claim("c", request(admin_access=True))
    assert allocate([admin], [slice_("s", devs[:1])], allocated_claims=[used]) is None
    # "All" on a tainted device: no allocation, not an error.
    assert allocate([claim("c", request(mode="All"))], [slice_("s", devs[:1])]) is None


def test_s_dra_alloc_68_a_backtracked_share_gives_its_counters_back() -> None:
    # kemu: a shared device whose share consumed no capacity leaves no trace once backtracked,
    # so its next share consumes the counters again (upstream's incubating code kept an empty
    # entry that made the next share skip them).
    ev = FakeEvaluator(
        {
            "sp": lambda _, d: d.name in ("dev-s", "dev-p"),
            "r": lambda _, d: d.name == "dev-r",
            "s": lambda _, d: d.name == "dev-s",
        }
    )
    slices = [
        slice_("counters", shared_counters={"cs": {"memory": "4Gi"}}, pool="p", count=2),
        slice_(
            "devices",
            [
                device("dev-s", attrs={"x": 1}, counters={"cs": {"memory": "4Gi"}}, multi=True),
                device("dev-p", attrs={"x": 2}, counters={"cs": {"memory": "4Gi"}}),
                device("dev-r", attrs={"x": 2}),
            ],
            pool="p",
            count=2,
        ),
    ]
    a = claim(
        "a",
        request(REQ, selectors=["sp"]),
        request(REQ1, selectors=["r"]),
        match_attribute=[(f"{DRIVER}/x", [])],
    )
    b = claim("b", request(REQ, selectors=["s"]))
    assert picked(allocate([a], slices, evaluator=ev)) == [
        [(REQ, DRIVER, "p", "dev-p"), (REQ1, DRIVER, "p", "dev-r")]
    ]
    # dev-p took the counters: dev-s cannot have them too.
    assert allocate([a, b], slices, evaluator=ev) is None
