"""Which admission plugins run: kube-apiserver's --enable-admission-plugins and
--disable-admission-plugins over upstream's registry of plugin names and its default-on set
(pkg/kubeapiserver/options/plugins.go: AllOrderedPlugins, DefaultOffAdmissionPlugins; the
flags' rules are k8s.io/apiserver/pkg/server/options/admission.go: Validate and
enabledPluginNames).

The names and the default-on set are those of the emulated version's kube-apiserver: the
plugins that came or went between 1.21 and 1.37 (PodSecurityPolicy until 1.24, PodSecurity
from 1.22 and on by default from 1.23, ValidatingAdmissionPolicy from 1.26, ...) each have
their entry in kemu's one table of version rules (kemu.component.version_rules, the
`admission_*` entries; `REGISTERED_BY` names them).

A name upstream registers at that version is accepted even where kemu does not model the
plugin (`MODELLED` says which it does): enabling AlwaysPullImages changes nothing in kemu, and
the apiserver says so at start-up. A name upstream does not register at that version is
refused at start-up as upstream's Validate refuses it, in its words, followed by the versions
that do have it when some do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kemu.component.version import MAX_VERSION, Version
from kemu.component.version_rules import RULES, VersionRules

DEFAULT_VERSION_RULES: Final = VersionRules.default()

NAMESPACE_LIFECYCLE: Final = "NamespaceLifecycle"
LIMIT_RANGER: Final = "LimitRanger"
SERVICE_ACCOUNT: Final = "ServiceAccount"
NODE_RESTRICTION: Final = "NodeRestriction"
PRIORITY: Final = "Priority"
DEFAULT_TOLERATION_SECONDS: Final = "DefaultTolerationSeconds"
DEFAULT_STORAGE_CLASS: Final = "DefaultStorageClass"
STORAGE_OBJECT_IN_USE_PROTECTION: Final = "StorageObjectInUseProtection"
POD_GROUP_PROTECTION: Final = "PodGroupProtection"
POD_TOPOLOGY_LABELS: Final = "PodTopologyLabels"
POD_GROUP_WORKLOAD_EXISTS: Final = "PodGroupWorkloadExists"
RESOURCE_QUOTA: Final = "ResourceQuota"

ALL_ORDERED_PLUGINS: Final = (
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    NAMESPACE_LIFECYCLE,
    "NamespaceExists",
    "SecurityContextDeny",
    "LimitPodHardAntiAffinityTopology",
    LIMIT_RANGER,
    SERVICE_ACCOUNT,
    NODE_RESTRICTION,
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodSecurityPolicy",
    "PodNodeSelector",
    PRIORITY,
    DEFAULT_TOLERATION_SECONDS,
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "PersistentVolumeLabel",
    DEFAULT_STORAGE_CLASS,
    STORAGE_OBJECT_IN_USE_PROTECTION,
    POD_GROUP_PROTECTION,
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    POD_TOPOLOGY_LABELS,
    POD_GROUP_WORKLOAD_EXISTS,
    "NodeDeclaredFeatureValidator",
    "JobValidation",
    "PodResizeValidator",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    RESOURCE_QUOTA,
    "AlwaysDeny",
)
"""Every plugin name upstream registers at some version from 1.21 to 1.37, in its execution
order (AllOrderedPlugins; a removed plugin where it last stood)."""

REGISTERED_BY: Final[Mapping[str, str]] = MappingProxyType(
    {
        "SecurityContextDeny": "admission_security_context_deny",
        "PodSecurityPolicy": "admission_pod_security_policy",
        "PersistentVolumeLabel": "admission_persistent_volume_label",
        "PodSecurity": "admission_pod_security",
        "ValidatingAdmissionPolicy": "admission_validating_admission_policy",
        "ClusterTrustBundleAttest": "admission_cluster_trust_bundle_attest",
        "MutatingAdmissionPolicy": "admission_mutating_admission_policy",
        POD_TOPOLOGY_LABELS: "admission_pod_topology_labels",
        "NodeDeclaredFeatureValidator": "admission_node_declared_feature_validator",
        "JobValidation": "admission_job_validation",
        "PodResizeValidator": "admission_pod_resize_validator",
        POD_GROUP_WORKLOAD_EXISTS: "admission_pod_group_workload_exists",
        POD_GROUP_PROTECTION: "podgroup_protection_admission",
    }
)
"""The plugins not registered at every version from 1.21 to 1.37, each with the VersionRules
entry that says at which versions it is (the others are registered at all of them)."""

DEFAULT_ON_BY: Final[Mapping[str, str]] = MappingProxyType(
    {"PodSecurity": "admission_pod_security_default_on"}
)
"""The plugins of DEFAULT_ON that were registered before they were on by default, with the
entry that says from when they are."""

DEFAULT_ON: Final = frozenset(
    {
        NAMESPACE_LIFECYCLE,
        LIMIT_RANGER,
        SERVICE_ACCOUNT,
        DEFAULT_STORAGE_CLASS,
        "PersistentVolumeClaimResize",
        DEFAULT_TOLERATION_SECONDS,
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionWebhook",
        RESOURCE_QUOTA,
        STORAGE_OBJECT_IN_USE_PROTECTION,
        POD_GROUP_PROTECTION,
        PRIORITY,
        "TaintNodesByCondition",
        "RuntimeClass",
        "CertificateApproval",
        "CertificateSigning",
        "ClusterTrustBundleAttest",
        "CertificateSubjectRestriction",
        "DefaultIngressClass",
        "PodSecurity",
        POD_TOPOLOGY_LABELS,
        "MutatingAdmissionPolicy",
        "ValidatingAdmissionPolicy",
        POD_GROUP_WORKLOAD_EXISTS,
        "NodeDeclaredFeatureValidator",
        "JobValidation",
        "PodResizeValidator",
    }
)
"""The plugins upstream turns on without a flag (DefaultOffAdmissionPlugins' defaultOnPlugins)
at the versions that register them (`default_on` resolves them for one version). Several act only with their
feature gate (PodTopologyLabels, PodGroupProtection), as upstream's do."""


def _holds(rule: str, rules: VersionRules) -> bool:
    held: bool = getattr(rules, rule)
    return held


def registered(rules: VersionRules) -> tuple[str, ...]:
    """The plugin names the emulated version's kube-apiserver registers, in its order."""
    return tuple(
        name
        for name in ALL_ORDERED_PLUGINS
        if name not in REGISTERED_BY or _holds(REGISTERED_BY[name], rules)
    )


def default_on(rules: VersionRules) -> frozenset[str]:
    """The plugins on without a flag at the emulated version."""
    return frozenset(
        name
        for name in registered(rules)
        if name in DEFAULT_ON and (name not in DEFAULT_ON_BY or _holds(DEFAULT_ON_BY[name], rules))
    )


def _versions_with(name: str) -> str:
    """The versions from 1.21 on whose kube-apiserver registers `name` ("1.21-1.24")."""
    rule = RULES[REGISTERED_BY[name]]
    last = MAX_VERSION
    if rule.until is not None:
        last = Version(rule.until.major, rule.until.minor - 1)
    return str(rule.since) if last == rule.since else f"{rule.since}-{last}"


MODELLED: Final = frozenset(
    {
        NAMESPACE_LIFECYCLE,
        LIMIT_RANGER,
        SERVICE_ACCOUNT,
        NODE_RESTRICTION,
        PRIORITY,
        DEFAULT_TOLERATION_SECONDS,
        DEFAULT_STORAGE_CLASS,
        STORAGE_OBJECT_IN_USE_PROTECTION,
        POD_GROUP_PROTECTION,
        POD_TOPOLOGY_LABELS,
        POD_GROUP_WORKLOAD_EXISTS,
        RESOURCE_QUOTA,
    }
)
"""The plugins kemu's admission chain has (apiserver/admission/chain.py, and the registry's
NamespaceLifecycle and ResourceQuota)."""


class UnknownPlugins(ValueError):
    """The flags name a plugin upstream does not register, or one in both lists."""


@dataclass(frozen=True)
class AdmissionPlugins:
    """The admission plugins enabled (upstream's names)."""

    enabled: frozenset[str] = default_on(DEFAULT_VERSION_RULES)

    @classmethod
    def from_flags(
        cls,
        enable: Iterable[str],
        disable: Iterable[str],
        rules: VersionRules = DEFAULT_VERSION_RULES,
    ) -> AdmissionPlugins:
        """The emulated version's default-on set with `enable` added and `disable` taken
        away; UnknownPlugins, with upstream's sentences, for a name that version does not
        register (and the versions that do, when some do) or one in both lists."""
        on, off = list(enable), list(disable)
        names = set(registered(rules))
        errors = []
        for flag, given in (("enable", on), ("disable", off)):
            for name in given:
                if name in names:
                    continue
                error = f'{flag}-admission-plugins plugin "{name}" is unknown'
                if name in REGISTERED_BY:
                    error += (
                        f" at emulated version {rules.version} (kube-apiserver "
                        f"{_versions_with(name)} registers it)"
                    )
                errors.append(error)
        if both := sorted(set(on) & set(off)):
            errors.append(
                f"[{' '.join(both)}] in enable-admission-plugins and disable-admission-plugins "
                "overlapped"
            )
        if errors:
            raise UnknownPlugins("; ".join(errors))
        return cls((default_on(rules) - set(off)) | set(on))

    def on(self, name: str) -> bool:
        assert name in ALL_ORDERED_PLUGINS, name
        return name in self.enabled

    def ordered(self) -> list[str]:
        """The enabled plugins in upstream's order (as its start-up log lists them)."""
        return [name for name in ALL_ORDERED_PLUGINS if name in self.enabled]

    def not_modelled(self) -> list[str]:
        """Enabled plugins kemu does not model, beyond those upstream enables by default."""
        return [n for n in self.ordered() if n not in MODELLED and n not in DEFAULT_ON]


DEFAULT_PLUGINS: Final = AdmissionPlugins()


def plugin_list(text: str) -> list[str]:
    """A comma list flag's names (pflag's StringSlice: blanks dropped, spaces trimmed)."""
    return [part.strip() for part in text.split(",") if part.strip()]
