"""The removal simulation (upstream simulator.RemovalSimulator): a node may go when every pod
that has to move fits another node of the snapshot with the node gone, as the scheduler's
Filter plugins say (kemu.scheduling.simulator.PredicateChecker). The pods are placed one by
one, so that they compete for the room left."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.types import NodeInfo


def simulate_removal(
    checker: PredicateChecker,
    snapshot: ClusterSnapshot,
    node: str,
    pods: Sequence[types_pb2.Pod],
    destination: Callable[[NodeInfo], bool],
) -> tuple[ClusterSnapshot | None, dict[str, str], str]:
    """A fork of `snapshot` without `node` and with `pods` placed on nodes that `destination`
    accepts, and where each went; or None, the placements found, and why not."""
    sim = snapshot.fork()
    sim.remove_node(node)
    placed: dict[str, str] = {}
    for pod in pods:
        moved = types_pb2.Pod()
        moved.CopyFrom(pod)
        moved.spec.node_name = ""
        target, status = checker.schedule_pod_on_any_node_matching(sim, moved, destination)
        if target is None:
            why = ", ".join(status.reasons) or status.code.name
            return (
                None,
                placed,
                f"can reschedule only {len(placed)} out of {len(pods)} pods: "
                f"{object_key(pod)} fits no other node ({why})",
            )
        placed[object_key(pod)] = target
    return sim, placed, ""
