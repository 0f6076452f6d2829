"""Writes start from the watch cache's object, as upstream's Cacher.GuaranteedUpdate and the etcd3
store: an uncontended write is one etcd transaction; a stale guess costs one failed transaction
whose failure branch returns the key, and the retry runs on that; an outcome a stale guess could
have caused (a mutation or precondition error, nothing to write) is confirmed on the current
state before it is returned. The registry runs on an in-memory store that counts etcd calls and
a watch cache the tests hold back."""

from __future__ import annotations

from typing import Any

import pytest
from aetcd import rpc
from google.protobuf.message import Message

from apiserver.admission.plugins import SERVICE_ACCOUNT, AdmissionPlugins
from apiserver.registry.dry_run import DryRunStore
from apiserver.registry.registry import Registry, RegistrySettings
from apiserver.registry.store import object_key
from apiserver.storage import encoding
from apiserver.storage.etcd import Companion, EtcdStore, Guard, KeyValue, StaleRevision
from apiserver.storage.watch_cache import CachedObject
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import Conflict, NotFound
from kemu.machinery.kinds import BY_KIND, Kind
from kemu.machinery.namespaces import new_namespace, prepare_for_create

pytestmark = pytest.mark.anyio

POD_KEY = object_key(BY_KIND["Pod"], "default", "p")


class MemoryStore:
    """EtcdStore's write half in memory: mod revisions, compare-and-swap, and a failed compare
    that returns the key as it stands. `calls` records (operation, key, succeeded)."""

    def __init__(self) -> None:
        self.kvs: dict[str, KeyValue] = {}
        self.revision = 1
        self.calls: list[tuple[str, str, bool]] = []

    async def get(self, key: str, *, revision: int = 0) -> KeyValue | None:
        self.calls.append(("range", key, True))
        return self.kvs.get(key)

    # Fencing guards and lease holder records are not modelled here (tests/integration/
    # test_fencing.py runs them on etcd): none of these tests writes as a leader or a Lease.
    async def create(
        self,
        key: str,
        value: bytes,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        assert guard is None and companion is None
        self.calls.append(("create", key, key not in self.kvs))
        if key in self.kvs:
            raise Conflict(f"key {key} already exists")
        return self._put(key, value)

    async def update(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        assert guard is None and companion is None
        self._compare("update", key, expected_revision)
        return self._put(key, value)

    async def delete(
        self,
        key: str,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        assert guard is None and companion is None
        self._compare("delete", key, expected_revision)
        del self.kvs[key]
        self.revision += 1
        return self.revision

    def _compare(self, op: str, key: str, expected: int) -> None:
        kv = self.kvs.get(key)
        self.calls.append((op, key, kv is not None and kv.mod_revision == expected))
        if kv is None:
            raise NotFound(f"key {key} not found")
        if kv.mod_revision != expected:
            raise StaleRevision(f"key {key} was modified", kv)

    def _put(self, key: str, value: bytes) -> int:
        self.revision += 1
        old = self.kvs.get(key)
        created = old.create_revision if old is not None else self.revision
        self.kvs[key] = KeyValue(key, value, self.revision, created)
        return self.revision


class HeldCache:
    """A watch cache that has seen only what `sync` showed it."""

    def __init__(self, store: MemoryStore, kind: Kind) -> None:
        self._store = store
        self._kind = kind
        self._objects: dict[str, CachedObject] = {}
        self.revision = 0

    def sync(self) -> None:
        self._objects = {}
        self.revision = self._store.revision
        for key, kv in self._store.kvs.items():
            if key.startswith(f"/registry/{self._kind.resource}/"):
                data = encoding.with_resource_version(kv.value, kv.mod_revision)
                obj = self._kind.message.FromString(data)
                self._objects[key] = CachedObject(key, obj, kv.mod_revision, b"")

    def get(self, key: str) -> CachedObject | None:
        return self._objects.get(key)

    async def wait_fresh(self, revision: int) -> bool:
        return self.revision >= revision

    def objects(self) -> list[CachedObject]:
        return list(self._objects.values())


class Env:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.caches = {
            k.resource: HeldCache(self.store, k)
            for k in (BY_KIND[n] for n in ("Pod", "Namespace", "ConfigMap", "PriorityClass"))
        }
        self.registry = Registry(
            self.store,  # type: ignore[arg-type]
            self.caches,  # type: ignore[arg-type]
            # (no ServiceAccounts here: the plugin off, as where no controller-manager runs)
            RegistrySettings(
                FeatureGates.for_version(DEFAULT_VERSION),
                admission=AdmissionPlugins.from_flags([], [SERVICE_ACCOUNT]),
            ),
        )

    async def start(self, pod: types_pb2.Pod | None = None) -> None:
        ns = new_namespace("default")
        prepare_for_create(ns)
        await self.registry.create(ns)
        await self.registry.create(pod or _pod())
        self.sync()

    def sync(self) -> None:
        for c in self.caches.values():
            c.sync()
        self.store.calls.clear()

    def stored_pod(self) -> types_pb2.Pod:
        kv = self.store.kvs[POD_KEY]
        return types_pb2.Pod.FromString(encoding.with_resource_version(kv.value, kv.mod_revision))

    def ops(self) -> list[tuple[str, bool]]:
        return [(op, ok) for op, _, ok in self.store.calls]


def _pod(**labels: str) -> types_pb2.Pod:
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="default"))
    pod.metadata.labels.update(labels)
    pod.spec.containers.add(name="c", image="i")
    return pod


def _binding(node: str, *, uid: str = "", rv: str = "") -> api_pb2.Binding:
    b = api_pb2.Binding(metadata=types_pb2.ObjectMeta(name="p", namespace="default"))
    b.metadata.uid, b.metadata.resource_version = uid, rv
    b.target.name = node
    return b


async def _relabel(env: Env, value: str) -> None:
    """Another writer changes the pod; the watch cache has not seen it yet."""
    await env.registry.patch(
        "pods", "default", "p", f'{{"metadata":{{"labels":{{"a":"{value}"}}}}}}', ""
    )


async def test_an_uncontended_bind_is_one_transaction_and_no_read() -> None:
    env = Env()
    await env.start()
    await env.registry.bind(_binding("n1"))
    assert env.ops() == [("update", True)]
    assert env.stored_pod().spec.node_name == "n1"


async def test_without_the_key_in_the_cache_etcd_is_read_first() -> None:
    env = Env()
    await env.start()
    env.caches["pods"]._objects.clear()
    await env.registry.bind(_binding("n1"))
    assert env.ops() == [("range", True), ("update", True)]


async def test_a_stale_guess_retries_on_what_the_failed_transaction_returned() -> None:
    env = Env()
    await env.start()
    await _relabel(env, "x")
    env.store.calls.clear()
    await env.registry.bind(_binding("n1"))
    assert env.ops() == [("update", False), ("update", True)]  # no read
    pod = env.stored_pod()
    assert (pod.spec.node_name, pod.metadata.labels["a"]) == ("n1", "x")


async def test_a_mutation_error_on_a_stale_guess_is_confirmed_on_the_current_state() -> None:
    env = Env()
    gated = _pod()
    gated.spec.scheduling_gates.add(name="g")
    await env.start(gated)
    # The gate is removed; the cache still has it: the bind's "gated" error is not the answer.
    await env.registry.patch("pods", "default", "p", '{"spec":{"schedulingGates":null}}', "")
    env.store.calls.clear()
    await env.registry.bind(_binding("n1"))
    assert env.ops() == [("range", True), ("update", True)]
    assert env.stored_pod().spec.node_name == "n1"


async def test_a_mutation_error_confirmed_current_is_returned_after_one_read() -> None:
    env = Env()
    gated = _pod()
    gated.spec.scheduling_gates.add(name="g")
    await env.start(gated)
    with pytest.raises(Conflict, match="non-empty .spec.schedulingGates"):
        await env.registry.bind(_binding("n1"))
    assert env.ops() == [("range", True)]


async def test_a_pinned_resource_version_against_a_stale_cache() -> None:
    env = Env()
    await env.start()
    cached_rv = env.stored_pod().metadata.resource_version
    await _relabel(env, "x")
    current_rv = env.stored_pod().metadata.resource_version
    env.store.calls.clear()
    # Pinned to the current revision: the stale guess does not make it a Conflict.
    await env.registry.bind(_binding("n1", rv=current_rv))
    assert env.stored_pod().spec.node_name == "n1"
    # Pinned to the revision the cache holds, which etcd has moved past: Conflict, nothing
    # written (the compare fails; the precondition fails on what it returned).
    env2 = Env()
    await env2.start()
    await _relabel(env2, "x")
    env2.store.calls.clear()
    with pytest.raises(Conflict):
        await env2.registry.bind(_binding("n1", rv=cached_rv))
    assert env2.stored_pod().spec.node_name == ""
    assert all(op != "update" or not ok for op, ok in env2.ops())
    # An update pinned to the cached revision: the resourceVersion precondition, the same.
    stale = env2.stored_pod()
    stale.metadata.resource_version = cached_rv
    stale.metadata.labels["b"] = "y"
    with pytest.raises(Conflict, match="the object has been modified"):
        await env2.registry.update(stale)
    assert "b" not in env2.stored_pod().metadata.labels


async def test_a_no_op_on_a_stale_guess_is_confirmed_and_written_when_it_is_not_one() -> None:
    env = Env()
    await env.start(_pod(a="1"))
    await _relabel(env, "2")
    env.store.calls.clear()
    # a=1 is a no-op on the cached pod, not on the stored one
    await _relabel(env, "1")
    assert env.ops() == [("range", True), ("update", True)]
    assert env.stored_pod().metadata.labels["a"] == "1"


async def test_a_no_op_on_a_stale_guess_runs_the_mutation_again_when_the_object_moved() -> None:
    env = Env()
    await env.start(_pod(a="1"))
    # Another writer rewrites the same content at a new revision; the cache has not seen it.
    await _relabel(env, "2")
    await _relabel(env, "1")
    env.store.calls.clear()
    seen: list[str] = []

    def mutate(obj: Message) -> Message:
        assert isinstance(obj, types_pb2.Pod)
        seen.append(obj.metadata.resource_version)
        return obj

    out = await env.registry.guaranteed_update(BY_KIND["Pod"], "default", "p", mutate)
    # the no-op on the cached pod is confirmed by one read; the object moved, so the
    # mutation runs again on what was read (as upstream's refresh-and-continue)
    assert env.ops() == [("range", True)]
    assert len(seen) == 2 and seen[0] != seen[1]
    assert out.metadata.resource_version == seen[1]  # type: ignore[attr-defined]


async def test_a_no_op_on_a_current_guess_writes_nothing_after_one_read() -> None:
    env = Env()
    await env.start(_pod(a="1"))
    rv = env.stored_pod().metadata.resource_version
    result = await env.registry.patch(
        "pods", "default", "p", '{"metadata":{"labels":{"a":"1"}}}', ""
    )
    assert env.ops() == [("range", True)]
    assert result.metadata.resource_version == rv  # type: ignore[attr-defined]
    # what is returned is not the cache's object
    assert result is not env.caches["pods"].get(POD_KEY).obj  # type: ignore[union-attr]


async def test_a_delete_from_a_stale_guess_retries_on_the_returned_state() -> None:
    env = Env()
    await env.start()
    cm = types_pb2.ConfigMap(metadata=types_pb2.ObjectMeta(name="c", namespace="default"))
    await env.registry.create(cm)
    env.sync()
    await env.registry.patch("configmaps", "default", "c", '{"data":{"k":"v"}}', "")
    env.store.calls.clear()
    cached = env.caches["configmaps"].get(object_key(BY_KIND["ConfigMap"], "default", "c"))
    assert cached is not None
    cached_rv = cached.obj.metadata.resource_version  # type: ignore[attr-defined]
    out = await env.registry.delete(
        "configmaps", "default", "c", grace_period=None, uid=None, resource_version=None
    )
    assert env.ops() == [("delete", False), ("delete", True)]
    assert out.data["k"] == "v"  # type: ignore[attr-defined]
    # the cache's object was not touched
    assert cached.obj.metadata.resource_version == cached_rv  # type: ignore[attr-defined]


async def test_an_uncontended_delete_is_one_transaction() -> None:
    env = Env()
    await env.start()
    await env.registry.delete(
        "pods", "default", "p", grace_period=0, uid=None, resource_version=None
    )
    # an unbound pod: marked with grace 0, then removed
    assert env.ops() == [("update", True), ("delete", True)]
    assert POD_KEY not in env.store.kvs


async def test_a_delete_precondition_on_a_stale_guess_is_confirmed() -> None:
    env = Env()
    await env.start()
    await _relabel(env, "x")
    current_rv = env.stored_pod().metadata.resource_version
    env.store.calls.clear()
    await env.registry.delete(
        "pods", "default", "p", grace_period=0, uid=None, resource_version=current_rv
    )
    assert env.ops()[0] == ("range", True)
    assert POD_KEY not in env.store.kvs


async def test_dry_run_from_a_stale_guess_writes_nothing() -> None:
    env = Env()
    await env.start()
    await _relabel(env, "x")
    before = env.store.kvs[POD_KEY]
    env.store.calls.clear()
    await env.registry.dry_run().bind(_binding("n1"))
    assert env.store.kvs[POD_KEY] == before
    assert [op for op, _ in env.ops()] == ["range", "range"]  # the two dry-run compares


async def test_the_dry_run_store_returns_the_current_key_on_a_stale_compare() -> None:
    env = Env()
    await env.start()
    kv = env.store.kvs[POD_KEY]
    with pytest.raises(StaleRevision) as err:
        await DryRunStore(env.store).update(POD_KEY, b"", kv.mod_revision - 1)
    assert err.value.current == kv


class _KV:
    """etcd's KV service, answering every Txn with `response`."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.requests: list[Any] = []

    async def Txn(self, request: Any, **_: Any) -> Any:  # the gRPC method
        self.requests.append(request)
        return self.response


def _failed_txn(kvs: list[Any]) -> Any:
    return rpc.TxnResponse(
        succeeded=False,
        responses=[rpc.ResponseOp(response_range=rpc.RangeResponse(kvs=kvs))],
    )


async def test_a_failed_compare_returns_the_key_from_its_failure_branch() -> None:
    store = EtcdStore(["127.0.0.1:1"])
    try:
        kv = rpc.KeyValue(key=b"/k", value=b"now", mod_revision=7, create_revision=3)
        fake = _KV(_failed_txn([kv]))
        store._kv = fake
        with pytest.raises(StaleRevision) as err:
            await store.update("/k", b"v", 5)
        assert err.value.current == KeyValue("/k", b"now", 7, 3)
        with pytest.raises(StaleRevision):
            await store.delete("/k", 5)
        for req in fake.requests:  # the failure branch reads the value, not only the key
            assert not req.failure[0].request_range.keys_only
        store._kv = _KV(_failed_txn([]))
        with pytest.raises(NotFound):
            await store.update("/k", b"v", 5)
    finally:
        await store.close()
