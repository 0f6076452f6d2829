"""What the scheduler keeps per bound pod (issue #16 item 4): PodInfos share what equal pods
have in common, and the pod informer stores its own copy of each pod, not a view into the
response it came in."""

from __future__ import annotations

from typing import Any, cast

from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.informer import Informer
from kemu.component.clock import FakeClock
from kemu.machinery import kinds
from kemu.machinery.resources import SCHEDULER_DEFAULTS
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from scheduler.cache import Cache


def _pod(name: str, cpu: str = "10m", memory: str = "50Mi") -> types_pb2.Pod:
    return make_pod(name).uid(f"uid-{name}").req(cpu=cpu, memory=memory).node("n1").obj()


def test_pods_with_equal_requests_share_their_resources() -> None:
    a, b = PodInfo(_pod("a")), PodInfo(_pod("b"))
    assert a.requests is b.requests
    assert a.non_zero_requests is b.non_zero_requests
    assert (a.requests.milli_cpu, a.requests.memory) == (10, 50 * 2**20)


def test_pods_with_other_requests_or_rules_do_not_share() -> None:
    a = PodInfo(_pod("a"))
    c = PodInfo(_pod("c", cpu="20m"))
    assert c.requests is not a.requests
    assert c.requests.milli_cpu == 20
    assert a.requests.milli_cpu == 10
    # A pod without requests: the non-zero defaults (100m, 200Mi) only in non_zero_requests.
    d = PodInfo(make_pod("d").uid("uid-d").node("n1").obj())
    assert (d.requests.milli_cpu, d.requests.memory) == (0, 0)
    assert (d.non_zero_requests.milli_cpu, d.non_zero_requests.memory) == (100, 200 * 2**20)


def test_a_pod_without_affinity_holds_empty_tuples() -> None:
    a, b = PodInfo(_pod("a")), PodInfo(_pod("b"))
    assert a.required_affinity_terms == ()
    assert a.required_anti_affinity_terms is b.required_anti_affinity_terms
    assert not a.has_affinity()
    with_terms = PodInfo(
        make_pod("w")
        .affinity({"app": "x"}, "zone")
        .anti_affinity({"app": "y"}, "host", weight=5)
        .obj()
    )
    assert [t.topology_key for t in with_terms.required_affinity_terms] == ["zone"]
    assert [(w.term.topology_key, w.weight) for w in with_terms.preferred_anti_affinity_terms] == [
        ("host", 5)
    ]
    assert with_terms.has_affinity()


def test_meta_view_shares_namespace_and_empty_labels() -> None:
    a, b = PodInfo(_pod("a")), PodInfo(_pod("b"))
    va, vb = a.meta_view(), b.meta_view()
    assert va.namespace == "default" and va.namespace is vb.namespace
    assert va.labels == {} and va.labels is vb.labels
    labelled = PodInfo(make_pod("l").labels(app="x").obj()).meta_view()
    assert labelled.labels == {"app": "x"}
    assert labelled.labels is not va.labels


def test_the_pod_informer_stores_a_copy_out_of_the_watch_response() -> None:
    inf: Informer[types_pb2.Pod] = Informer(cast(Any, None), types_pb2.Pod, copy_objects=True)
    pods = [_pod("a"), _pod("b")]
    response = api_pb2.WatchResponse.FromString(
        api_pb2.WatchResponse(
            events=[api_pb2.WatchEvent(type="ADDED", object=kinds.wrap(p)) for p in pods]
        ).SerializeToString()
    )
    decoded = [cast(types_pb2.Pod, kinds.unwrap(e.object)) for e in response.events]
    for obj in decoded:
        inf._apply("ADDED", obj)
    stored = inf.lister.get("a")
    assert stored == pods[0]
    assert stored is not decoded[0]
    assert inf.dropped == 0


def test_the_cache_keys_a_pod_by_its_pod_infos_uid_string() -> None:
    cache = Cache(FakeClock(), counting=SCHEDULER_DEFAULTS)
    cache.add_pod(_pod("a"))
    (ni,) = cache.dump().nodes.values()
    (key,) = cache._pod_states
    assert key == "uid-a"
    assert key is ni.pods[0].uid
