from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.fake import FakeClient
from kemu.client.interface import ApiClient, ListResult, WatchEvent
from kemu.component.featuregate import CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING, FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import AlreadyExists, BadRequest, Conflict, Gone, NotFound, Unavailable

from .helpers import node, pod

Pod = types_pb2.Pod


def _both_are_api_clients(c: Client, f: FakeClient) -> list[ApiClient]:
    return [c, f]  # checked by mypy: both satisfy the protocol


@pytest.mark.anyio
async def test_create_sets_identity_and_increasing_resource_versions() -> None:
    fake = FakeClient()
    a = await fake.create(pod("a"))
    b = await fake.create(pod("b"))
    assert a.metadata.uid and a.metadata.generation == 1
    assert a.metadata.HasField("creation_timestamp")
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    n = await fake.create(node("n1"))
    assert n.metadata.namespace == ""
    with pytest.raises(AlreadyExists):
        await fake.create(pod("a"))
    with pytest.raises(NotFound):
        await fake.get(Pod, "missing")


@pytest.mark.anyio
async def test_namespace_defaults_to_default_for_single_object_verbs() -> None:
    fake = FakeClient()
    await fake.create(pod("a", namespace=""))
    got = await fake.get(Pod, "a")
    assert got.metadata.namespace == "default"


@pytest.mark.anyio
async def test_update_with_stale_resource_version_conflicts() -> None:
    fake = FakeClient()
    created = await fake.create(pod("a"))
    first = Pod()
    first.CopyFrom(created)
    first.metadata.labels["x"] = "1"
    updated = await fake.update(first)
    assert updated.metadata.labels["x"] == "1"
    stale = Pod()
    stale.CopyFrom(created)
    stale.metadata.labels["x"] = "2"
    with pytest.raises(Conflict):
        await fake.update(stale)


@pytest.mark.anyio
async def test_update_keeps_status_and_update_status_keeps_the_rest() -> None:
    fake = FakeClient()
    created = await fake.create(pod("a"))
    p = Pod()
    p.CopyFrom(created)
    p.status.phase = "Running"
    p.metadata.labels["kept"] = "yes"  # pods/status may change labels (upstream)
    p.spec.node_name = "ignored"
    after = await fake.update_status(p)
    assert after.status.phase == "Running"
    assert after.metadata.labels["kept"] == "yes"
    assert after.spec.node_name == ""
    p2 = Pod()
    p2.CopyFrom(after)
    p2.status.phase = "Failed"
    p2.spec.node_name = "n1"
    after2 = await fake.update(p2)
    assert after2.status.phase == "Running"
    assert after2.spec.node_name == "n1"
    assert after2.metadata.generation == 2


@pytest.mark.anyio
async def test_list_filters_by_namespace_labels_and_fields_and_pages() -> None:
    fake = FakeClient()
    await fake.create(pod("a", "ns1", labels={"app": "web"}, node="n1"))
    await fake.create(pod("b", "ns1", labels={"app": "db"}))
    await fake.create(pod("c", "ns2", labels={"app": "web"}))

    def names(result: ListResult[Pod]) -> list[str]:
        return [p.metadata.name for p in result.items]

    assert names(await fake.list(Pod)) == ["a", "b", "c"]
    assert names(await fake.list(Pod, "ns1")) == ["a", "b"]
    assert names(await fake.list(Pod, label_selector="app=web")) == ["a", "c"]
    assert names(await fake.list(Pod, label_selector="app in (db, x)")) == ["b"]
    assert names(await fake.list(Pod, label_selector="app,app!=web")) == ["b"]
    assert names(await fake.list(Pod, field_selector="spec.nodeName=n1")) == ["a"]
    assert names(await fake.list(Pod, field_selector="spec.nodeName!=")) == ["a"]
    page = await fake.list(Pod, limit=2)
    assert names(page) == ["a", "b"] and page.continue_
    rest = await fake.list(Pod, limit=2, continue_=page.continue_)
    assert names(rest) == ["c"] and not rest.continue_
    everything = await fake.list_all(Pod)
    assert names(everything) == ["a", "b", "c"]
    assert everything.resource_version == fake.resource_version
    with pytest.raises(BadRequest):
        await fake.list(Pod, label_selector="a b")
    # The apiserver's field labels only: spec.priority is a field, but not a field label.
    with pytest.raises(BadRequest, match="^field label not supported: spec.priority$"):
        await fake.list(Pod, field_selector="spec.priority=0")
    with pytest.raises(BadRequest, match="field label not supported: spec.priority"):
        async with fake.watch(Pod, field_selector="spec.priority=0"):
            pass


@pytest.mark.anyio
async def test_watch_from_a_resource_version_replays_history() -> None:
    fake = FakeClient()
    a = await fake.create(pod("a"))
    await fake.patch(Pod, "a", {"metadata": {"labels": {"x": "1"}}})
    await fake.delete(Pod, "a")
    events: list[WatchEvent[Pod]] = []
    async with fake.watch(Pod, resource_version=a.metadata.resource_version) as stream:
        await fake.create(pod("b"))
        async for ev in stream:
            events.append(ev)
            if len(events) == 4:
                break
    assert [(e.type, e.object.metadata.name) for e in events] == [
        ("MODIFIED", "a"),
        ("MODIFIED", "a"),  # marked for deletion (grace 0: it is not bound)
        ("DELETED", "a"),
        ("ADDED", "b"),
    ]
    assert events[0].object.metadata.labels["x"] == "1"
    assert events[1].object.metadata.HasField("deletion_timestamp")
    assert fake.open_watches == 0


@pytest.mark.anyio
async def test_watch_without_resource_version_starts_with_the_current_state() -> None:
    fake = FakeClient(pod("a"), pod("b", "other"))
    async with fake.watch(Pod, "default") as stream:
        ev = await stream.__anext__()
    assert (ev.type, ev.object.metadata.name) == ("ADDED", "a")


@pytest.mark.anyio
async def test_watch_with_a_label_selector_sees_objects_enter_and_leave() -> None:
    fake = FakeClient()
    await fake.create(pod("a"))
    seen: list[str] = []
    async with fake.watch(Pod, label_selector="app=web", resource_version="1") as stream:
        await fake.patch(Pod, "a", {"metadata": {"labels": {"app": "web"}}})
        await fake.patch(Pod, "a", {"metadata": {"labels": {"tier": "x"}}})
        await fake.patch(Pod, "a", {"metadata": {"labels": {"app": None}}})
        async for ev in stream:
            seen.append(ev.type)
            if len(seen) == 3:
                break
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


@pytest.mark.anyio
async def test_compacted_history_is_gone_and_dropped_watches_end() -> None:
    fake = FakeClient()
    a = await fake.create(pod("a"))
    await fake.create(pod("b"))
    fake.compact()
    with pytest.raises(Gone):
        async with fake.watch(Pod, resource_version=a.metadata.resource_version) as stream:
            await stream.__anext__()
    async with fake.watch(Pod, resource_version=fake.resource_version) as stream:
        assert fake.drop_watches() == 1
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
    async with fake.watch(Pod, resource_version=fake.resource_version) as stream:
        fake.drop_watches(Unavailable("connection lost"))
        with pytest.raises(Unavailable):
            await stream.__anext__()


@pytest.mark.anyio
async def test_patch_is_a_merge_patch_with_a_resource_version_precondition() -> None:
    fake = FakeClient(pod("a", labels={"keep": "1", "drop": "1"}))
    out = await fake.patch(Pod, "a", {"metadata": {"labels": {"drop": None, "new": "2"}}})
    assert dict(out.metadata.labels) == {"keep": "1", "new": "2"}
    out = await fake.patch(Pod, "a", '{"status": {"phase": "Running"}}', subresource="status")
    assert out.status.phase == "Running"
    with pytest.raises(Conflict):
        await fake.patch(Pod, "a", {"metadata": {"resourceVersion": "1", "labels": {"z": "1"}}})
    out = await fake.patch(
        Pod,
        "a",
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}},
        subresource="resize",
    )
    assert out.spec.containers[0].resources.requests["cpu"] == "2"


@pytest.mark.anyio
async def test_bind_sets_node_and_pod_scheduled_and_refuses_a_bound_pod() -> None:
    fake = FakeClient(pod("a"))
    await fake.bind("default", "a", "n1", annotations={"k": "v"})
    got = await fake.get(Pod, "a")
    assert got.spec.node_name == "n1"
    assert [(c.type, c.status) for c in got.status.conditions] == [("PodScheduled", "True")]
    assert got.metadata.annotations["k"] == "v"
    with pytest.raises(Conflict):
        await fake.bind("default", "a", "n2")
    assert fake.actions[-1].verb == "bind" and fake.actions[-1].node_name == "n2"


@pytest.mark.anyio
async def test_delete_preconditions_evict_and_injected_failures() -> None:
    fake = FakeClient(pod("a"), pod("b"))
    with pytest.raises(Conflict):
        await fake.delete(Pod, "a", uid="other")
    gone = await fake.delete(Pod, "a")
    assert int(gone.metadata.resource_version) == int(fake.resource_version)
    await fake.evict("default", "b")
    assert (await fake.list(Pod)).items == []
    fake.fail("get", Unavailable("down"), times=1)
    fake.add(pod("c"))
    with pytest.raises(Unavailable):
        await fake.get(Pod, "c")
    assert (await fake.get(Pod, "c")).metadata.name == "c"
    assert fake.verbs("pods") == ["delete", "delete", "evict", "list", "get", "get"]


@pytest.mark.anyio
async def test_resize_changes_only_container_resources() -> None:
    fake = FakeClient(pod("a"))
    p = await fake.get(Pod, "a")
    p.spec.containers[0].resources.requests["cpu"] = "500m"
    p.spec.node_name = "ignored"
    out = await fake.resize(p)
    assert out.spec.containers[0].resources.requests["cpu"] == "500m"
    assert out.spec.node_name == ""


@pytest.mark.anyio
async def test_watch_exit_unregisters_even_when_cancelled() -> None:
    fake = FakeClient()
    with anyio.move_on_after(0.01):
        async with fake.watch(Pod) as stream:
            async for _ in stream:
                pass
    assert fake.open_watches == 0


@pytest.mark.anyio
async def test_a_bound_pod_terminates_gracefully_and_an_unbound_one_is_marked_then_removed() -> (
    None
):
    # The apiserver's rules, held by tests/integration/harness/test_fake_contract.py.
    fake = FakeClient(pod("bound", node="n1"), pod("unbound"))
    marked = await fake.delete(Pod, "bound", grace_period_seconds=20)
    assert marked.metadata.HasField("deletion_timestamp")
    assert marked.metadata.deletion_grace_period_seconds == 20
    assert (await fake.get(Pod, "bound")).metadata.HasField("deletion_timestamp")
    with pytest.raises(Conflict, match="is being deleted"):
        await fake.bind("default", "bound", "n2")
    shorter = await fake.delete(Pod, "bound", grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    await fake.delete(Pod, "bound", grace_period_seconds=0, uid=shorter.metadata.uid)
    gone = await fake.delete(Pod, "unbound")
    assert gone.metadata.HasField("deletion_timestamp")  # its last state: marked, grace 0
    assert gone.metadata.deletion_grace_period_seconds == 0
    for name in ("bound", "unbound"):
        with pytest.raises(NotFound):
            await fake.get(Pod, name)


@pytest.mark.anyio
async def test_a_write_that_changes_nothing_keeps_the_resource_version() -> None:
    fake = FakeClient(pod("p"))
    before = await fake.get(Pod, "p")
    after = await fake.update(before)
    assert after.metadata.resource_version == before.metadata.resource_version
    assert fake.resource_version == before.metadata.resource_version


@pytest.mark.anyio
@pytest.mark.parametrize(("clearing", "nominated"), [(True, ""), (False, "n2")])
async def test_bind_clears_the_nomination_per_the_gate(clearing: bool, nominated: str) -> None:
    gates = FeatureGates.for_version(
        DEFAULT_VERSION, {CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: clearing}
    )
    fake = FakeClient(pod("p"), gates=gates)
    await fake.patch(Pod, "p", {"status": {"nominatedNodeName": "n2"}}, subresource="status")
    await fake.bind("default", "p", "n1")
    bound = await fake.get(Pod, "p")
    assert (bound.spec.node_name, bound.status.nominated_node_name) == ("n1", nominated)
    assert bound.metadata.generation == 1
