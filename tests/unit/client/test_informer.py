from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.testing.fake_time import advance, settle, wait_until

from .helpers import pod

Pod = types_pb2.Pod


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.updates: list[tuple[str, str]] = []  # old rv, new rv

    def on_add(self, obj: Pod) -> None:
        self.events.append(("add", obj.metadata.name))

    def on_update(self, old: Pod, new: Pod) -> None:
        self.events.append(("update", new.metadata.name))
        self.updates.append((old.metadata.resource_version, new.metadata.resource_version))

    def on_delete(self, obj: Pod) -> None:
        self.events.append(("delete", obj.metadata.name))


@pytest.fixture
async def tg() -> AsyncIterator[TaskGroup]:
    async with anyio.create_task_group() as group:
        yield group
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_list_then_watch_delivers_events_in_order(tg: TaskGroup) -> None:
    fake = FakeClient(pod("a"), pod("b", "other"))
    inf = Informer(fake, Pod, clock=FakeClock())
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    assert inf.has_synced()
    assert sorted(rec.events) == [("add", "a"), ("add", "b")]
    assert inf.last_resource_version == fake.resource_version

    await fake.create(pod("c"))
    await fake.patch(Pod, "a", {"metadata": {"labels": {"x": "1"}}})
    await fake.delete(Pod, "b", "other")
    await wait_until(lambda: len(rec.events) == 6)
    # a pod DELETE marks it (grace 0 when unbound) before it goes, as upstream
    assert rec.events[2:] == [("add", "c"), ("update", "a"), ("update", "b"), ("delete", "b")]
    a = inf.lister.get("a")
    assert a is not None and a.metadata.labels["x"] == "1"
    assert inf.lister.get("b", "other") is None
    assert sorted(p.metadata.name for p in inf.lister.list("default")) == ["a", "c"]
    assert inf.lister.list("other") == []
    assert len(inf.lister) == 2
    assert fake.verbs().count("list") == 1
    assert fake.verbs().count("watch") == 1


@pytest.mark.anyio
async def test_a_dropped_watch_is_resumed_from_the_last_resource_version(tg: TaskGroup) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"))
    inf = Informer(fake, Pod, clock=clock)
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    await fake.create(pod("b"))
    await wait_until(lambda: len(rec.events) == 2)
    seen_rv = inf.last_resource_version

    fake.drop_watches(Unavailable("apiserver restarting"))
    await fake.create(pod("c"))  # made while no watch is open
    await advance(clock, 15)  # past the backoff
    await wait_until(lambda: ("add", "c") in rec.events)
    watches = [a for a in fake.actions if a.verb == "watch"]
    assert [a.resource_version for a in watches] == ["1", seen_rv]
    assert fake.verbs().count("list") == 1  # resumed, not relisted
    assert rec.events == [("add", "a"), ("add", "b"), ("add", "c")]

    fake.drop_watches()  # a clean end of the stream: resumed at once
    await fake.delete(Pod, "a")
    await wait_until(lambda: ("delete", "a") in rec.events)
    assert fake.verbs().count("list") == 1


@pytest.mark.anyio
async def test_gone_relists_and_delivers_only_the_differences(tg: TaskGroup) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("same"), pod("changed"), pod("removed"))
    inf = Informer(fake, Pod, clock=clock)
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    assert len(rec.events) == 3
    old_rv = inf.lister.get("changed").metadata.resource_version  # type: ignore[union-attr]
    same = inf.lister.get("same")
    await wait_until(lambda: fake.open_watches == 1)

    fake.drop_watches(Unavailable("connection reset"))
    await fake.patch(Pod, "changed", {"metadata": {"labels": {"v": "2"}}})
    await fake.delete(Pod, "removed")
    await fake.create(pod("new"))
    fake.compact()  # the informer's resourceVersion is no longer in the history
    await advance(clock, 15)
    await wait_until(lambda: len(rec.events) == 6)
    assert sorted(rec.events[3:]) == [("add", "new"), ("delete", "removed"), ("update", "changed")]
    assert rec.updates == [(old_rv, inf.lister.get("changed").metadata.resource_version)]  # type: ignore[union-attr]
    assert fake.verbs().count("list") == 2
    assert sorted(inf.lister.keys()) == ["default/changed", "default/new", "default/same"]
    # The unchanged object is still the one the handlers were given, not the listed copy.
    assert inf.lister.get("same") is same
    # The watch after the relist starts from the relist's resourceVersion.
    await wait_until(lambda: fake.open_watches == 1)
    assert fake.actions[-1].verb == "watch"
    assert fake.actions[-1].resource_version == fake.resource_version


@pytest.mark.anyio
async def test_indexers_and_late_handlers(tg: TaskGroup) -> None:
    fake = FakeClient(pod("a", node="n1"), pod("b", node="n1"), pod("c"))
    inf = Informer(fake, Pod, clock=FakeClock())
    inf.add_indexer("node", lambda p: [p.spec.node_name] if p.spec.node_name else [])
    await tg.start(inf.run)

    def names(pods: list[Pod]) -> list[str]:
        return sorted(p.metadata.name for p in pods)

    assert names(inf.lister.by_index("node", "n1")) == ["a", "b"]

    late = Recorder()
    inf.add_event_handler(late)
    assert sorted(late.events) == [("add", "a"), ("add", "b"), ("add", "c")]
    inf.add_indexer("label", lambda p: list(p.metadata.labels.values()))

    await fake.bind("default", "c", "n1")
    await fake.delete(Pod, "a", grace_period_seconds=0)  # bound: a graceful delete would stay
    await fake.patch(Pod, "b", {"metadata": {"labels": {"app": "web"}}})
    await wait_until(lambda: len(late.events) == 7)  # a: marked (update), then deleted
    assert names(inf.lister.by_index("node", "n1")) == ["b", "c"]
    assert names(inf.lister.by_index("label", "web")) == ["b"]
    assert inf.lister.by_index("node", "n2") == []
    with pytest.raises(KeyError):
        inf.lister.by_index("nope", "x")


@pytest.mark.anyio
async def test_selectors_and_a_failing_handler(tg: TaskGroup) -> None:
    fake = FakeClient(pod("a", labels={"app": "web"}), pod("b"))
    inf = Informer(fake, Pod, label_selector="app=web", clock=FakeClock())

    def boom(obj: Pod) -> None:
        raise RuntimeError("handler bug")

    inf.add_event_handler(FuncHandler(on_add=boom))
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    assert rec.events == [("add", "a")]
    await fake.patch(Pod, "b", {"metadata": {"labels": {"app": "web"}}})
    await fake.patch(Pod, "a", {"metadata": {"labels": {"app": "db"}}})
    await wait_until(lambda: len(rec.events) == 3)
    assert rec.events[1:] == [("add", "b"), ("delete", "a")]
    assert [p.metadata.name for p in inf.lister.list()] == ["b"]


@pytest.mark.anyio
async def test_list_failures_are_retried_before_the_first_sync(tg: TaskGroup) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"))
    fake.fail("list", Unavailable("etcd down"), times=2)
    inf = Informer(fake, Pod, clock=clock)
    tg.start_soon(inf.run)
    await settle()
    assert not inf.has_synced()
    await advance(clock, 5)
    with anyio.fail_after(2):
        await inf.wait_for_sync()
    assert fake.verbs().count("list") == 3


@pytest.mark.anyio
async def test_the_factory_shares_informers(tg: TaskGroup) -> None:
    fake = FakeClient(pod("a"), types_pb2.Node(metadata=types_pb2.ObjectMeta(name="n1")))
    factory = InformerFactory(fake, clock=FakeClock())
    pods = factory.informer(Pod)
    assert factory.informer(Pod) is pods
    assert factory.informer(Pod, namespace="x") is not pods
    nodes = factory.informer(types_pb2.Node)
    factory.start(tg)
    with anyio.fail_after(2):
        await factory.wait_for_cache_sync()
    assert factory.has_synced()
    assert nodes.lister.get("n1") is not None
    assert pods.lister.get("a") is not None


def mine(p: Pod) -> bool:
    return p.metadata.labels.get("owner") == "me"


@pytest.mark.anyio
async def test_keep_drops_other_objects_before_they_are_stored(tg: TaskGroup) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a", labels={"owner": "me"}), pod("b", labels={"owner": "you"}))
    inf = Informer(fake, Pod, keep=mine, clock=clock)
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    assert rec.events == [("add", "a")]
    assert inf.lister.keys() == ["default/a"]
    assert inf.dropped == 1

    await fake.create(pod("c", labels={"owner": "you"}))
    await fake.patch(Pod, "b", {"metadata": {"annotations": {"x": "1"}}})
    await fake.delete(Pod, "c")  # unbound: marked, then deleted; none of it is seen
    await fake.create(pod("d", labels={"owner": "me"}))
    await wait_until(lambda: len(rec.events) == 2)
    assert rec.events[1:] == [("add", "d")]
    assert sorted(inf.lister.keys()) == ["default/a", "default/d"]
    assert inf.dropped == 1 + 4  # c added, b updated, c marked and deleted
    assert inf.last_resource_version == fake.resource_version  # dropped events count too

    # An object that stops being kept is delivered as the delete of the cached one; one that
    # starts being kept as an add.
    await fake.patch(Pod, "a", {"metadata": {"labels": {"owner": "you"}}})
    await fake.patch(Pod, "b", {"metadata": {"labels": {"owner": "me"}}})
    await wait_until(lambda: len(rec.events) == 4)
    assert rec.events[2:] == [("delete", "a"), ("add", "b")]
    assert sorted(inf.lister.keys()) == ["default/b", "default/d"]
    await fake.delete(Pod, "d")
    await wait_until(lambda: len(rec.events) == 6)  # marked (update), then deleted
    assert rec.events[4:] == [("update", "d"), ("delete", "d")]

    # A relist applies the predicate too.
    await wait_until(lambda: fake.open_watches == 1)
    fake.drop_watches(Unavailable("connection reset"))
    await fake.create(pod("e", labels={"owner": "you"}))
    await fake.create(pod("f", labels={"owner": "me"}))
    fake.compact()
    await advance(clock, 15)
    await wait_until(lambda: len(rec.events) == 7)
    assert rec.events[6:] == [("add", "f")]
    assert fake.verbs().count("list") == 2
    assert sorted(inf.lister.keys()) == ["default/b", "default/f"]


@pytest.mark.anyio
async def test_kept_objects_are_copied_out_of_the_response(tg: TaskGroup) -> None:
    # A decoded protobuf sub-message shares its whole response's memory: a cached object must
    # be the informer's own, not the one the client returned (which the fake hands out too).
    fake = FakeClient(pod("a", labels={"owner": "me"}), pod("b", labels={"owner": "you"}))
    returned: list[Pod] = []
    list_all = fake.list_all

    async def recording_list_all(*args: Any, **kwargs: Any) -> Any:
        result = await list_all(*args, **kwargs)
        returned.extend(result.items)
        return result

    fake.list_all = recording_list_all  # type: ignore[method-assign]
    inf = Informer(fake, Pod, keep=mine, clock=FakeClock())
    await tg.start(inf.run)
    (a_returned,) = [p for p in returned if p.metadata.name == "a"]
    cached = inf.lister.get("a")
    assert cached is not None and cached is not a_returned
    assert cached == a_returned

    # Without a predicate the informer stores what it receives, as before.
    plain = Informer(fake, Pod, clock=FakeClock())
    returned.clear()
    await tg.start(plain.run)
    (a_plain,) = [p for p in returned if p.metadata.name == "a"]
    assert plain.lister.get("a") is a_plain


@pytest.mark.anyio
async def test_the_factory_keys_informers_by_their_keep_predicate(tg: TaskGroup) -> None:
    factory = InformerFactory(FakeClient(), clock=FakeClock())
    kept = factory.informer(Pod, keep=mine)
    assert factory.informer(Pod, keep=mine) is kept
    assert factory.informer(Pod) is not kept


def test_copy_objects_is_the_factorys_and_not_part_of_an_informers_identity() -> None:
    """The scheduler's factory copies every stored object; a plugin asking for the pod
    informer by kind and selector must get the process's one informer, not a second, unstarted
    one (DefaultPreemption's lister found no pods when copying was a `keep` predicate)."""
    factory = InformerFactory(FakeClient(), copy_objects=True)
    first = factory.informer(types_pb2.Pod, field_selector="status.phase!=Succeeded")
    assert factory.informer(types_pb2.Pod, field_selector="status.phase!=Succeeded") is first
    decoded = pod("a")
    first._apply("ADDED", decoded)
    stored = first.lister.get("a")
    assert stored == decoded and stored is not decoded
    plain = InformerFactory(FakeClient()).informer(types_pb2.Pod)
    plain._apply("ADDED", decoded)
    assert plain.lister.get("a") is decoded


@pytest.mark.anyio
async def test_a_relist_keeps_the_cached_object_of_an_unchanged_version(tg: TaskGroup) -> None:
    """As the scheduler's informers (copy_objects): after a relist the informer and its
    handlers share one object per unchanged pod, the one the handlers were given, and the
    listed copy is not stored; a changed pod is the listed (copied) one, given as an update."""
    clock = FakeClock()
    fake = FakeClient(pod("same"), pod("changed"))
    inf = Informer(fake, Pod, copy_objects=True, clock=clock)
    given: dict[str, Pod] = {}
    updates: list[tuple[Pod, Pod]] = []

    def on_update(old: Pod, new: Pod) -> None:
        updates.append((old, new))
        given[new.metadata.name] = new

    inf.add_event_handler(
        FuncHandler(on_add=lambda p: given.__setitem__(p.metadata.name, p), on_update=on_update)
    )
    listed: list[Pod] = []
    list_all = fake.list_all

    async def recording_list_all(*args: Any, **kwargs: Any) -> Any:
        result = await list_all(*args, **kwargs)
        listed.extend(result.items)
        return result

    fake.list_all = recording_list_all  # type: ignore[method-assign]
    await tg.start(inf.run)
    before = dict(given)
    assert inf.lister.get("same") is before["same"]
    await wait_until(lambda: fake.open_watches == 1)

    fake.drop_watches(Unavailable("connection reset"))
    await fake.patch(Pod, "changed", {"metadata": {"labels": {"v": "2"}}})
    fake.compact()
    listed.clear()
    await advance(clock, 15)
    await wait_until(lambda: len(updates) == 1)
    assert fake.verbs().count("list") == 2
    same_listed = next(p for p in listed if p.metadata.name == "same")
    assert same_listed == before["same"]
    assert inf.lister.get("same") is before["same"]  # not the listed copy
    old, new = updates[0]
    assert old is before["changed"] and new.metadata.labels["v"] == "2"
    assert inf.lister.get("changed") is new is given["changed"]
    assert all(n is not p for n in (new, before["same"]) for p in listed)  # own copies


@pytest.mark.anyio
async def test_a_relist_drops_an_unchanged_object_the_predicate_no_longer_keeps(
    tg: TaskGroup,
) -> None:
    """`keep` may depend on more than the object (a kubelet's nodes): an unchanged version is
    asked again, and one no longer kept is delivered as a delete."""
    clock = FakeClock()
    owners = {"me"}
    fake = FakeClient(pod("a", labels={"owner": "me"}), pod("b", labels={"owner": "you"}))
    inf = Informer(fake, Pod, keep=lambda p: p.metadata.labels["owner"] in owners, clock=clock)
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    assert rec.events == [("add", "a")]
    await wait_until(lambda: fake.open_watches == 1)

    owners.clear()
    fake.drop_watches(Unavailable("connection reset"))
    await fake.create(pod("c", labels={"owner": "you"}))  # so that the compaction passes "a"
    fake.compact()
    await advance(clock, 15)
    await wait_until(lambda: len(rec.events) == 2)
    assert rec.events[1:] == [("delete", "a")]
    assert inf.lister.keys() == []
    assert fake.verbs().count("list") == 2


@pytest.mark.anyio
async def test_merge_and_refilter_follow_a_predicate_that_moved(tg: TaskGroup) -> None:
    """A hollow kubelet adding a node keeps more: what the informer dropped is listed apart
    and merged (newer than the cached copy only); removing one keeps less: the cached objects
    no longer kept are delivered as deletes."""
    owners = {"me"}
    fake = FakeClient(pod("a", labels={"owner": "me"}), pod("b", labels={"owner": "you"}))
    inf = Informer(
        fake, Pod, keep=lambda p: p.metadata.labels["owner"] in owners, clock=FakeClock()
    )
    rec = Recorder()
    inf.add_event_handler(rec)
    await tg.start(inf.run)
    await wait_until(lambda: fake.open_watches == 1)
    assert rec.events == [("add", "a")]

    owners.add("you")
    listed = (await fake.list_all(Pod)).items
    await fake.patch(Pod, "a", {"metadata": {"annotations": {"x": "1"}}})  # seen by the watch
    await wait_until(lambda: len(rec.events) == 2)
    inf.merge(listed)  # b is new; the listed a is older than the cached one
    assert rec.events[2:] == [("add", "b")]
    cached_a = inf.lister.get("a")
    assert cached_a is not None and cached_a.metadata.annotations["x"] == "1"
    assert sorted(inf.lister.keys()) == ["default/a", "default/b"]
    inf.merge(listed)  # nothing newer: no event
    assert len(rec.events) == 3

    owners.discard("me")
    inf.refilter()
    assert rec.events[3:] == [("delete", "a")]
    assert inf.lister.keys() == ["default/b"]
