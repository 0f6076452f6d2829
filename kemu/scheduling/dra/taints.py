"""Device taints and tolerations (KEP-5055, DRADeviceTaints; DeviceTaintRule with
DRADeviceTaintRules).

- A device's NoSchedule or NoExecute taint blocks its allocation unless one of the request's
  tolerations tolerates it; other effects (None) are informational (upstream
  allocator_incubating.go taintPreventsAllocation, resourceclaim.ToleratesTaint).
- DeviceTaintRules add their taint to the devices their selector names (driver, pool, device:
  an unset member matches any). Upstream's scheduler sees slices with those taints already
  applied (the DRA manager's ResourceSlices()); the caller does the same with
  `apply_taint_rules` before building the allocator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from kemu.api.v1 import types_pb2

EFFECT_NO_SCHEDULE: Final = "NoSchedule"
EFFECT_NO_EXECUTE: Final = "NoExecute"
EFFECT_NONE: Final = "None"
OP_EXISTS: Final = "Exists"
OP_EQUAL: Final = "Equal"


def tolerates_taint(toleration: types_pb2.DeviceToleration, taint: types_pb2.DeviceTaint) -> bool:
    """upstream resourceclaim.ToleratesTaint: an empty effect or key matches any; Exists ignores
    the value, Equal (the default) compares it; another operator tolerates nothing."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", OP_EQUAL):
        return toleration.value == taint.value
    return toleration.operator == OP_EXISTS


def taint_prevents_allocation(
    taints: Iterable[types_pb2.DeviceTaint], tolerations: Sequence[types_pb2.DeviceToleration]
) -> bool:
    for taint in taints:
        if taint.effect in (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE) and not any(
            tolerates_taint(t, taint) for t in tolerations
        ):
            return True
    return False


def _rule_matches(
    selector: types_pb2.DeviceTaintSelector, driver: str, pool: str, device: str
) -> bool:
    if selector.HasField("driver") and selector.driver != driver:
        return False
    if selector.HasField("pool") and selector.pool != pool:
        return False
    return not (selector.HasField("device") and selector.device != device)


def apply_taint_rules(
    slices: Sequence[types_pb2.ResourceSlice], rules: Sequence[types_pb2.DeviceTaintRule]
) -> list[types_pb2.ResourceSlice]:
    """The slices with each rule's taint added to the devices it selects. A slice no rule
    touches is returned as is (not copied); one that is touched is a copy."""
    if not rules:
        return list(slices)
    out: list[types_pb2.ResourceSlice] = []
    for s in slices:
        driver, pool = s.spec.driver, s.spec.pool.name
        copy: types_pb2.ResourceSlice | None = None
        for i, d in enumerate(s.spec.devices):
            for rule in rules:
                if not _rule_matches(rule.spec.device_selector, driver, pool, d.name):
                    continue
                if copy is None:
                    copy = types_pb2.ResourceSlice()
                    copy.CopyFrom(s)
                copy.spec.devices[i].taints.append(rule.spec.taint)
        out.append(copy if copy is not None else s)
    return out


class TaintedSlices:
    """`apply_taint_rules` remembered per slice across calls, so that a tainted slice stays the
    same object while neither it nor the rules change (the allocator's caches key on slice
    identity). One per scheduler; not thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[
            int,
            tuple[
                types_pb2.ResourceSlice,
                tuple[types_pb2.DeviceTaintRule, ...],
                types_pb2.ResourceSlice,
            ],
        ] = {}

    def apply(
        self,
        slices: Sequence[types_pb2.ResourceSlice],
        rules: Sequence[types_pb2.DeviceTaintRule],
    ) -> list[types_pb2.ResourceSlice]:
        if not rules:
            self._entries.clear()
            return list(slices)
        rules_now = tuple(rules)
        out: list[types_pb2.ResourceSlice] = []
        entries: dict[
            int,
            tuple[
                types_pb2.ResourceSlice,
                tuple[types_pb2.DeviceTaintRule, ...],
                types_pb2.ResourceSlice,
            ],
        ] = {}
        for s in slices:
            entry = self._entries.get(id(s))
            if (
                entry is None
                or entry[0] is not s
                or len(entry[1]) != len(rules_now)
                or any(a is not b for a, b in zip(entry[1], rules_now, strict=True))
            ):
                entry = (s, rules_now, apply_taint_rules([s], rules_now)[0])
            entries[id(s)] = entry
            out.append(entry[2])
        # Only the slices of this call are kept: deleted slices are forgotten.
        self._entries = entries
        return out
