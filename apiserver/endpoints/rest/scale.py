"""The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets and StatefulSets, which
`kubectl scale` reads and patches: a view of spec.replicas, status.replicas and the selector,
written back as a patch of spec.replicas through the registry (upstream's ScaleREST)."""

from __future__ import annotations

import json

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, jsonutil, printers
from kemu.machinery import patch as patches
from kemu.machinery.apiextensions import custom
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import kind_of
from kemu.machinery.labels import selector_from_label_selector


def scale_of(obj: Message) -> JSONObject:
    if isinstance(obj, types_pb2.CustomObject):
        return _custom_scale_of(obj)
    assert isinstance(
        obj,
        types_pb2.Deployment
        | types_pb2.ReplicaSet
        | types_pb2.StatefulSet
        | types_pb2.ReplicationController,
    )
    if isinstance(obj, types_pb2.ReplicationController):
        # a ReplicationController's selector is a map (labels.SelectorFromSet)
        selector = ",".join(f"{k}={v}" for k, v in sorted(obj.spec.selector.items()))
    else:
        selector = str(selector_from_label_selector(obj.spec.selector))
    meta = convert.message_to_dict(obj.metadata, wire=True)
    keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in keep if k in meta},
        "spec": {"replicas": obj.spec.replicas},
        "status": {
            "replicas": obj.status.replicas,
            "selector": selector,
        },
    }


def patched(current: JSONObject, patch_type: str, text: str) -> JSONObject:
    """A Scale after a PATCH of any type."""
    patch = jsonutil.loads(text, "the patch")
    if patch_type == patches.JSON:
        result = patches.json_patch(current, patch)
    elif isinstance(patch, dict):  # merge and strategic: a Scale has no list to merge
        result = convert.merge_patch(current, patch)
    else:
        raise BadRequest("a merge patch must be a JSON object")
    if not isinstance(result, dict):
        raise BadRequest("the patched Scale is not an object")
    return result


def object_patch(scale: JSONObject, spec_replicas_path: str = ".spec.replicas") -> str:
    """The merge patch of the scaled object that a written Scale stands for (its
    resourceVersion, when given, a precondition); a custom resource's replicas are at its
    CRD's specReplicasPath."""
    spec = scale.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise Invalid.field("spec.replicas", "Required value: an integer")
    patch: JSONObject = {}
    node = patch
    steps = [s for s in spec_replicas_path.split(".") if s]
    for step in steps[:-1]:
        child: JSONObject = {}
        node[step] = child
        node = child
    node[steps[-1] if steps else "replicas"] = replicas
    meta = scale.get("metadata")
    if isinstance(meta, dict) and meta.get("resourceVersion"):
        patch["metadata"] = {"resourceVersion": str(meta["resourceVersion"])}
    return json.dumps(patch)


# ---- custom resources (issue #57 item 3): the scale subresource at the paths of the CRD's
# subresources.scale (upstream apiextensions-apiserver pkg/registry/customresource/etcd.go
# ScaleREST)


def spec_replicas_path(obj: types_pb2.CustomObject) -> str:
    scale = _custom_scale(obj)
    path = scale.get("specReplicasPath") if scale else None
    return path if isinstance(path, str) else ".spec.replicas"


def _custom_scale(obj: types_pb2.CustomObject) -> JSONObject:
    definition = custom.definition_for(kind_of(obj))
    scale = definition.storage.scale if definition is not None else None
    return scale or {}


def _custom_scale_of(obj: types_pb2.CustomObject) -> JSONObject:
    scale = _custom_scale(obj)
    body = convert.custom_to_dict(obj, wire=True)
    meta = body.get("metadata")
    keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    replicas = printers.json_path(body, str(scale.get("specReplicasPath", ".spec.replicas")))
    status_replicas = printers.json_path(body, str(scale.get("statusReplicasPath", "")))
    out: JSONObject = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in keep if isinstance(meta, dict) and k in meta},
        "spec": {"replicas": replicas if isinstance(replicas, int) else 0},
        "status": {"replicas": status_replicas if isinstance(status_replicas, int) else 0},
    }
    selector_path = scale.get("labelSelectorPath")
    if isinstance(selector_path, str) and selector_path:
        selector = printers.json_path(body, selector_path)
        if isinstance(selector, str):
            status = out["status"]
            assert isinstance(status, dict)
            status["selector"] = selector
    return out
