"""The upstream changes without a gate: one table, resolved per emulated version."""

from __future__ import annotations

import dataclasses

import pytest

from kemu.component.version import MAX_VERSION, MIN_VERSION, Version
from kemu.component.version_rules import RULES, VersionRules


def test_every_rule_of_the_table_is_a_field_of_the_resolved_rules() -> None:
    fields = [f.name for f in dataclasses.fields(VersionRules) if f.name != "version"]
    assert fields == list(RULES)


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        (21, set()),
        (
            23,
            {
                "assumed_pod_ttl_15m",
                "storage_provisioner_annotation",
                "volume_binding_lost_claim_pre_filter",
            },
        ),
        (
            26,
            {
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "volume_binding_lost_claim_pre_filter",
            },
        ),
        (
            27,
            {
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "rbac_self_subject_review",
                "preemption_by_scheduler",
                "pdb_unhealthy_pod_eviction_policy",
                "kubelet_kube_api_qps_50",
                "volume_binding_lost_claim_pre_filter",
            },
        ),
        (
            32,
            {
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "rbac_self_subject_review",
                "external_provisioning_message_1_28",
                "preemption_by_scheduler",
                "pdb_unhealthy_pod_eviction_policy",
                "kubelet_kube_api_qps_50",
                "node_monitor_grace_period_50s",
                "volume_binding_lost_claim_pre_filter",
            },
        ),
        (
            34,
            {
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "rbac_self_subject_review",
                "external_provisioning_message_1_28",
                "preemption_by_scheduler",
                "pdb_unhealthy_pod_eviction_policy",
                "kubelet_kube_api_qps_50",
                "node_monitor_grace_period_50s",
                "nominated_node_name_kept_on_failure",
                "volume_binding_lost_claim_pre_filter",
                "rwop_conflict_in_use_message",
                "scheduling_failure_checks_uid",
            },
        ),
        (
            36,
            {
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "rbac_self_subject_review",
                "external_provisioning_message_1_28",
                "preemption_by_scheduler",
                "pdb_unhealthy_pod_eviction_policy",
                "kubelet_kube_api_qps_50",
                "node_monitor_grace_period_50s",
                "podgroup_protection_controller",
                "volume_binding_lost_claim_pre_filter",
                "rwop_conflict_in_use_message",
                "scheduling_failure_checks_uid",
                "preempt_pre_bind_in_memory",
                "preempted_waiting_pod_backs_off",
            },
        ),
        (
            37,
            {
                "max_of_sums",
                "assumed_pods_never_expire",
                "storage_provisioner_annotation",
                "newest_default_storage_class",
                "apf_borrowing",
                "rbac_self_subject_review",
                "external_provisioning_message_1_28",
                "preemption_by_scheduler",
                "pdb_unhealthy_pod_eviction_policy",
                "kubelet_kube_api_qps_50",
                "node_monitor_grace_period_50s",
                "autoscaler_nnn_in_cluster_state",
                "podgroup_protection_controller",
                "podgroup_protection_admission",
                "job_workload_builder",
                "volume_binding_lost_claim_pre_filter",
                "rwop_conflict_in_use_message",
                "scheduling_failure_checks_uid",
                "preempt_pre_bind_in_memory",
                "preempted_waiting_pod_backs_off",
            },
        ),
    ],
)
def test_the_rules_in_effect_at_a_version(minor: int, expected: set[str]) -> None:
    rules = VersionRules.at(Version(1, minor))
    # (the admission_* entries, admission plugin names, have their own test:
    # tests/unit/apiserver/admission/test_plugins.py)
    held = {name for name in RULES if getattr(rules, name)}
    assert {name for name in held if not name.startswith("admission_")} == expected
    assert rules.per_container_max is not rules.max_of_sums


def test_the_default_rules_are_those_of_the_default_version() -> None:
    assert VersionRules.default() == VersionRules.at(MAX_VERSION)
    assert all(MIN_VERSION <= rule.since <= MAX_VERSION for rule in RULES.values())
