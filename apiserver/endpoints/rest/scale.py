"""The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets and StatefulSets, which
`kubectl scale` reads and patches: a view of spec.replicas, status.replicas and the selector,
written back as a patch of spec.replicas through the registry (upstream's ScaleREST)."""

from __future__ import annotations

import json

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, jsonutil
from kemu.machinery import patch as patches
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.labels import selector_from_label_selector


def scale_of(obj: Message) -> JSONObject:
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


def object_patch(scale: JSONObject) -> str:
    """The merge patch of the scaled object that a written Scale stands for (its
    resourceVersion, when given, a precondition)."""
    spec = scale.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise Invalid.field("spec.replicas", "Required value: an integer")
    patch: JSONObject = {"spec": {"replicas": replicas}}
    meta = scale.get("metadata")
    if isinstance(meta, dict) and meta.get("resourceVersion"):
        patch["metadata"] = {"resourceVersion": str(meta["resourceVersion"])}
    return json.dumps(patch)
