"""`--authorization-mode`: its validation (pkg/kubeapiserver/options/authorization.go
Validate), the table of the modes kemu builds, and the apiserver's authorizer built from it as
pkg/kubeapiserver/authorizer/config.go builds upstream's: the privileged group
(system:masters) first, then each mode in the order given, tried as a union; the rule
resolvers (SelfSubjectRulesReview) are the modes' alone.

A mode's factory takes the apiserver's watch caches and what the apiserver emulates (its
feature gates and version): the Node authorizer (apiserver/authorization/node.py) takes the
system:node role's rules of the emulated version's bootstrap policy as its static rules
(upstream's NodeRules()) and AuthorizeNodeWithSelectors' default there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from apiserver.authorization.authorizer import Authorizer
from apiserver.authorization.union import (
    SYSTEM_PRIVILEGED_GROUP,
    AlwaysAllow,
    AlwaysDeny,
    PrivilegedGroups,
    Union,
)
from kemu.component.featuregate import FeatureGates
from kemu.component.version import DEFAULT_VERSION, Version

if TYPE_CHECKING:  # (the flag table, apiserver/options.py, loads no server)
    from apiserver.storage.watch_cache import WatchCache

# k8s.io/kubernetes/pkg/kubeapiserver/authorizer/modes/modes.go
ALWAYS_ALLOW: Final = "AlwaysAllow"
ALWAYS_DENY: Final = "AlwaysDeny"
ABAC: Final = "ABAC"
WEBHOOK: Final = "Webhook"
RBAC: Final = "RBAC"
NODE: Final = "Node"
MODE_CHOICES: Final = (ALWAYS_ALLOW, ALWAYS_DENY, ABAC, WEBHOOK, RBAC, NODE)
"""AuthorizationModeChoices, in upstream's order."""
DEFAULT_MODES: Final = (ALWAYS_ALLOW,)
"""kube-apiserver's default (NewBuiltInAuthorizationOptions)."""


@dataclass(frozen=True)
class Emulated:
    """What the apiserver emulates, for the modes that depend on it."""

    gates: FeatureGates = field(default_factory=FeatureGates.default)
    version: Version = DEFAULT_VERSION


Factory = Callable[[Mapping[str, "WatchCache"], Emulated], Authorizer]


def _always_allow(caches: Mapping[str, WatchCache], emulated: Emulated) -> Authorizer:
    return AlwaysAllow()


def _always_deny(caches: Mapping[str, WatchCache], emulated: Emulated) -> Authorizer:
    return AlwaysDeny()


def _rbac(caches: Mapping[str, WatchCache], emulated: Emulated) -> Authorizer:
    from apiserver.authorization.rbac import RBACAuthorizer

    return RBACAuthorizer.over(caches)


def _node(caches: Mapping[str, WatchCache], emulated: Emulated) -> Authorizer:
    from apiserver.authorization.bootstrap_policy import node_rules
    from apiserver.authorization.node import NodeAuthorizer, with_selectors_by_default

    return NodeAuthorizer.from_caches(
        caches,
        node_rules(emulated.gates),
        with_selectors=with_selectors_by_default(emulated.version),
    )


FACTORIES: Final[dict[str, Factory]] = {
    ALWAYS_ALLOW: _always_allow,
    ALWAYS_DENY: _always_deny,
    RBAC: _rbac,
    NODE: _node,
}
"""The modes kemu builds, by name."""

NOT_MODELLED: Final = {
    ABAC: "kemu does not model ABAC policy files",
    WEBHOOK: "kemu does not model authorization webhooks",
}


class ModeError(ValueError):
    """`--authorization-mode` in error: every problem, one sentence each."""


def parse_modes(text: str) -> tuple[str, ...]:
    """The comma list of `--authorization-mode` (a StringSlice: surrounding spaces kept, as
    pflag keeps them, so " RBAC" is no valid mode)."""
    return tuple(text.split(",")) if text else ()


def validate(modes: Sequence[str]) -> tuple[str, ...]:
    """`modes` when kemu can build every one of them; ModeError naming each problem, as
    upstream's Validate (unknown and repeated modes, none at all) and then kemu's (a mode it
    does not model, or one not available yet)."""
    errors: list[str] = []
    if not modes:
        errors.append("at least one authorization-mode must be passed")
    for mode in modes:
        if mode not in MODE_CHOICES:
            errors.append(f'authorization-mode "{mode}" is not a valid mode')
        elif mode in NOT_MODELLED:
            errors.append(f'authorization-mode "{mode}" is not modelled: {NOT_MODELLED[mode]}')
        elif mode not in FACTORIES:
            errors.append(f'authorization-mode "{mode}" is not available in this kemu yet')
    if len(set(modes)) != len(modes):
        shown = " ".join(f'"{m}"' for m in modes)
        errors.append(f"authorization-mode [{shown}] has mode specified more than once")
    if errors:
        raise ModeError("; ".join(errors))
    return tuple(modes)


@dataclass(frozen=True)
class Authorization:
    """The apiserver's authorizer and rule resolver, and the modes they were built from."""

    modes: tuple[str, ...]
    authorizer: Authorizer
    rule_resolver: Authorizer

    @property
    def always_allow(self) -> bool:
        """Every request is allowed (AlwaysAllow first): the edges need not ask."""
        return self.modes[:1] == (ALWAYS_ALLOW,)


def build(
    modes: Sequence[str], caches: Mapping[str, WatchCache], emulated: Emulated | None = None
) -> Authorization:
    """config.go New: system:masters first, then the modes (validated: `validate`)."""
    context = emulated or Emulated()
    built = [FACTORIES[mode](caches, context) for mode in validate(modes)]
    privileged = PrivilegedGroups(SYSTEM_PRIVILEGED_GROUP)
    return Authorization(tuple(modes), Union([privileged, *built]), Union(built))
