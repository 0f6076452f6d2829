"""The autoscaler with devices (upstream cluster-autoscaler's DRA support at 1.37): template
slices sanitized to each new node, scale-up for a pod whose claim fits only a group's devices,
no scale-up when none has them, the readiness rule, DRA utilization (utils/utilization.go) and
scale-down with claims re-allocated elsewhere, the #125491 device case (S-CA-DRA-*)."""

from __future__ import annotations

import pytest

from autoscaler.dra import (
    UtilizationError,
    dynamic_resource_utilization,
    highest_dynamic_resource_utilization,
)
from autoscaler.scale_up import NOT_TRIGGER_SCALE_UP, TRIGGERED_SCALE_UP
from autoscaler.scaledown.options import ScaleDownOptions
from kemu.api.v1 import types_pb2
from kemu.scheduling.dra_snapshot import DraSnapshot, sanitized_slices
from tests.unit.autoscaler import test_scale_down as sd
from tests.unit.autoscaler.fakes import FakeGroup, template
from tests.unit.autoscaler.test_static_autoscaler import Env, unschedulable
from tests.unit.scheduling.dra.builders import allocated, claim, device, device_class, slice_

pytestmark = pytest.mark.anyio

DRIVER = "gpu.example.com"
CLASS = "gpu"


def gpu_class() -> types_pb2.DeviceClass:
    return device_class(CLASS, [f'device.driver == "{DRIVER}"'])


def node_slice(node: str, *devices: str) -> types_pb2.ResourceSlice:
    return slice_(f"{node}-gpu", list(devices), node_name=node, pool=node, driver=DRIVER)


def gpu_claim(name: str, count: int = 1, uid: str = "") -> types_pb2.ResourceClaim:
    c = claim(name)
    c.spec.devices.requests[0].exactly.device_class_name = CLASS
    c.spec.devices.requests[0].exactly.count = count
    c.metadata.uid = uid or f"uid-{name}"
    return c


def with_claim(pod: types_pb2.Pod, claim_name: str) -> types_pb2.Pod:
    pod.spec.resource_claims.add(name="gpu", resource_claim_name=claim_name)
    return pod


def gpu_group(name: str = "gpu-pool", devices: int = 1, max_size: int = 3) -> FakeGroup:
    g = FakeGroup(name, 0, max_size, template(name))
    g.resource_slices.append(node_slice(f"template-{name}", *(f"gpu-{i}" for i in range(devices))))
    return g


# ------------------------------------------------------------------ sanitizing


def test_s_ca_dra_2_template_slices_are_sanitized_to_the_new_node() -> None:
    """upstream SanitizedNodeResourceSlices: devices kept, nodeName and pool the new node's."""
    (s,) = sanitized_slices([node_slice("template-g", "gpu-0", "gpu-1")], "g-upcoming-0")
    assert s.spec.node_name == "g-upcoming-0"
    assert s.spec.pool.name == "g-upcoming-0"
    assert [d.name for d in s.spec.devices] == ["gpu-0", "gpu-1"]
    assert s.metadata.name == "template-g-gpu-g-upcoming-0"
    shared = slice_("global", ["a"], node_name=None, all_nodes=True)
    with pytest.raises(ValueError, match="can't sanitize slice global because it isn't node-local"):
        sanitized_slices([shared], "n")


# ------------------------------------------------------------------ utilization


def test_s_ca_dra_10_utilization_is_allocated_over_devices_per_pool() -> None:
    slices = [node_slice("n", "gpu-0", "gpu-1", "gpu-2", "gpu-3")]
    c = allocated(gpu_claim("c"), (DRIVER, "n", "gpu-0"))
    assert dynamic_resource_utilization(slices, [c]) == {DRIVER: {"n": 0.25}}
    best = highest_dynamic_resource_utilization(slices, [c])
    assert (best.resource, best.value) == (f"{DRIVER}/n", 0.25)
    # Admin access does not reserve the device.
    admin = allocated(gpu_claim("a"), (DRIVER, "n", "gpu-1"), admin=True)
    assert dynamic_resource_utilization(slices, [c, admin]) == {DRIVER: {"n": 0.25}}


def test_s_ca_dra_11_partitionable_pools_count_their_counters() -> None:
    """The most used counter of each counter set, averaged over the sets."""
    counters = slice_(
        "n-counters", node_name="n", pool="n", driver=DRIVER, count=2,
        shared_counters={"gpu-0": {"memory": "40Gi", "sm": "100"}},
    )  # fmt: skip
    counters.spec.node_name = "n"
    parts = slice_(
        "n-parts",
        [
            device("half-0", counters={"gpu-0": {"memory": "20Gi", "sm": "25"}}),
            device("half-1", counters={"gpu-0": {"memory": "20Gi", "sm": "25"}}),
        ],
        node_name="n", pool="n", driver=DRIVER, count=2,
    )  # fmt: skip
    c = allocated(gpu_claim("c"), (DRIVER, "n", "half-0"))
    assert dynamic_resource_utilization([counters, parts], [c]) == {DRIVER: {"n": 0.5}}


def test_s_ca_dra_11_a_mixed_pool_weighs_both_kinds_by_their_device_counts() -> None:
    """Two atomic devices (both allocated: 1.0) and one counter set (half used: 0.5), weighed
    2:1; with nothing partitionable allocated, the atomic devices' alone (upstream's code
    returns early there)."""
    counters = slice_(
        "n-counters", node_name="n", pool="n", driver=DRIVER, count=2,
        shared_counters={"gpu-0": {"memory": "40Gi"}},
    )  # fmt: skip
    counters.spec.node_name = "n"
    devices = slice_(
        "n-devices",
        [
            device("whole-0"),
            device("whole-1"),
            device("half-0", counters={"gpu-0": {"memory": "20Gi"}}),
            device("half-1", counters={"gpu-0": {"memory": "20Gi"}}),
        ],
        node_name="n", pool="n", driver=DRIVER, count=2,
    )  # fmt: skip
    whole = allocated(gpu_claim("w"), (DRIVER, "n", "whole-0"), (DRIVER, "n", "whole-1"))
    half = allocated(gpu_claim("h"), (DRIVER, "n", "half-0"))
    got = dynamic_resource_utilization([counters, devices], [whole, half])[DRIVER]["n"]
    assert got == pytest.approx(1.0 * 2 / 3 + 0.5 / 3)
    assert dynamic_resource_utilization([counters, devices], [whole]) == {DRIVER: {"n": 1.0}}


def test_s_ca_dra_12_utilization_errors_are_upstreams() -> None:
    incomplete = slice_("s", ["a"], node_name="n", pool="n", driver=DRIVER, generation=2, count=2)
    with pytest.raises(
        UtilizationError,
        match='pool "n" error: newest generation: 2, slice count: 2 - found only 1 slices',
    ):
        dynamic_resource_utilization([incomplete], [])
    with pytest.raises(UtilizationError, match="claim default/c not allocated"):
        dynamic_resource_utilization([node_slice("n", "a")], [gpu_claim("c")])


def test_the_dra_snapshot_forks_and_releases_claims() -> None:
    pod = with_claim(unschedulable("p").obj(), "c")
    owned = allocated(gpu_claim("c"), (DRIVER, "n", "gpu-0"))
    dra = DraSnapshot([owned], [node_slice("n", "gpu-0")], [gpu_class()])
    fork = dra.fork()
    assert fork.reserve_pod_claims(pod) == ""
    assert dra.claim("default", "c") is owned  # the original is untouched
    fork.unreserve_pod_claims(pod)
    c = fork.claim("default", "c")
    assert c is not None and not c.status.HasField("allocation")  # no more consumers


# ------------------------------------------------------------------ scale-up


async def test_s_ca_dra_3_a_pod_whose_claim_fits_only_a_groups_devices_scales_it_from_zero() -> (
    None
):
    pod = with_claim(unschedulable("p", cpu="100m").obj(), "c")
    env = Env(
        FakeGroup("plain", 0, 3, template("plain")),
        gpu_group(),
        pods=[pod],
        claims=[gpu_claim("c")],
        classes=[gpu_class()],
    )
    await env.loop()
    assert env.increases() == [("gpu-pool", 1)]
    assert [e[1] for e in env.events] == [TRIGGERED_SCALE_UP]


async def test_s_ca_dra_4_each_new_node_brings_its_own_devices() -> None:
    """Two pods, one device each, a template of one device: two nodes (the estimator's
    simulation allocates each claim on its node, Reserve writing it into the snapshot)."""
    pods = [with_claim(unschedulable(f"p{i}", cpu="100m").obj(), f"c{i}") for i in range(2)]
    env = Env(
        gpu_group(),
        pods=pods,
        claims=[gpu_claim("c0"), gpu_claim("c1")],
        classes=[gpu_class()],
    )
    await env.loop()
    assert env.increases() == [("gpu-pool", 2)]
    # The upcoming nodes carry the devices: the next loop asks for nothing more.
    await env.loop()
    assert env.increases() == [("gpu-pool", 2)]


async def test_s_ca_dra_5_a_claim_no_group_can_satisfy_triggers_nothing() -> None:
    pod = with_claim(unschedulable("p", cpu="100m").obj(), "c")
    env = Env(
        gpu_group(devices=1),
        pods=[pod],
        claims=[gpu_claim("c", count=2)],
        classes=[gpu_class()],
    )
    await env.loop()
    assert env.increases() == []
    ((name, reason, message),) = env.events
    assert (name, reason) == ("p", NOT_TRIGGER_SCALE_UP)
    assert message == "pod didn't trigger scale-up: 1 cannot allocate all claims"


async def test_s_ca_dra_6_a_new_node_without_its_pools_counts_as_upcoming() -> None:
    """The readiness rule: a registered node that has not published its pool (the template's
    devices by name) is not a node without devices (which would call for another scale-up)
    but an upcoming one."""
    pod = with_claim(unschedulable("p", cpu="100m").obj(), "c")
    group = gpu_group()
    env = Env(group, pods=[pod], claims=[gpu_claim("c")], classes=[gpu_class()])
    await env.loop()
    assert env.increases() == [("gpu-pool", 1)]
    env.nodes = env.cloud.register("gpu-pool")
    await env.loop()
    assert env.increases() == [("gpu-pool", 1)]  # no second node
    env.slices = [node_slice(env.nodes[0].metadata.name, "other-0")]  # not the template's
    await env.loop()
    assert env.increases() == [("gpu-pool", 1)]
    env.slices = [node_slice(env.nodes[0].metadata.name, "gpu-0")]
    result = await env.loop()
    assert env.increases() == [("gpu-pool", 1)]
    assert result.placements == {"default/p": env.nodes[0].metadata.name}


# ------------------------------------------------------------------ scale-down


def _sd_env(devices: int = 2, size: int = 2) -> sd.Env:
    env = sd.Env(size, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(gpu_class())
    for i in range(size):
        env.add(node_slice(f"pool-a-{i}", *(f"gpu-{j}" for j in range(devices))))
    return env


async def _claimed_pod(
    env: sd.Env, name: str, node: str, device: str, *, bound: bool = True
) -> None:
    """A pod whose claim is allocated one device of `node` and reserved for it."""
    c = allocated(gpu_claim(f"{name}-claim"), (DRIVER, node, device))
    c.status.allocation.node_selector.node_selector_terms.add().match_fields.add(
        key="metadata.name", operator="In", values=[node]
    )
    pod = sd.rs_pod(name, node if bound else "", cpu="100m")
    if not bound:
        pod = pod.nominated(node)
    env.add(with_claim(pod.obj(), c.metadata.name))
    p = await env.client.get(types_pb2.Pod, name, "default")
    c.status.reserved_for.add(resource="pods", name=name, uid=p.metadata.uid)
    env.add(c)


async def test_s_ca_dra_7_allocated_devices_block_scale_down() -> None:
    """Only the devices count on a node that has them: one of one allocated is 100 %, the
    CPU's 5 % notwithstanding."""
    env = _sd_env(devices=1, size=1)
    await _claimed_pod(env, "a", "pool-a-0", "gpu-0")
    s = await env.summary()
    assert s.started == ()
    assert sd.unremovable(s) == {"pool-a-0": "NotUnderutilized"}


async def test_s_ca_dra_8_a_node_whose_devices_are_free_goes_its_pods_claims_reallocated() -> None:
    """pool-a-0: 1 device of 4 allocated (25 %); its pod moves to pool-a-1, whose free
    devices take the claim in the simulation; pool-a-1 (2 of 4 after) stays."""
    env = _sd_env(devices=4, size=2)
    await _claimed_pod(env, "a", "pool-a-0", "gpu-0")
    await _claimed_pod(env, "b", "pool-a-1", "gpu-0")
    await _claimed_pod(env, "c", "pool-a-1", "gpu-1")
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert sd.unremovable(s) == {"pool-a-1": "NotUnderutilized"}


async def test_s_ca_dra_8b_no_free_device_elsewhere_keeps_the_node() -> None:
    env = _sd_env(devices=4, size=2)
    await _claimed_pod(env, "a", "pool-a-0", "gpu-0")
    for j in range(4):
        await _claimed_pod(env, f"b{j}", "pool-a-1", f"gpu-{j}")
    s = await env.summary()
    assert s.started == ()
    assert sd.unremovable(s)["pool-a-0"] == "NoPlaceToMovePods"


async def test_s_ca_dra_9_a_node_whose_devices_a_pod_in_prebind_holds_is_never_removed() -> None:
    """kubernetes#125491's device form: the pod is nominated (KEP-5278), not bound, its
    claim already allocated on the node's devices."""
    env = _sd_env(devices=4, size=2)
    await _claimed_pod(env, "binding", "pool-a-0", "gpu-0", bound=False)
    s = await env.summary()
    assert s.started == ("pool-a-1",)  # the empty one
    assert sd.unremovable(s)["pool-a-0"] == "BlockedByPod"
