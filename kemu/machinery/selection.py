"""The label and field selectors of one list or watch request, parsed and matched the way the
apiserver does it. The apiserver's List and Watch and the fake client both build their filter
here, so a selector the apiserver refuses is refused by the fake with the same BadRequest and
message ("unable to parse requirement: ...", "field label not supported: ...")."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.machinery.fields import FieldSelector, parse_field_selector
from kemu.machinery.labels import Selector, parse_selector


class RequestFilter:
    """Label and field selectors of one list or watch request over `resource` (pods, nodes,
    ...); an empty string selects everything. BadRequest from the constructor when either is
    malformed or names a field the resource does not support."""

    def __init__(self, resource: str, label_selector: str = "", field_selector: str = "") -> None:
        self.labels: Selector | None = parse_selector(label_selector) if label_selector else None
        self.fields: FieldSelector | None = (
            parse_field_selector(resource, field_selector) if field_selector else None
        )

    @property
    def empty(self) -> bool:
        return self.labels is None and self.fields is None

    def exact(self, field: str) -> str | None:
        """The value the field selector's `=` term requires of `field`, if it has one."""
        return self.fields.exact(field) if self.fields is not None else None

    def matches(self, obj: Message) -> bool:
        if self.labels is not None and not self.labels.matches(obj.metadata.labels):  # type: ignore[attr-defined]
            return False
        return self.fields is None or self.fields.matches(obj)
