"""What code that talks to the apiserver depends on: the real `Client` or the `FakeClient`.

Kinds are named by their message class (types_pb2.Pod, Node, ...). For namespaced kinds the
single-object verbs default the namespace to "default", as kubectl does; list and watch with
namespace "" cover every namespace. Every failure is a kemu.machinery.errors.ApiError.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import api_pb2, clock_pb2, types_pb2

M = TypeVar("M", bound=Message)

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
BOOKMARK: Final = "BOOKMARK"

DEFAULT_NAMESPACE: Final = "default"
LIST_PAGE_SIZE: Final = 500


@dataclass(frozen=True)
class ListResult(Generic[M]):
    items: list[M]
    resource_version: str
    continue_: str


@dataclass(frozen=True)
class WatchEvent(Generic[M]):
    """One change: `type` is ADDED, MODIFIED, DELETED or BOOKMARK.

    A BOOKMARK's object carries only metadata.resourceVersion (progress, no change).
    A DELETED object is the last state, with the resourceVersion of the deletion.
    """

    type: str
    object: M


class ApiClient(Protocol):
    async def close(self) -> None: ...

    async def wait_ready(self, timeout: float | None = None) -> api_pb2.VersionInfo:  # noqa: ASYNC109
        """Waits until the server answers Version (None: forever); Timeout error otherwise."""
        ...

    async def create(self, obj: M) -> M: ...

    async def get(self, kind: type[M], name: str, namespace: str = "") -> M: ...

    async def list(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
        limit: int = 0,
        continue_: str = "",
    ) -> ListResult[M]: ...

    async def list_all(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult[M]:
        """Every matching object, read in pages of LIST_PAGE_SIZE."""
        ...

    def watch(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]]:
        """A stream of changes; leaving the context ends the stream on the server too.

        resource_version "" or "0": ADDED events for the current state first, then changes;
        "N": every change after N. A too old N raises Gone (Expired) from the iteration, a
        future one Timeout after 3 s. The iteration ends normally when the server closes the
        stream; a lost connection raises Unavailable. allow_watch_bookmarks: BOOKMARK events
        (only metadata.resourceVersion) while idle. send_initial_events with
        resource_version_match "NotOlderThan" (the watch-list protocol): the state as ADDED
        events, then a BOOKMARK annotated k8s.io/initial-events-end, then changes.
        """
        ...

    async def update(self, obj: M) -> M:
        """Replaces the object (not its status); a stale metadata.resourceVersion is a Conflict."""
        ...

    async def update_status(self, obj: M) -> M: ...

    async def patch(
        self,
        kind: type[M],
        name: str,
        patch: Mapping[str, object] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> M:
        """A JSON merge patch; a metadata.resourceVersion in it is a precondition."""
        ...

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> M:
        """Deletes, or starts deleting: the object as it stands after the call (being deleted
        while a kubelet finishes it or finalizers hold it, else its last state).
        propagation_policy: Orphan, Background or Foreground (kemu.machinery.delete_options);
        orphan_dependents is its deprecated form."""
        ...

    async def list_custom(
        self, resource: str, namespace: str = ""
    ) -> tuple[types_pb2.CustomObject, ...]:
        """Every custom resource of `resource` (plural.group) in `namespace` ("" all)."""
        ...

    async def list_all_custom(
        self, resource: str, namespace: str = ""
    ) -> ListResult[types_pb2.CustomObject]:
        """list_custom with the list's resourceVersion (what an informer watches from)."""
        ...

    def watch_custom(
        self,
        resource: str,
        namespace: str = "",
        *,
        resource_version: str = "",
        allow_watch_bookmarks: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[types_pb2.CustomObject]]]:
        """`watch` of a custom resource (plural.group)."""
        ...

    async def get_custom(
        self, resource: str, name: str, namespace: str = ""
    ) -> types_pb2.CustomObject: ...

    async def patch_custom(
        self, resource: str, name: str, patch: Mapping[str, object], namespace: str = ""
    ) -> types_pb2.CustomObject:
        """A JSON merge patch of a custom resource (a metadata.resourceVersion in it is a
        precondition)."""
        ...

    async def delete_custom(
        self,
        resource: str,
        name: str,
        namespace: str,
        *,
        uid: str,
        propagation_policy: str,
        resource_version: str | None = None,
    ) -> None:
        """Deletes one custom resource (uid and, when given, resourceVersion preconditions)."""
        ...

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        uid: str = "",
        resource_version: str = "",
    ) -> None: ...

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod: ...

    async def evict(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> None:
        """pods/eviction: the pod's PodDisruptionBudget must allow it (TooManyRequests
        otherwise); the pod gets DisruptionTarget, then a DELETE with these options."""
        ...

    async def version(self) -> api_pb2.VersionInfo: ...

    async def clock_status(self) -> clock_pb2.ClockStatus:
        """The cluster clock (kemu only): mode, time and, in virtual time, rate and timers."""
        ...

    async def set_clock_rate(self, rate: float) -> clock_pb2.ClockStatus:
        """Sets the virtual clock's rate (0 holds it, math.inf: rate max); BadRequest in real
        time."""
        ...

    async def advance_clock(
        self,
        seconds: float,
        timeout: float = ...,  # noqa: ASYNC109
    ) -> clock_pb2.ClockStatus:
        """Runs the cluster as at rate max for `seconds` of virtual time, then holds the
        clock; BadRequest in real time."""
        ...
