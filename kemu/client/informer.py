"""Reflector, informer and lister, as client-go's tools/cache: a local, indexed copy of one
kind kept current by list + watch, with event handlers.

The reflector lists (in pages) and watches from the list's resourceVersion. A watch that ends
or loses its connection is resumed from the last resourceVersion seen (bookmarks included),
after a backoff if it delivered nothing; a Gone (the resourceVersion was compacted) or any
other error relists, and the relist is delivered as the differences against the cache:
on_add for new objects, on_update for changed ones (a different resourceVersion), on_delete
for vanished ones.

A listed object whose resourceVersion equals the cached one's is the same version of the same
object: the cache keeps the object it holds (the one every handler was given) and drops the
listed copy, and no handler hears of it. Upstream's Replace stores the listed copy and gives it
as an update only to handlers that asked for a periodic resync (sharedIndexInformer.OnUpdate
treats a same-resourceVersion update as a sync; sharedProcessor.distribute skips non-resyncing
listeners); kemu has no resync, so no handler would get it, and keeping the cached object means
the informer and its handlers (the scheduler's cache, its queue) share one copy of each object
after a relist instead of holding two.

Objects handed to handlers and returned by the lister are the informer's own copies, shared
by every reader: never mutate them; copy first (`m = type(obj)(); m.CopyFrom(obj)`).

A `keep` predicate filters on the client what no server-side selector can express (a hollow
kubelet running K nodes wants the pods of those K, and upstream's field selectors take one
value per field): an object it rejects is neither stored nor handed to a handler, as if the
server had filtered it, and one that stops being kept is delivered as a delete of the cached
object (as the apiserver does when an object stops matching a watch's selector). A kept object
is copied out of the list or watch response it came in: a decoded protobuf sub-message shares
its whole response's memory, so without the copy one kept object would hold every dropped one
of its batch. `copy_objects` copies every stored object the same way without filtering (the
scheduler's informers: one Running pod would otherwise pin the older versions of up to 500
pods batched with it); it is not part of an informer's identity in the factory, which gives it
to all its informers.
Handlers run synchronously in the informer's task, in event order; an exception in one is
logged and does not stop the others or the informer.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Generic, Never, Protocol, TypeAlias, TypeVar, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus
from google.protobuf.message import Message

from kemu.client.backoff import Backoff
from kemu.client.interface import (
    ADDED,
    BOOKMARK,
    DEFAULT_NAMESPACE,
    DELETED,
    MODIFIED,
    ApiClient,
    ListResult,
    M,
    WatchEvent,
)
from kemu.component.clock import Clock, RealClock
from kemu.machinery import kinds
from kemu.machinery.errors import ApiError, Gone, Timeout, TooManyRequests, Unavailable
from kemu.machinery.keys import object_key, object_meta, revision_of

logger = logging.getLogger(__name__)

M_contra = TypeVar("M_contra", bound=Message, contravariant=True)

_BACKOFF_INITIAL: Final = 0.2
_BACKOFF_MAX: Final = 10.0

# Errors after which the watch is resumed from the last resourceVersion rather than relisted.
_RESUMABLE: Final = (Unavailable, Timeout, TooManyRequests)


class ResourceEventHandler(Protocol[M_contra]):
    """Receives the informer's changes. Must not block and must not mutate its arguments."""

    def on_add(self, obj: M_contra) -> None: ...

    def on_update(self, old: M_contra, new: M_contra) -> None: ...

    def on_delete(self, obj: M_contra) -> None: ...


class FuncHandler(Generic[M]):
    """A ResourceEventHandler from functions; a missing one ignores its events."""

    def __init__(
        self,
        on_add: Callable[[M], None] | None = None,
        on_update: Callable[[M, M], None] | None = None,
        on_delete: Callable[[M], None] | None = None,
    ) -> None:
        self._add = on_add
        self._update = on_update
        self._delete = on_delete

    def on_add(self, obj: M) -> None:
        if self._add is not None:
            self._add(obj)

    def on_update(self, old: M, new: M) -> None:
        if self._update is not None:
            self._update(old, new)

    def on_delete(self, obj: M) -> None:
        if self._delete is not None:
            self._delete(obj)


class Lister(Generic[M]):
    """Read access to an informer's cache. Returned objects are shared: do not mutate them."""

    def __init__(self, informer: Informer[M]) -> None:
        self._informer = informer

    def get(self, name: str, namespace: str = "") -> M | None:
        """The object, or None. For a namespaced kind the namespace defaults to "default"."""
        inf = self._informer
        if inf.namespaced:
            namespace = namespace or DEFAULT_NAMESPACE
            return inf._items.get(f"{namespace}/{name}")
        return inf._items.get(name)

    def list(self, namespace: str | None = None) -> list[M]:
        """Every object (namespace None), or those of one namespace."""
        inf = self._informer
        if namespace is None:
            return list(inf._items.values())
        keys = inf._by_namespace.get(namespace, {})
        return [inf._items[k] for k in keys]

    def by_index(self, index_name: str, value: str) -> builtins.list[M]:
        inf = self._informer
        if index_name not in inf._indexers:
            raise KeyError(f"no index named {index_name!r}")
        keys = inf._indices[index_name].get(value, {})
        return [inf._items[k] for k in keys]

    def keys(self) -> builtins.list[str]:
        return list(self._informer._items)

    def __len__(self) -> int:
        return len(self._informer._items)


class Informer(Generic[M]):
    """A cache of one kind (optionally one namespace and selectors) with event handlers."""

    def __init__(
        self,
        client: ApiClient,
        kind: type[M],
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        keep: Callable[[M], bool] | None = None,
        copy_objects: bool = False,
        clock: Clock | None = None,
        custom_resource: str = "",
    ) -> None:
        """`keep`, `copy_objects`: see the module's docstring; without `keep` every object the
        server sends is kept. `custom_resource`: the plural.group of a registered custom
        resource (`kind` is then CustomObject; its selectors are not supported)."""
        self._client = client
        self._kind = kind
        self._custom = custom_resource
        k = kinds.kind_for_resource(custom_resource) if custom_resource else kinds.kind_of(kind())
        self.namespaced = k.namespaced
        self.resource = k.resource
        self._namespace = namespace if k.namespaced else ""
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._keep = keep
        self._copy = copy_objects
        self.dropped = 0
        """Objects (list items and watch events) the `keep` predicate rejected."""
        self._clock: Clock = clock or RealClock()
        self._items: dict[str, M] = {}
        self._by_namespace: dict[str, dict[str, None]] = {}
        self._indexers: dict[str, Callable[[M], list[str]]] = {}
        self._indices: dict[str, dict[str, dict[str, None]]] = {}
        self._handlers: list[ResourceEventHandler[M]] = []
        self._synced = False
        self._synced_event: anyio.Event | None = None
        self._running = False
        self._lister = Lister(self)
        self.last_resource_version = ""
        self.lists = 0
        """How many complete lists the informer made (1 + relists); resumed watches add none."""

    def __repr__(self) -> str:
        return f"Informer({self.resource}, namespace={self._namespace!r})"

    @property
    def name(self) -> str:
        """The resource, and the namespace and selectors when set: "pods",
        "configmaps in kube-system", "pods [status.phase!=Failed,...]"."""
        text = self.resource
        if self._namespace:
            text += f" in {self._namespace}"
        selectors = ";".join(s for s in (self._label_selector, self._field_selector) if s)
        if selectors:
            text += f" [{selectors}]"
        if self._keep is not None:
            text += " (filtered)"
        return text

    @property
    def lister(self) -> Lister[M]:
        return self._lister

    @property
    def kind(self) -> type[M]:
        return self._kind

    def has_synced(self) -> bool:
        return self._synced

    async def wait_for_sync(self) -> None:
        if self._synced:
            return
        if self._synced_event is None:
            self._synced_event = anyio.Event()
        await self._synced_event.wait()

    def add_event_handler(self, handler: ResourceEventHandler[M]) -> None:
        """Adds a handler; one added after the first sync first gets on_add for every cached
        object (in the caller's task), then the live events."""
        self._handlers.append(handler)
        if self._synced:
            for obj in list(self._items.values()):
                self._call(handler.on_add, obj)

    def add_indexer(self, name: str, fn: Callable[[M], list[str]]) -> None:
        """Indexes the cache by the values `fn` returns for each object (see Lister.by_index)."""
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = fn
        self._indices[name] = {}
        for key, obj in self._items.items():
            self._index_add(name, key, obj)

    # ------------------------------------------------------------ a keep predicate that moved

    def refilter(self) -> None:
        """The `keep` predicate keeps less than it did (a hollow kubelet stopped running a
        node): cached objects it no longer keeps are delivered as deletes, as when an object
        stops matching a watch's selector."""
        keep = self._keep
        if keep is None:
            return
        for key, obj in list(self._items.items()):
            if not keep(obj):
                self._remove(key)
                self._notify_delete(obj)

    def merge(self, items: Iterable[M]) -> None:
        """The `keep` predicate keeps more than it did (a hollow kubelet started running a
        node): `items`, listed apart after the predicate moved, were dropped on arrival
        before. Each kept one newer than the cached copy (by resourceVersion) is stored and
        delivered as an add or an update. From the move on the watch keeps their changes; one
        it delivers late (older than the listed copy) is followed by the newer ones, as every
        change after the informer's resourceVersion reaches it in order."""
        for item in items:
            key = object_key(item)
            cached = self._items.get(key)
            if cached is not None and revision_of(cached) >= revision_of(item):
                continue
            obj = self._kept(item)
            if obj is None:
                continue
            old = self._store(key, obj)
            if old is None:
                self._notify_add(obj)
            else:
                self._notify_update(old, obj)

    # ------------------------------------------------------------ the cache

    def _index_add(self, name: str, key: str, obj: M) -> None:
        index = self._indices[name]
        for value in self._indexers[name](obj):
            index.setdefault(value, {})[key] = None

    def _index_remove(self, name: str, key: str, obj: M) -> None:
        index = self._indices[name]
        for value in self._indexers[name](obj):
            keys = index.get(value)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del index[value]

    def _store(self, key: str, obj: M) -> M | None:
        old = self._items.get(key)
        if old is not None:
            for name in self._indexers:
                self._index_remove(name, key, old)
        self._items[key] = obj
        self._by_namespace.setdefault(object_meta(obj).namespace, {})[key] = None
        for name in self._indexers:
            self._index_add(name, key, obj)
        return old

    def _remove(self, key: str) -> M | None:
        old = self._items.pop(key, None)
        if old is not None:
            ns = object_meta(old).namespace
            keys = self._by_namespace.get(ns)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del self._by_namespace[ns]
            for name in self._indexers:
                self._index_remove(name, key, old)
        return old

    def _call(self, fn: Callable[..., None], *args: M) -> None:
        try:
            fn(*args)
        except Exception:
            logger.exception("%s: event handler %r failed", self.resource, fn)

    def _notify_add(self, obj: M) -> None:
        for h in list(self._handlers):
            self._call(h.on_add, obj)

    def _notify_update(self, old: M, new: M) -> None:
        for h in list(self._handlers):
            self._call(h.on_update, old, new)

    def _notify_delete(self, obj: M) -> None:
        for h in list(self._handlers):
            self._call(h.on_delete, obj)

    def _kept(self, obj: M) -> M | None:
        """`obj`, or with a `keep` predicate its own copy if kept and None if not; with
        `copy_objects`, its own copy."""
        keep = self._keep
        if keep is None:
            if not self._copy:
                return obj
        elif not keep(obj):
            self.dropped += 1
            return None
        own = self._kind()
        own.CopyFrom(obj)
        return own

    def _replace(self, items: Iterable[M], resource_version: str) -> None:
        """Makes the cache equal to a fresh list, delivering the differences."""
        seen: set[str] = set()
        for item in items:
            key = object_key(item)
            cached = self._items.get(key)
            if (
                cached is not None
                and object_meta(cached).resource_version == object_meta(item).resource_version
            ):
                # Unchanged: keep the cached object (see the module's docstring), if the
                # `keep` predicate still keeps it.
                if self._keep is None or self._keep(item):
                    seen.add(key)
                else:
                    self.dropped += 1
                continue
            obj = self._kept(item)
            if obj is None:
                continue
            seen.add(key)
            old = self._store(key, obj)
            if old is None:
                self._notify_add(obj)
            else:
                self._notify_update(old, obj)
        for key in [k for k in self._items if k not in seen]:
            old = self._remove(key)
            if old is not None:
                self._notify_delete(old)
        self.last_resource_version = resource_version

    def _apply(self, event_type: str, obj: M) -> None:
        rv = object_meta(obj).resource_version
        if event_type == BOOKMARK:
            if rv:
                self.last_resource_version = rv
            return
        key = object_key(obj)
        if event_type in (ADDED, MODIFIED):
            own = self._kept(obj)
            if own is not None:
                old = self._store(key, own)
                if old is None:
                    self._notify_add(own)
                else:
                    self._notify_update(old, own)
            else:
                # No longer kept (or never was): gone from this informer's view.
                gone = self._remove(key)
                if gone is not None:
                    self._notify_delete(gone)
        elif event_type == DELETED:
            if self._keep is None:
                self._remove(key)
                self._notify_delete(obj)
            else:
                # Only what the cache holds was kept; the rest was never seen.
                if self._remove(key) is not None:
                    self._notify_delete(obj)
                else:
                    self.dropped += 1
        else:
            logger.warning("%s: ignoring a watch event of type %r", self.resource, event_type)
            return
        if rv:
            self.last_resource_version = rv

    def _mark_synced(self) -> None:
        if not self._synced:
            self._synced = True
            if self._synced_event is not None:
                self._synced_event.set()

    async def _list_all(self) -> ListResult[M]:
        if self._custom:
            custom = await self._client.list_all_custom(self._custom, self._namespace)
            return cast(ListResult[M], custom)
        return await self._client.list_all(
            self._kind,
            self._namespace,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
        )

    def _open_watch(self) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]]:
        if self._custom:
            return cast(
                AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]],
                self._client.watch_custom(
                    self._custom,
                    self._namespace,
                    resource_version=self.last_resource_version,
                    allow_watch_bookmarks=True,
                ),
            )
        return self._client.watch(
            self._kind,
            self._namespace,
            resource_version=self.last_resource_version,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
            allow_watch_bookmarks=True,
        )

    async def list_fresh(self) -> tuple[builtins.list[M], str]:
        """What the cache should hold now, and the list's resourceVersion: a consistent list
        from the apiserver with this informer's namespace and selectors, filtered by its `keep`
        predicate (kemu.client.comparer checks caches against it). The objects are the
        response's, not stored."""
        result = await self._list_all()
        keep = self._keep
        items = result.items if keep is None else [o for o in result.items if keep(o)]
        return items, result.resource_version

    # ------------------------------------------------------------ the reflector

    async def _list(self) -> None:
        result = await self._list_all()
        self._replace(result.items, result.resource_version)
        self.lists += 1
        logger.debug(
            "%s: listed %d objects at resourceVersion %s",
            self.resource,
            len(result.items),
            result.resource_version,
        )

    async def _watch(self) -> int:
        """Watches from the last resourceVersion until the stream ends; returns the number of
        events received."""
        count = 0
        async with self._open_watch() as events:
            async for event in events:
                count += 1
                if not isinstance(event.object, self._kind):
                    logger.warning(
                        "%s: ignoring a watch event carrying a %s",
                        self.resource,
                        event.object.DESCRIPTOR.name,
                    )
                    continue
                self._apply(event.type, event.object)
        return count

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keeps the cache current until cancelled; `task_status.started()` after the first
        complete list."""
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        try:
            await self._run(task_status)
        finally:
            self._running = False

    async def _run(self, task_status: TaskStatus[None]) -> None:
        backoff = Backoff(_BACKOFF_INITIAL, _BACKOFF_MAX, jitter=0.2)
        need_list = True
        started = False
        while True:
            if need_list:
                try:
                    await self._list()
                except ApiError as e:
                    delay = backoff.next()
                    logger.warning(
                        "%s: list failed (%s: %s), retrying in %.1fs",
                        self.resource,
                        e.reason,
                        e,
                        delay,
                    )
                    await self._clock.sleep(delay)
                    continue
                need_list = False
                backoff.reset()
                self._mark_synced()
                if not started:
                    started = True
                    task_status.started()
            try:
                received = await self._watch()
            except Gone as e:
                logger.info(
                    "%s: watch from resourceVersion %s is gone (%s), relisting",
                    self.resource,
                    self.last_resource_version,
                    e,
                )
                need_list = True
                continue
            except _RESUMABLE as e:
                delay = backoff.next()
                logger.info(
                    "%s: watch failed (%s: %s), resuming from %s in %.1fs",
                    self.resource,
                    e.reason,
                    e,
                    self.last_resource_version,
                    delay,
                )
                await self._clock.sleep(delay)
                continue
            except ApiError as e:
                delay = backoff.next()
                logger.warning(
                    "%s: watch failed (%s: %s), relisting in %.1fs",
                    self.resource,
                    e.reason,
                    e,
                    delay,
                )
                need_list = True
                await self._clock.sleep(delay)
                continue
            if received:
                backoff.reset()
            else:
                # A server that closes watches at once must not be hammered.
                await self._clock.sleep(backoff.next())
            logger.debug(
                "%s: watch ended, resuming from %s", self.resource, self.last_resource_version
            )


# kind, namespace, label selector, field selector, keep predicate (of the kind's objects:
# compared, never called, here).
_FactoryKey = tuple[str, str, str, str, Callable[[Never], bool] | None]

AnyInformer: TypeAlias = "Informer[Any]"
"""An informer of some kind: a factory holds informers of every kind (each is typed by its
kind where it is asked for)."""


class InformerFactory:
    """One shared informer per (kind, namespace, selectors), as client-go's
    SharedInformerFactory. Ask for informers, then `await start(tg)`, then use the listers."""

    def __init__(
        self, client: ApiClient, *, clock: Clock | None = None, copy_objects: bool = False
    ) -> None:
        """`copy_objects`: every informer of the factory stores its own copies (see the
        module's docstring)."""
        self._client = client
        self._clock = clock
        self._copy = copy_objects
        self._informers: dict[_FactoryKey, AnyInformer] = {}
        self._started: set[_FactoryKey] = set()

    def informer(
        self,
        kind: type[M],
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        keep: Callable[[M], bool] | None = None,
    ) -> Informer[M]:
        """The shared informer; `keep` (see Informer) is part of its identity: the same
        function object gives the same informer."""
        key = (kind.DESCRIPTOR.full_name, namespace, label_selector, field_selector, keep)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(
                self._client,
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                keep=keep,
                copy_objects=self._copy,
                clock=self._clock,
            )
            self._informers[key] = inf
        return cast(Informer[M], inf)

    def informers(self) -> list[AnyInformer]:
        """Every informer asked for, in the order asked."""
        return list(self._informers.values())

    def start(self, tg: TaskGroup) -> None:
        """Starts, in `tg`, every informer not started yet."""
        for key, inf in self._informers.items():
            if key not in self._started:
                self._started.add(key)
                tg.start_soon(inf.run, name=f"informer {inf.resource}")

    async def wait_for_cache_sync(self) -> None:
        for inf in list(self._informers.values()):
            await inf.wait_for_sync()

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers.values())
