"""resource.k8s.io's API rules (S-DRA-API-*): validation (upstream pkg/apis/resource/validation/
validation.go), strategies (pkg/registry/resource/*/strategy.go), printers
(pkg/printers/internalversion/printers.go) and a pod's claims (pkg/apis/core/validation)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2 as pb
from kemu.machinery.convert import from_dict
from kemu.machinery.dra import DraRules
from kemu.machinery.errors import Cause
from kemu.machinery.fields import parse_field_selector
from kemu.machinery.kinds import BY_KIND
from kemu.machinery.printers import TABLES, headers, row
from kemu.machinery.strategy import StrategyOptions, before_update, strategy_for
from kemu.machinery.validation.objects import validate_object, validate_status_update

OPTS = StrategyOptions()


def _make(kind: str, data: dict[str, Any]) -> Message:
    obj = from_dict(BY_KIND[kind], data)
    strategy_for(BY_KIND[kind]).prepare_for_create(obj, OPTS, 0.0)
    return obj


def _claim(requests: list[dict[str, Any]], **devices: Any) -> pb.ResourceClaim:
    obj = _make(
        "ResourceClaim",
        {
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": requests, **devices}},
        },
    )
    assert isinstance(obj, pb.ResourceClaim)
    return obj


def _slice(**spec: Any) -> pb.ResourceSlice:
    base: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}],
    }
    base.update(spec)
    obj = _make("ResourceSlice", {"metadata": {"name": "s"}, "spec": base})
    assert isinstance(obj, pb.ResourceSlice)
    return obj


def _fields(causes: list[Cause]) -> list[str]:
    return [c.field for c in causes]


GPU: dict[str, Any] = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}


def test_s_dra_api_1_claim_defaults_and_valid_claim() -> None:
    claim = _claim([GPU])
    exactly = claim.spec.devices.requests[0].exactly
    assert (exactly.allocation_mode, exactly.count) == ("ExactCount", 1)
    assert validate_object(claim) == []
    assert not claim.HasField("status") or claim.status == pb.ResourceClaimStatus()


def test_s_dra_api_2_bad_cel_selector_refused_at_its_path() -> None:
    req: dict[str, Any] = {
        "name": "gpu",
        "exactly": {
            "deviceClassName": "gpu.example.com",
            "selectors": [{"cel": {"expression": "device.nope == 1"}}],
        },
    }
    causes = validate_object(_claim([req]))
    assert _fields(causes) == ["spec.devices.requests[0].exactly.selectors[0].cel.expression"]
    assert "compilation failed: ERROR: <input>:1:7: undefined field 'nope'" in causes[0].message
    assert "'kubernetes.DRADevice'" in causes[0].message
    long = {
        **req,
        "exactly": {**req["exactly"], "selectors": [{"cel": {"expression": "x" * 10241}}]},
    }
    (too_long,) = validate_object(_claim([long]))
    assert too_long.message == "Too long: must have at most 10240 bytes"
    bool_req = {
        **req,
        "exactly": {**req["exactly"], "selectors": [{"cel": {"expression": "device.driver"}}]},
    }
    (typed,) = validate_object(_claim([bool_req]))
    assert typed.message.endswith("must evaluate to bool or the unknown type, not string")


def test_s_dra_api_3_request_rules() -> None:
    neither = validate_object(_claim([{"name": "gpu"}]))
    assert [(c.field, c.message) for c in neither] == [
        (
            "spec.devices.requests[0]",
            "Required value: exactly one of `exactly` or `firstAvailable` is required",
        )
    ]
    all_count = {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "count": 2},
    }
    (c,) = validate_object(_claim([all_count]))
    assert c.field == "spec.devices.requests[0].exactly.count"
    assert c.message == "Invalid value: 2: must not be specified when allocationMode is 'All'"
    dup = validate_object(_claim([GPU, GPU]))
    assert [(x.field, x.message) for x in dup] == [
        ("spec.devices.requests[1]", 'Duplicate value: "gpu"')
    ]
    bad_ref = validate_object(
        _claim([GPU], constraints=[{"requests": ["nope"], "matchAttribute": "x.com/model"}])
    )
    assert bad_ref[0].field == "spec.devices.constraints[0].requests[0]"
    assert "must be the name of a request in the claim" in bad_ref[0].message
    first = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu"},
            {"name": "small", "deviceClassName": "gpu"},
        ],
    }
    claim = _claim(
        [first],
        config=[
            {
                "requests": ["gpu/small"],
                "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}},
            }
        ],
    )
    assert claim.spec.devices.requests[0].first_available[1].count == 1
    assert validate_object(claim) == []


def test_s_dra_api_4_claim_spec_immutable_and_status_rules() -> None:
    old = _claim([GPU])
    old.metadata.resource_version = "1"
    new = pb.ResourceClaim()
    new.CopyFrom(old)
    new.spec.devices.requests[0].exactly.count = 2
    stored = before_update(BY_KIND["ResourceClaim"], old, new, OPTS)
    causes = validate_object(stored, old=old)
    assert _fields(causes) == ["spec"] and causes[0].message.endswith("field is immutable")

    status = pb.ResourceClaim()
    status.CopyFrom(old)
    status.status.reserved_for.add(resource="pods", name="p", uid="u1")
    written = strategy_for(BY_KIND["ResourceClaim"]).prepare_for_status_update(status, old, OPTS, 0)
    (c,) = validate_status_update(written, old)
    assert (c.field, c.message) == (
        "status.reservedFor",
        "Forbidden: may not be specified when `allocated` is not set",
    )

    allocated = pb.ResourceClaim()
    allocated.CopyFrom(old)
    allocated.status.allocation.devices.results.add(
        request="gpu", driver="gpu.example.com", pool="node-1", device="gpu-0"
    )
    assert validate_status_update(allocated, old) == []
    changed = pb.ResourceClaim()
    changed.CopyFrom(allocated)
    changed.status.allocation.devices.results[0].device = "gpu-1"
    (c,) = validate_status_update(changed, allocated)
    assert c.field == "status.allocation" and c.message.endswith("field is immutable")

    deleting = pb.ResourceClaim()
    deleting.CopyFrom(allocated)
    deleting.metadata.deletion_timestamp.seconds = 10
    adding = pb.ResourceClaim()
    adding.CopyFrom(deleting)
    adding.status.reserved_for.add(resource="pods", name="p", uid="u1")
    (c,) = validate_status_update(adding, deleting)
    assert c.message == (
        "Forbidden: new entries may not be added while `deallocationRequested` or "
        "`deletionTimestamp` are set"
    )
    wrong_device = pb.ResourceClaim()
    wrong_device.CopyFrom(allocated)
    wrong_device.status.devices.add(driver="gpu.example.com", pool="node-1", device="gpu-9")
    (c,) = validate_status_update(wrong_device, allocated)
    assert c.field == "status.devices[0]"
    assert c.message.endswith("must be an allocated device in the claim")


def test_s_dra_api_5_slice_rules() -> None:
    assert validate_object(_slice()) == []
    both = validate_object(_slice(allNodes=True))
    assert [(c.field, c.message) for c in both] == [
        (
            "spec",
            'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
            "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple "
            "fields are set",
        )
    ]
    bad = _slice(
        devices=[
            {
                "name": "gpu-0",
                "attributes": {"v": {"version": "1.2"}, "n": {}},
                "capacity": {"memory": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}},
            }
        ]
    )
    assert sorted((c.field, c.message) for c in validate_object(bad)) == [
        ("spec.devices[0].attributes[n]", 'Invalid value: "": exactly one value must be specified'),
        (
            "spec.devices[0].attributes[v].version",
            'Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0',
        ),
        (
            "spec.devices[0].capacity[memory].requestPolicy",
            "Forbidden: allowMultipleAllocations must be true",
        ),
    ]
    old = _slice()
    moved = _slice(nodeName="node-2", driver="other.example.com")
    assert _fields(validate_object(moved, old=old)) == ["spec.driver", "spec.nodeName"]


def test_s_dra_api_6_gated_fields_dropped() -> None:
    off = StrategyOptions(
        dra=DraRules(
            admin_access=False,
            prioritized_list=False,
            device_taints=False,
            partitionable_devices=False,
            consumable_capacity=False,
            binding_conditions=False,
            device_status=False,
            extended_resource=False,
        )
    )
    kind = BY_KIND["ResourceSlice"]
    sl = from_dict(
        kind,
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p", "resourceSliceCount": 1},
                "allNodes": True,
                "devices": [
                    {
                        "name": "a",
                        "taints": [{"key": "k", "effect": "NoSchedule"}],
                        "bindsToNode": True,
                        "allowMultipleAllocations": True,
                    }
                ],
            },
        },
    )
    strategy_for(kind).prepare_for_create(sl, off, 0)
    assert isinstance(sl, pb.ResourceSlice)
    device = sl.spec.devices[0]
    assert not device.taints and not device.HasField("binds_to_node")
    assert not device.HasField("allow_multiple_allocations")
    claim_kind = BY_KIND["ResourceClaim"]
    claim = from_dict(
        claim_kind,
        {
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "r", "exactly": {"deviceClassName": "c", "adminAccess": True}}
                    ]
                }
            },
        },
    )
    strategy_for(claim_kind).prepare_for_create(claim, off, 0)
    assert isinstance(claim, pb.ResourceClaim)
    assert not claim.spec.devices.requests[0].exactly.HasField("admin_access")
    # A stored object that uses a field keeps it.
    strategy_for(claim_kind).prepare_for_create(claim, OPTS, 0)
    claim.spec.devices.requests[0].exactly.admin_access = True
    again = pb.ResourceClaim()
    again.CopyFrom(claim)
    strategy_for(claim_kind).prepare_for_update(again, claim, off)
    assert again.spec.devices.requests[0].exactly.admin_access


def test_s_dra_api_7_claim_state_column() -> None:
    kind = BY_KIND["ResourceClaim"]
    claim = _claim([GPU])
    assert headers(kind, wide=False, with_namespace=False) == ["NAME", "STATE", "AGE"]
    assert row(kind, claim, 0.0, wide=False, with_namespace=False)[1] == "pending"
    claim.status.allocation.devices.results.add(request="gpu", driver="d", pool="p", device="x")
    claim.status.reserved_for.add(resource="pods", name="p", uid="u")
    assert row(kind, claim, 0.0, wide=False, with_namespace=False)[1] == "allocated,reserved"
    claim.metadata.deletion_timestamp.seconds = 1
    assert (
        row(kind, claim, 0.0, wide=False, with_namespace=False)[1] == "deleted,allocated,reserved"
    )
    slice_kind = BY_KIND["ResourceSlice"]
    assert TABLES["ResourceSlice"].headers == ("NAME", "NODE", "DRIVER", "POOL", "AGE")
    assert row(slice_kind, _slice(), 0.0, wide=False, with_namespace=False)[1:4] == [
        "node-1",
        "gpu.example.com",
        "node-1",
    ]


def test_s_dra_api_8_slice_field_selectors() -> None:
    sel = parse_field_selector("resourceslices", "spec.nodeName=node-1,spec.driver=gpu.example.com")
    assert sel.matches(_slice())
    assert not parse_field_selector("resourceslices", "spec.nodeName=").matches(_slice())


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"resourceClaims": [{"name": "gpu"}]},
            [
                (
                    "spec.resourceClaims[0]",
                    'Invalid value: "{\\"name\\":\\"gpu\\"}": must specify one of: '
                    "`resourceClaimName`, `resourceClaimTemplateName`",
                )
            ],
        ),
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}], "claims": ["other"]},
            [
                (
                    "spec.containers[0].resources.claims[0]",
                    'Not found: "other": must be one of the names in pod.spec.resourceClaims: gpu',
                )
            ],
        ),
        (
            {
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                "claims": ["gpu"],
            },
            [],
        ),
    ],
)
def test_s_dra_api_9_pod_claims(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    container: dict[str, Any] = {"name": "c", "image": "i"}
    if "claims" in spec:
        container["resources"] = {"claims": [{"name": n} for n in spec["claims"]]}
    pod = _make(
        "Pod",
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [container], "resourceClaims": spec["resourceClaims"]},
        },
    )
    assert [(c.field, c.message) for c in validate_object(pod)] == expected


def test_s_dra_api_10_device_taint_rule_time_added_and_effect() -> None:
    rule = _make(
        "DeviceTaintRule",
        {
            "metadata": {"name": "r"},
            "spec": {
                "deviceSelector": {"driver": "d.example.com"},
                "taint": {"key": "k", "effect": "Bad"},
            },
        },
    )
    assert isinstance(rule, pb.DeviceTaintRule)
    assert rule.spec.taint.HasField("time_added")
    (c,) = validate_object(rule)
    assert c.field == "spec.taint.effect" and c.message.startswith('Unsupported value: "Bad"')


def test_s_dra_api_14_v1beta1_shape_converted() -> None:
    """pkg/apis/resource/v1beta1/conversion.go: Device.basic and flat requests."""
    from kemu.machinery import podgroups

    v1beta1_slice = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1},
            "nodeName": "n1",
            "allNodes": False,
            "devices": [{"name": "d0", "basic": {"attributes": {"model": {"string": "A"}}}}],
        },
    }
    sl = podgroups.from_versioned(
        BY_KIND["ResourceSlice"], v1beta1_slice, "resource.k8s.io/v1beta1"
    )
    assert isinstance(sl, pb.ResourceSlice)
    assert sl.spec.devices[0].attributes["model"].string_value == "A"
    assert not sl.spec.HasField("all_nodes")
    out: Any = podgroups.to_versioned(sl, "resource.k8s.io/v1beta1")
    assert out["apiVersion"] == "resource.k8s.io/v1beta1"
    assert out["spec"]["devices"] == [
        {"name": "d0", "basic": {"attributes": {"model": {"string": "A"}}}}
    ]

    v1beta1_claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu", "count": 2}]}},
    }
    claim = podgroups.from_versioned(
        BY_KIND["ResourceClaim"], v1beta1_claim, "resource.k8s.io/v1beta1"
    )
    assert isinstance(claim, pb.ResourceClaim)
    assert claim.spec.devices.requests[0].exactly.count == 2
    back: Any = podgroups.to_versioned(claim, "resource.k8s.io/v1beta1")
    assert back["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu", "count": 2}
    ]
    v1beta2: Any = podgroups.to_versioned(claim, "resource.k8s.io/v1beta2")
    assert v1beta2["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_s_dra_api_16_pod_claims_dropped_without_the_gate() -> None:
    """pkg/api/pod/util.go dropDisabledDynamicResourceAllocationFields (1.32-1.33: the gate is
    beta and off)."""
    off = StrategyOptions(dra=DraRules(dynamic_resource_allocation=False))
    kind = BY_KIND["Pod"]
    data = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
        },
    }
    pod = from_dict(kind, data)
    strategy_for(kind).prepare_for_create(pod, off, 0)
    assert isinstance(pod, pb.Pod)
    assert not pod.spec.resource_claims and not pod.spec.containers[0].resources.claims
    kept = from_dict(kind, data)
    strategy_for(kind).prepare_for_create(kept, OPTS, 0)
    assert isinstance(kept, pb.Pod)
    update = pb.Pod()
    update.CopyFrom(kept)
    strategy_for(kind).prepare_for_update(update, kept, off)
    assert update.spec.resource_claims  # in use: kept


def test_s_dra_api_19_dropping_fields_does_not_set_an_unset_request_type() -> None:
    """Clearing a gated field inside an unset `exactly` must not make `exactly` set: the request
    keeps failing "exactly one of `exactly` or `firstAvailable` is required"."""
    off = StrategyOptions(dra=DraRules(device_taints=False, consumable_capacity=False))
    kind = BY_KIND["ResourceClaim"]
    claim = from_dict(
        kind,
        {
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r"}]}},
        },
    )
    strategy_for(kind).prepare_for_create(claim, off, 0)
    assert isinstance(claim, pb.ResourceClaim)
    assert not claim.spec.devices.requests[0].HasField("exactly")
    (c,) = validate_object(claim)
    assert c.message == "Required value: exactly one of `exactly` or `firstAvailable` is required"
