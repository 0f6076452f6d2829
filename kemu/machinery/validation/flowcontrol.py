"""flowcontrol.apiserver.k8s.io/v1: FlowSchema and PriorityLevelConfiguration (upstream
pkg/apis/flowcontrol/validation/validation.go; issue #58 item 3). The field paths and
messages are upstream's; a mandatory object's spec must equal upstream's fixed value (the
bootstrap objects of kemu.machinery.flowcontrol; the exempt level's shares and lendablePercent
excepted, KEP-1040's tunable exempt level)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import flowcontrol
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import validate_object_meta

_DISTINGUISHERS: Final = ("ByNamespace", "ByUser")
_SUBJECT_KINDS: Final = ("Group", "ServiceAccount", "User")
_LEVEL_TYPES: Final = ("Exempt", "Limited")
_RESPONSE_TYPES: Final = ("Queue", "Reject")
_MAX_PRECEDENCE: Final = 10000
_MAX_QUEUES: Final = 10000
_MAX_HAND_SIZE: Final = 60


def _fixed(name: str, spec: Message, mandatory: list[Message]) -> list[Cause]:
    """`if mand, ok := internalbootstrap.Mandatory...[name]`: the spec must equal it."""
    for m in mandatory:
        if m.metadata.name == name and m.spec != spec:  # type: ignore[attr-defined]
            return [invalid("spec", "", f"spec of '{name}' must equal the fixed value")]
    return []


def _star_only(path: str, values: Sequence[str], what: str) -> list[Cause]:
    """A list that must not be empty and holds "*" only alone (hasWildcard checks)."""
    if not values:
        return [required(path, f"{what} must contain at least one value")]
    if "*" in values and len(values) > 1:
        return [invalid(path, list(values), f"if '*' is present, must not specify other {what}")]
    return []


def _subject(s: types_pb2.FlowSubject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if s.kind == "User":
        if not s.HasField("user"):
            causes.append(required(f"{path}.user", "user is required when subject kind is 'User'"))
        elif not s.user.name:
            causes.append(required(f"{path}.user.name", "username is required"))
    elif s.kind == "Group":
        if not s.HasField("group"):
            causes.append(
                required(f"{path}.group", "group is required when subject kind is 'Group'")
            )
        elif not s.group.name:
            causes.append(required(f"{path}.group.name", "group name is required"))
    elif s.kind == "ServiceAccount":
        if not s.HasField("service_account"):
            causes.append(
                required(
                    f"{path}.serviceAccount",
                    "serviceAccount is required when subject kind is 'ServiceAccount'",
                )
            )
        else:
            if not s.service_account.name:
                causes.append(required(f"{path}.serviceAccount.name", "name is required"))
            if not s.service_account.namespace:
                causes.append(required(f"{path}.serviceAccount.namespace", "namespace is required"))
    else:
        causes.append(not_supported(f"{path}.kind", s.kind, _SUBJECT_KINDS))
    return causes


def _rules(rule: types_pb2.PolicyRulesWithSubjects, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not rule.subjects:
        causes.append(required(f"{path}.subjects", "subjects must contain at least one value"))
    for i, s in enumerate(rule.subjects):
        causes += _subject(s, f"{path}.subjects[{i}]")
    if not rule.resource_rules and not rule.non_resource_rules:
        causes.append(
            required(path, "at least one of resourceRules and nonResourceRules has to be non-empty")
        )
    for i, r in enumerate(rule.resource_rules):
        p = f"{path}.resourceRules[{i}]"
        causes += _star_only(f"{p}.verbs", r.verbs, "verbs")
        causes += _star_only(f"{p}.apiGroups", r.api_groups, "api groups")
        causes += _star_only(f"{p}.resources", r.resources, "resources")
        if not r.namespaces and not r.cluster_scope:
            causes.append(
                required(
                    f"{p}.namespaces",
                    "resource rules that are not cluster scoped must supply at least one namespace",
                )
            )
    for i, n in enumerate(rule.non_resource_rules):
        p = f"{path}.nonResourceRules[{i}]"
        causes += _star_only(f"{p}.verbs", n.verbs, "verbs")
        causes += _star_only(f"{p}.nonResourceURLs", n.non_resource_urls, "non-resource urls")
    return causes


def validate_flow_schema(fs: types_pb2.FlowSchema) -> list[Cause]:
    """ValidateFlowSchema: precedence in [1, 10000], a distinguisher of ByUser/ByNamespace,
    a priority level named, each rule's subjects and rules; a mandatory schema's spec fixed."""
    causes = validate_object_meta(fs.metadata, namespaced=False)
    spec = fs.spec
    if not 0 < spec.matching_precedence <= _MAX_PRECEDENCE:
        causes.append(
            invalid(
                "spec.matchingPrecedence",
                spec.matching_precedence,
                f"must be between 1 and {_MAX_PRECEDENCE}, inclusive",
            )
        )
    if spec.HasField("distinguisher_method"):
        method = spec.distinguisher_method.type
        if method not in _DISTINGUISHERS:
            causes.append(not_supported("spec.distinguisherMethod.type", method, _DISTINGUISHERS))
    if not spec.priority_level_configuration.name:
        causes.append(
            required("spec.priorityLevelConfiguration.name", "must reference a priority level")
        )
    for i, rule in enumerate(spec.rules):
        causes += _rules(rule, f"spec.rules[{i}]")
    mandatory: list[Message] = list(flowcontrol.mandatory_flow_schemas())
    return causes + _fixed(fs.metadata.name, spec, mandatory)


def _queuing(q: types_pb2.QueuingConfiguration, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if q.queue_length_limit <= 0:
        causes.append(invalid(f"{path}.queueLengthLimit", q.queue_length_limit, "must be positive"))
    if q.queues <= 0:
        causes.append(invalid(f"{path}.queues", q.queues, "must be positive"))
    elif q.queues > _MAX_QUEUES:
        causes.append(
            invalid(f"{path}.queues", q.queues, f"must not be greater than {_MAX_QUEUES}")
        )
    if q.hand_size <= 0:
        causes.append(invalid(f"{path}.handSize", q.hand_size, "must be positive"))
    elif q.hand_size > q.queues:
        causes.append(
            invalid(
                f"{path}.handSize", q.hand_size, f"should not be greater than queues ({q.queues})"
            )
        )
    elif q.hand_size > _MAX_HAND_SIZE:
        causes.append(
            invalid(f"{path}.handSize", q.hand_size, f"must not be greater than {_MAX_HAND_SIZE}")
        )
    return causes


def _percent(path: str, value: int) -> list[Cause]:
    if not 0 <= value <= 100:
        return [invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def validate_priority_level(pl: types_pb2.PriorityLevelConfiguration) -> list[Cause]:
    """ValidatePriorityLevelConfiguration: the type Exempt or Limited with only its own part;
    a limited level's shares, percents and limit response (a Queue response's queuing); the
    type Exempt if and only if the name is exempt; a mandatory level's spec fixed."""
    causes = validate_object_meta(pl.metadata, namespaced=False)
    spec = pl.spec
    if spec.type == "Exempt":
        if spec.HasField("limited"):
            causes.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        if spec.HasField("exempt"):
            e, p = spec.exempt, "spec.exempt"
            if e.nominal_concurrency_shares < 0:
                causes.append(
                    invalid(
                        f"{p}.nominalConcurrencyShares",
                        e.nominal_concurrency_shares,
                        "must be a non-negative integer",
                    )
                )
            causes += _percent(f"{p}.lendablePercent", e.lendable_percent)
    elif spec.type == "Limited":
        if spec.HasField("exempt"):
            causes.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        if not spec.HasField("limited"):
            causes.append(required("spec.limited", "must not be empty when type is Limited"))
        else:
            lim, p = spec.limited, "spec.limited"
            if lim.nominal_concurrency_shares < 0:
                causes.append(
                    invalid(
                        f"{p}.nominalConcurrencyShares",
                        lim.nominal_concurrency_shares,
                        "must be a non-negative integer",
                    )
                )
            causes += _percent(f"{p}.lendablePercent", lim.lendable_percent)
            if lim.HasField("borrowing_limit_percent") and lim.borrowing_limit_percent < 0:
                causes.append(
                    invalid(
                        f"{p}.borrowingLimitPercent",
                        lim.borrowing_limit_percent,
                        "if specified, must be a non-negative integer",
                    )
                )
            response, rp = lim.limit_response, f"{p}.limitResponse"
            if response.type == "Queue":
                if not response.HasField("queuing"):
                    causes.append(
                        required(f"{rp}.queuing", "must not be empty if the type is Queue")
                    )
                else:
                    causes += _queuing(response.queuing, f"{rp}.queuing")
            elif response.type == "Reject":
                if response.HasField("queuing"):
                    causes.append(
                        forbidden(
                            f"{rp}.queuing",
                            "must be nil if limited.limitResponse.type is not Limited",
                        )
                    )
            else:
                causes.append(not_supported(f"{rp}.type", response.type, _RESPONSE_TYPES))
    else:
        causes.append(not_supported("spec.type", spec.type, _LEVEL_TYPES))
    if spec.type in _LEVEL_TYPES and (spec.type == "Exempt") != (pl.metadata.name == "exempt"):
        causes.append(
            invalid("spec.type", spec.type, "type must be 'Exempt' if and only if name is 'exempt'")
        )
    compared = types_pb2.PriorityLevelConfigurationSpec()
    compared.CopyFrom(spec)
    if pl.metadata.name == flowcontrol.EXEMPT and spec.type == "Exempt":
        compared.exempt.CopyFrom(flowcontrol.mandatory_priority_levels()[0].spec.exempt)
    mandatory: list[Message] = list(flowcontrol.mandatory_priority_levels())
    causes += _fixed(pl.metadata.name, compared, mandatory)
    return causes
