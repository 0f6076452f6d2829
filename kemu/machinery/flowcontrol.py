"""flowcontrol.apiserver.k8s.io/v1: upstream's bootstrap configuration, the kinds' defaults and
the ensurer's rule for keeping the bootstrap objects (issue #58 item 3).

Upstream: k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go (the mandatory and
suggested objects), pkg/apis/flowcontrol/v1/defaults.go (SetDefaults_*) and
pkg/registry/flowcontrol/ensurer (mandatory objects restored to their spec, suggested ones
updated only while `apf.kubernetes.io/autoupdate-spec` says so). The apiserver's priority and
fairness filter (apiserver/flowcontrol) classifies requests by them.
"""

from __future__ import annotations

from typing import Final, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2

AUTO_UPDATE_ANNOTATION: Final = "apf.kubernetes.io/autoupdate-spec"
"""flowcontrolv1.AutoUpdateAnnotationKey."""
EXEMPT: Final = "exempt"
CATCH_ALL: Final = "catch-all"
ALL: Final = "*"
NAMESPACE_SYSTEM: Final = "kube-system"
KUBE_CONTROLLER_MANAGER: Final = "system:kube-controller-manager"
KUBE_SCHEDULER: Final = "system:kube-scheduler"
BY_USER: Final = "ByUser"
BY_NAMESPACE: Final = "ByNamespace"

Rules = types_pb2.PolicyRulesWithSubjects


# ---------------------------------------------------------------- building blocks


def _groups(*names: str) -> list[types_pb2.FlowSubject]:
    return [
        types_pb2.FlowSubject(kind="Group", group=types_pb2.GroupSubject(name=n)) for n in names
    ]


def _users(*names: str) -> list[types_pb2.FlowSubject]:
    return [types_pb2.FlowSubject(kind="User", user=types_pb2.UserSubject(name=n)) for n in names]


def _kube_system_service_accounts(*names: str) -> list[types_pb2.FlowSubject]:
    return [
        types_pb2.FlowSubject(
            kind="ServiceAccount",
            service_account=types_pb2.ServiceAccountSubject(namespace=NAMESPACE_SYSTEM, name=n),
        )
        for n in names
    ]


def _resource_rule(
    verbs: list[str],
    groups: list[str],
    resources: list[str],
    namespaces: list[str],
    *,
    cluster: bool,
) -> types_pb2.ResourcePolicyRule:
    return types_pb2.ResourcePolicyRule(
        verbs=verbs, api_groups=groups, resources=resources, namespaces=namespaces,
        cluster_scope=cluster,
    )  # fmt: skip


def _everything(subjects: list[types_pb2.FlowSubject]) -> Rules:
    """Every verb on every resource (cluster-scoped too) and every non-resource URL."""
    return Rules(
        subjects=subjects,
        resource_rules=[_resource_rule([ALL], [ALL], [ALL], [ALL], cluster=True)],
        non_resource_rules=[types_pb2.NonResourcePolicyRule(verbs=[ALL], non_resource_urls=[ALL])],
    )


def _leader_election(subjects: list[types_pb2.FlowSubject], core_namespace: str) -> Rules:
    get_create_update = ["get", "create", "update"]
    return Rules(
        subjects=subjects,
        resource_rules=[
            _resource_rule(
                get_create_update, [""], ["endpoints", "configmaps"], [core_namespace],
                cluster=False,
            ),
            _resource_rule(
                get_create_update, ["coordination.k8s.io"], ["leases"], [ALL], cluster=False
            ),
        ],
    )  # fmt: skip


def _flow_schema(
    name: str, level: str, precedence: int, method: str, rules: Rules
) -> types_pb2.FlowSchema:
    fs = types_pb2.FlowSchema()
    fs.metadata.name = name
    fs.spec.priority_level_configuration.name = level
    fs.spec.matching_precedence = precedence
    if method:
        fs.spec.distinguisher_method.type = method
    fs.spec.rules.append(rules)
    return fs


def _limited(
    name: str, shares: int, lendable: int, queuing: tuple[int, int, int] | None
) -> types_pb2.PriorityLevelConfiguration:
    """A Limited level; `queuing` (queues, handSize, queueLengthLimit), None: Reject."""
    pl = types_pb2.PriorityLevelConfiguration()
    pl.metadata.name = name
    pl.spec.type = "Limited"
    limited = pl.spec.limited
    limited.nominal_concurrency_shares = shares
    limited.lendable_percent = lendable
    if queuing is None:
        limited.limit_response.type = "Reject"
    else:
        limited.limit_response.type = "Queue"
        q = limited.limit_response.queuing
        q.queues, q.hand_size, q.queue_length_limit = queuing
    return pl


def _exempt_level() -> types_pb2.PriorityLevelConfiguration:
    pl = types_pb2.PriorityLevelConfiguration()
    pl.metadata.name = EXEMPT
    pl.spec.type = "Exempt"
    pl.spec.exempt.nominal_concurrency_shares = 0
    pl.spec.exempt.lendable_percent = 0
    return pl


# ---------------------------------------------------------------- the bootstrap objects


def mandatory_priority_levels() -> list[types_pb2.PriorityLevelConfiguration]:
    """MandatoryPriorityLevelConfigurations: exempt and catch-all (5 shares, Reject)."""
    return [_exempt_level(), _limited(CATCH_ALL, 5, 0, None)]


def mandatory_flow_schemas() -> list[types_pb2.FlowSchema]:
    """MandatoryFlowSchemas: system:masters exempt (precedence 1), everyone else catch-all."""
    return [
        _flow_schema(EXEMPT, EXEMPT, 1, "", _everything(_groups("system:masters"))),
        _flow_schema(
            CATCH_ALL, CATCH_ALL, 10000, BY_USER,
            _everything(_groups("system:unauthenticated", "system:authenticated")),
        ),
    ]  # fmt: skip


def suggested_priority_levels() -> list[types_pb2.PriorityLevelConfiguration]:
    """SuggestedPriorityLevelConfigurations: (shares, lendablePercent, queuing) as upstream's."""
    return [
        _limited("system", 30, 33, (64, 6, 50)),
        _limited("node-high", 40, 25, (64, 6, 50)),
        _limited("leader-election", 10, 0, (16, 4, 50)),
        _limited("workload-high", 40, 50, (128, 6, 50)),
        _limited("workload-low", 100, 90, (128, 6, 50)),
        _limited("global-default", 20, 50, (128, 6, 50)),
    ]


def suggested_flow_schemas() -> list[types_pb2.FlowSchema]:
    """SuggestedFlowSchemas, each with its precedence and level as upstream's."""
    nodes = _groups("system:nodes")
    all_sa = _kube_system_service_accounts(ALL)
    node_high = Rules(
        subjects=nodes,
        resource_rules=[
            _resource_rule([ALL], [""], ["nodes", "nodes/status"], [ALL], cluster=True),
            _resource_rule([ALL], ["coordination.k8s.io"], ["leases"], [ALL], cluster=False),
        ],
    )
    probes = Rules(
        subjects=_groups("system:unauthenticated", "system:authenticated"),
        non_resource_rules=[
            types_pb2.NonResourcePolicyRule(
                verbs=["get"], non_resource_urls=["/healthz", "/readyz", "/livez"]
            )
        ],
    )
    endpoint_controller = Rules(
        subjects=_users(KUBE_CONTROLLER_MANAGER)
        + _kube_system_service_accounts("endpoint-controller", "endpointslicemirroring-controller"),
        resource_rules=[
            _resource_rule(["get", "create", "update"], [""], ["endpoints"], [ALL], cluster=False)
        ],
    )
    return [
        _flow_schema("system-nodes", "system", 500, BY_USER, _everything(nodes)),
        _flow_schema("system-node-high", "node-high", 400, BY_USER, node_high),
        _flow_schema("probes", EXEMPT, 2, "", probes),
        _flow_schema(
            "system-leader-election", "leader-election", 100, BY_USER,
            _leader_election(_users(KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER) + all_sa,
                             NAMESPACE_SYSTEM),
        ),
        _flow_schema("endpoint-controller", "workload-high", 150, BY_USER, endpoint_controller),
        _flow_schema(
            "workload-leader-election", "leader-election", 200, BY_USER,
            _leader_election(_kube_system_service_accounts(ALL), ALL),
        ),
        _flow_schema(
            "kube-controller-manager", "workload-high", 800, BY_NAMESPACE,
            _everything(_users(KUBE_CONTROLLER_MANAGER)),
        ),
        _flow_schema(
            "kube-scheduler", "workload-high", 800, BY_NAMESPACE,
            _everything(_users(KUBE_SCHEDULER)),
        ),
        _flow_schema(
            "kube-system-service-accounts", "workload-high", 900, BY_NAMESPACE,
            _everything(all_sa),
        ),
        _flow_schema(
            "service-accounts", "workload-low", 9000, BY_USER,
            _everything(_groups("system:serviceaccounts")),
        ),
        _flow_schema(
            "global-default", "global-default", 9900, BY_USER,
            _everything(_groups("system:unauthenticated", "system:authenticated")),
        ),
    ]  # fmt: skip


B = TypeVar("B", types_pb2.FlowSchema, types_pb2.PriorityLevelConfiguration)


def bootstrap_priority_levels() -> list[tuple[types_pb2.PriorityLevelConfiguration, bool]]:
    """Each bootstrap priority level with whether it is mandatory."""
    return [(o, True) for o in mandatory_priority_levels()] + [
        (o, False) for o in suggested_priority_levels()
    ]


def bootstrap_flow_schemas() -> list[tuple[types_pb2.FlowSchema, bool]]:
    """Each bootstrap FlowSchema with whether it is mandatory."""
    return [(o, True) for o in mandatory_flow_schemas()] + [
        (o, False) for o in suggested_flow_schemas()
    ]


# ---------------------------------------------------------------- defaults


def set_defaults_flow_schema(fs: types_pb2.FlowSchema) -> None:
    """SetDefaults_FlowSchemaSpec: matchingPrecedence 1000."""
    if fs.spec.matching_precedence == 0:
        fs.spec.matching_precedence = 1000


def set_defaults_priority_level(pl: types_pb2.PriorityLevelConfiguration) -> None:
    """SetDefaults_PriorityLevelConfiguration and its parts (v1): an exempt level's shares and
    lendablePercent 0; a limited level's shares 30 (v1 keeps an explicit 0) and lendablePercent
    0; a Queue response's queuing 64 queues, hand 8, length 50."""
    spec = pl.spec
    if spec.HasField("exempt"):
        if not spec.exempt.HasField("nominal_concurrency_shares"):
            spec.exempt.nominal_concurrency_shares = 0
        if not spec.exempt.HasField("lendable_percent"):
            spec.exempt.lendable_percent = 0
    if spec.HasField("limited"):
        limited = spec.limited
        if not limited.HasField("nominal_concurrency_shares"):
            limited.nominal_concurrency_shares = 30
        if not limited.HasField("lendable_percent"):
            limited.lendable_percent = 0
        if limited.limit_response.type == "Queue":
            q = limited.limit_response.queuing
            q.queues = q.queues or 64
            q.hand_size = q.hand_size or 8
            q.queue_length_limit = q.queue_length_limit or 50


# ---------------------------------------------------------------- the ensurer's rule


def should_update_suggested(meta: types_pb2.ObjectMeta) -> bool:
    """shouldUpdateSpec (pkg/registry/flowcontrol/ensurer): the autoupdate annotation's
    boolean when it parses as one (strconv.ParseBool), else only an object the apiserver made
    and no one changed since (generation 1)."""
    value = meta.annotations.get(AUTO_UPDATE_ANNOTATION)
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return meta.generation == 1


def ensured(wanted: B, current: B, *, mandatory: bool) -> B | None:
    """The update the ensurer writes for an existing bootstrap object, None to leave it: a
    mandatory object gets its spec back (but an exempt level's shares and lendablePercent,
    which an operator may tune) and autoupdate "true"; a suggested one its spec while
    should_update_suggested says so."""
    if not mandatory and not should_update_suggested(current.metadata):
        return None
    out = type(current)()
    out.CopyFrom(current)
    out.spec.CopyFrom(wanted.spec)
    if isinstance(out, types_pb2.PriorityLevelConfiguration) and out.spec.HasField("exempt"):
        assert isinstance(current, types_pb2.PriorityLevelConfiguration)
        if current.spec.HasField("exempt"):
            out.spec.exempt.CopyFrom(current.spec.exempt)
    annotations = out.metadata.annotations
    if mandatory or AUTO_UPDATE_ANNOTATION not in annotations:
        annotations[AUTO_UPDATE_ANNOTATION] = "true"
    return None if out == current else out


def for_create(wanted: B) -> B:
    """A bootstrap object as the ensurer creates it: autoupdate "true"."""
    out = type(wanted)()
    out.CopyFrom(wanted)
    out.metadata.annotations[AUTO_UPDATE_ANNOTATION] = "true"
    return out


# ---------------------------------------------------------------- status


def dangling(fs: types_pb2.FlowSchema, levels: set[str]) -> tuple[str, str, str]:
    """The Dangling condition's (status, reason, message) for a FlowSchema given the priority
    levels that exist (apf_controller.go digestConfigObjects: True/NotFound for a reference
    to no level, False/Found otherwise)."""
    name = fs.spec.priority_level_configuration.name
    # (Go's %q: the name is a DNS subdomain, nothing to escape)
    ref = f'This FlowSchema references the PriorityLevelConfiguration object named "{name}"'
    if name in levels:
        return "False", "Found", f"{ref} and it exists"
    return "True", "NotFound", f"{ref} but there is no such object"


def with_dangling(
    fs: types_pb2.FlowSchema, levels: set[str], now: Timestamp
) -> types_pb2.FlowSchema | None:
    """The FlowSchema with its Dangling condition set, None when it is already so."""
    status, reason, message = dangling(fs, levels)
    old = next((c for c in fs.status.conditions if c.type == "Dangling"), None)
    if old is not None and (old.status, old.reason, old.message) == (status, reason, message):
        return None
    out = types_pb2.FlowSchema()
    out.CopyFrom(fs)
    kept = [c for c in out.status.conditions if c.type != "Dangling"]
    del out.status.conditions[:]
    out.status.conditions.extend(kept)
    cond = out.status.conditions.add(type="Dangling", status=status, reason=reason)
    cond.message = message
    if old is not None and old.status == status:
        cond.last_transition_time.CopyFrom(old.last_transition_time)
    else:
        cond.last_transition_time.CopyFrom(now)
    return out
