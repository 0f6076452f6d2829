"""flowcontrol.apiserver.k8s.io/v1 (issue #58 item 3): the bootstrap objects valid and
unchanged by the defaults (as upstream's internalbootstrap tests), validation's field paths and
messages, the ensurer's rule, the Dangling condition and the printers' cells."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, flowcontrol, printers
from kemu.machinery.convert import timestamp
from kemu.machinery.defaults import set_defaults
from kemu.machinery.kinds import BY_KIND
from kemu.machinery.validation.objects import validate_object


def obj(data: dict[str, Any]) -> Message:
    out = convert.from_dict(BY_KIND[data["kind"]], data)
    set_defaults(out)
    return out


def messages(o: Message) -> dict[str, str]:
    return {c.field: c.message for c in validate_object(o)}


def everything() -> list[Message]:
    return [
        *flowcontrol.mandatory_priority_levels(),
        *flowcontrol.suggested_priority_levels(),
        *flowcontrol.mandatory_flow_schemas(),
        *flowcontrol.suggested_flow_schemas(),
    ]


@pytest.mark.parametrize("o", everything(), ids=lambda o: o.metadata.name)
def test_apf_bootstrap_objects_are_valid_and_defaulted(o: Message) -> None:
    assert validate_object(o) == []
    defaulted = type(o)()
    defaulted.CopyFrom(o)
    set_defaults(defaulted)
    assert defaulted == o


def test_apf_bootstrap_names_as_upstreams() -> None:
    assert [o.metadata.name for o in flowcontrol.suggested_flow_schemas()] == [
        "system-nodes", "system-node-high", "probes", "system-leader-election",
        "endpoint-controller", "workload-leader-election", "kube-controller-manager",
        "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default",
    ]  # fmt: skip
    assert [o.metadata.name for o in flowcontrol.mandatory_flow_schemas()] == [
        "exempt",
        "catch-all",
    ]


def _fs(spec: dict[str, Any], name: str = "f") -> Message:
    return obj({"kind": "FlowSchema", "metadata": {"name": name}, "spec": spec})


def _pl(spec: dict[str, Any], name: str = "p") -> Message:
    return obj({"kind": "PriorityLevelConfiguration", "metadata": {"name": name}, "spec": spec})


def test_apf_validation_flow_schema_fields() -> None:
    fs = _fs(
        {
            "priorityLevelConfiguration": {"name": ""},
            "matchingPrecedence": 10001,
            "distinguisherMethod": {"type": "ByGroup"},
            "rules": [
                {"subjects": [], "resourceRules": [{"verbs": ["*", "get"], "apiGroups": ["*"],
                                                    "resources": ["*"]}]},
                {"subjects": [{"kind": "User"}]},
            ],
        }
    )  # fmt: skip
    got = messages(fs)
    assert "must be between 1 and 10000, inclusive" in got["spec.matchingPrecedence"]
    assert "ByNamespace" in got["spec.distinguisherMethod.type"]
    assert "must reference a priority level" in got["spec.priorityLevelConfiguration.name"]
    assert "subjects must contain at least one value" in got["spec.rules[0].subjects"]
    assert "if '*' is present" in got["spec.rules[0].resourceRules[0].verbs"]
    assert "at least one namespace" in got["spec.rules[0].resourceRules[0].namespaces"]
    assert "user is required" in got["spec.rules[1].subjects[0].user"]
    assert "at least one of resourceRules and nonResourceRules" in got["spec.rules[1]"]
    assert _fs({"priorityLevelConfiguration": {"name": "x"}}).spec.matching_precedence == 1000  # type: ignore[attr-defined]


def test_apf_validation_priority_level_fields() -> None:
    got = messages(
        _pl(
            {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": -1,
                    "lendablePercent": 101,
                    "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5}},
                },
            }
        )
    )
    assert "non-negative" in got["spec.limited.nominalConcurrencyShares"]
    assert "between 0 and 100" in got["spec.limited.lendablePercent"]
    assert (
        "should not be greater than queues (4)"
        in got["spec.limited.limitResponse.queuing.handSize"]
    )
    got = messages(_pl({"type": "Limited"}))
    assert "must not be empty when type is Limited" in got["spec.limited"]
    got = messages(_pl({"type": "Exempt"}))
    assert "if and only if name is 'exempt'" in got["spec.type"]
    got = messages(
        _pl({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}, "exempt")
    )
    assert "if and only if name is 'exempt'" in got["spec.type"]
    got = messages(_pl({"type": "Sometimes"}))
    assert "Exempt" in got["spec.type"]
    defaulted = _pl({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}})
    q = defaulted.spec.limited.limit_response.queuing  # type: ignore[attr-defined]
    assert (q.queues, q.hand_size, q.queue_length_limit) == (64, 8, 50)
    assert defaulted.spec.limited.nominal_concurrency_shares == 30  # type: ignore[attr-defined]


def _stored(o: Any, generation: int, annotation: str | None) -> Any:
    out = type(o)()
    out.CopyFrom(o)
    out.metadata.generation = generation
    if annotation is not None:
        out.metadata.annotations[flowcontrol.AUTO_UPDATE_ANNOTATION] = annotation
    return out


def test_apf_ensurer_rule() -> None:
    """shouldUpdateSpec: mandatory always; suggested while autoupdate-spec parses true, or
    without it (or unparsable) at generation 1 only."""
    wanted = flowcontrol.suggested_flow_schemas()[0]
    changed = _stored(wanted, 2, "false")
    changed.spec.matching_precedence = 1
    assert flowcontrol.ensured(wanted, changed, mandatory=False) is None
    restored = flowcontrol.ensured(wanted, changed, mandatory=True)
    assert restored is not None and restored.spec == wanted.spec
    assert restored.metadata.annotations[flowcontrol.AUTO_UPDATE_ANNOTATION] == "true"
    for annotation, generation, updates in (
        ("true", 5, True), ("T", 5, True), (None, 1, True), (None, 2, False), ("maybe", 2, False),
    ):  # fmt: skip
        current = _stored(wanted, generation, annotation)
        current.spec.matching_precedence = 1
        assert (flowcontrol.ensured(wanted, current, mandatory=False) is not None) == updates
    exempt = flowcontrol.mandatory_priority_levels()[0]
    tuned = _stored(exempt, 2, "true")
    tuned.spec.exempt.nominal_concurrency_shares = 10
    assert flowcontrol.ensured(exempt, tuned, mandatory=True) is None  # (an operator's to tune)


def test_apf_dangling_and_printers() -> None:
    fs = flowcontrol.suggested_flow_schemas()[0]
    now = timestamp(1.0)
    out = flowcontrol.with_dangling(fs, {"system"}, now)
    assert out is not None and out.status.conditions[0].status == "False"
    assert flowcontrol.with_dangling(out, {"system"}, timestamp(2.0)) is None
    gone = flowcontrol.with_dangling(out, set(), timestamp(2.0))
    assert gone is not None
    (cond,) = gone.status.conditions
    assert (cond.status, cond.reason) == ("True", "NotFound")
    row = printers.TABLES["FlowSchema"].row(gone, 2.0, False)
    assert row[:4] == ["system-nodes", "system", "500", "ByUser"] and row[5] == "True"
    assert printers.TABLES["FlowSchema"].row(fs, 2.0, False)[5] == "?"
    exempt, catch_all = flowcontrol.mandatory_priority_levels()
    row = printers.TABLES["PriorityLevelConfiguration"].row(exempt, 2.0, False)
    assert row[:6] == ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    row = printers.TABLES["PriorityLevelConfiguration"].row(catch_all, 2.0, False)
    assert row[:6] == ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"]
    assert isinstance(gone, types_pb2.FlowSchema)


def test_apf_validation_mandatory_specs_fixed() -> None:
    """A mandatory object's spec equals upstream's fixed value; the exempt level's shares and
    lendablePercent may be tuned."""
    catch_all = flowcontrol.mandatory_flow_schemas()[1]
    catch_all.spec.matching_precedence = 9999
    assert "must equal the fixed value" in messages(catch_all)["spec"]
    exempt = flowcontrol.mandatory_priority_levels()[0]
    exempt.spec.exempt.nominal_concurrency_shares = 10
    exempt.spec.exempt.lendable_percent = 50
    assert messages(exempt) == {}
    level = flowcontrol.mandatory_priority_levels()[1]
    level.spec.limited.nominal_concurrency_shares = 7
    assert "spec of 'catch-all' must equal the fixed value" in messages(level)["spec"]
