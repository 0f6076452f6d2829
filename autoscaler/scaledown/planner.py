"""The scale-down planner (upstream core/scaledown/planner): each loop, which nodes are
unneeded (eligible, then removable in simulation, one after the other on a shared snapshot so
that two nodes never count on the same room), and, when not in cooldown, which of them are
removed now: unneeded (ready) for --scale-down-unneeded-time or (unready) for
--scale-down-unready-time, their group staying at or above its min size, at most
--max-empty-bulk-delete empty nodes and --max-drain-parallelism drained ones at once. Every
node not removed gets a reason, logged once per loop. A node whose pods could not be moved
(BlockedByPod, NoPlaceToMovePods) is RecentlyUnremovable, not checked at all, for
--unremovable-node-recheck-timeout (upstream unremovable.Nodes)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio.lowlevel

from autoscaler.clusterstate import GroupState
from autoscaler.dra import pod_binding_with_devices
from autoscaler.scaledown.eligibility import UnremovableReason, Utilization, check
from autoscaler.scaledown.options import ScaleDownOptions
from autoscaler.scaledown.removal import simulate_removal
from autoscaler.scaledown.rules import NodePods, PdbTracker, classify
from autoscaler.scaledown.unneeded import UnneededNodes
from kemu.api.v1 import types_pb2
from kemu.machinery.duration import format_duration
from kemu.machinery.keys import object_key
from kemu.machinery.node_conditions import is_node_ready
from kemu.scheduling.dra_snapshot import DraSnapshot
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.types import NodeInfo

logger = logging.getLogger(__name__)


@dataclass
class Candidate:
    """A node that is unneeded this loop."""

    node: types_pb2.Node
    group: str
    pods: NodePods
    utilization: Utilization

    @property
    def name(self) -> str:
        return self.node.metadata.name

    @property
    def empty(self) -> bool:
        return not self.pods.movable


@dataclass
class Plan:
    unneeded: list[Candidate] = field(default_factory=list)
    unremovable: dict[str, tuple[UnremovableReason, str]] = field(default_factory=dict)
    empty: list[Candidate] = field(default_factory=list)
    """To delete now without a drain."""
    drain: list[Candidate] = field(default_factory=list)
    """To drain, then delete, now."""


@dataclass
class _Categorizing:
    """One update's running state: the plan so far, the snapshot with the unneeded nodes'
    pods already placed elsewhere, the PDB budgets they used, the nodes gone or going (never a
    destination) and the simulations run."""

    plan: Plan
    group_of: dict[str, str]
    real: set[str]
    working: ClusterSnapshot
    budgets: PdbTracker
    removed: set[str]
    dra: DraSnapshot | None = None
    """The DRA objects of the loop's snapshot (utilization is of the snapshot as it was)."""
    simulated: int = 0


class Planner:
    def __init__(
        self,
        options: ScaleDownOptions,
        checker: PredicateChecker,
    ) -> None:
        self._opts = options
        self._checker = checker
        self.unneeded = UnneededNodes()
        self.recheck_at: dict[str, float] = {}
        """Node -> monotonic time before which it is RecentlyUnremovable."""

    async def update(
        self,
        snapshot: ClusterSnapshot,
        nodes: Sequence[types_pb2.Node],
        groups: Mapping[str, GroupState],
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        *,
        deleting: Mapping[str, str],
        monotonic: float,
        wall: float,
    ) -> Plan:
        """Finds the unneeded nodes (upstream UpdateClusterState). A pod counted on a node in
        the snapshot (bound, nominated there as the version counts, or placed there in
        simulation) counts in its utilization and must fit elsewhere for the node to go, as
        upstream's; no node is spared for it. `deleting`: node -> group of the deletions in
        progress. It yields to the event loop between nodes, so that a
        loop over a large cluster does not hold /metrics, health checks or SIGTERM."""
        # Registered nodes only: upcoming (template) nodes are neither removed nor destinations.
        real = {n.metadata.name for n in nodes}
        state = _Categorizing(
            plan=Plan(),
            group_of={n.metadata.name: g.id for g in groups.values() for n in g.nodes},
            real=real,
            working=snapshot,
            budgets=PdbTracker(pdbs),
            removed=set(deleting),
            dra=snapshot.dra,
        )
        # Nodes unneeded before come first, so that their since-times hold.
        previous = set(self.unneeded.names())
        order = sorted(
            (ni for ni in snapshot.snapshot.list() if ni.name in real and ni.node is not None),
            key=lambda ni: (ni.name not in previous, ni.name),
        )
        self.recheck_at = {n: t for n, t in self.recheck_at.items() if n in real and t > monotonic}
        for ni in order:
            await anyio.lowlevel.checkpoint()
            if ni.name not in deleting:
                self._categorize(state, ni, monotonic=monotonic, wall=wall)
        plan = state.plan
        self.unneeded.update([c.name for c in plan.unneeded], monotonic=monotonic, wall=wall)
        return plan

    def _categorize(
        self, state: _Categorizing, ni: NodeInfo, *, monotonic: float, wall: float
    ) -> None:
        """One node of upstream categorizeNodes: unremovable with its reason, or unneeded
        (its pods then placed elsewhere in the working snapshot)."""
        plan = state.plan
        name = ni.name
        node = ni.node
        assert node is not None
        recheck = self._opts.unremovable_node_recheck_timeout
        if name in self.recheck_at:
            plan.unremovable[name] = (
                UnremovableReason.RECENTLY_UNREMOVABLE,
                f"unremovable in the last {format_duration(recheck)}, "
                f"checked again in {self.recheck_at[name] - monotonic:.3g}s",
            )
            return
        reason, message, util = check(
            ni,
            in_group=name in state.group_of,
            opts=self._opts,
            now=wall,
            dra=state.dra,
        )
        if reason is not None:
            plan.unremovable[name] = (reason, message)
            return
        current = state.working.get(name)
        assert current is not None
        binding = (
            None
            if state.dra is None
            else pod_binding_with_devices((pi.pod for pi in ni.pods), name, state.dra)
        )
        if binding is not None:
            plan.unremovable[name] = (
                UnremovableReason.BLOCKED_BY_POD,
                f"pod {object_key(binding)} is being bound to the node with its devices "
                "allocated there",
            )
            return
        trial = state.budgets.fork()
        pods = classify(
            [pi.pod for pi in current.pods],
            trial,
            self._opts,
            now=wall,
        )
        if pods.blocking is not None:
            plan.unremovable[name] = (UnremovableReason.BLOCKED_BY_POD, pods.blocking.message)
            self.recheck_at[name] = monotonic + recheck
            return
        sim = self._simulate_removal(state, name, pods, monotonic=monotonic)
        if sim is None:
            return
        state.working = sim
        state.budgets = trial
        state.removed.add(name)
        plan.unneeded.append(Candidate(node, state.group_of[name], pods, util))

    def _simulate_removal(
        self, state: _Categorizing, name: str, pods: NodePods, *, monotonic: float
    ) -> ClusterSnapshot | None:
        """The working snapshot with the node's movable pods placed elsewhere; None (the node
        marked unremovable) when they do not fit or the loop's simulations are used up."""
        if not pods.movable:
            # Empty: nothing to place, no simulation (its room is simply not a destination
            # for the next candidates: `removed`).
            return state.working
        plan = state.plan
        if state.simulated >= self._opts.non_empty_candidates_count:
            plan.unremovable[name] = (
                UnremovableReason.NOT_UNNEEDED_OTHER_REASON,
                "--scale-down-non-empty-candidates-count "
                f"{self._opts.non_empty_candidates_count} reached this loop",
            )
            return None
        state.simulated += 1
        gone = frozenset(state.removed | {name})
        real = state.real

        def destination(d: NodeInfo) -> bool:
            return d.name in real and d.name not in gone

        found, _, why = simulate_removal(
            self._checker, state.working, name, pods.movable, destination
        )
        if found is None:
            plan.unremovable[name] = (UnremovableReason.NO_PLACE_TO_MOVE_PODS, why)
            self.recheck_at[name] = monotonic + self._opts.unremovable_node_recheck_timeout
            return None
        return found

    def nodes_to_delete(
        self,
        plan: Plan,
        groups: Mapping[str, GroupState],
        *,
        deleting: Mapping[str, str],
        drains_in_progress: int,
        monotonic: float,
    ) -> None:
        """Picks, among the unneeded nodes, those to remove now (upstream NodesToDelete)."""
        opts = self._opts
        going: dict[str, int] = {}
        for group in deleting.values():
            going[group] = going.get(group, 0) + 1
        for c in plan.unneeded:
            since = self.unneeded.since(c.name)
            assert since is not None
            unneeded_for = monotonic - since.monotonic
            if is_node_ready(c.node):
                if unneeded_for < opts.unneeded_time:
                    plan.unremovable[c.name] = (
                        UnremovableReason.NOT_UNNEEDED_LONG_ENOUGH,
                        f"unneeded for {unneeded_for:.3g}s of {opts.unneeded_time:g}s",
                    )
                    continue
            elif unneeded_for < opts.unready_time:
                plan.unremovable[c.name] = (
                    UnremovableReason.NOT_UNREADY_LONG_ENOUGH,
                    f"unready and unneeded for {unneeded_for:.3g}s of {opts.unready_time:g}s",
                )
                continue
            g = groups[c.group]
            if g.target - going.get(c.group, 0) <= g.min_size:
                plan.unremovable[c.name] = (
                    UnremovableReason.NODE_GROUP_MIN_SIZE_REACHED,
                    f"node group {g.id} at its min size {g.min_size} (target {g.target}, "
                    f"{going.get(c.group, 0)} being deleted)",
                )
                continue
            if c.empty:
                if len(plan.empty) >= opts.max_empty_bulk_delete:
                    plan.unremovable[c.name] = (
                        UnremovableReason.NOT_UNNEEDED_OTHER_REASON,
                        f"--max-empty-bulk-delete {opts.max_empty_bulk_delete} reached",
                    )
                    continue
                plan.empty.append(c)
            else:
                if drains_in_progress + len(plan.drain) >= opts.max_drain_parallelism:
                    plan.unremovable[c.name] = (
                        UnremovableReason.NOT_UNNEEDED_OTHER_REASON,
                        f"--max-drain-parallelism {opts.max_drain_parallelism} reached",
                    )
                    continue
                plan.drain.append(c)
            going[c.group] = going.get(c.group, 0) + 1
