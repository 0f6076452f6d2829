"""S-DRA-PERF-1: the allocator's fit check (Allocator.fit_verdict, used by DynamicResources'
Filter before the full search) never contradicts the search: on random clusters and claims,
NO_FIT only where `allocate` returns None without an error, FITS only where it returns an
allocation, and the same allocation when asked again after the check (Reserve's lazy run)."""

from __future__ import annotations

import random

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.allocator import (
    AllocatedState,
    Allocator,
    Features,
    FitVerdict,
)
from kemu.scheduling.dra.cel_cache import CelCache
from kemu.scheduling.dra.fit_columns import CODE_FITS, CODE_NO_FIT
from kemu.scheduling.dra.pools import AllocationError
from tests.unit.scheduling.dra import builders as b


def _opt(d: types_pb2.Device) -> bool:
    """A runtime error on devices without the attribute."""
    if "opt" not in d.attributes:
        raise KeyError("opt")
    return d.attributes["opt"].bool_value


EXPRS = {
    "big": lambda drv, d: d.attributes["mem"].int_value >= 40,
    "small": lambda drv, d: d.attributes["mem"].int_value < 40,
    "a100": lambda drv, d: d.attributes["model"].string_value == "a100",
    "any": lambda drv, d: True,
    "driver": lambda drv, d: drv == b.DRIVER,
    # a runtime error on devices without the attribute
    "flaky": lambda drv, d: _opt(d),
}


def _device(rng: random.Random, name: str) -> types_pb2.Device:
    attrs: dict[str, object] = {
        "mem": rng.choice([20, 40, 80]),
        "model": rng.choice(["a100", "h100"]),
    }
    if rng.random() < 0.7:
        attrs["opt"] = rng.random() < 0.5
    return b.device(
        name,
        attrs=attrs,
        capacity={"memory": "80Gi"} if rng.random() < 0.3 else None,
        taints=[("k", "v", "NoSchedule")] if rng.random() < 0.1 else (),
        binding_conditions=["ready"] if rng.random() < 0.1 else (),
        multi=True if rng.random() < 0.1 else None,
    )


def _cluster(
    rng: random.Random,
) -> tuple[list[types_pb2.Node], list[types_pb2.ResourceSlice], list[tuple[str, str, str]]]:
    nodes = [b.node(f"n{i}") for i in range(rng.randint(1, 6))]
    slices: list[types_pb2.ResourceSlice] = []
    devices: list[tuple[str, str, str]] = []
    for n in nodes:
        name = n.metadata.name
        kind = rng.random()
        per_slice = [_device(rng, f"d{j}") for j in range(rng.randint(0, 6))]
        if kind < 0.1:  # incomplete pool: one of two slices
            slices.append(b.slice_(f"{name}-s", per_slice, node_name=name, pool=name, count=2))
        elif kind < 0.15:
            for d in per_slice:
                d.node_name = name
            slices.append(b.slice_(f"{name}-s", per_slice, pool=name, per_device=True))
        else:
            slices.append(b.slice_(f"{name}-s", per_slice, node_name=name, pool=name))
        devices += [(b.DRIVER, name, d.name) for d in per_slice]
    if rng.random() < 0.3:  # network-attached devices seen by every node
        shared = [_device(rng, f"net{j}") for j in range(rng.randint(1, 3))]
        slices.append(b.slice_("net", shared, pool="net", all_nodes=True))
        devices += [(b.DRIVER, "net", d.name) for d in shared]
    return nodes, slices, devices


def _request(rng: random.Random, name: str) -> types_pb2.DeviceRequest:
    exprs = rng.sample(sorted(EXPRS), rng.choice([0, 0, 1, 1, 2]))
    if rng.random() < 0.1:
        exprs.append("nonsense")  # does not compile
    if rng.random() < 0.1:
        return b.first_available(
            name, b.sub_request("s0", count=2, selectors=exprs), b.sub_request("s1")
        )
    return b.request(
        name,
        count=rng.choice([1, 1, 1, 2, 3]),
        mode="All" if rng.random() < 0.05 else "ExactCount",
        selectors=exprs,
        admin_access=True if rng.random() < 0.05 else None,
        tolerations=[b.toleration("k", value="v")] if rng.random() < 0.2 else (),
        capacity={"memory": "10Gi"} if rng.random() < 0.1 else None,
    )


def _claims(rng: random.Random) -> list[types_pb2.ResourceClaim]:
    out = []
    for c in range(rng.choice([1, 1, 1, 2])):
        reqs = [_request(rng, f"r{i}") for i in range(rng.choice([1, 1, 2]))]
        match = [("model", [r.name for r in reqs])] if rng.random() < 0.1 else []
        out.append(b.claim(f"claim-{c}", *reqs, match_attribute=match))
    return out


def _features(rng: random.Random) -> Features:
    return Features(
        admin_access=True,
        prioritized_list=True,
        partitionable_devices=rng.random() < 0.8,
        device_taints=rng.random() < 0.8,
        consumable_capacity=rng.random() < 0.5,
        binding_conditions=rng.random() < 0.5,
    )


def _outcome(a: Allocator, n: types_pb2.Node) -> object:
    try:
        results = a.allocate(n)
    except AllocationError as e:
        return ("error", str(e))
    if results is None:
        return None
    return [r.SerializeToString(deterministic=True) for r in results]


def _share_id() -> str:
    return "share"


@pytest.mark.parametrize("seed", range(400))
def test_s_dra_perf_1_fit_verdict_agrees_with_the_search(seed: int) -> None:
    rng = random.Random(seed)
    nodes, slices, devices = _cluster(rng)
    features = _features(rng)
    taken = rng.sample(devices, rng.randint(0, len(devices)))
    state = AllocatedState.from_claims(
        [b.allocated(b.claim(f"other-{i}"), d) for i, d in enumerate(taken)]
    )
    cls = b.device_class(selectors=rng.sample(["driver", "any", "flaky"], rng.choice([0, 1, 1])))
    cache = CelCache(b.FakeEvaluator(EXPRS))
    claims = _claims(rng)
    # Two passes over the same nodes with one cache: cold (selectors evaluated by the check)
    # and warm (the check answering from the cache and from its per-node entries).
    for _ in range(2):
        checked = Allocator(
            features, claims, state, {b.CLASS: cls}, slices, cache, share_id=_share_id
        )
        full = Allocator(
            features, claims, state, {b.CLASS: cls}, slices, CelCache(b.FakeEvaluator(EXPRS)),
            share_id=_share_id,
        )  # fmt: skip
        for n in nodes:
            verdict = checked.fit_verdict(n)
            want = _outcome(full, n)
            if verdict is FitVerdict.NO_FIT:
                assert want is None, (seed, n.metadata.name, want)
            elif verdict is FitVerdict.FITS:
                assert isinstance(want, list), (seed, n.metadata.name, want)
            assert _outcome(checked, n) == want, (seed, n.metadata.name)


def test_s_dra_perf_1_the_common_shape_is_decided() -> None:
    """upstream's scheduler_perf dra/ shape (one claim, one ExactCount request of one device of
    a class by CEL): full nodes are NO_FIT, nodes with a free device FITS."""
    nodes = [b.node(f"n{i}") for i in range(3)]
    slices = [b.slice_(f"n{i}-s", ["d0", "d1"], node_name=f"n{i}", pool=f"n{i}") for i in range(3)]
    taken = [(b.DRIVER, "n0", "d0"), (b.DRIVER, "n0", "d1"), (b.DRIVER, "n1", "d0")]
    state = AllocatedState.from_claims(
        [b.allocated(b.claim(f"other-{i}"), d) for i, d in enumerate(taken)]
    )
    cls = b.device_class(selectors=["driver"])
    a = Allocator(
        Features.all(), [b.claim()], state, {b.CLASS: cls}, slices, CelCache(b.FakeEvaluator(EXPRS))
    )
    assert [a.fit_verdict(n) for n in nodes] == [
        FitVerdict.NO_FIT,
        FitVerdict.FITS,
        FitVerdict.FITS,
    ]
    codes = a.fit_verdicts(nodes)
    assert codes is not None and codes.tolist() == [CODE_NO_FIT, CODE_FITS, CODE_FITS]
    assert [a.allocate(n) is not None for n in nodes] == [False, True, True]


_CODES = {CODE_NO_FIT: FitVerdict.NO_FIT, CODE_FITS: FitVerdict.FITS}


@pytest.mark.parametrize("seed", range(300))
def test_s_dra_perf_3_fit_verdicts_over_every_node_agree_with_the_per_node_check(
    seed: int,
) -> None:
    """S-DRA-PERF-3: Allocator.fit_verdicts (every node at once, NumPy columns kept across
    pods) gives each node fit_verdict's answer, as the allocated devices change between
    pods (one cache for all of them, as the scheduler's) and for a row without a node."""
    rng = random.Random(seed)
    nodes, slices, devices = _cluster(rng)
    features = _features(rng)
    cls = b.device_class(selectors=rng.sample(["driver", "any", "flaky"], rng.choice([0, 1, 1])))
    cache = CelCache(b.FakeEvaluator(EXPRS))
    rows: list[types_pb2.Node | None] = [*nodes, None]
    rng.shuffle(rows)
    claims = _claims(rng)
    for _ in range(4):
        taken = rng.sample(devices, rng.randint(0, len(devices)))
        state = AllocatedState.from_claims(
            [b.allocated(b.claim(f"other-{i}"), d) for i, d in enumerate(taken)]
        )
        if rng.random() < 0.5:
            claims = _claims(rng)
        a = Allocator(features, claims, state, {b.CLASS: cls}, slices, cache, share_id=_share_id)
        codes = a.fit_verdicts(rows)
        per_node = [a.fit_verdict(n) if n is not None else FitVerdict.UNDECIDED for n in rows]
        if codes is None:
            assert set(per_node) == {FitVerdict.UNDECIDED}, seed
            continue
        got = [_CODES.get(int(c), FitVerdict.UNDECIDED) for c in codes]
        assert got == per_node, seed
