"""kemu.client.comparer: caches compared with the truth; a difference is reported only when it
survives both catch-up rounds (a missed update), never when the cache catches up (a race)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any
from unittest.mock import ANY

import anyio
import pytest
from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.client.comparer import (
    APISERVER,
    MISSING,
    REDUNDANT,
    STALE,
    CacheComparer,
    Comparison,
    Difference,
    Source,
    Truth,
    View,
    compare,
    difference,
    informer_sources,
    informers_report,
)
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.health import DebugRequestError
from kemu.machinery.errors import Unavailable
from kemu.testing.fake_time import advance, settle, wait_until

from .helpers import node, pod

Pod = types_pb2.Pod


def last_of(comparer: CacheComparer) -> Any:
    """The last result of `comparer`'s report (its JSON, read as the test knows it)."""
    return comparer.report()["last"]


@pytest.fixture
async def tg() -> AsyncIterator[TaskGroup]:
    async with anyio.create_task_group() as group:
        yield group
        group.cancel_scope.cancel()


# ---------------------------------------------------------------- one key


@pytest.mark.parametrize(
    ("view", "truth", "expected"),
    [
        ({"a": "5"}, Truth({"a": "5"}, "10"), None),
        ({}, Truth({"a": "5"}, "10"), (MISSING, "", "5")),
        ({"a": "5"}, Truth({}, "10"), (REDUNDANT, "5", "")),
        ({"a": "5"}, Truth({"a": "7"}, "10"), (STALE, "5", "7")),
        # The cache moved on since the list: newer agrees, created after the list too.
        ({"a": "9"}, Truth({"a": "7"}, "10"), None),
        ({"a": "12"}, Truth({}, "10"), None),
        # Held in a state not judged (an assumed pod): never a difference.
        ({"a": None}, Truth({}, "10"), None),
        ({"a": None}, Truth({"a": "7"}, "10"), None),
        # Both absent.
        ({}, Truth({}, "10"), None),
    ],
)
def test_difference_of_one_key(
    view: View, truth: Truth, expected: tuple[str, str, str] | None
) -> None:
    assert difference(view, truth, "a") == expected


def test_a_difference_is_one_stable_sentence_and_survives_json() -> None:
    d = Difference("informer pods", APISERVER, "ns/p", STALE, "5", "7")
    assert d.line() == "informer pods: ns/p is stale (resourceVersion 5, the apiserver's 7)"
    assert Difference.from_dict(d.to_dict()) == d
    m = Difference("scheduler cache nodes", "informers", "n1", MISSING, "", "3")
    assert (
        m.line() == "scheduler cache nodes: n1 is missing (the informers' is at resourceVersion 3)"
    )


# ---------------------------------------------------------------- timing


class Scripted:
    """A source whose view and truths the test scripts: `views(now)` gives the view at the fake
    clock's monotonic time; the truths are handed out in order (the last one repeats)."""

    def __init__(
        self, clock: FakeClock, views: Callable[[float], View], truths: Sequence[Truth]
    ) -> None:
        self.clock = clock
        self.views = views
        self.truths = list(truths)
        self.lists = 0
        self.start = clock.monotonic()

    def source(self) -> Source:
        return Source("cache", APISERVER, self.view, self.truth)

    def view(self) -> View:
        return self.views(self.clock.monotonic() - self.start)

    async def truth(self) -> Truth:
        self.lists += 1
        return self.truths[min(self.lists, len(self.truths)) - 1]


async def _compare(clock: FakeClock, s: Scripted) -> Comparison:
    out: list[Comparison] = []

    async def run() -> None:
        out.append(await compare(s.source(), clock=clock, catch_up=5.0, interval=0.1))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await advance(clock, 11.0, step=0.1)
    return out[0]


@pytest.mark.anyio
async def test_equal_caches_take_one_list_and_no_wait() -> None:
    clock = FakeClock()
    s = Scripted(clock, lambda _: {"a": "5", "b": "6"}, [Truth({"a": "5", "b": "6"}, "9")])
    assert await compare(s.source(), clock=clock) == Comparison(2, 0, [])
    assert s.lists == 1


@pytest.mark.anyio
async def test_a_missed_update_is_reported_with_the_second_lists_version() -> None:
    clock = FakeClock()
    s = Scripted(
        clock,
        lambda _: {"a": "5", "b": "6"},
        [Truth({"a": "7", "b": "6", "c": "8"}, "9"), Truth({"a": "11", "b": "6", "c": "8"}, "12")],
    )
    result = await _compare(clock, s)
    assert (result.objects, result.raced) == (3, 0)
    assert [(d.key, d.kind, d.cached, d.actual) for d in result.differences] == [
        ("a", STALE, "5", "11"),
        ("c", MISSING, "", "8"),
    ]
    assert s.lists == 2


@pytest.mark.anyio
async def test_a_redundant_object_is_reported() -> None:
    clock = FakeClock()
    s = Scripted(clock, lambda _: {"a": "5", "gone": "3"}, [Truth({"a": "5"}, "9")])
    found = (await _compare(clock, s)).differences
    assert [(d.key, d.kind) for d in found] == [("gone", REDUNDANT)]


@pytest.mark.anyio
async def test_a_cache_that_catches_up_within_the_wait_is_a_race_not_a_difference() -> None:
    clock = FakeClock()
    # The watch delivers the list's versions 2 s after the list: stale, missing and redundant.
    s = Scripted(
        clock,
        lambda t: {"a": "5", "gone": "3"} if t < 2 else {"a": "7", "c": "8"},
        [Truth({"a": "7", "c": "8"}, "9")],
    )
    assert await _compare(clock, s) == Comparison(2, 3, [])
    assert s.lists == 1


@pytest.mark.anyio
async def test_an_object_deleted_after_the_first_list_agrees_with_the_second() -> None:
    clock = FakeClock()
    # "c" was created and deleted around the first list: the cache never holds it.
    s = Scripted(
        clock, lambda _: {"a": "5"}, [Truth({"a": "5", "c": "8"}, "9"), Truth({"a": "5"}, "10")]
    )
    assert await _compare(clock, s) == Comparison(2, 1, [])
    assert s.lists == 2


@pytest.mark.anyio
async def test_a_key_that_differs_only_in_the_second_list_is_not_reported() -> None:
    clock = FakeClock()
    s = Scripted(
        clock,
        lambda _: {"a": "5", "b": "6"},
        [Truth({"a": "7", "b": "6"}, "9"), Truth({"a": "7", "b": "10"}, "10")],
    )
    result = await _compare(clock, s)
    assert [d.key for d in result.differences] == ["a"] and result.raced == 0


# ---------------------------------------------------------------- informers


async def _informers(tg: TaskGroup, fake: FakeClient, clock: FakeClock) -> InformerFactory:
    factory = InformerFactory(fake, clock=clock)
    factory.informer(Pod)
    factory.informer(types_pb2.Node)
    factory.start(tg)
    await factory.wait_for_cache_sync()
    return factory


def _source(factory: InformerFactory, cache: str) -> Source:
    (source,) = [s for s in informer_sources(factory) if s.cache == cache]
    return source


async def _run(clock: FakeClock, source: Source) -> list[Difference]:
    out: list[list[Difference]] = []

    async def run() -> None:
        out.append((await compare(source, clock=clock, catch_up=5.0, interval=0.1)).differences)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await advance(clock, 11.0, step=0.1)
    return out[0]


@pytest.mark.anyio
async def test_informers_agree_with_a_fresh_list(tg: TaskGroup) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"), pod("b"), node("n1"), clock=clock)
    factory = await _informers(tg, fake, clock)
    assert sorted(s.cache for s in informer_sources(factory)) == [
        "informer nodes",
        "informer pods",
    ]
    assert await compare(_source(factory, "informer pods"), clock=clock) == Comparison(2, 0, [])
    assert await compare(_source(factory, "informer nodes"), clock=clock) == Comparison(1, 0, [])


@pytest.mark.anyio
async def test_an_informer_that_missed_updates_is_stale_missing_and_redundant(
    tg: TaskGroup,
) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"), pod("b"), clock=clock)
    factory = await _informers(tg, fake, clock)
    # The watch never delivers these (held for good: missed).
    fake.hold_watches("pods")
    a = await fake.patch(Pod, "a", {"metadata": {"labels": {"v": "2"}}})
    await fake.delete(Pod, "b", "default")
    c = await fake.create(pod("c"))
    found = await _run(clock, _source(factory, "informer pods"))
    assert [(d.key, d.kind, d.actual) for d in found] == [
        ("default/a", STALE, a.metadata.resource_version),
        ("default/b", REDUNDANT, ""),
        ("default/c", MISSING, c.metadata.resource_version),
    ]


@pytest.mark.anyio
async def test_an_informer_that_lags_the_list_and_catches_up_is_not_reported(
    tg: TaskGroup,
) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"), clock=clock)
    factory = await _informers(tg, fake, clock)
    fake.hold_watches("pods")
    await fake.patch(Pod, "a", {"metadata": {"labels": {"v": "2"}}})
    await fake.create(pod("c"))
    source = _source(factory, "informer pods")
    seen: list[set[str]] = []

    async def list_then_deliver() -> Truth:
        # The watch delivers what the list already has, just after the list.
        truth = await source.truth()
        seen.append({k for k in truth.objects if difference(source.view(), truth, k)})
        fake.release_watches("pods")
        return truth

    racing = Source(source.cache, source.against, source.view, list_then_deliver)
    assert await _run(clock, racing) == []
    assert seen == [{"default/a", "default/c"}]  # the race was there


# ---------------------------------------------------------------- the comparer


@pytest.mark.anyio
async def test_the_comparer_runs_once_per_trigger_and_reports_the_last_result(
    tg: TaskGroup,
) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"), node("n1"), clock=clock)
    factory = await _informers(tg, fake, clock)
    comparer = CacheComparer("kube-test", lambda: informer_sources(factory), clock=clock)
    assert comparer.report() == {
        "component": "kube-test",
        "triggers": 0,
        "running": False,
        "last": None,
    }
    await tg.start(comparer.run)
    comparer.trigger()
    await wait_until(lambda: comparer.report()["last"] is not None)
    report: dict[str, Any] = comparer.report()
    last = report["last"]
    assert report["triggers"] == 1 and last["trigger"] == 1
    assert last["differences"] == [] and last["errors"] == []
    assert sorted((c["cache"], c["objects"], c["raced"]) for c in last["caches"]) == [
        ("informer nodes", 1, 0),
        ("informer pods", 1, 0),
    ]

    # A list that fails is an error of the comparison, not a difference.
    fake.fail("list", Unavailable("the apiserver is away"), resource="pods")
    comparer.trigger()
    await wait_until(lambda: last_of(comparer)["trigger"] == 2)
    await settle()
    last = last_of(comparer)
    assert last["differences"] == []
    assert len(last["errors"]) == 1 and last["errors"][0].startswith("informer pods: ")
    assert [c["cache"] for c in last["caches"]] == ["informer nodes"]


@pytest.mark.anyio
async def test_no_sources_before_the_informers_exist() -> None:
    assert informer_sources(None) == []


# ---------------------------------------------------------------- GET /debug/informers


def _rows(factory: InformerFactory | None, **query: str) -> list[dict[str, Any]]:
    report: dict[str, Any] = informers_report(lambda: factory, query)  # (JSON: an edge)
    rows: list[dict[str, Any]] = report["informers"]
    return rows


@pytest.mark.anyio
async def test_the_informers_report_says_which_version_of_an_object_each_informer_holds(
    tg: TaskGroup,
) -> None:
    clock = FakeClock()
    fake = FakeClient(pod("a"), node("n1"), clock=clock)
    factory = await _informers(tg, fake, clock)
    fake.hold_watches("pods")  # the next change has not reached the informer
    a = await fake.patch(Pod, "a", {"metadata": {"labels": {"v": "2"}}})
    (row,) = _rows(factory, resource="pods", key="default/a")
    assert (row["name"], row["synced"], row["objects"]) == ("pods", True, 1)
    assert row["cached"] and row["cached"] != a.metadata.resource_version
    fake.release_watches("pods")
    await wait_until(
        lambda: (
            _rows(factory, resource="pods", key="default/a")
            == [{**row, "cached": a.metadata.resource_version, "resourceVersion": ANY}]
        )
    )
    assert _rows(factory, resource="pods", key="default/gone")[0]["cached"] == ""
    assert sorted(r["resource"] for r in _rows(factory)) == ["nodes", "pods"]


def test_the_informers_report_names_a_resource_it_has_no_informer_of() -> None:
    with pytest.raises(DebugRequestError, match=r"resource: no informer of 'leases' here"):
        _rows(None, resource="leases")
    assert _rows(None) == []
