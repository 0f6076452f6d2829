"""The DaemonSet controller (upstream pkg/controller/daemon): one pod per eligible node.

Split as upstream's files: this module (daemon_controller.go: handlers, manage, syncNodes,
the status) and update.py (update.go: the rolling update); daemon_util.py holds the pod
helpers.

A sync of one DaemonSet (upstream syncDaemonSet):
- its pods (claimed as the ReplicaSet controller claims them) are grouped by target node
  (spec.nodeName, or the node of the `metadata.name` matchFields term of a pod not yet
  bound);
- `manage`: for every node, by daemon.node_should_run_daemon_pod, a node that should run
  the pod and has none gets one; a node where it should not continue running has its pods
  deleted; failed daemon pods are deleted (with a per-node backoff from 1 s doubling to
  15 min, upstream's failedPodsBackoff) and replaced, succeeded ones deleted; of several
  pods on a node the oldest stays (without surge); unbound pods aimed at a node that no longer
  exists are deleted (bound ones are the pod GC's). Pods are created from the template with
  the daemon tolerations, the `pod-template-generation` and `controller-revision-hash`
  labels and the required node affinity `metadata.name In [node]`, so that the default
  scheduler places them (it honours the term; DaemonSet pods get priority as any pod);
- then, with satisfied expectations, the update strategy: OnDelete waits for the user to
  delete old pods; RollingUpdate deletes old pods so that at most maxUnavailable (of the
  desired number, rounded up) are unavailable, the manage loop recreating them at the new
  revision, or with maxSurge > 0 starts the new pod beside the old one and deletes the old one
  once the new one is available (upstream rollingUpdate);
- the status: desired/current/misscheduled/ready/available/unavailable/updated numbers and
  observedGeneration (only raised when the sync acted on that generation).

The revision hash is kemu's FNV hash of the template (kemu.machinery.apps.compute_hash) with
the collision count: there are no ControllerRevision objects, so no revision history and no
`rollout undo` for DaemonSets.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

import anyio

from controllermanager import daemon_util
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import (
    CONTROLLER_UID_INDEX,
    ControllerExpectations,
    ControllerRefManager,
    PodControl,
    index_by_controller_uid,
    is_pod_available,
    new_controller_ref,
    owner_selector,
    owners_selecting,
    recheck_owner,
    resolve_controller_ref,
    run_slow_start,
)
from controllermanager.daemon.update import rolling_update
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery import apps
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_conditions import is_pod_ready
from kemu.scheduling import daemon

logger = logging.getLogger(__name__)

NAME: Final = "daemonset"
DEFAULT_WORKERS: Final = 2
BURST_REPLICAS: Final = 250
FAILED_POD_BACKOFF: Final = 1.0
MAX_FAILED_POD_BACKOFF: Final = 15 * 60.0
FAILED_DAEMON_POD_REASON: Final = "FailedDaemonPod"


@dataclass
class _Backoff:
    delay: float
    updated: float


class FailedPodsBackoff:
    """upstream failedPodsBackoff: per DaemonSet and node, 1 s doubling to 15 min."""

    def __init__(self) -> None:
        self._entries: dict[str, _Backoff] = {}

    def in_backoff(self, key: str, now: float) -> float | None:
        """The delay left for `key`, or None after recording the next (doubled) delay."""
        entry = self._entries.get(key)
        if entry is not None and now - entry.updated < entry.delay:
            return entry.delay - (now - entry.updated)
        delay = (
            FAILED_POD_BACKOFF if entry is None else min(2 * entry.delay, MAX_FAILED_POD_BACKOFF)
        )
        self._entries[key] = _Backoff(delay, now)
        return None


def nodes_to_daemon_pods(pods: list[types_pb2.Pod]) -> dict[str, list[types_pb2.Pod]]:
    """upstream getNodesToDaemonPods (deleted finished pods left out)."""
    out: dict[str, list[types_pb2.Pod]] = {}
    for pod in pods:
        if pod.metadata.HasField("deletion_timestamp") and pod.status.phase in (
            "Succeeded",
            "Failed",
        ):
            continue
        node = daemon_util.target_node_name(pod)
        if node is None:
            logger.warning("daemon pod %s has no target node", object_key(pod))
            continue
        out.setdefault(node, []).append(pod)
    return out


def surge_extras(
    ds: types_pb2.DaemonSet, ordered: list[types_pb2.Pod], hash_: str, now: float
) -> list[types_pb2.Pod]:
    """With surge: keep the oldest new and the oldest old pod, and the old one only until
    the new one is available."""
    generation = apps.template_generation(ds)
    oldest_new: types_pb2.Pod | None = None
    oldest_old: types_pb2.Pod | None = None
    out: list[types_pb2.Pod] = []
    for pod in ordered:
        if daemon_util.is_pod_updated(pod, hash_, generation):
            if oldest_new is None:
                oldest_new = pod
                continue
        elif oldest_old is None:
            oldest_old = pod
            continue
        out.append(pod)
    if oldest_new is not None and oldest_old is not None:
        if not is_pod_ready(oldest_old) or is_pod_available(
            oldest_new, ds.spec.min_ready_seconds, now
        ):
            out.append(oldest_old)
    return out


def calculate_status(
    ds: types_pb2.DaemonSet,
    nodes: list[types_pb2.Node],
    by_node: dict[str, list[types_pb2.Pod]],
    hash_: str,
    now: float,
) -> tuple[types_pb2.DaemonSetStatus, int, int]:
    """The status numbers of updateDaemonSetStatus; also the ready and available counts."""
    generation = apps.template_generation(ds)
    desired = current = misscheduled = ready = available = updated = 0
    for node in nodes:
        should_run, _ = daemon.node_should_run_daemon_pod(node, ds)
        node_pods = by_node.get(node.metadata.name, [])
        if not should_run:
            if node_pods:
                misscheduled += 1
            continue
        desired += 1
        if not node_pods:
            continue
        current += 1
        pod = daemon_util.by_creation_timestamp_and_phase(node_pods)[0]
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, ds.spec.min_ready_seconds, now):
                available += 1
        if daemon_util.is_pod_updated(pod, hash_, generation):
            updated += 1
    status = types_pb2.DaemonSetStatus()
    status.CopyFrom(ds.status)
    status.desired_number_scheduled = desired
    status.current_number_scheduled = current
    status.number_misscheduled = misscheduled
    status.number_ready = ready
    status.number_available = available
    status.number_unavailable = desired - available
    status.updated_number_scheduled = updated
    return status, ready, available


class DaemonPodManager:
    """upstream syncNodes: creates and deletes daemon pods under the controller's
    expectations (shared with its event handlers)."""

    def __init__(self, pod_control: PodControl, expectations: ControllerExpectations) -> None:
        self._pod_control = pod_control
        self._expectations = expectations

    async def sync_nodes(
        self,
        ds: types_pb2.DaemonSet,
        to_delete: list[types_pb2.Pod],
        nodes_needing: list[str],
        hash_: str,
    ) -> None:
        """upstream syncNodes: creations (slow start) and deletions, at most the burst each."""
        key = object_key(ds)
        nodes_needing = nodes_needing[:BURST_REPLICAS]
        to_delete = to_delete[:BURST_REPLICAS]
        if not nodes_needing and not to_delete:
            return
        self._expectations.expect(key, len(nodes_needing), (object_key(p) for p in to_delete))
        template = daemon_util.create_pod_template(
            ds.spec.template, apps.template_generation(ds), hash_
        )
        ref = new_controller_ref(ds)
        errors: list[ApiError] = []
        pending = list(nodes_needing)
        if nodes_needing:
            logger.info(
                "daemonset %s: creating pods on %d nodes: %s",
                key,
                len(nodes_needing),
                ", ".join(nodes_needing[:10]),
            )

        async def create() -> None:
            node_name = pending.pop(0)
            t = types_pb2.PodTemplateSpec()
            t.CopyFrom(template)
            daemon_util.replace_node_name_affinity(t.spec, node_name)
            try:
                await self._pod_control.create_pods(t, ds, ref)
            except ApiError:
                self._expectations.creation_observed(key)
                raise

        _, error = await run_slow_start(len(nodes_needing), create)
        if error is not None:
            errors.append(error)
            for _ in pending:  # never tried: not expected
                self._expectations.creation_observed(key)

        async def delete(pod: types_pb2.Pod) -> None:
            try:
                await self._pod_control.delete_pod(pod.metadata.namespace, pod.metadata.name, ds)
            except ApiError as e:
                self._expectations.deletion_observed(key, object_key(pod))
                if not isinstance(e, NotFound):
                    errors.append(e)

        if to_delete:
            logger.info(
                "daemonset %s: deleting %d pods: %s",
                key,
                len(to_delete),
                ", ".join(p.metadata.name for p in to_delete[:10]),
            )
        async with anyio.create_task_group() as tg:
            for pod in to_delete:
                tg.start_soon(delete, pod)
        if errors:
            raise errors[0]


class DaemonSetController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._workers = workers
        self._recorder = recorder or EventRecorder(client, "daemonset-controller", clock=clock)
        self.expectations = ControllerExpectations(clock)
        self.pod_control = PodControl(client, self._recorder)
        self._pod_manager = DaemonPodManager(self.pod_control, self.expectations)
        self.queue = WorkQueue(clock, name=NAME)
        self._failed_backoff = FailedPodsBackoff()
        self._dss: Informer[types_pb2.DaemonSet] = informers.informer(types_pb2.DaemonSet)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        index_by_controller_uid(self._pods)
        self._dss.add_event_handler(
            FuncHandler(self._enqueue, self._on_ds_update, self._on_ds_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        )
        self._nodes.add_event_handler(
            FuncHandler(self._on_node_add, self._on_node_update, self._on_node_delete)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, ds: types_pb2.DaemonSet) -> None:
        self.queue.add(object_key(ds))

    def _on_ds_update(self, old: types_pb2.DaemonSet, new: types_pb2.DaemonSet) -> None:
        if old.metadata.uid != new.metadata.uid:
            self._on_ds_delete(old)
        self._enqueue(new)

    def _on_ds_delete(self, ds: types_pb2.DaemonSet) -> None:
        key = object_key(ds)
        self.expectations.delete(key)
        self.queue.add(key)

    def _resolve(self, pod: types_pb2.Pod) -> types_pb2.DaemonSet | None:
        ref = controller_of(pod)
        return resolve_controller_ref(self._dss.lister, "DaemonSet", pod.metadata.namespace, ref)

    def _matching(self, pod: types_pb2.Pod) -> list[types_pb2.DaemonSet]:
        return owners_selecting(self._dss.lister, pod.metadata.namespace, pod.metadata.labels)

    def _on_pod_add(self, pod: types_pb2.Pod) -> None:
        if pod.metadata.HasField("deletion_timestamp"):
            self._on_pod_delete(pod)
            return
        ds = self._resolve(pod)
        if ds is not None:
            key = object_key(ds)
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif controller_of(pod) is None:
            for match in self._matching(pod):
                self._enqueue(match)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        if new.metadata.HasField("deletion_timestamp"):
            self._on_pod_delete(new)
            return
        ds = self._resolve(new)
        if ds is not None:
            self._enqueue(ds)
            if ds.spec.min_ready_seconds > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.queue.add_after(object_key(ds), ds.spec.min_ready_seconds + 1.0)
        old_ds = self._resolve(old)
        if old_ds is not None and (ds is None or old_ds.metadata.uid != ds.metadata.uid):
            self._enqueue(old_ds)
        if controller_of(new) is None and old.metadata.labels != new.metadata.labels:
            for match in self._matching(new):
                self._enqueue(match)

    def _on_pod_delete(self, pod: types_pb2.Pod) -> None:
        ds = self._resolve(pod)
        if ds is None:
            return
        key = object_key(ds)
        self.expectations.deletion_observed(key, object_key(pod))
        self.queue.add(key)

    def _on_node_add(self, node: types_pb2.Node) -> None:
        for ds in self._dss.lister.list():
            if daemon.node_should_run_daemon_pod(node, ds)[0]:
                self._enqueue(ds)

    def _on_node_update(self, old: types_pb2.Node, new: types_pb2.Node) -> None:
        if (
            old.metadata.labels == new.metadata.labels
            and list(old.spec.taints) == list(new.spec.taints)
            and old.spec.unschedulable == new.spec.unschedulable
        ):
            return  # upstream shouldIgnoreNodeUpdate: nothing the predicates read changed
        for ds in self._dss.lister.list():
            if daemon.node_should_run_daemon_pod(old, ds) != daemon.node_should_run_daemon_pod(
                new, ds
            ):
                self._enqueue(ds)

    def _on_node_delete(self, node: types_pb2.Node) -> None:
        for ds in self._dss.lister.list():
            self._enqueue(ds)

    # ------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Syncs DaemonSet `key`; raises an ApiError to be retried with backoff."""
        namespace, _, name = key.partition("/")
        ds = self._dss.lister.get(name, namespace)
        if ds is None:
            self.expectations.delete(key)
            return
        selector = owner_selector(ds)
        if selector is None or selector.empty:
            logger.warning("daemonset %s: invalid or empty selector, not syncing it", key)
            return
        if ds.metadata.HasField("deletion_timestamp"):
            return
        nodes = self._nodes.lister.list()
        hash_ = apps.compute_hash(
            ds.spec.template,
            ds.status.collision_count if ds.status.HasField("collision_count") else None,
        )
        manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
            self._client, ds, selector, recheck_owner(self._client, ds)
        )
        pods = await manager.claim(self._pods.lister.list(namespace))
        if not self.expectations.satisfied(key):
            await self._update_status(ds, nodes, pods, hash_, observed=False)
            return
        error: ApiError | None = None
        try:
            await self._manage(ds, nodes, pods, hash_)
            if self.expectations.satisfied(key) and (
                ds.spec.update_strategy.type == apps.ROLLING_UPDATE
            ):
                # What manage did is in the informer by now (satisfied): read it again.
                await self._rolling_update(ds, nodes, self._owned_pods(ds), hash_)
        except ApiError as e:
            error = e
        await self._update_status(ds, nodes, self._owned_pods(ds), hash_, observed=True)
        if error is not None:
            raise error

    def _owned_pods(self, ds: types_pb2.DaemonSet) -> list[types_pb2.Pod]:
        """The pods the DaemonSet controls, as the informer has them now."""
        return self._pods.lister.by_index(CONTROLLER_UID_INDEX, ds.metadata.uid)

    def _pods_should_be_on_node(
        self,
        node: types_pb2.Node,
        by_node: dict[str, list[types_pb2.Pod]],
        ds: types_pb2.DaemonSet,
        hash_: str,
    ) -> tuple[bool, list[types_pb2.Pod]]:
        """upstream podsShouldBeOnNode: (needs a pod, pods to delete)."""
        should_run, should_continue = daemon.node_should_run_daemon_pod(node, ds)
        name = node.metadata.name
        daemon_pods = by_node.get(name)
        if should_run and not daemon_pods:
            return True, []
        to_delete: list[types_pb2.Pod] = []
        if should_continue and daemon_pods:
            running: list[types_pb2.Pod] = []
            now = self._clock.now()
            for pod in daemon_pods:
                if pod.metadata.HasField("deletion_timestamp"):
                    continue
                if pod.status.phase == "Failed":
                    backoff_key = f"{object_key(ds)}/{ds.metadata.uid}/{name}"
                    wait = self._failed_backoff.in_backoff(backoff_key, now)
                    if wait is not None:
                        self.queue.add_after(object_key(ds), wait)
                        continue
                    self._recorder.event(
                        ds,
                        EVENT_WARNING,
                        FAILED_DAEMON_POD_REASON,
                        "Delete",
                        f"Found failed daemon pod {object_key(pod)} on node {name}, will try to "
                        "kill it",
                    )
                    to_delete.append(pod)
                elif pod.status.phase == "Succeeded":
                    to_delete.append(pod)
                else:
                    running.append(pod)
            if len(running) > 1:
                ordered = daemon_util.by_creation_timestamp_and_phase(running)
                if _max_surge(ds) == 0:
                    to_delete.extend(ordered[1:])
                else:
                    to_delete.extend(surge_extras(ds, ordered, hash_, now))
        elif not should_continue and daemon_pods:
            to_delete.extend(
                p for p in daemon_pods if not p.metadata.HasField("deletion_timestamp")
            )
        return False, to_delete

    async def _manage(
        self,
        ds: types_pb2.DaemonSet,
        nodes: list[types_pb2.Node],
        pods: list[types_pb2.Pod],
        hash_: str,
    ) -> None:
        by_node = nodes_to_daemon_pods(pods)
        needing: list[str] = []
        to_delete: list[types_pb2.Pod] = []
        for node in nodes:
            need, delete = self._pods_should_be_on_node(node, by_node, ds, hash_)
            if need:
                needing.append(node.metadata.name)
            to_delete.extend(delete)
        known = {n.metadata.name for n in nodes}
        for node_name, node_pods in by_node.items():
            if node_name not in known:
                to_delete.extend(
                    p
                    for p in node_pods
                    if not p.spec.node_name and not p.metadata.HasField("deletion_timestamp")
                )
        await self._pod_manager.sync_nodes(ds, to_delete, needing, hash_)

    async def _rolling_update(
        self,
        ds: types_pb2.DaemonSet,
        nodes: list[types_pb2.Node],
        pods: list[types_pb2.Pod],
        hash_: str,
    ) -> None:
        to_delete, nodes_needing = rolling_update(
            ds, nodes, nodes_to_daemon_pods(pods), hash_, self._clock.now()
        )
        await self._pod_manager.sync_nodes(ds, to_delete, nodes_needing, hash_)

    # ------------------------------------------------------------ status

    async def _update_status(
        self,
        ds: types_pb2.DaemonSet,
        nodes: list[types_pb2.Node],
        pods: list[types_pb2.Pod],
        hash_: str,
        *,
        observed: bool,
    ) -> None:
        """upstream updateDaemonSetStatus."""
        status, ready, available = calculate_status(
            ds, nodes, nodes_to_daemon_pods(pods), hash_, self._clock.now()
        )
        if observed:
            status.observed_generation = ds.metadata.generation
        if status != ds.status:
            new = types_pb2.DaemonSet()
            new.CopyFrom(ds)
            new.status.CopyFrom(status)
            try:
                await self._client.update_status(new)
            except Conflict:
                # A newer DaemonSet is on its way to the informer: its sync writes the status.
                self.queue.add(object_key(ds))
        if ds.spec.min_ready_seconds > 0 and ready != available:
            self.queue.add_after(object_key(ds), float(ds.spec.min_ready_seconds))

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing daemonset", logger)

    async def run(self) -> None:
        """Syncs DaemonSets until cancelled; the informers must be running."""
        await run_controller(
            "the daemonset controller",
            logger,
            synced=(self._dss, self._pods, self._nodes),
            queues=(self.queue,),
            tasks=[
                ("daemonset events", self._recorder.run),
                *workers("daemonset", self._workers, self._worker),
            ],
        )


def _max_surge(ds: types_pb2.DaemonSet) -> int:
    """Whether the DaemonSet surges (upstream AllowsSurge), as a positive count or 0."""
    strategy = ds.spec.update_strategy
    if strategy.type != apps.ROLLING_UPDATE or not strategy.rolling_update.HasField("max_surge"):
        return 0
    try:
        return apps.scaled_value(strategy.rolling_update.max_surge, 1, round_up=True)
    except ValueError:
        return 0


def new_controller(ctx: ControllerContext) -> DaemonSetController:
    """The init function registered as "daemonset"."""
    return DaemonSetController(ctx.client, ctx.informers, ctx.clock)
