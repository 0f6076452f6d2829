"""Field sets of built-in kinds from upstream's OpenAPI, managedFields entries and conflict
messages as upstream writes them (apimachinery pkg/util/managedfields/internal: fields.go,
conflict.go, managedfields.go; handlers/fieldmanager)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kemu.machinery import convert
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import BY_KIND
from kemu.machinery.managedfields import entries, messages, schema, typed
from kemu.machinery.managedfields.entries import FieldManager, Managed, Manager
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.updater import Conflict, Conflicts

DEPLOYMENT: JSONObject = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}
                ]
            },
        },
    },
}


def test_s_api_ssa_fieldset_of_a_deployment_as_kubectl_apply_server_side_records_it() -> None:
    """An applied Deployment's set: the selector atomic (LabelSelector's map-type), the
    containers by name, the ports by containerPort and protocol (its default TCP), a list
    item a member ("."), the metadata the server owns stripped."""
    node = schema.for_builtin("Deployment", "apps/v1")
    fields = typed.to_field_set(entries.strip(DEPLOYMENT), node).to_fields_v1()
    assert fields == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                }
                            },
                        }
                    }
                },
            },
        },
    }


def test_an_update_owns_what_it_changed_and_takes_it_from_the_applier() -> None:
    """An Update of .spec.replicas by kubectl-scale takes it from the applier (no conflict for
    an update) and keeps its own time; the applier keeps the rest."""
    node = schema.for_builtin("Deployment", "apps/v1")
    fm = FieldManager(node, "apps/v1")
    t0, t1 = convert.timestamp(100), convert.timestamp(200)
    applier = Manager("kubectl", entries.APPLY)
    live, managed = fm.apply({}, DEPLOYMENT, Managed({}, {}), applier, False, t0)
    scaled = json.loads(json.dumps(live))
    scaled["spec"]["replicas"] = 5
    updater = Manager("kubectl-scale", entries.UPDATE, "apps/v1", "scale")
    after = fm.update(live, scaled, managed, updater, t1)
    sets = {Manager.from_identifier(i).manager: vs.fields for i, vs in after.fields.items()}
    assert sets["kubectl-scale"].to_fields_v1() == {"f:spec": {"f:replicas": {}}}
    assert not sets["kubectl"].has(("f:spec", "f:replicas"))
    assert after.times[updater.identifier()] == t1
    assert after.times[applier.identifier()] == t0
    # the applier applying its old value again conflicts with the updater
    with pytest.raises(Conflicts) as e:
        fm.apply(scaled, DEPLOYMENT, after, applier, False, t1)
    assert e.value.conflicts == [Conflict(updater.identifier(), ("f:spec", "f:replicas"))]


def test_conflict_messages_are_upstreams() -> None:
    """conflict.go: one conflict on one line; several grouped by manager, sorted; an Update
    manager named with its version, subresource and time."""
    applier = Manager("kubectl", entries.APPLY).identifier()
    updater = Manager("kube-controller-manager", entries.UPDATE, "apps/v1", "status").identifier()
    one = Conflicts([Conflict(applier, ("f:spec", "f:replicas"))])
    assert (
        entries.conflict_message(one, {})
        == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    )
    two = Conflicts(
        [
            Conflict(updater, ("f:status", "f:replicas")),
            Conflict(applier, ("f:spec", "f:replicas")),
        ]
    )
    times = {updater: convert.timestamp(0)}
    times[updater].seconds = 1_700_000_000
    assert entries.conflict_message(two, times) == (
        'Apply failed with 2 conflicts: conflicts with "kube-controller-manager" with '
        'subresource "status" using apps/v1 at 2023-11-14T22:13:20Z:\n- .status.replicas\n'
        'conflicts with "kubectl":\n- .spec.replicas'
    )


def test_entries_round_trip_in_upstreams_order() -> None:
    """EncodeObjectManagedFields: Apply before Update, then by time; the manager identifier
    of an applier carries no apiVersion (BuildManagerIdentifier)."""
    node = schema.for_builtin("ConfigMap", "v1")
    fm = FieldManager(node, "v1")
    cm: JSONObject = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1"},
    }
    t = convert.timestamp(100)
    live, managed = fm.apply({}, cm, Managed({}, {}), Manager("m", entries.APPLY), False, t)
    changed: JSONObject = {**live, "data": {"a": "1", "b": "2"}}
    managed = fm.update(live, changed, managed, Manager("kubectl-edit", entries.UPDATE, "v1"), t)
    encoded = entries.encode(managed)
    assert [(e.manager, e.operation) for e in encoded] == [
        ("m", "Apply"),
        ("kubectl-edit", "Update"),
    ]
    assert json.loads(encoded[1].fields_v1.raw) == {"f:data": {"f:b": {}}}
    assert entries.decode(encoded).fields.keys() == managed.fields.keys()
    assert Manager("m", entries.APPLY, "v1").identifier() == '{"manager":"m","operation":"Apply"}'


def test_a_creates_set_read_from_the_message_equals_the_one_read_from_its_json() -> None:
    """messages.all_paths (the registry's create path, no JSON) gives what typed.all_paths
    gives of the object's JSON: list-map keys with their defaults, atomic lists and structs,
    maps of quantities."""
    kind = BY_KIND["Deployment"]
    dep: Any = json.loads(json.dumps(DEPLOYMENT))
    dep["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": "25%"}}
    pod_spec = dep["spec"]["template"]["spec"]
    pod_spec["tolerations"] = [{"key": "k", "operator": "Exists"}]
    pod_spec["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    pod_spec["containers"][0]["ports"].append({"containerPort": 81, "protocol": "UDP"})
    obj = convert.from_dict(kind, dep)
    node = schema.for_kind(kind)
    from_message = messages.all_paths(obj, node)
    from_json = typed.all_paths(convert.to_dict(obj), node)
    assert from_message == from_json.difference(FieldSet.of(("f:apiVersion",), ("f:kind",)))
