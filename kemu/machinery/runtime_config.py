"""kube-apiserver's `--runtime-config`: which API group versions (and resources) an apiserver
serves, over the defaults of its version.

Upstream: the flag is a cliflag.ConfigurationMap (k8s.io/component-base/cli/flag: comma-
separated `key=value`, a bare `key` is `key=`, a later key wins); cmd/kube-apiserver's
completion turns the core group's keys (`v1`, `api/v1`, and either with `/<resource>`) into
`/v1` and drops `api/legacy`; APIEnablementOptions.Validate
(staging/src/k8s.io/apiserver/pkg/server/options/api_enablement.go) refuses `api/all=false`
alone, a malformed key and a group no registry knows; resourceconfig.MergeAPIResourceConfigs
(staging/src/k8s.io/apiserver/pkg/server/resourceconfig/helpers.go) applies `api/all`,
`api/ga`, `api/beta`, `api/alpha` (in that order) to the default config, then each
`<group>/<version>` key, then each `<group>/<version>/<resource>` key, which takes precedence
(serverstorage.ResourceConfig.ResourceEnabled). Each error is upstream's message.

The defaults (pkg/controlplane/instance.go DefaultAPIResourceConfigSource, per release): every
GA version is on; every alpha version is off (alphaAPIGroupVersionsDisabledByDefault); a beta
version is on before 1.24 and off from 1.24 (KEP-3136 "beta APIs off by default": every beta
group version introduced since is listed in betaAPIGroupVersionsDisabledByDefault, which
TestNoBetaVersionsEnabledByDefault enforces; the older betas upstream kept on through
legacyBetaEnabledByDefaultResources are none that kemu serves). So, for kemu's kinds,
scheduling.k8s.io/v1alpha1 (1.35), v1alpha2 (1.36), v1beta1 and v1alpha3 (1.37) are off unless
the runtime config turns them on; a kind behind a feature gate also needs its gate
(pkg/registry/scheduling/rest checks both). kemu.machinery.kinds `Served.at` is where both
meet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

API_ALL: Final = "api/all"
API_GA: Final = "api/ga"
API_BETA: Final = "api/beta"
API_ALPHA: Final = "api/alpha"

_GA: Final = re.compile(r"v\d+")
_BETA: Final = re.compile(r"v\d+beta\d+")
_ALPHA: Final = re.compile(r"v\d+alpha\d+")

_MATCHERS: Final[dict[str, Callable[[str], bool]]] = {
    API_ALL: lambda version: True,
    API_GA: lambda version: _GA.fullmatch(version) is not None,
    API_BETA: lambda version: _BETA.fullmatch(version) is not None,
    API_ALPHA: lambda version: _ALPHA.fullmatch(version) is not None,
}
"""In upstream's groupVersionMatchersOrder: api/all first, so that `api/all=true,api/alpha=false`
leaves the alpha versions off."""

BETA_OFF_BY_DEFAULT_SINCE: Final = 24
"""KEP-3136: a beta group version is off by default from 1.24."""
LEGACY_BETA_ON_BY_DEFAULT: Final = frozenset({"flowcontrol.apiserver.k8s.io/v1beta3"})
"""Upstream's legacyBetaEnabledByDefaultResources (pkg/controlplane/apiserver/options and
instance.go): flowcontrol's v1beta3 FlowSchemas and PriorityLevelConfigurations stay on by
default while served (1.26-1.31), KEP-3136 notwithstanding (their only resources)."""

UPSTREAM_GROUPS: Final = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "settings.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)
"""The API groups kube-apiserver's registries know (its own scheme, apiextensions-apiserver's,
kube-aggregator's): a key of another group is "unknown api groups". A group version of these
that kemu serves no kind of is accepted and changes nothing kemu serves."""

_PRIORITY_CLASS_PRERELEASE_UNTIL: Final = 21
"""scheduling.k8s.io/v1alpha1 and v1beta1 served PriorityClass through 1.21 (removed in 1.22):
registered versions there, though kemu serves PriorityClass as v1 only."""


class RuntimeConfigError(ValueError):
    """A runtime config the apiserver refuses at start-up: upstream's message, naming the key."""


@dataclass(frozen=True)
class RuntimeConfig:
    """The flag's map after the core group's keys are converted (`/v1`) and `api/legacy`
    dropped, in the order given (a later occurrence of a key replaced the earlier)."""

    entries: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, values: Iterable[str]) -> RuntimeConfig:
        """Every `--runtime-config` occurrence, as ConfigurationMap.Set reads it (it refuses
        nothing: the keys are checked by `resolve`)."""
        raw: dict[str, str] = {}
        for value in values:
            for item in value.split(","):
                if not item:
                    continue
                key, sep, val = item.partition("=")
                raw[key.strip()] = val.strip() if sep else ""
        entries: dict[str, str] = {}
        for key, val in raw.items():
            if key == "api/legacy":
                continue
            if key in ("v1", "api/v1") or key.startswith(("v1/", "api/v1/")):
                # cmd/kube-apiserver's completion: every core-group key becomes the version
                # `/v1` (a resource named after it is dropped with it).
                entries["/v1"] = val
                continue
            entries[key] = val
        return cls(entries)

    def __hash__(self) -> int:
        return hash(tuple(self.entries.items()))

    def items(self) -> list[str]:
        """`key=value` per entry (what the apiserver reports of its flag)."""
        return [f"{k}={v}" for k, v in self.entries.items()]


NO_RUNTIME_CONFIG: Final = RuntimeConfig()


@dataclass(frozen=True)
class ResourceConfig:
    """Which group versions and resources are enabled (upstream's serverstorage.ResourceConfig):
    a resource set explicitly wins over its version."""

    versions: Mapping[str, bool]
    resources: Mapping[tuple[str, str], bool]

    def version_enabled(self, gv: str) -> bool:
        """VersionEnabled: the version is on, or one of its resources is."""
        if self.versions.get(gv, False):
            return True
        return any(on for (v, _), on in self.resources.items() if v == gv)

    def resource_enabled(self, gv: str, resource: str) -> bool:
        explicit = self.resources.get((gv, resource))
        if explicit is not None:
            return explicit
        return self.versions.get(gv, False)


def enabled_by_default(gv: str, minor: int) -> bool:
    """Whether upstream's 1.`minor` serves group version `gv` without a runtime config."""
    version = gv.rpartition("/")[2]
    if _ALPHA.fullmatch(version):
        return False
    if _BETA.fullmatch(version):
        return minor < BETA_OFF_BY_DEFAULT_SINCE or gv in LEGACY_BETA_ON_BY_DEFAULT
    return True


def _group_version(key: str) -> tuple[str, str, str | None]:
    """(group, version, resource) of a `group/version[/resource]` key; RuntimeConfigError
    (upstream's ParseGroupVersions) for another shape."""
    tokens = key.split("/")
    if len(tokens) not in (2, 3):
        raise RuntimeConfigError(f"runtime-config invalid key {key}")
    return tokens[0], tokens[1], tokens[2] if len(tokens) == 3 else None


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _parse_bool(key: str, value: str) -> bool:
    """getRuntimeConfigValue: empty is true, else Go's strconv.ParseBool."""
    if value == "":
        return True
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise RuntimeConfigError(
        f'invalid value of {key}: {value}, err: strconv.ParseBool: parsing "{value}": '
        "invalid syntax"
    )


def resolve(
    config: RuntimeConfig, minor: int, registered: Sequence[str], known: Iterable[str] = ()
) -> ResourceConfig:
    """The enabled group versions and resources of upstream's 1.`minor` under `config`.
    `registered`: the group versions served at 1.`minor` (by kemu's kinds: `v1`,
    `apps/v1`, ...), whose defaults `enabled_by_default` gives; `known`: every group version
    kemu serves at some version: one of these that 1.`minor` lacks is not registered there.
    RuntimeConfigError with upstream's message for a key or value it refuses."""
    entries = config.entries
    # APIEnablementOptions.Validate
    if entries.get(API_ALL) == "false" and len(entries) == 1:
        raise RuntimeConfigError("invalid key with only api/all=false")
    keys: list[tuple[str, str, str, str | None]] = []
    for key in entries:
        if key in _MATCHERS:
            continue
        group, version, resource = _group_version(key)
        keys.append((key, group, version, resource))
    unknown = [group for _, group, _, _ in keys if group not in UPSTREAM_GROUPS]
    if unknown:
        raise RuntimeConfigError(f"unknown api groups {','.join(unknown)}")
    # MergeAPIResourceConfigs
    versions = {gv: enabled_by_default(gv, minor) for gv in registered}
    resources: dict[tuple[str, str], bool] = {}
    for flag, matches in _MATCHERS.items():
        value = entries.get(flag)
        if value is None:
            continue
        if value not in ("true", "false"):
            raise RuntimeConfigError(f"invalid value {flag}={value}")
        for gv in versions:
            if matches(gv.rpartition("/")[2]):
                versions[gv] = value == "true"
                resources = {r: on for r, on in resources.items() if r[0] != gv}
    present = set(registered)
    if minor <= _PRIORITY_CLASS_PRERELEASE_UNTIL:
        present |= {"scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1beta1"}
    absent = set(known) - present
    version_keys: list[tuple[str, bool]] = []
    resource_keys: list[tuple[str, str, bool]] = []
    for key, group, version, resource in keys:
        gv = _gv(group, version)
        if gv in absent:
            raise RuntimeConfigError(f"group version {gv} that has not been registered")
        enabled = _parse_bool(key, entries[key])
        if resource is None:
            version_keys.append((gv, enabled))
        elif resource.lower() != resource:
            raise RuntimeConfigError(
                f"invalid key {key}: group/version/resource and resource is always lowercase "
                f'plural, not "{resource}"'
            )
        else:
            resource_keys.append((gv, resource, enabled))
    for gv, enabled in version_keys:
        # ExplicitlyEnableVersions / ExplicitlyDisableVersions: the version's resource
        # preferences go with it
        versions[gv] = enabled
        resources = {r: on for r, on in resources.items() if r[0] != gv}
    for gv, resource, enabled in resource_keys:
        resources[(gv, resource)] = enabled
    return ResourceConfig(versions, resources)
