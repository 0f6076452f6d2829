"""The upstream changes no feature gate guards, by the version that made them.

A feature gate (kemu.component.featuregate) says at which versions a feature is on and lets
the user override it; some upstream behaviour changed with no gate at all (a default, a
helper's arithmetic, a fix). kemu keys those on the emulated version too, all in the one
table below (`RULES`), and, like the gates, each process resolves them once at start-up
(`VersionRules.at(version)`) and passes the value down: no component compares versions where
it uses a rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kemu.component.version import DEFAULT_VERSION, Version

__all__ = ["RULES", "VersionRule", "VersionRules"]


@dataclass(frozen=True, slots=True)
class VersionRule:
    """An upstream change without a gate: in effect from `since` (and before `until`, when
    a later release reverted it); `change` cites it."""

    since: Version
    change: str
    until: Version | None = None

    def holds_at(self, version: Version) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


RULES: Final[Mapping[str, VersionRule]] = MappingProxyType(
    {
        "max_of_sums": VersionRule(
            Version(1, 37),
            "component-helpers resource.PodRequests/PodLimits with UseStatusResources take the "
            "largest of the summed desired, allocated and actual sizes, no longer the sum of "
            "each container's largest (kubernetes commit 9d1c3c2, component-helpers 1e15266, "
            "issue #140046; kemu.machinery.resources)",
        ),
        "assumed_pod_ttl_15m": VersionRule(
            Version(1, 23),
            "the scheduler cache's assumed pods expire after 15 minutes without the informer "
            "confirming their binding, 2 minutes before (pkg/scheduler/scheduler.go "
            "durationToExpireAssumedPod)",
            until=Version(1, 24),
        ),
        "assumed_pods_never_expire": VersionRule(
            Version(1, 24),
            "the scheduler cache's assumed pods never expire (durationToExpireAssumedPod 0)",
        ),
        "preemption_by_scheduler": VersionRule(
            Version(1, 27),
            "the scheduler's DisruptionTarget reason is PreemptionByScheduler "
            "(PreemptionByKubeScheduler before), and with PodDisruptionConditions on, only a "
            "lower-priority pod on the nominated node that terminates with that condition makes "
            "a preemptor wait; before, any terminating lower-priority pod there did "
            "(kubernetes#114623; pkg/scheduler/framework/plugins/defaultpreemption "
            "PodEligibleToPreemptOthers, podTerminatingByPreemption)",
        ),
        "pdb_unhealthy_pod_eviction_policy": VersionRule(
            Version(1, 27),
            "the eviction API honours a PodDisruptionBudget's unhealthyPodEvictionPolicy "
            "(pkg/registry/core/pod/storage/eviction.go canIgnorePDB, "
            "PDBUnhealthyPodEvictionPolicy beta)",
        ),
        "kubelet_kube_api_qps_50": VersionRule(
            Version(1, 27),
            "the kubelet's --kube-api-qps and --kube-api-burst (kubeAPIQPS, kubeAPIBurst) "
            "default to 50 and 100, 5 and 10 before (kubernetes#116121; "
            "pkg/kubelet/apis/config/v1beta1/defaults.go)",
        ),
        "node_monitor_grace_period_50s": VersionRule(
            Version(1, 32),
            "--node-monitor-grace-period defaults to 50s, 40s before "
            "(kubernetes/kubernetes#126287)",
        ),
        "nominated_node_name_kept_on_failure": VersionRule(
            Version(1, 34),
            "with NominatedNodeNameForExpectation on, a failed scheduling cycle leaves the "
            "pod's nominatedNodeName as it is (KEP-5278's alpha, pkg/scheduler/schedule_one.go handleSchedulingFailure); 1.35 clears "
            "it again",
            until=Version(1, 35),
        ),
        "storage_provisioner_annotation": VersionRule(
            Version(1, 23),
            "the PersistentVolume controller annotates a claim for its external provisioner "
            "with volume.kubernetes.io/storage-provisioner as well as the beta name, only the "
            "beta one before (kubernetes#104590; pv_controller.go setClaimProvisioner)",
        ),
        "newest_default_storage_class": VersionRule(
            Version(1, 26),
            "with several StorageClasses marked default, the DefaultStorageClass admission "
            "plugin gives a new claim the newest (pkg/volume/util GetDefaultClass); before, it "
            'refused the claim: Forbidden, "Internal error occurred: N default StorageClasses '
            'were found" (kubernetes#110559; plugin/pkg/admission/storage/storageclass/'
            "setdefault/admission.go)",
        ),
        "external_provisioning_message_1_28": VersionRule(
            Version(1, 28),
            "the PersistentVolume controller's ExternalProvisioning event reads \"Waiting for a "
            "volume to be created either by the external provisioner '...' or manually by the "
            'system administrator. ..."; before, "waiting for a volume to be created, either by '
            'external provisioner ... or manually created by system administrator" '
            "(kubernetes#118262)",
        ),
        "autoscaler_nnn_in_cluster_state": VersionRule(
            Version(1, 37),
            "cluster-autoscaler writes pods with a nominatedNodeName to the snapshot in "
            "SetClusterState, and no such pod triggers a scale-up (kubernetes/autoscaler#9607)",
        ),
        "podgroup_protection_controller": VersionRule(
            Version(1, 36),
            "kube-controller-manager runs podgroup-protection-controller (with GenericWorkload "
            "on) once PodGroups are objects of their own (pkg/controller/podgroupprotection, "
            "kubernetes#136976)",
        ),
        "podgroup_protection_admission": VersionRule(
            Version(1, 37),
            "kube-apiserver's PodGroupProtection admission plugin (enabled by default, with "
            "GenericWorkload) stamps scheduling.k8s.io/podgroup-protection on every new PodGroup "
            "and refuses a pod that names a PodGroup being deleted; podgroup-protection-controller "
            "no longer adds the finalizer, it only removes it (plugin/pkg/admission/scheduling/"
            "podgroupprotection, pkg/controller/scheduling/podgroupprotection, "
            "pkg/kubeapiserver/options/plugins.go)",
        ),
        "job_workload_builder": VersionRule(
            Version(1, 37),
            "with WorkloadWithJob, the Job controller compiles every Job's Workload and "
            "PodGroup from Job.spec.scheduling (Basic by default, template <job>-pgt-0) on the "
            "workloadbuilder library, no longer only gang-eligible Indexed Jobs' (KEP-5547 "
            "with KEP-6089, kubernetes/enhancements#6153; pkg/controller/job/"
            "job_scheduling_manager.go)",
        ),
        "volume_binding_lost_claim_pre_filter": VersionRule(
            Version(1, 23),
            "VolumeBinding's PreFilter refuses a pod whose claim is Lost, "
            'UnschedulableAndUnresolvable "persistentvolumeclaim X bound to non-existent '
            'persistentvolume Y"; before, Filter refused every node ("node(s) unavailable due '
            'to one or more pvc(s) bound to non-existent pv(s)") (kubernetes#105245; '
            "pkg/scheduler/framework/plugins/volumebinding/volume_binding.go podHasPVCs)",
        ),
        "rwop_conflict_in_use_message": VersionRule(
            Version(1, 33),
            "VolumeRestrictions' ReadWriteOncePod conflict reads \"node(s) unavailable due to "
            "PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another "
            'pod"; before, "node has pod using PersistentVolumeClaim with the same name and '
            'ReadWriteOncePod access mode" (kubernetes#129145, issue #129143; '
            "pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go "
            "ErrReasonReadWriteOncePodConflict)",
        ),
        "scheduling_failure_checks_uid": VersionRule(
            Version(1, 34),
            "the scheduler's failure handling finds the pod by name and, when the informer "
            "holds a namesake with another uid (the pod was re-created), neither requeues it nor "
            "writes its FailedScheduling event and PodScheduled condition; before, the new pod "
            "got the old one's failure (kubernetes#138324, cherry-picked to 1.34 and 1.35 as "
            "#138435 and #138434: kemu emulates each minor's newest patch; "
            "pkg/scheduler/schedule_one.go handleSchedulingFailure)",
        ),
        "preempt_pre_bind_in_memory": VersionRule(
            Version(1, 36),
            "a preemption victim in PreBind is not deleted: the scheduler cancels its binding "
            "cycle (PodInPreBind.CancelPod) and the victim is retried after backoff; its "
            'Preempted event ends "(in kube-scheduler memory)." (kubernetes#135502; '
            "pkg/scheduler/framework/preemption/executor.go PreemptPod, "
            "pkg/scheduler/framework/runtime/pods_in_prebind_map.go)",
        ),
        "preempted_waiting_pod_backs_off": VersionRule(
            Version(1, 36),
            "a preemption victim waiting at Permit is preempted (WaitingPod.Preempt: an Error "
            "status) and goes to backoff as a scheduler error, no longer rejected "
            '(Unschedulable, to the unschedulable pool); its Preempted event ends "(in '
            'kube-scheduler memory)." (kubernetes#135719; '
            "pkg/scheduler/framework/runtime/waiting_pods_map.go)",
        ),
        # kube-apiserver's admission plugin names (pkg/kubeapiserver/options/plugins.go:
        # AllOrderedPlugins, RegisterAllAdmissionPlugins, DefaultOffAdmissionPlugins) that
        # came or went between 1.21 and 1.37; apiserver/admission/plugins.py reads them.
        "admission_security_context_deny": VersionRule(
            Version(1, 21),
            "the SecurityContextDeny admission plugin is registered (default off); deprecated "
            "in 1.27, removed in 1.30 (kubernetes#122612)",
            until=Version(1, 30),
        ),
        "admission_pod_security_policy": VersionRule(
            Version(1, 21),
            "the PodSecurityPolicy admission plugin is registered (default off); removed with "
            "the policy/v1beta1 PodSecurityPolicy API in 1.25 (kubernetes#109798)",
            until=Version(1, 25),
        ),
        "admission_persistent_volume_label": VersionRule(
            Version(1, 21),
            "the PersistentVolumeLabel admission plugin is registered (default off); removed "
            "with the in-tree cloud providers in 1.31 (KEP-2395)",
            until=Version(1, 31),
        ),
        "admission_pod_security": VersionRule(
            Version(1, 22),
            "the PodSecurity admission plugin is registered (KEP-2579, plugin/pkg/admission/"
            "security/podsecurity)",
        ),
        "admission_pod_security_default_on": VersionRule(
            Version(1, 23),
            "PodSecurity is among the admission plugins on by default (KEP-2579 beta)",
        ),
        "admission_validating_admission_policy": VersionRule(
            Version(1, 26),
            "the ValidatingAdmissionPolicy admission plugin is registered and on by default "
            "(acting only with its feature gate; KEP-3488)",
        ),
        "admission_cluster_trust_bundle_attest": VersionRule(
            Version(1, 27),
            "the ClusterTrustBundleAttest admission plugin is registered and on by default "
            "(KEP-3257; plugin/pkg/admission/certificates/ctbattest)",
        ),
        "admission_mutating_admission_policy": VersionRule(
            Version(1, 32),
            "the MutatingAdmissionPolicy admission plugin is registered and on by default "
            "(acting only with its feature gate; KEP-3962)",
        ),
        "admission_pod_topology_labels": VersionRule(
            Version(1, 33),
            "the PodTopologyLabels admission plugin is registered and on by default (acting "
            "only with the PodTopologyLabelsAdmission gate: alpha 1.33, on from 1.35; KEP-4742)",
        ),
        "admission_node_declared_feature_validator": VersionRule(
            Version(1, 35),
            "the NodeDeclaredFeatureValidator admission plugin is registered and on by default "
            "(acting only with NodeDeclaredFeatures; plugin/pkg/admission/nodedeclaredfeatures)",
        ),
        "admission_job_validation": VersionRule(
            Version(1, 36),
            "the JobValidation admission plugin is registered and on by default (acting only "
            "with WorkloadWithJob; plugin/pkg/admission/job)",
        ),
        "admission_pod_resize_validator": VersionRule(
            Version(1, 36),
            "the PodResizeValidator admission plugin is registered and on by default (a resize "
            "beyond the node's capacity is refused; plugin/pkg/admission/podresize, issue "
            "#136043)",
        ),
        "admission_pod_group_workload_exists": VersionRule(
            Version(1, 36),
            "the PodGroupWorkloadExists admission plugin is registered and on by default "
            "(kubernetes#137464), removed in 1.37 (kubernetes#139008; apiserver/admission/"
            "podgroup.py)",
            until=Version(1, 37),
        ),
        "apf_borrowing": VersionRule(
            Version(1, 26),
            "API Priority and Fairness's levels lend and borrow seats: every 10 s each level's "
            "concurrency limit is re-divided from its seat demand within [nominal - "
            "lendablePercent, nominal + borrowingLimitPercent] (KEP-1040, flowcontrol v1beta3; "
            "k8s.io/apiserver pkg/util/flowcontrol apf_controller.go updateBorrowing, "
            "conc_alloc.go); before, each level has its nominal limit",
        ),
        "rbac_self_subject_review": VersionRule(
            Version(1, 27),
            "the bootstrap ClusterRole system:basic-user may create authentication.k8s.io "
            "selfsubjectreviews (`kubectl auth whoami`), with SelfSubjectReview's beta "
            "(kubernetes#116274; plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go; "
            "apiserver/authorization/bootstrap_policy.py)",
        ),
    }
)


@dataclass(frozen=True, slots=True)
class VersionRules:
    """Every rule of `RULES`, resolved for one emulated version (True: the change is in
    effect). One field per entry of the table, of the same name."""

    version: Version
    max_of_sums: bool
    assumed_pod_ttl_15m: bool
    assumed_pods_never_expire: bool
    preemption_by_scheduler: bool
    pdb_unhealthy_pod_eviction_policy: bool
    kubelet_kube_api_qps_50: bool
    node_monitor_grace_period_50s: bool
    nominated_node_name_kept_on_failure: bool
    storage_provisioner_annotation: bool
    newest_default_storage_class: bool
    external_provisioning_message_1_28: bool
    autoscaler_nnn_in_cluster_state: bool
    podgroup_protection_controller: bool
    podgroup_protection_admission: bool
    job_workload_builder: bool
    volume_binding_lost_claim_pre_filter: bool
    rwop_conflict_in_use_message: bool
    scheduling_failure_checks_uid: bool
    preempt_pre_bind_in_memory: bool
    preempted_waiting_pod_backs_off: bool
    admission_security_context_deny: bool
    admission_pod_security_policy: bool
    admission_persistent_volume_label: bool
    admission_pod_security: bool
    admission_pod_security_default_on: bool
    admission_validating_admission_policy: bool
    admission_cluster_trust_bundle_attest: bool
    admission_mutating_admission_policy: bool
    admission_pod_topology_labels: bool
    admission_node_declared_feature_validator: bool
    admission_job_validation: bool
    admission_pod_resize_validator: bool
    admission_pod_group_workload_exists: bool
    apf_borrowing: bool
    rbac_self_subject_review: bool

    @classmethod
    def at(cls, version: Version) -> VersionRules:
        return cls(version, **{name: rule.holds_at(version) for name, rule in RULES.items()})

    @classmethod
    def default(cls) -> VersionRules:
        """The rules of the default emulated version."""
        return cls.at(DEFAULT_VERSION)

    @property
    def per_container_max(self) -> bool:
        """How PodResourcesOptions.per_container_max is set at this version (the rule
        before max_of_sums)."""
        return not self.max_of_sums
