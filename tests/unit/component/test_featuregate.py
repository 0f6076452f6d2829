from __future__ import annotations

import pytest

from kemu.component import featuregate as fg
from kemu.component.featuregate import (
    FeatureGateError,
    FeatureGates,
    GateState,
    Stage,
    parse_feature_gates,
)
from kemu.component.version import Version


def gates_at(minor: int, **overrides: bool) -> FeatureGates:
    return FeatureGates.for_version(Version(1, minor), overrides)


PNN = fg.PREFER_NOMINATED_NODE
NNNE = fg.NOMINATED_NODE_NAME_FOR_EXPECTATION
CLEAR = fg.CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING
IPPVS = fg.IN_PLACE_POD_VERTICAL_SCALING
PREEMPT_RESIZE = fg.IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
ASYNC = fg.SCHEDULER_ASYNC_PREEMPTION
OBSGEN = fg.POD_OBSERVED_GENERATION_TRACKING
READINESS = fg.POD_SCHEDULING_READINESS
MIN_DOMAINS = fg.MIN_DOMAINS_IN_POD_TOPOLOGY_SPREAD
INCLUSION = fg.NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD
MATCH_KEYS = fg.MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD
MERGE = fg.MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE
# The gates of the preemption and resize tables below; PodTopologySpread's have their own.
PTS_GATES = frozenset({MIN_DOMAINS, INCLUSION, MATCH_KEYS, MERGE})
SEPARATE_TAINT = fg.SEPARATE_TAINT_EVICTION_CONTROLLER
HOST_IPS = fg.POD_HOST_IPS
PDC = fg.POD_DISRUPTION_CONDITIONS
POD_LEVEL = fg.POD_LEVEL_RESOURCES
RETRO = fg.RETROACTIVE_DEFAULT_STORAGE_CLASS
# upstream gates kemu knows but does not model (upstream's scheduler_perf files set them).
NOT_MODELLED = frozenset(name for name, gate in fg.GATES.items() if not gate.modelled)
# Gates with tests of their own below; the generic tables leave them out.
# The workload controllers' gates (StatefulSet, CronJob).
WORKLOAD_GATES = frozenset(
    {
        fg.STATEFUL_SET_AUTO_DELETE_PVC,
        fg.STATEFUL_SET_START_ORDINAL,
        fg.MAX_UNAVAILABLE_STATEFUL_SET,
        fg.POD_INDEX_LABEL,
        fg.CRON_JOB_TIME_ZONE,
        fg.CRON_JOBS_SCHEDULED_ANNOTATION,
    }
)
# Workload-aware scheduling's (pod groups): test_pod_group_gates_* below.
POD_GROUP_GATES = frozenset(
    {
        fg.GENERIC_WORKLOAD,
        fg.GANG_SCHEDULING,
        fg.WORKLOAD_AWARE_PREEMPTION,
        fg.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
        fg.POD_GROUP_PREEMPTION_POLICY,
        fg.COMPOSITE_POD_GROUP,
        fg.WORKLOAD_WITH_JOB,
        fg.DRA_WORKLOAD_RESOURCE_CLAIMS,
    }
)
# DRA's whose fields the apiserver drops while they are off: test_dra_api_gates below.
DRA_API_GATES = frozenset(
    {
        fg.DRA_EXTENDED_RESOURCE,
        fg.DRA_ADMIN_ACCESS,
        fg.DRA_PRIORITIZED_LIST,
        fg.DRA_RESOURCE_CLAIM_DEVICE_STATUS,
        fg.DRA_DEVICE_TAINTS,
        fg.DRA_DEVICE_TAINT_RULES,
        fg.DRA_PARTITIONABLE_DEVICES,
        fg.DRA_CONSUMABLE_CAPACITY,
    }
)
# DRA's that the scheduler models: test_dra_scheduler_gates below.
DRA_SCHEDULER_GATES = frozenset(
    {
        fg.DYNAMIC_RESOURCE_ALLOCATION,
        fg.DRA_DEVICE_BINDING_CONDITIONS,
        fg.DRA_SCHEDULER_FILTER_TIMEOUT,
        fg.DRA_PREEMPTION,
    }
)
OWN_TESTS = (
    PTS_GATES
    | WORKLOAD_GATES
    | POD_GROUP_GATES
    | DRA_API_GATES
    | DRA_SCHEDULER_GATES
    | {SEPARATE_TAINT, HOST_IPS, PDC, POD_LEVEL, RETRO, fg.POD_TOPOLOGY_LABELS_ADMISSION}
    | {fg.SCHEDULER_ASYNC_API_CALLS, fg.RETRY_GENERATE_NAME, fg.CONSISTENT_LIST_FROM_CACHE}
    | NOT_MODELLED
)


def defaults_at(minor: int, names: frozenset[str] | None = None) -> dict[str, bool]:
    gates = gates_at(minor)
    return {
        name: gates.enabled(name)
        for name in fg.GATES
        if (name in names if names is not None else name not in OWN_TESTS)
    }


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        (
            21,
            {
                PNN: False,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: False,
            },
        ),
        (
            22,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: False,
            },
        ),
        (
            24,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: False,
            },
        ),
        (
            25,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: False,
            },
        ),
        (
            26,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: False,
            },
        ),
        (
            27,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: True,
            },
        ),
        (
            32,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: False,
                PREEMPT_RESIZE: False,
                ASYNC: False,
                OBSGEN: False,
                READINESS: True,
            },
        ),
        (
            33,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: True,
                PREEMPT_RESIZE: False,
                ASYNC: True,
                OBSGEN: False,
                READINESS: True,
            },
        ),
        (
            34,
            {
                PNN: True,
                NNNE: False,
                CLEAR: False,
                IPPVS: True,
                PREEMPT_RESIZE: False,
                ASYNC: True,
                OBSGEN: True,
                READINESS: True,
            },
        ),
        (
            35,
            {
                PNN: True,
                NNNE: True,
                CLEAR: True,
                IPPVS: True,
                PREEMPT_RESIZE: False,
                ASYNC: True,
                OBSGEN: True,
                READINESS: True,
            },
        ),
        (
            37,
            {
                PNN: True,
                NNNE: True,
                CLEAR: True,
                IPPVS: True,
                PREEMPT_RESIZE: False,
                ASYNC: True,
                OBSGEN: True,
                READINESS: True,
            },
        ),
    ],
)
def test_defaults_per_emulated_version(minor: int, expected: dict[str, bool]) -> None:
    # PodObservedGenerationTracking: alpha (off) in 1.33, beta (on) in 1.34, GA in 1.35.
    assert defaults_at(minor) == expected


@pytest.mark.parametrize(
    ("minor", "state"),
    [
        (29, None),
        (30, (False, Stage.ALPHA)),
        (31, (True, Stage.BETA)),
        (32, (True, Stage.GA)),
        (37, (True, Stage.GA)),
    ],
)
def test_retry_generate_name_alpha_1_30_beta_1_31_ga_1_32(
    minor: int, state: tuple[bool, Stage] | None
) -> None:
    """staging/src/k8s.io/apiserver/pkg/features/kube_features.go."""
    found = [s for s in gates_at(minor).states() if s.name == fg.RETRY_GENERATE_NAME]
    assert [(s.enabled, s.stage) for s in found] == ([state] if state else [])


@pytest.mark.parametrize(
    ("minor", "state"),
    [
        (27, None),
        (28, (False, Stage.ALPHA)),
        (31, (True, Stage.BETA)),
        (34, (True, Stage.GA)),
        (37, (True, Stage.GA)),
    ],
)
def test_consistent_list_from_cache_alpha_1_28_beta_1_31_ga_1_34(
    minor: int, state: tuple[bool, Stage] | None
) -> None:
    found = [s for s in gates_at(minor).states() if s.name == fg.CONSISTENT_LIST_FROM_CACHE]
    assert [(s.enabled, s.stage) for s in found] == ([state] if state else [])


@pytest.mark.parametrize(
    ("minor", "state"),
    [
        (32, None),
        (33, (False, Stage.ALPHA)),
        (34, (False, Stage.ALPHA)),
        (35, (True, Stage.BETA)),
        (37, (True, Stage.BETA)),
    ],
)
def test_pod_topology_labels_admission_alpha_1_33_beta_on_1_35(
    minor: int, state: tuple[bool, Stage] | None
) -> None:
    found = [s for s in gates_at(minor).states() if s.name == fg.POD_TOPOLOGY_LABELS_ADMISSION]
    assert [(s.enabled, s.stage) for s in found] == ([state] if state else [])


@pytest.mark.parametrize(
    ("minor", "states"),
    [
        (21, [GateState(PNN, False, Stage.ALPHA, False)]),
        (22, [GateState(PNN, True, Stage.BETA, False)]),
        (24, [GateState(PNN, True, Stage.GA, True)]),
        (25, [GateState(PNN, True, Stage.GA, True)]),
        (26, [GateState(READINESS, False, Stage.ALPHA, False)]),
        (
            33,
            [
                GateState(IPPVS, True, Stage.BETA, False),
                GateState(OBSGEN, False, Stage.ALPHA, False),
                GateState(ASYNC, True, Stage.BETA, False),
            ],
        ),
        (
            34,
            [
                GateState(CLEAR, False, Stage.ALPHA, False),
                GateState(IPPVS, True, Stage.BETA, False),
                GateState(NNNE, False, Stage.ALPHA, False),
                GateState(OBSGEN, True, Stage.BETA, False),
                GateState(ASYNC, True, Stage.BETA, False),
            ],
        ),
        (
            35,
            [
                GateState(CLEAR, True, Stage.BETA, False),
                GateState(IPPVS, True, Stage.GA, True),
                GateState(NNNE, True, Stage.BETA, False),
                GateState(OBSGEN, True, Stage.GA, True),
                GateState(ASYNC, True, Stage.BETA, False),
            ],
        ),
        (
            37,
            [
                GateState(CLEAR, True, Stage.BETA, False),
                GateState(IPPVS, True, Stage.GA, True),
                GateState(PREEMPT_RESIZE, False, Stage.ALPHA, False),
                GateState(NNNE, True, Stage.BETA, False),
                GateState(OBSGEN, True, Stage.GA, True),
                GateState(ASYNC, True, Stage.BETA, False),
            ],
        ),
    ],
)
def test_states_list_only_gates_that_exist_at_the_version(
    minor: int, states: list[GateState]
) -> None:
    assert [s for s in gates_at(minor).states() if s.name not in OWN_TESTS] == states


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        # (StatefulSetAutoDeletePVC, StatefulSetStartOrdinal, PodIndexLabel, CronJobTimeZone,
        # CronJobsScheduledAnnotation, MaxUnavailableStatefulSet); a removed gate's
        # behaviour stays on.
        (21, (False, False, False, False, False, False)),
        (23, (False, False, False, False, False, False)),
        (24, (False, False, False, False, False, False)),
        (25, (False, False, False, True, False, False)),
        (26, (False, False, False, True, False, False)),
        (27, (True, True, False, True, False, False)),
        (28, (True, True, True, True, True, False)),
        (34, (True, True, True, True, True, False)),
        (35, (True, True, True, True, True, True)),
        (37, (True, True, True, True, True, True)),
    ],
)
def test_workload_controller_gates_per_emulated_version(
    minor: int, expected: tuple[bool, ...]
) -> None:
    order = (
        fg.STATEFUL_SET_AUTO_DELETE_PVC,
        fg.STATEFUL_SET_START_ORDINAL,
        fg.POD_INDEX_LABEL,
        fg.CRON_JOB_TIME_ZONE,
        fg.CRON_JOBS_SCHEDULED_ANNOTATION,
        fg.MAX_UNAVAILABLE_STATEFUL_SET,
    )
    assert tuple(gates_at(minor).enabled(name) for name in order) == expected


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        (23, {MIN_DOMAINS: False, INCLUSION: False, MATCH_KEYS: False, MERGE: False}),
        (25, {MIN_DOMAINS: False, INCLUSION: False, MATCH_KEYS: False, MERGE: False}),
        (26, {MIN_DOMAINS: False, INCLUSION: True, MATCH_KEYS: False, MERGE: False}),
        (27, {MIN_DOMAINS: True, INCLUSION: True, MATCH_KEYS: True, MERGE: False}),
        (33, {MIN_DOMAINS: True, INCLUSION: True, MATCH_KEYS: True, MERGE: False}),
        (34, {MIN_DOMAINS: True, INCLUSION: True, MATCH_KEYS: True, MERGE: True}),
        (37, {MIN_DOMAINS: True, INCLUSION: True, MATCH_KEYS: True, MERGE: True}),
    ],
)
def test_pod_topology_spread_gates_per_emulated_version(
    minor: int, expected: dict[str, bool]
) -> None:
    assert defaults_at(minor, PTS_GATES) == expected


def test_pod_host_ips_alpha_1_28_beta_1_29_ga_1_30_removed_1_32() -> None:
    """KEP-2681 (status.hostIPs), as upstream's versioned_kube_features.go."""
    assert not gates_at(27).enabled(HOST_IPS)
    assert not gates_at(28).enabled(HOST_IPS)
    assert gates_at(28, PodHostIPs=True).enabled(HOST_IPS)
    assert gates_at(29).enabled(HOST_IPS)
    with pytest.raises(FeatureGateError, match="locked to true"):
        gates_at(30, PodHostIPs=False)
    assert gates_at(37).enabled(HOST_IPS)
    with pytest.raises(FeatureGateError, match="removed in 1.32"):
        gates_at(32, PodHostIPs=True)


def test_pod_topology_spread_gates_lock_and_removal() -> None:
    assert gates_at(33).enabled(MIN_DOMAINS)  # removed in 1.32: always on
    with pytest.raises(FeatureGateError, match="removed in 1.32"):
        gates_at(33, MinDomainsInPodTopologySpread=True)
    with pytest.raises(FeatureGateError, match="locked to true"):
        gates_at(33, NodeInclusionPolicyInPodTopologySpread=False)
    assert not gates_at(32, NodeInclusionPolicyInPodTopologySpread=False).enabled(INCLUSION)
    assert not gates_at(37, MatchLabelKeysInPodTopologySpread=False).enabled(MATCH_KEYS)


def test_alpha_and_beta_gates_can_be_set_either_way() -> None:
    assert gates_at(21, PreferNominatedNode=True).enabled(PNN)
    assert not gates_at(22, PreferNominatedNode=False).enabled(PNN)
    gates = gates_at(
        34, NominatedNodeNameForExpectation=True, ClearingNominatedNodeNameAfterBinding=True
    )
    assert gates.enabled(NNNE) and gates.enabled(CLEAR)
    gates = gates_at(35, NominatedNodeNameForExpectation=False, SchedulerAsyncPreemption=False)
    assert not gates.enabled(NNNE) and not gates.enabled(ASYNC)
    assert gates.warnings == ()


def test_gate_before_its_first_version_does_not_exist() -> None:
    with pytest.raises(FeatureGateError) as info:
        gates_at(33, NominatedNodeNameForExpectation=True)
    assert str(info.value) == (
        'feature gate "NominatedNodeNameForExpectation" does not exist at emulated version 1.33 '
        "(introduced in 1.34)"
    )
    with pytest.raises(
        FeatureGateError, match=r"does not exist at emulated version 1.36 \(introduced in 1.37\)"
    ):
        gates_at(36, InPlacePodVerticalScalingSchedulerPreemption=False)


def test_removed_gate_cannot_be_set_but_its_behaviour_is_on() -> None:
    for value in (True, False):
        with pytest.raises(FeatureGateError) as info:
            gates_at(26, PreferNominatedNode=value)
        assert str(info.value) == (
            'feature gate "PreferNominatedNode" does not exist at emulated version 1.26 '
            "(removed in 1.26; its behaviour is always enabled)"
        )
    assert gates_at(37).enabled(PNN)


def test_locked_gate_accepts_its_locked_value_only() -> None:
    with pytest.raises(FeatureGateError) as info:
        gates_at(35, InPlacePodVerticalScaling=False)
    assert str(info.value) == (
        'feature gate "InPlacePodVerticalScaling" is locked to true (GA) at emulated version 1.35 '
        "and cannot be set to false"
    )
    with pytest.raises(FeatureGateError, match="PreferNominatedNode.*locked to true.*1.24"):
        gates_at(24, PreferNominatedNode=False)
    gates = gates_at(35, InPlacePodVerticalScaling=True)
    assert gates.enabled(IPPVS)
    assert gates.warnings == (
        "Setting GA feature gate InPlacePodVerticalScaling=true. "
        "It will be removed in a future release.",
    )
    # Before GA the same gate is freely settable.
    assert not gates_at(34, InPlacePodVerticalScaling=False).enabled(IPPVS)


def test_unknown_gate_is_an_error_naming_gate_and_version() -> None:
    with pytest.raises(
        FeatureGateError, match=r'unrecognized feature gate "NoSuchGate" at emulated version 1.37'
    ):
        gates_at(37, NoSuchGate=True)
    with pytest.raises(FeatureGateError, match='unknown feature gate "NoSuchGate"'):
        gates_at(37).enabled("NoSuchGate")


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(FeatureGateError) as info:
        gates_at(33, NominatedNodeNameForExpectation=True, Bogus=False, PreferNominatedNode=True)
    assert len(info.value.errors) == 3
    assert all("1.33" in error for error in info.value.errors)


def test_the_kep_name_of_the_resize_preemption_gate_is_not_a_gate() -> None:
    """KEP-5836's text says SchedulerPreemptionForPodResize; upstream shipped
    InPlacePodVerticalScalingSchedulerPreemption and refuses the other name."""
    for minor in (36, 37):
        with pytest.raises(FeatureGateError) as info:
            gates_at(minor, SchedulerPreemptionForPodResize=True)
        assert str(info.value).startswith(
            f'unrecognized feature gate "SchedulerPreemptionForPodResize" at emulated version '
            f"1.{minor}"
        )
    with pytest.raises(FeatureGateError, match='unknown feature gate "SchedulerPreemption'):
        gates_at(37).enabled("SchedulerPreemptionForPodResize")
    assert gates_at(37, InPlacePodVerticalScalingSchedulerPreemption=True).enabled(PREEMPT_RESIZE)
    assert not hasattr(fg, "ALIASES")


def test_gates_are_immutable_values() -> None:
    gates = gates_at(37, SchedulerAsyncPreemption=False)
    with pytest.raises(TypeError):
        gates.overrides[ASYNC] = True  # type: ignore[index]
    assert hash(gates) == hash(gates_at(37, SchedulerAsyncPreemption=False))
    assert gates != gates_at(37)
    assert FeatureGates.default() == gates_at(37)


def test_to_flag_round_trips_through_the_parser() -> None:
    gates = gates_at(35, SchedulerAsyncPreemption=False, NominatedNodeNameForExpectation=True)
    assert gates.to_flag() == "NominatedNodeNameForExpectation=true,SchedulerAsyncPreemption=false"
    assert FeatureGates.for_version(Version(1, 35), parse_feature_gates(gates.to_flag())) == gates
    assert gates_at(35).to_flag() == ""


def test_parse_feature_gates_accepts_upstream_spellings() -> None:
    assert parse_feature_gates("") == {}
    assert parse_feature_gates(" A=true, B=False ,C=1,D=f,") == {
        "A": True,
        "B": False,
        "C": True,
        "D": False,
    }
    assert parse_feature_gates("A=true,A=true") == {"A": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A", 'missing "=" in feature gate entry "A"'),
        ("A=yes", 'invalid value "yes" for feature gate "A"'),
        ("A=", 'invalid value "" for feature gate "A"'),
        ("=true", "missing feature gate name"),
        ("A=true,A=false", 'feature gate "A" is given twice with different values'),
    ],
)
def test_parse_feature_gates_rejects_malformed_text(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        parse_feature_gates(text)


def test_help_lists_gates_of_the_version() -> None:
    text = fg.feature_gates_help(Version(1, 35))
    assert "InPlacePodVerticalScaling=true|false (GA - default=true, locked)" in text
    assert "PreferNominatedNode" not in text


@pytest.mark.parametrize(
    ("minor", "enabled", "state"),
    [
        (28, False, None),
        (29, True, GateState(SEPARATE_TAINT, True, Stage.BETA, False)),
        (34, True, GateState(SEPARATE_TAINT, True, Stage.GA, True)),
        (36, True, GateState(SEPARATE_TAINT, True, Stage.GA, True)),
        (37, True, None),
    ],
)
def test_separate_taint_eviction_controller_per_emulated_version(
    minor: int, enabled: bool, state: GateState | None
) -> None:
    """KEP-3902: beta (on) 1.29, GA locked 1.34, removed 1.37 (always separate since)."""
    gates = gates_at(minor)
    assert gates.enabled(SEPARATE_TAINT) is enabled
    assert [s for s in gates.states() if s.name == SEPARATE_TAINT] == (
        [] if state is None else [state]
    )


@pytest.mark.parametrize(
    ("minor", "enabled", "state"),
    [
        (31, False, None),
        (32, False, GateState(POD_LEVEL, False, Stage.ALPHA, False)),
        (33, False, GateState(POD_LEVEL, False, Stage.ALPHA, False)),
        (34, True, GateState(POD_LEVEL, True, Stage.BETA, False)),
        (37, True, GateState(POD_LEVEL, True, Stage.BETA, False)),
    ],
)
def test_pod_level_resources_per_emulated_version(
    minor: int, enabled: bool, state: GateState | None
) -> None:
    """KEP-2837: alpha (off) 1.32, beta (on) 1.34, still beta in the 1.37 cycle."""
    gates = gates_at(minor)
    assert gates.enabled(POD_LEVEL) is enabled
    assert [s for s in gates.states() if s.name == POD_LEVEL] == ([] if state is None else [state])
    assert gates_at(33, PodLevelResources=True).enabled(POD_LEVEL)
    assert not gates_at(36, PodLevelResources=False).enabled(POD_LEVEL)
    with pytest.raises(FeatureGateError, match="introduced in 1.32"):
        gates_at(31, PodLevelResources=True)


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        (33, (False, False, False)),
        (34, (True, False, True)),
        (36, (True, True, True)),
        (37, (True, True, True)),
    ],
)
def test_dra_scheduler_gates(minor: int, expected: tuple[bool, bool, bool]) -> None:
    """DynamicResourceAllocation GA at 1.34, DRADeviceBindingConditions beta (on) at 1.36,
    DRASchedulerFilterTimeout beta at 1.34 (upstream's pkg/features)."""
    got = defaults_at(minor, DRA_SCHEDULER_GATES)
    assert (
        got[fg.DYNAMIC_RESOURCE_ALLOCATION],
        got[fg.DRA_DEVICE_BINDING_CONDITIONS],
        got[fg.DRA_SCHEDULER_FILTER_TIMEOUT],
    ) == expected
    assert all(fg.gate_modelled(g) for g in DRA_SCHEDULER_GATES)


def test_dra_preemption_gate() -> None:
    """DRAPreemption (KEP-5690): alpha, off, at 1.37; unknown before."""
    assert not gates_at(37).enabled(fg.DRA_PREEMPTION)
    assert gates_at(37, DRAPreemption=True).enabled(fg.DRA_PREEMPTION)
    with pytest.raises(FeatureGateError, match="introduced in 1.37"):
        gates_at(36, DRAPreemption=True)


def test_not_modelled_gates_follow_upstreams_lifecycle() -> None:
    assert NOT_MODELLED == {
        fg.SCHEDULER_QUEUEING_HINTS,
        fg.SCHEDULER_POP_FROM_BACKOFF_Q,
        fg.OPPORTUNISTIC_BATCHING,
        fg.NODE_DECLARED_FEATURES,
        fg.DRA_WORKLOAD_RESOURCE_CLAIMS,
        fg.IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS,
        fg.IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_CPUS,
        fg.IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_MEMORY,
        fg.IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING,
    }
    assert fg.gate_modelled(fg.SCHEDULER_ASYNC_API_CALLS)
    assert fg.gate_modelled(ASYNC)
    assert not fg.gate_modelled("NoSuchGate")
    # Settable as upstream allows: SchedulerAsyncAPICalls is beta (default off) from 1.34.
    assert not gates_at(34).enabled(fg.SCHEDULER_ASYNC_API_CALLS)
    assert gates_at(37, SchedulerAsyncAPICalls=True).enabled(fg.SCHEDULER_ASYNC_API_CALLS)
    with pytest.raises(FeatureGateError, match="does not exist at emulated version 1.33"):
        gates_at(33, SchedulerAsyncAPICalls=True)
    # SchedulerQueueingHints: beta off at 1.28, on at 1.32, GA locked at 1.34.
    assert not gates_at(28).enabled(fg.SCHEDULER_QUEUEING_HINTS)
    assert gates_at(33, SchedulerQueueingHints=False).overrides == {
        fg.SCHEDULER_QUEUEING_HINTS: False
    }
    with pytest.raises(FeatureGateError, match="locked to true"):
        gates_at(34, SchedulerQueueingHints=False)
    # ... and gone from upstream's table in the 1.37 cycle: its behaviour stays.
    assert gates_at(36, SchedulerQueueingHints=True).enabled(fg.SCHEDULER_QUEUEING_HINTS)
    with pytest.raises(
        FeatureGateError, match=r"removed in 1\.37; its behaviour is always enabled"
    ):
        gates_at(37, SchedulerQueueingHints=True)
    assert gates_at(37).enabled(fg.SCHEDULER_QUEUEING_HINTS)
    assert "not modelled" in fg.feature_gates_help(Version(1, 37))


def test_dynamic_resource_allocation_is_locked_from_1_35() -> None:
    """GA (on) at 1.34 and still settable; locked to true from 1.35."""
    gates = gates_at(34, DynamicResourceAllocation=False)
    assert not gates.enabled(fg.DYNAMIC_RESOURCE_ALLOCATION)
    assert gates.warnings == (
        "Setting GA feature gate DynamicResourceAllocation=false. "
        "It will be removed in a future release.",
    )
    assert gates_at(34).enabled(fg.DYNAMIC_RESOURCE_ALLOCATION)
    with pytest.raises(FeatureGateError, match="locked to true \\(GA\\) at emulated version 1.35"):
        gates_at(35, DynamicResourceAllocation=False)
    assert gates_at(35, DynamicResourceAllocation=True).enabled(fg.DYNAMIC_RESOURCE_ALLOCATION)
    assert not gates_at(33).enabled(fg.DYNAMIC_RESOURCE_ALLOCATION)


@pytest.mark.parametrize(
    ("gate", "states", "removed"),
    [
        # (minor, stage, default) from the gate's first version on; `removed` the first
        # version without it.
        (
            fg.IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS,
            [
                (32, Stage.ALPHA, False),
                (33, Stage.DEPRECATED, False),
                (35, Stage.DEPRECATED, False),
            ],
            36,
        ),
        (fg.IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_CPUS, [(32, Stage.ALPHA, False)], None),
        (fg.IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_MEMORY, [(34, Stage.ALPHA, False)], None),
        (
            fg.IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING,
            [(35, Stage.ALPHA, False), (36, Stage.BETA, True)],
            None,
        ),
    ],
)
def test_the_in_place_resize_family_follows_upstreams_lifecycle(
    gate: str, states: list[tuple[int, Stage, bool]], removed: int | None
) -> None:
    """pkg/features/kube_features.go: known (settable either way, never locked) but not
    modelled; absent before its first version and from its removal on."""
    first = states[0][0]
    with pytest.raises(FeatureGateError, match=f"introduced in 1.{first}"):
        gates_at(first - 1, **{gate: True})
    assert not gates_at(first - 1).enabled(gate)
    for minor, stage, default in states:
        assert [s for s in gates_at(minor).states() if s.name == gate] == [
            GateState(gate, default, stage, False)
        ]
        for value in (True, False):
            assert gates_at(minor, **{gate: value}).enabled(gate) is value
    last = removed if removed is not None else 38
    assert gates_at(last - 1, **{gate: True}).enabled(gate)
    if removed is not None:
        with pytest.raises(FeatureGateError, match=f"removed in 1.{removed}"):
            gates_at(removed, **{gate: True})
    assert not fg.gate_modelled(gate)


@pytest.mark.parametrize(
    ("minor", "enabled", "state"),
    [
        (24, False, None),
        (25, False, GateState(PDC, False, Stage.ALPHA, False)),
        (26, True, GateState(PDC, True, Stage.BETA, False)),
        (30, True, GateState(PDC, True, Stage.BETA, False)),
        (31, True, GateState(PDC, True, Stage.GA, True)),
        (33, True, GateState(PDC, True, Stage.GA, True)),
        (34, True, None),
        (37, True, None),
    ],
)
def test_pod_disruption_conditions_per_emulated_version(
    minor: int, enabled: bool, state: GateState | None
) -> None:
    """KEP-3329: alpha (off) 1.25, beta (on) 1.26, GA locked 1.31, last in 1.33's table."""
    gates = gates_at(minor)
    assert gates.enabled(PDC) is enabled
    assert [s for s in gates.states() if s.name == PDC] == ([] if state is None else [state])
    assert fg.gate_modelled(PDC)


def test_pod_disruption_conditions_settings() -> None:
    assert gates_at(25, PodDisruptionConditions=True).enabled(PDC)
    assert not gates_at(30, PodDisruptionConditions=False).enabled(PDC)
    with pytest.raises(FeatureGateError, match="locked to true"):
        gates_at(31, PodDisruptionConditions=False)
    with pytest.raises(
        FeatureGateError, match=r"removed in 1\.34; its behaviour is always enabled"
    ):
        gates_at(34, PodDisruptionConditions=True)
    with pytest.raises(FeatureGateError, match=r"introduced in 1\.25"):
        gates_at(24, PodDisruptionConditions=True)


@pytest.mark.parametrize(
    ("minor", "enabled", "state"),
    [
        (24, False, None),
        (25, False, GateState(RETRO, False, Stage.ALPHA, False)),
        (26, True, GateState(RETRO, True, Stage.BETA, False)),
        (28, True, GateState(RETRO, True, Stage.GA, True)),
        (29, True, None),
        (37, True, None),
    ],
)
def test_retroactive_default_storage_class_per_emulated_version(
    minor: int, enabled: bool, state: GateState | None
) -> None:
    """KEP-3333: alpha (off) 1.25, beta (on) 1.26, GA locked 1.28, gone from 1.29 (always on)."""
    gates = gates_at(minor)
    assert gates.enabled(RETRO) is enabled
    assert [s for s in gates.states() if s.name == RETRO] == ([] if state is None else [state])
    with pytest.raises(FeatureGateError, match="locked to true"):
        gates_at(28, RetroactiveDefaultStorageClass=False)
    assert not gates_at(27, RetroactiveDefaultStorageClass=False).enabled(RETRO)


def test_the_newest_older_version_accepting_settings_is_found() -> None:
    """The hint of a refused setting: the version before a lock or a removal."""
    v37 = Version(1, 37)
    assert fg.newest_version_accepting([{"NodeDeclaredFeatures": False}], below=v37) == Version(
        1, 36
    )
    assert fg.newest_version_accepting([{"SchedulerQueueingHints": True}], below=v37) == Version(
        1, 36
    )
    # every setting at once: off is valid until the lock at 1.34
    both = [{"SchedulerQueueingHints": True}, {"SchedulerQueueingHints": False}]
    assert fg.newest_version_accepting(both, below=v37) == Version(1, 33)
    # introduced at 1.34, locked from 1.34 on the other side: no version accepts both
    assert (
        fg.newest_version_accepting(
            [{"SchedulerAsyncAPICalls": True, "SchedulerQueueingHints": False}], below=v37
        )
        is None
    )
    assert fg.newest_version_accepting([{"NoSuchGate": True}], below=v37) is None


@pytest.mark.parametrize(
    ("minor", "existing"),
    [
        (34, set()),
        (35, {fg.GENERIC_WORKLOAD, fg.GANG_SCHEDULING}),
        (
            36,
            {
                fg.GENERIC_WORKLOAD,
                fg.GANG_SCHEDULING,
                fg.WORKLOAD_AWARE_PREEMPTION,
                fg.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
                fg.WORKLOAD_WITH_JOB,
                fg.DRA_WORKLOAD_RESOURCE_CLAIMS,
            },
        ),
        (
            37,
            {
                fg.GENERIC_WORKLOAD,
                fg.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
                fg.WORKLOAD_WITH_JOB,
                fg.DRA_WORKLOAD_RESOURCE_CLAIMS,
                fg.POD_GROUP_PREEMPTION_POLICY,
                fg.COMPOSITE_POD_GROUP,
            },
        ),
    ],
)
def test_pod_group_gates_exist_as_upstreams_and_default_off(minor: int, existing: set[str]) -> None:
    # All alpha or beta-off: nothing of pod groups is on by default at any version.
    states = {s.name: s for s in gates_at(minor).states() if s.name in POD_GROUP_GATES}
    assert set(states) == existing
    assert not any(s.enabled for s in states.values())
    if minor == 37:
        assert states[fg.GENERIC_WORKLOAD].stage is Stage.BETA


def test_pod_group_gates_folded_into_generic_workload_at_1_37() -> None:
    # kubernetes#139520: GangScheduling and WorkloadAwarePreemption are gone; setting one is
    # an unknown gate at 1.37, and their behaviour is on (asked together with GenericWorkload).
    with pytest.raises(FeatureGateError, match="GangScheduling"):
        gates_at(37, GangScheduling=True)
    gates = gates_at(37)
    assert gates.enabled(fg.GANG_SCHEDULING) and gates.enabled(fg.WORKLOAD_AWARE_PREEMPTION)
    assert not gates.enabled(fg.GENERIC_WORKLOAD)


@pytest.mark.parametrize(
    ("minor", "overrides", "missing"),
    [
        (35, {fg.GANG_SCHEDULING: True}, fg.GENERIC_WORKLOAD),
        (36, {fg.WORKLOAD_AWARE_PREEMPTION: True}, fg.GENERIC_WORKLOAD),
        (
            37,
            {fg.GENERIC_WORKLOAD: True, fg.COMPOSITE_POD_GROUP: True},
            fg.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
        ),
    ],
)
def test_pod_group_gate_dependencies(minor: int, overrides: dict[str, bool], missing: str) -> None:
    with pytest.raises(FeatureGateError) as caught:
        gates_at(minor, **overrides)
    text = str(caught.value)
    assert f"at emulated version 1.{minor}" in text and f"depends on {missing}" in text
    gates = gates_at(minor, **{**overrides, missing: True, fg.GENERIC_WORKLOAD: True})
    assert all(gates.enabled(name) for name in overrides)


def test_a_not_modelled_gate_turned_on_is_accepted_with_a_warning() -> None:
    gates = gates_at(37, GenericWorkload=True, DRAWorkloadResourceClaims=True)
    assert gates.enabled(fg.DRA_WORKLOAD_RESOURCE_CLAIMS)
    assert gates.warnings == (
        "feature gate DRAWorkloadResourceClaims=true: kemu knows the gate but does not model "
        "its behaviour",
    )
    assert gates_at(37, DRAWorkloadResourceClaims=False).warnings == ()


def test_composite_pod_group_is_modelled() -> None:
    gates = gates_at(
        37, GenericWorkload=True, TopologyAwareWorkloadScheduling=True, CompositePodGroup=True
    )
    assert gates.enabled(fg.COMPOSITE_POD_GROUP)
    assert gates.warnings == ()


def test_topology_aware_workload_scheduling_is_modelled() -> None:
    gates = gates_at(36, GenericWorkload=True, TopologyAwareWorkloadScheduling=True)
    assert gates.enabled(fg.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
    assert gates.warnings == ()


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        # ExtendedResource, AdminAccess, PrioritizedList, DeviceStatus, DeviceTaints,
        # DeviceTaintRules, PartitionableDevices, ConsumableCapacity
        (33, (False, False, False, True, False, False, False, False)),
        (34, (False, True, True, True, False, False, False, False)),
        (36, (True, True, True, True, True, False, True, True)),
        (37, (True, True, True, True, True, True, True, True)),
    ],
)
def test_dra_api_gates(minor: int, expected: tuple[bool, ...]) -> None:
    """The DRA gates the apiserver models (their fields dropped while off: kemu.machinery.dra),
    at upstream's defaults (pkg/features)."""
    got = defaults_at(minor, DRA_API_GATES)
    order = (
        fg.DRA_EXTENDED_RESOURCE,
        fg.DRA_ADMIN_ACCESS,
        fg.DRA_PRIORITIZED_LIST,
        fg.DRA_RESOURCE_CLAIM_DEVICE_STATUS,
        fg.DRA_DEVICE_TAINTS,
        fg.DRA_DEVICE_TAINT_RULES,
        fg.DRA_PARTITIONABLE_DEVICES,
        fg.DRA_CONSUMABLE_CAPACITY,
    )
    assert tuple(got.get(g, False) for g in order) == expected
    assert all(fg.gate_modelled(g) for g in DRA_API_GATES)
