"""Cache: node and pod lifecycle, assume/confirm/forget/expire, in-place resize accounting."""

from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.snapshot import Snapshot
from kemu.testing.builders import make_node, make_pod
from scheduler.app import new_cache as new_scheduler_cache
from scheduler.cache import Cache, CacheError

TTL = 30.0


def node(name: str, cpu: str = "4") -> types_pb2.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


def pod(name: str, node_name: str = "", cpu: str = "1") -> types_pb2.Pod:
    b = make_pod(name).uid(f"uid-{name}").req(cpu=cpu, memory="1Gi")
    if node_name:
        b = b.node(node_name)
    return b.obj()


def new_cache(
    clock: FakeClock | None = None,
    *,
    ttl: float = TTL,
    resize: bool = True,
    per_container_max: bool = False,
) -> Cache:
    return Cache(
        clock or FakeClock(),
        counting=PodResourcesOptions(
            use_status_resources=resize, per_container_max=per_container_max
        ),
        ttl=ttl,
    )


def new_cache_at(minor: int) -> Cache:
    """The cache as the scheduler process builds it when it emulates 1.`minor`."""
    return new_scheduler_cache(FakeClock(), FeatureGates.for_version(Version(1, minor)))


def requested_cpu(cache: Cache, node_name: str) -> int:
    return cache.dump().nodes[node_name].requested.milli_cpu


def pods_on(cache: Cache, node_name: str) -> list[str]:
    return [pi.pod.metadata.name for pi in cache.dump().nodes[node_name].pods]


# ---------------------------------------------------------------- assume / confirm / forget


def test_assume_counts_a_copy_with_node_name_and_leaves_the_informer_object_alone() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    p = pod("p")
    before = p.SerializeToString(deterministic=True)

    assumed = cache.assume_pod(p, "n1")

    assert p.SerializeToString(deterministic=True) == before
    assert assumed is not p and assumed.spec.node_name == "n1"
    assert cache.is_assumed_pod(p)
    assert cache.get_pod(p) is assumed
    assert requested_cpu(cache, "n1") == 1000
    assert cache.pod_count() == 1
    assert cache.dump().assumed_pods == {"default/p"}


def test_assume_of_a_pod_already_in_the_cache_raises() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    with pytest.raises(CacheError):
        cache.assume_pod(pod("p"), "n1")
    with pytest.raises(CacheError, match="no node"):
        cache.assume_pod(pod("q"))
    assert requested_cpu(cache, "n1") == 1000


def test_assume_without_node_name_stores_the_callers_copy() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    mine = pod("p", "n1")
    assert cache.assume_pod(mine) is mine


def test_add_pod_confirms_an_assumed_pod_without_double_counting() -> None:
    clock = FakeClock()
    cache = new_cache(clock)
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    cache.finish_binding(pod("p"))

    bound = pod("p", "n1")
    cache.add_pod(bound)

    assert not cache.is_assumed_pod(bound)
    assert cache.get_pod(bound) is bound
    assert requested_cpu(cache, "n1") == 1000
    assert pods_on(cache, "n1") == ["p"]
    assert cache.pod_count() == 1
    # Confirmed pods never expire.
    clock.advance(10 * TTL)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.pod_count() == 1


def test_add_pod_on_another_node_than_assumed_moves_it() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.assume_pod(pod("p"), "n1")

    cache.add_pod(pod("p", "n2"))

    assert requested_cpu(cache, "n1") == 0
    assert requested_cpu(cache, "n2") == 1000
    assert not cache.is_assumed_pod(pod("p"))


def test_add_pod_twice_raises_and_changes_nothing() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    with pytest.raises(CacheError, match="already added"):
        cache.add_pod(pod("p", "n1"))
    with pytest.raises(CacheError, match="not assigned"):
        cache.add_pod(pod("unassigned"))
    assert requested_cpu(cache, "n1") == 1000


def test_forget_undoes_assume() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    assumed = cache.assume_pod(pod("p"), "n1")

    cache.forget_pod(assumed)

    assert cache.get_pod(assumed) is None
    assert not cache.is_assumed_pod(assumed)
    assert requested_cpu(cache, "n1") == 0
    assert cache.pod_count() == 0
    # Forgetting a pod that is gone (expired, deleted) is not an error.
    cache.forget_pod(assumed)


def test_forget_of_a_confirmed_pod_or_on_the_wrong_node_raises() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    with pytest.raises(CacheError, match="not assumed"):
        cache.forget_pod(pod("p", "n1"))
    cache.assume_pod(pod("q"), "n1")
    with pytest.raises(CacheError, match="assumed on n1"):
        cache.forget_pod(pod("q", "n2"))
    assert requested_cpu(cache, "n1") == 2000


# ---------------------------------------------------------------- expiry


def test_assumed_pod_expires_only_after_finish_binding_and_ttl() -> None:
    clock = FakeClock()
    cache = new_cache(clock)
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")

    # A binding cycle still running (e.g. waiting at Permit or in a slow PreBind) never expires.
    clock.advance(10 * TTL)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.is_assumed_pod(pod("p"))

    cache.finish_binding(pod("p"))
    clock.advance(TTL)
    assert cache.cleanup_expired_assumed_pods() == []  # the deadline itself is not past it

    clock.advance(0.5)
    expired = cache.cleanup_expired_assumed_pods()

    assert [p.metadata.name for p in expired] == ["p"]
    assert cache.get_pod(pod("p")) is None
    assert requested_cpu(cache, "n1") == 0
    assert cache.assumed_pod_count() == 0


def test_ttl_zero_means_assumed_pods_never_expire() -> None:
    clock = FakeClock()
    cache = new_cache(clock, ttl=0)
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    cache.finish_binding(pod("p"))
    clock.advance(1e6)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.is_assumed_pod(pod("p"))
    with pytest.raises(ValueError):
        new_cache(ttl=-1)


def test_expired_pod_seen_later_by_the_informer_is_added() -> None:
    clock = FakeClock()
    cache = new_cache(clock)
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    cache.finish_binding(pod("p"))
    clock.advance(TTL + 1)
    cache.cleanup_expired_assumed_pods()

    cache.add_pod(pod("p", "n1"))

    assert requested_cpu(cache, "n1") == 1000
    assert not cache.is_assumed_pod(pod("p"))


def test_finish_binding_of_a_confirmed_or_unknown_pod_does_nothing() -> None:
    clock = FakeClock()
    cache = new_cache(clock)
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    cache.finish_binding(pod("p", "n1"))
    cache.finish_binding(pod("ghost", "n1"))
    clock.advance(TTL + 1)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.pod_count() == 1


@pytest.mark.anyio
async def test_run_expires_assumed_pods_on_the_injected_clock() -> None:
    clock = FakeClock()
    cache = new_cache(clock)
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    cache.finish_binding(pod("p"))
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            await tg.start(cache.run)
            await anyio.wait_all_tasks_blocked()
            clock.advance(TTL)
            await anyio.wait_all_tasks_blocked()
            assert cache.is_assumed_pod(pod("p"))

            clock.advance(1.0)
            await anyio.wait_all_tasks_blocked()
            assert cache.get_pod(pod("p")) is None
            tg.cancel_scope.cancel()


# ---------------------------------------------------------------- update / remove pods


def running(
    name: str, node_name: str, *, spec: str, actual: str, allocated: str, infeasible: bool = False
) -> types_pb2.Pod:
    """A running pod with one container "c": spec requests, actuated and allocated cpu."""
    p = pod(name, node_name, cpu=spec)
    cs = p.status.container_statuses.add(name="c")
    cs.resources.requests["cpu"] = actual
    cs.allocated_resources["cpu"] = allocated
    if infeasible:
        p.status.conditions.add(type="PodResizePending", status="True", reason="Infeasible")
    return p


@pytest.mark.parametrize(
    ("resize_gate", "spec", "actual", "allocated", "infeasible", "want_milli_cpu"),
    [
        # A pending upsize is reserved at its desired size (max of desired, actual, allocated).
        (True, "3", "1", "1", False, 3000),
        # Allocated but not yet actuated: the allocation counts.
        (True, "3", "1", "3", False, 3000),
        # A downsize counts at the actual size until the kubelet actuates it.
        (True, "500m", "1", "500m", False, 1000),
        # An Infeasible resize never happens: the desired size is ignored.
        (True, "3", "1", "1", True, 1000),
        # Without InPlacePodVerticalScaling only the spec counts.
        (False, "500m", "1", "1", False, 500),
        (False, "3", "1", "1", True, 3000),
    ],
)
def test_update_pod_recomputes_requests_after_a_resize(
    resize_gate: bool, spec: str, actual: str, allocated: str, infeasible: bool, want_milli_cpu: int
) -> None:
    cache = new_cache(resize=resize_gate)
    cache.add_node(node("n1"))
    old = running("p", "n1", spec="1", actual="1", allocated="1")
    cache.add_pod(old)
    assert requested_cpu(cache, "n1") == 1000

    updated = running(
        "p", "n1", spec=spec, actual=actual, allocated=allocated, infeasible=infeasible
    )
    cache.update_pod(old, updated)

    assert requested_cpu(cache, "n1") == want_milli_cpu
    assert cache.get_pod(old) is updated
    assert cache.pod_count() == 1


def moved_cpu(name: str = "p") -> types_pb2.Pod:
    """cpu moving from "a" to "b": desired a=1 b=2, allocated and actual a=2 b=1."""
    p = make_pod(name).node("n1").container("a").req(cpu="1").container("b").req(cpu="2").obj()
    del p.spec.containers[0]  # the builder's default container
    for c, held in (("a", "2"), ("b", "1")):
        cs = p.status.container_statuses.add(name=c)
        cs.resources.requests["cpu"] = held
        cs.allocated_resources["cpu"] = held
    return p


@pytest.mark.parametrize(("minor", "want_milli_cpu"), [(36, 4000), (37, 3000)])
def test_a_resize_moving_cpu_between_containers_counts_by_the_emulated_versions_rule(
    minor: int, want_milli_cpu: int
) -> None:
    # Up to 1.36 the largest of desired, allocated and actual is taken per container and
    # summed (2 + 2); from 1.37 each is summed over the pod first (3, 3, 3). The scheduler's
    # wiring (scheduler.app.new_cache) resolves the rule from its emulated version.
    cache = new_cache_at(minor)
    cache.add_node(node("n1"))
    cache.add_pod(moved_cpu())
    assert requested_cpu(cache, "n1") == want_milli_cpu
    # The queue's pod-info factory counts the same way.
    assert cache.pod_info(moved_cpu("q")).requests.milli_cpu == want_milli_cpu


def test_update_of_an_assumed_or_unknown_pod_raises() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    assumed = cache.assume_pod(pod("p"), "n1")
    with pytest.raises(CacheError, match="assumed"):
        cache.update_pod(assumed, pod("p", "n1", cpu="2"))
    with pytest.raises(CacheError, match="not in the cache"):
        cache.update_pod(pod("q", "n1"), pod("q", "n1"))
    assert requested_cpu(cache, "n1") == 1000


def test_remove_pod_uses_the_cached_object_even_from_a_stale_delete_event() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1", cpu="2"))
    # A delete seen through a relist may carry the last known object, without nodeName.
    cache.remove_pod(pod("p", cpu="1"))
    assert requested_cpu(cache, "n1") == 0
    assert cache.pod_count() == 0
    with pytest.raises(CacheError):
        cache.remove_pod(pod("p", "n1"))


def test_remove_pod_of_an_assumed_pod_removes_it() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    cache.remove_pod(pod("p", "n1"))
    assert cache.assumed_pod_count() == 0
    assert requested_cpu(cache, "n1") == 0


# ---------------------------------------------------------------- nodes


def test_removed_node_keeps_its_pods_until_their_deletes_arrive() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1"))
    cache.add_pod(pod("b", "n1"))
    snap = Snapshot()

    cache.remove_node(node("n1"))
    cache.update_snapshot(snap)

    assert cache.node_count() == 1
    ghost = cache.dump().nodes["n1"]
    assert ghost.node is None and len(ghost.pods) == 2
    assert snap.num_nodes() == 0 and snap.get("n1") is None

    cache.remove_pod(pod("a", "n1"))
    assert cache.node_count() == 1
    cache.remove_pod(pod("b", "n1"))
    assert cache.node_count() == 0
    assert cache.pod_count() == 0
    with pytest.raises(CacheError):
        cache.remove_node(node("n1"))


def test_pods_seen_before_their_node_count_once_it_arrives() -> None:
    cache = new_cache()
    snap = Snapshot()
    cache.add_pod(pod("p", "n1"))
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 0 and cache.node_count() == 1

    cache.add_node(node("n1"))
    cache.update_snapshot(snap)

    ni = snap.get("n1")
    assert ni is not None and ni.requested.milli_cpu == 1000 and len(ni.pods) == 1


def test_re_added_node_keeps_its_pods() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    cache.remove_node(node("n1"))
    cache.add_node(node("n1", cpu="8"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    ni = snap.get("n1")
    assert ni is not None
    assert ni.allocatable.milli_cpu == 8000 and ni.requested.milli_cpu == 1000


def test_update_node_changes_allocatable_and_adds_an_unknown_node() -> None:
    cache = new_cache()
    old = node("n1", cpu="4")
    cache.add_node(old)
    cache.update_node(old, node("n1", cpu="2"))
    cache.update_node(node("n2"), node("n2"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None and n1.allocatable.milli_cpu == 2000
    assert [ni.name for ni in snap.list()] == ["n1", "n2"]


def test_duplicate_add_node_does_not_duplicate_it() -> None:
    cache = new_cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n1"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert cache.node_count() == 1 and snap.num_nodes() == 1
