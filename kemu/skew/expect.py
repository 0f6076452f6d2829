"""Expectations of the scenario pack, computed from a cell's versions and gates (the feature gates' own tables, pkg/features/kube_features.go,
the version skew policy, KEP-5278's binding cycle, KEP-1923, KEP-1287): never written per cell.

Each scenario's expectation is a mapping of named facts to values; a scenario observes the
same facts. Result of a scenario in a cell:
- "fail": the observed facts differ from the cell's expectation (or the scenario broke);
- "expected-difference": they match, and the cell's expectation differs from the newest
  cell's (every component at MAX_VERSION with its default gates): the cell behaves
  differently from the newest one, as upstream documents, and that was observed;
- "pass": they match, and match the newest cell's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Literal

from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    PREFER_NOMINATED_NODE,
)
from kemu.component.version import MAX_VERSION
from kemu.component.version_rules import VersionRules
from kemu.machinery.kinds import BY_KIND
from kemu.scheduling.preemption import preemption_disruption_reason
from kemu.skew.policy import Cell

Facts = Mapping[str, object]

Result = Literal["pass", "fail", "expected-difference"]

NEWEST: Final = Cell("newest", (MAX_VERSION,), MAX_VERSION, MAX_VERSION, MAX_VERSION)
"""The reference cell of "expected-difference"."""


def _scheduler_apiserver(cell: Cell) -> str:
    return "apiserver-2" if cell.scheduler_apiserver == 1 else "apiserver"


def clearing(cell: Cell) -> bool:
    """ClearingNominatedNodeNameAfterBinding at the apiserver the scheduler binds through."""
    return cell.feature_gates(_scheduler_apiserver(cell)).enabled(
        CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING
    )


def binding_nnn(cell: Cell) -> Facts:
    """S-NNE-1 and S-CLR-1 at the cell's versions: a pod with PreBind work gets its node as NNN
    at binding start iff the scheduler has NominatedNodeNameForExpectation; the binding write
    clears any NNN iff the scheduler's apiserver has ClearingNominatedNodeNameAfterBinding (old
    apiserver + new scheduler: the NNN stays; new apiserver + old scheduler: cleared)."""
    nne = cell.feature_gates("scheduler").enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)
    cleared = clearing(cell)
    return {
        "nnn_set_at_prebind": nne,
        "prebind_pod_nnn_after_binding": nne and not cleared,
        "nominated_pod_nnn_after_binding": not cleared,
    }


def disruption_reason(cell: Cell) -> str | None:
    """The reason of the DisruptionTarget the cell's scheduler puts on its victims (None: no
    condition; PodDisruptionConditions is off before 1.26)."""
    return preemption_disruption_reason(cell.feature_gates("scheduler"))


def preemption_nnn(cell: Cell) -> Facts:
    """S-PRE-1: the preemptor is nominated to the node, the victim preempted, the preemptor
    bound there; its NNN is kept after binding unless the apiserver clears it."""
    return {
        "preemptor_nominated": True,
        "victim_preempted": True,
        "preemptor_bound_to_node": True,
        "preemptor_nnn_after_binding": not clearing(cell),
    }


def prefer_nominated(cell: Cell) -> Facts:
    """S-PNN-3: the nominated node is tried first (KEP-1923: gate 1.21-1.25, unconditional
    from 1.26), so it wins over a better-scoring node; without it scoring picks the other."""
    return {
        "bound_to_nominated_node": cell.feature_gates("scheduler").enabled(PREFER_NOMINATED_NODE)
    }


def resize_old_kubelet(cell: Cell) -> Facts:
    """KEP-1287's skew rule: an apiserver with InPlacePodVerticalScaling accepts a resize of a
    running pod only if its kubelet reports containerStatuses[].resources (a kubelet with the
    gate); the kubelet then applies it."""
    api = cell.feature_gates("apiserver").enabled(IN_PLACE_POD_VERTICAL_SCALING)
    kubelet = cell.feature_gates("kubelet").enabled(IN_PLACE_POD_VERTICAL_SCALING)
    return {"resize_accepted": api and kubelet, "resize_applied": api and kubelet}


def resize_preemption(cell: Cell) -> Facts:
    """KEP-5836: a resize the kubelet defers for lack of room (any kubelet with in-place
    resize, old ones too: they know nothing of KEP-5836 but produce Deferred) is completed by
    the scheduler preempting a lower-priority pod on the node iff the scheduler has
    InPlacePodVerticalScalingSchedulerPreemption (alpha 1.37, off by default); the scheduler
    reads the node's policy itself (the fallback for old kubelets)."""
    deferred = resize_old_kubelet(cell)["resize_accepted"] is True
    preempts = deferred and cell.feature_gates("scheduler").enabled(
        IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
    )
    return {"resize_deferred": deferred, "low_pod_preempted": preempts, "resized": preempts}


def autoscaler_nnn(cell: Cell) -> Facts:
    """The autoscaler's NNN handling (kubernetes/autoscaler cluster-autoscaler; autoscaler/pods.py): an unschedulable pod
    nominated to a node that is gone is an ordinary one before 1.37 (it triggers a scale-up)
    and never triggers one from 1.37 (kubernetes/autoscaler#9607)."""
    return {
        "plain_pod_scales_up": True,
        "pod_nominated_to_gone_node_scales_up": not VersionRules.at(
            cell.autoscaler_version
        ).autoscaler_nnn_in_cluster_state,
    }


def pod_groups_served(cell: Cell) -> bool:
    """The apiserver serves the Workload API (1.35's Workload, 1.36's PodGroup) and keeps a
    pod's reference to its group: GenericWorkload at the first apiserver, and the Workload's
    group version enabled by its runtime config (upstream serves no alpha version, nor a beta
    one from 1.24, by default)."""
    return cell.feature_gates("apiserver").enabled(GENERIC_WORKLOAD) and cell.served(
        "apiserver"
    ).serves(BY_KIND["Workload"])


def _group_field_version(minor: int) -> str:
    """Which reference a version reads: 1.35's spec.workloadRef, 1.36's spec.schedulingGroup
    (kubernetes#136976 replaced the one with the other)."""
    return "workloadRef" if minor <= 35 else "schedulingGroup"


def pod_groups(cell: Cell) -> Facts:
    """S-PG-1 (KEP-4671) across versions: a gang's members are held at PreEnqueue until
    minCount exist iff the apiserver keeps the reference (GenericWorkload), the scheduler has
    gang scheduling (GenericWorkload, and GangScheduling before 1.37: 1.37 folded it in) and
    reads the reference the apiserver's version has; a scheduler older than 1.35, or without
    the gates, binds them one by one as ordinary pods. Every member is bound once all exist."""
    served = pod_groups_served(cell)
    scheduler = cell.feature_gates("scheduler")
    gangs = (
        scheduler.enabled(GENERIC_WORKLOAD)
        and scheduler.enabled(GANG_SCHEDULING)
        and _group_field_version(cell.scheduler.minor)
        == _group_field_version(cell.apiservers[0].minor)
    )
    return {"pod_groups_served": served, "partial_gang_held": served and gangs, "gang_bound": True}


def rolling_upgrade(cell: Cell) -> Facts:
    """Upstream's upgrade order keeps every intermediate state inside the policy: every step
    completes, the load is bound after each, the invariants hold."""
    return {"upgraded": True, "load_bound_and_invariants_held": True}


EXPECTATIONS: Final[Mapping[str, Callable[[Cell], Facts]]] = {
    "binding-nnn": binding_nnn,
    "preemption-nnn": preemption_nnn,
    "prefer-nominated": prefer_nominated,
    "resize-old-kubelet": resize_old_kubelet,
    "resize-preemption": resize_preemption,
    "autoscaler-nnn": autoscaler_nnn,
    "pod-groups": pod_groups,
    "rolling-upgrade": rolling_upgrade,
}
UPGRADE: Final = "rolling-upgrade"
SCENARIOS: Final = tuple(s for s in EXPECTATIONS if s != UPGRADE)
"""The pack every cell runs; an upgrade cell runs UPGRADE only."""
POLICY: Final = "policy"
"""The scenario of an unsupported cell: "pass" when kemu.skew refused it."""


def result(scenario: str, cell: Cell, observed: Facts) -> Result:
    expected = EXPECTATIONS[scenario](cell)
    if dict(observed) != dict(expected):
        return "fail"
    return (
        "pass" if dict(expected) == dict(EXPECTATIONS[scenario](NEWEST)) else "expected-difference"
    )


def differences(scenario: str, cell: Cell, observed: Facts) -> list[str]:
    """Sentences naming each fact observed otherwise than expected."""
    expected = EXPECTATIONS[scenario](cell)
    return [
        f"{fact}: expected {expected.get(fact)!r}, observed {observed.get(fact)!r}"
        for fact in sorted(set(expected) | set(observed))
        if expected.get(fact) != observed.get(fact)
    ]
