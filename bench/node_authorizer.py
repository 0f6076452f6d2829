"""The Node authorizer's cost in-process (issue #60 item 3): a decision and a graph update.

    python -m bench node_authorizer [--nodes N] [--pods P] [--decisions D] [--seed S]

No cluster: the authorizer (apiserver/authorization/node.py) over a graph that its populator
builds from N nodes and P bound pods, as the apiserver's watch caches feed it. Each pod
references a secret and a configmap of its own, its namespace's shared secret (one of 10
namespaces: P/10 pods reference it, from about every node), its service account and, every
fourth pod, a PersistentVolumeClaim whose PersistentVolume is in the graph too.

Reported, in process CPU time per operation (so that runs on a loaded machine compare):
- building the graph (P pod ADDED events and P/4 volumes), per event;
- a decision: get of a secret of the node's own pod (allowed), of a secret no pod on the node
  references (refused: the whole answer is a count lookup), of the shared secret (allowed and
  refused), of a volume through its claim (a walk of one plain edge), and of a lease;
- an update: a pod bound (ADDED of a bound pod: its five edges), its status written
  (MODIFIED: the populator sees nothing of the graph changed), and deleted.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections.abc import Callable, Sequence

from apiserver.authorization.node import NodeAuthorizer, NodeGraphPopulator
from apiserver.authorization.node_graph import Graph
from kemu.api.v1 import types_pb2
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import node_user

NAMESPACES = 10


def _pod(i: int, node: str) -> types_pb2.Pod:
    pod = types_pb2.Pod()
    ns = f"ns{i % NAMESPACES}"
    pod.metadata.namespace, pod.metadata.name, pod.metadata.uid = ns, f"p{i}", f"uid-{i}"
    pod.spec.node_name = node
    pod.spec.service_account_name = "default"
    pod.spec.volumes.add(name="own").secret.secret_name = f"s{i}"
    pod.spec.volumes.add(name="shared").secret.secret_name = "shared"
    c = pod.spec.containers.add(name="c", image="i")
    c.env_from.add().config_map_ref.name = f"cm{i}"
    if i % 4 == 0:
        pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = f"pvc{i}"
    return pod


def _pv(i: int) -> types_pb2.PersistentVolume:
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = f"pv{i}"
    pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = f"ns{i % NAMESPACES}", f"pvc{i}"
    return pv


class _Feed:
    """The watch caches' side of the populator: ADDED events, one by one."""

    def __init__(self) -> None:
        self.observer: object = None

    def observe(self, observer: object) -> None:
        self.observer = observer

    def add(self, obj: object) -> None:
        self.observer.changed("ADDED", obj, None)  # type: ignore[attr-defined]

    def modify(self, obj: object, prev: object) -> None:
        self.observer.changed("MODIFIED", obj, prev)  # type: ignore[attr-defined]

    def delete(self, obj: object) -> None:
        self.observer.changed("DELETED", obj, None)  # type: ignore[attr-defined]


def _cpu_per_op(fn: Callable[[], object], n: int) -> float:
    """Microseconds of process CPU per call of `fn`, over `n` calls."""
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def run(nodes: int, pods: int, decisions: int, seed: int) -> list[tuple[str, float, str]]:
    rng = random.Random(seed)
    placement = [f"n{rng.randrange(nodes)}" for _ in range(pods)]
    graph = Graph()
    pod_feed, pv_feed = _Feed(), _Feed()
    NodeGraphPopulator(graph).observe({"pods": pod_feed, "persistentvolumes": pv_feed})  # type: ignore[dict-item]
    objects = [_pod(i, placement[i]) for i in range(pods)]
    volumes = [_pv(i) for i in range(0, pods, 4)]
    start = time.process_time()
    for pod in objects:
        pod_feed.add(pod)
    for pv in volumes:
        pv_feed.add(pv)
    build_us = (time.process_time() - start) / (len(objects) + len(volumes)) * 1e6
    authorizer = NodeAuthorizer(graph, ())
    rows = [("graph build, per event", build_us, f"{len(graph)} vertices")]

    i = 0  # a pod with a claim (i % 4 == 0)
    node = placement[i]
    in_ns = set(placement[i::NAMESPACES])  # the nodes of a pod of the shared secret's namespace
    stranger = next(n for n in (f"n{k}" for k in range(nodes)) if n not in in_ns)
    ns = f"ns{i % NAMESPACES}"
    user, other = node_user(node), node_user(placement[1] if placement[1] != node else "nX")
    cases: list[tuple[str, Attributes, bool]] = [
        ("get own pod's secret", Attributes(user, "get", "secrets", namespace=ns, name="s0"), True),
        (
            "get another node's secret",
            Attributes(other, "get", "secrets", namespace=ns, name="s0"),
            False,
        ),
        (
            f"get shared secret ({pods // NAMESPACES} pods)",
            Attributes(user, "get", "secrets", namespace=ns, name="shared"),
            True,
        ),
        (
            "get shared secret, no pod of it on the node",
            Attributes(node_user(stranger), "get", "secrets", namespace=ns, name="shared"),
            False,
        ),
        (
            "get volume through its claim",
            Attributes(user, "get", "persistentvolumes", name="pv0"),
            True,
        ),
        (
            "update own lease",
            Attributes(
                user, "update", "leases", "coordination.k8s.io", "", "kube-node-lease", node
            ),
            True,
        ),
    ]
    for label, attrs, expected in cases:
        got = authorizer.authorize(attrs).allowed
        assert got is expected, (label, got)
        rows.append(
            (
                f"decision: {label}",
                _cpu_per_op(functools.partial(authorizer.authorize, attrs), decisions),
                "allowed" if got else "refused",
            )
        )

    extra = [_pod(pods + k, placement[k % pods]) for k in range(min(decisions, 10_000))]
    start = time.process_time()
    for pod in extra:
        pod_feed.add(pod)
    add_us = (time.process_time() - start) / len(extra) * 1e6
    modified = []
    for pod in extra:
        new = types_pb2.Pod()
        new.CopyFrom(pod)
        new.status.phase = "Running"
        modified.append((new, pod))
    start = time.process_time()
    for new, old in modified:
        pod_feed.modify(new, old)
    modify_us = (time.process_time() - start) / len(extra) * 1e6
    start = time.process_time()
    for pod in extra:
        pod_feed.delete(pod)
    delete_us = (time.process_time() - start) / len(extra) * 1e6
    rows.append(("update: a pod bound (ADDED)", add_us, f"{len(extra)} pods"))
    rows.append(("update: a pod's status (MODIFIED, edges kept)", modify_us, f"{len(extra)} pods"))
    rows.append(("update: a pod deleted (DELETED)", delete_us, f"{len(extra)} pods"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench node_authorizer", description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.nodes < 2 or args.pods < args.nodes or args.decisions < 1:
        parser.error("--nodes must be at least 2, --pods at least --nodes, --decisions at least 1")
    print(f"nodes {args.nodes}, pods {args.pods}, seed {args.seed}")
    for label, us, note in run(args.nodes, args.pods, args.decisions, args.seed):
        print(f"{label:52} {us:9.2f} us  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
