"""Which admission plugins run: kube-apiserver's --enable-admission-plugins and
--disable-admission-plugins over upstream's registry of plugin names and its default-on set
(pkg/kubeapiserver/options/plugins.go: AllOrderedPlugins, DefaultOffAdmissionPlugins; the
flags' rules are k8s.io/apiserver/pkg/server/options/admission.go: Validate and
enabledPluginNames).

A name upstream registers is accepted even where kemu does not model the plugin (`MODELLED`
says which it does): enabling AlwaysPullImages changes nothing in kemu, and the apiserver says
so at start-up. A name upstream does not register is refused at start-up as upstream's
Validate refuses it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

NAMESPACE_LIFECYCLE: Final = "NamespaceLifecycle"
LIMIT_RANGER: Final = "LimitRanger"
SERVICE_ACCOUNT: Final = "ServiceAccount"
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
    "LimitPodHardAntiAffinityTopology",
    LIMIT_RANGER,
    SERVICE_ACCOUNT,
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    PRIORITY,
    DEFAULT_TOLERATION_SECONDS,
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
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
"""Every plugin name upstream registers, in its execution order (AllOrderedPlugins)."""

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
"""The plugins on without a flag (DefaultOffAdmissionPlugins' defaultOnPlugins). Several act
only with their feature gate or version (PodTopologyLabels, PodGroupWorkloadExists,
PodGroupProtection), as upstream's do."""

MODELLED: Final = frozenset(
    {
        NAMESPACE_LIFECYCLE,
        LIMIT_RANGER,
        SERVICE_ACCOUNT,
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

    enabled: frozenset[str] = DEFAULT_ON

    @classmethod
    def from_flags(cls, enable: Iterable[str], disable: Iterable[str]) -> AdmissionPlugins:
        """The default-on set with `enable` added and `disable` taken away; UnknownPlugins,
        with upstream's sentences, for a name not registered or one in both."""
        on, off = list(enable), list(disable)
        errors = [
            f'{flag}-admission-plugins plugin "{name}" is unknown'
            for flag, names in (("enable", on), ("disable", off))
            for name in names
            if name not in ALL_ORDERED_PLUGINS
        ]
        if both := sorted(set(on) & set(off)):
            errors.append(
                f"[{' '.join(both)}] in enable-admission-plugins and disable-admission-plugins "
                "overlapped"
            )
        if errors:
            raise UnknownPlugins("; ".join(errors))
        return cls((DEFAULT_ON - set(off)) | set(on))

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
