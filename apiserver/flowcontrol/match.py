"""Classification: a request's FlowSchema, priority level and flow (upstream's
k8s.io/apiserver/pkg/util/flowcontrol/match.go and apf_controller.go's match): the FlowSchemas
in increasing matchingPrecedence (ties by name) whose level exists, the first with a rule that
matches; its distinguisher (ByUser: the user's name, ByNamespace: the request's namespace, none:
"") names the flow within the schema."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from apiserver.endpoints.inflight import RequestInfo
from kemu.api.v1 import types_pb2
from kemu.machinery import flowcontrol
from kemu.machinery.user import UserInfo

ALL: Final = flowcontrol.ALL
SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"


@dataclass(frozen=True)
class Classification:
    flow_schema: types_pb2.FlowSchema
    level: str
    distinguisher: str

    @property
    def flow_schema_name(self) -> str:
        return self.flow_schema.metadata.name

    def flow_hash(self) -> int:
        """The flow's 64-bit hash for shuffle sharding (upstream's hashFlowID hashes the
        schema's name and the distinguisher with FNV-64a; kemu the same two strings with
        blake2b: the hand differs, the rule is the same)."""
        data = f"{self.flow_schema_name}\x00{self.distinguisher}".encode()
        return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


ClassifiedAs = tuple[str, str, str, str, str, UserInfo]
"""What of a request its classification reads (`classified_as`)."""


def classified_as(info: RequestInfo) -> ClassifiedAs:
    """The parts of `info` that `classify` reads: the verb, API group, resource (with its
    subresource) and namespace of a resource request or the path of a non-resource one, and
    the user (subjects; the ByUser distinguisher). Requests alike in these are classified
    alike, whatever object they name or selector they carry (match.go reads no name), so a
    classification kept under this key serves every pod's get, binding and status PATCH of one
    user, where a key of the whole RequestInfo missed on each new name."""
    if info.is_resource_request:
        return (
            info.verb,
            info.api_group,
            info.resource_and_subresource,
            info.namespace,
            "",
            info.user,
        )
    return (info.verb, "", "", "", info.path, info.user)


def ordered(schemas: Iterable[types_pb2.FlowSchema]) -> list[types_pb2.FlowSchema]:
    """By matchingPrecedence, then name (apf_controller.go's sort of the FlowSchemas)."""
    return sorted(schemas, key=lambda fs: (fs.spec.matching_precedence, fs.metadata.name))


def classify(
    schemas: Sequence[types_pb2.FlowSchema], levels: set[str], info: RequestInfo
) -> Classification | None:
    """The first of `schemas` (already `ordered`) whose level is in `levels` and that matches
    `info`; None when none does (upstream then uses the catch-all schema, which the ensurer
    keeps)."""
    for fs in schemas:
        if fs.spec.priority_level_configuration.name not in levels:
            continue  # dangling
        if any(_matches_rules(r, info) for r in fs.spec.rules):
            method = fs.spec.distinguisher_method.type
            if method == flowcontrol.BY_USER:
                distinguisher = info.user.name
            elif method == flowcontrol.BY_NAMESPACE:
                distinguisher = info.namespace
            else:
                distinguisher = ""
            return Classification(fs, fs.spec.priority_level_configuration.name, distinguisher)
    return None


def _matches_rules(rules: types_pb2.PolicyRulesWithSubjects, info: RequestInfo) -> bool:
    """matchesPolicyRule: a subject matches, and so does a resource rule (a resource request)
    or a non-resource rule (a non-resource request)."""
    if not any(matches_subject(s, info) for s in rules.subjects):
        return False
    if info.is_resource_request:
        return any(_matches_resource_rule(r, info) for r in rules.resource_rules)
    return any(_matches_non_resource_rule(r, info) for r in rules.non_resource_rules)


def matches_subject(subject: types_pb2.FlowSubject, info: RequestInfo) -> bool:
    user = info.user
    if subject.kind == "User":
        return subject.user.name in (ALL, user.name)
    if subject.kind == "Group":
        return subject.group.name == ALL or subject.group.name in user.groups
    if subject.kind == "ServiceAccount":
        sa = subject.service_account
        if sa.name == ALL:
            return user.name.startswith(f"{SERVICE_ACCOUNT_PREFIX}{sa.namespace}:")
        return user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa.namespace}:{sa.name}"
    return False


def _matches_resource_rule(rule: types_pb2.ResourcePolicyRule, info: RequestInfo) -> bool:
    """matchesResourcePolicyRule: verb, apiGroup and resource ("pods/status" for a
    subresource) each match; a request without a namespace only a clusterScope rule, one with
    a namespace only a rule listing it (or "*")."""
    if not _member_or_all(info.verb, rule.verbs):
        return False
    if not _member_or_all(info.api_group, rule.api_groups):
        return False
    if not _member_or_all(info.resource_and_subresource, rule.resources):
        return False
    if not info.namespace:
        return rule.cluster_scope
    return _member_or_all(info.namespace, rule.namespaces)


def _matches_non_resource_rule(rule: types_pb2.NonResourcePolicyRule, info: RequestInfo) -> bool:
    """matchesNonResourcePolicyRule: the verb, and a URL equal to the path, "*", or ending in
    "*" and a prefix of the path without it."""
    if not _member_or_all(info.verb, rule.verbs):
        return False
    for url in rule.non_resource_urls:
        if url in (ALL, info.path):
            return True
        if url.endswith(ALL) and info.path.startswith(url[:-1]):
            return True
    return False


def _member_or_all(value: str, values: Iterable[str]) -> bool:
    return any(v in (ALL, value) for v in values)
