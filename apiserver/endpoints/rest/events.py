"""events.k8s.io/v1 Events: a view of the stored core/v1 Events, as upstream serves one stored
object under both groups (pkg/registry/core/event, the events.k8s.io group's storage being the
same as core's) and converts between them (pkg/apis/events/v1/conversion.go). Served: get,
list and watch (with Table output: the core Event's columns); writes go through core/v1."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from apiserver.endpoints.rest.discovery import EVENTS_V1, OtherResource
from kemu.api.v1 import types_pb2
from kemu.machinery import convert, fields
from kemu.machinery.jsonvalue import JSONObject

# core/v1 Event's JSON field -> events.k8s.io/v1's (Convert_core_Event_To_v1_Event)
_RENAMED: Final = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}

# events.k8s.io/v1's field labels -> the stored core Event's (AddFieldLabelConversionsForEvent)
FIELD_LABELS: Final = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    "reason": "reason",
    "type": "type",
    "reportingController": "reportingComponent",
    **{
        f"regarding.{f}": f"involvedObject.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
}


def to_events_v1(obj: Message) -> JSONObject:
    """A stored core/v1 Event as events.k8s.io/v1 serves it: note, regarding,
    reportingController and the deprecated* fields; eventTime null (kemu's Events have none,
    as core Events written by the legacy recorder)."""
    assert isinstance(obj, types_pb2.Event)
    core = convert.to_dict(obj, wire=True)
    out: JSONObject = {
        "kind": EVENTS_V1.kind,
        "apiVersion": f"{EVENTS_V1.group}/{EVENTS_V1.version}",
        "metadata": core.get("metadata", {}),
        "eventTime": None,
    }
    for key, value in core.items():
        if key not in ("kind", "apiVersion", "metadata"):
            out[_RENAMED.get(key, key)] = value
    out.setdefault("regarding", {})  # not omitted when empty, as upstream's struct field
    return out


@dataclass(frozen=True)
class View:
    """A stored kind served under another group version, converted on the way out."""

    resource: OtherResource
    render: Callable[[Message], JSONObject]
    field_labels: dict[str, str]

    @property
    def api_version(self) -> str:
        return f"{self.resource.group}/{self.resource.version}"

    def field_selector(self, text: str) -> str:
        return fields.rename_fields(text, self.field_labels)


EVENTS_V1_VIEW: Final = View(EVENTS_V1, to_events_v1, FIELD_LABELS)
