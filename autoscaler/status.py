"""The status ConfigMap `kube-system/cluster-autoscaler-status` (upstream clusterstate GetStatus,
clusterstate/api types and clusterstate/utils WriteStatusConfigMap).

`build_status` is pure: from the loop's groups, the back-off, the Nodes and (once scale-down
reports it) a `ScaleDownSummary` it builds upstream's YAML document (time, autoscalerStatus,
clusterWide health/scaleUp/scaleDown, one entry per node group), carrying each condition's
lastTransitionTime over from the previous document while its status is unchanged.
`StatusWriter` writes it once per loop under the `status` key, with the annotation
`cluster-autoscaler.kubernetes.io/last-updated`: created if missing, updated at the version read
(a conflict or a concurrent create is retried once with a fresh read; other errors are logged,
the next loop writes again).

Simplifications, said here: health follows upstream's thresholds (unhealthy when more than 3
and more than 45% of the registered nodes are unready); `longUnregistered` is always 0 (kemu
deletes an instance at --max-node-provision-time, so it never stays unregistered longer);
`notStarted` is a registered, not Ready node created less than 15 minutes ago (upstream's
MaxNodeStartupTime).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import yaml

from autoscaler.backoff import Backoff
from autoscaler.clusterstate import GroupState
from autoscaler.scale_up import ScaleUpResult
from autoscaler.scaledown.scale_down import ScaleDownSummary
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, NotFound
from kemu.machinery.jsonvalue import JSON, JSONArray, JSONObject
from kemu.machinery.node_conditions import is_node_ready

logger = logging.getLogger(__name__)

STATUS_CONFIGMAP: Final = "cluster-autoscaler-status"
STATUS_NAMESPACE: Final = "kube-system"
STATUS_KEY: Final = "status"
LAST_UPDATED_ANNOTATION: Final = "cluster-autoscaler.kubernetes.io/last-updated"
TO_BE_DELETED_TAINT: Final = "ToBeDeletedByClusterAutoscaler"

RUNNING: Final = "Running"
INITIALIZING: Final = "Initializing"
HEALTHY: Final = "Healthy"
UNHEALTHY: Final = "Unhealthy"
IN_PROGRESS: Final = "InProgress"
NO_ACTIVITY: Final = "NoActivity"
BACKOFF: Final = "Backoff"
CANDIDATES_PRESENT: Final = "CandidatesPresent"
NO_CANDIDATES: Final = "NoCandidates"

OK_TOTAL_UNREADY_COUNT: Final = 3
MAX_TOTAL_UNREADY_PERCENTAGE: Final = 45.0
MAX_NODE_STARTUP_TIME: Final = 15 * 60.0
MAX_ERROR_MESSAGE_SIZE: Final = 500


def go_time(seconds: float) -> str:
    """Go's `2006-01-02 15:04:05.999999999 -0700 MST` in UTC (upstream's `time` field and
    last-updated annotation)."""
    when = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    text = when.strftime("%Y-%m-%d %H:%M:%S")
    frac = f"{when.microsecond:06d}".rstrip("0")
    return f"{text}{'.' + frac if frac else ''} +0000 UTC"


def rfc3339(seconds: float) -> str:
    """metav1.Time as it marshals (whole seconds, UTC)."""
    return dt.datetime.fromtimestamp(int(seconds), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Readiness:
    ready: int = 0
    unready: int = 0
    not_started: int = 0
    being_deleted: int = 0
    unregistered: int = 0

    @property
    def registered(self) -> int:
        return self.ready + self.unready + self.not_started + self.being_deleted

    def add(self, node: types_pb2.Node, now: float, deleting: set[str]) -> None:
        if node.metadata.name in deleting or any(
            t.key == TO_BE_DELETED_TAINT for t in node.spec.taints
        ):
            self.being_deleted += 1
        elif is_node_ready(node):
            self.ready += 1
        elif now - node.metadata.creation_timestamp.seconds < MAX_NODE_STARTUP_TIME:
            self.not_started += 1
        else:
            self.unready += 1

    def counts(self) -> JSONObject:
        registered: JSONObject = {
            "total": self.registered,
            "ready": self.ready,
            "notStarted": self.not_started,
        }
        if self.being_deleted:
            registered["beingDeleted"] = self.being_deleted
        registered["unready"] = {"total": self.unready, "resourceUnready": 0}
        return {
            "registered": registered,
            "longUnregistered": 0,
            "unregistered": self.unregistered,
        }

    def healthy(self) -> bool:
        return not (
            self.unready > OK_TOTAL_UNREADY_COUNT
            and self.unready > MAX_TOTAL_UNREADY_PERCENTAGE / 100 * self.registered
        )


def _condition(
    status: str, probe: float | None, previous: Mapping[str, object] | None, **fields: JSON
) -> JSONObject:
    """{status, **fields, lastProbeTime, lastTransitionTime}: the transition time is kept from
    `previous` while the status is the same."""
    out: JSONObject = {"status": status, **fields}
    if probe is None:
        return out
    out["lastProbeTime"] = rfc3339(probe)
    kept = previous.get("lastTransitionTime") if previous else None
    if previous and previous.get("status") == status and isinstance(kept, str):
        out["lastTransitionTime"] = kept
    else:
        out["lastTransitionTime"] = out["lastProbeTime"]
    return out


def _sub(doc: Mapping[str, object] | None, *path: str) -> Mapping[str, object] | None:
    value: object = doc
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, Mapping) else None


def _by_name(groups: object) -> dict[object, Mapping[str, object]]:
    """The node groups of a previous status by name."""
    if not isinstance(groups, list):
        return {}
    return {g.get("name"): g for g in groups if isinstance(g, dict)}


def _group_scale_up(
    g: GroupState,
    healthy: bool,
    backoff_info: tuple[str, str] | None,
    now: float,
    previous: Mapping[str, object] | None,
) -> JSONObject:
    """A group's ScaleUp condition: InProgress while it has upcoming nodes, else Unhealthy,
    Backoff (with the error, truncated as upstream) or NoActivity."""
    extra: JSONObject = {}
    if g.upcoming > 0:
        scale_up_status = IN_PROGRESS
    elif not healthy:
        scale_up_status = UNHEALTHY
    elif backoff_info is not None:
        scale_up_status = BACKOFF
        code, message = backoff_info
        if len(message) > MAX_ERROR_MESSAGE_SIZE:
            message = message[:MAX_ERROR_MESSAGE_SIZE] + "<truncated>"
        extra["backoffInfo"] = {"errorCode": code, "errorMessage": message}
    else:
        scale_up_status = NO_ACTIVITY
    return _condition(scale_up_status, now, previous, **extra)


def build_status(
    groups: Mapping[str, GroupState],
    nodes: Iterable[types_pb2.Node],
    backoff: Backoff,
    *,
    now: float,
    monotonic: float,
    scale_down: ScaleDownSummary | None = None,
    previous: Mapping[str, object] | None = None,
) -> JSONObject:
    """Upstream's ClusterAutoscalerStatus for one loop (module docstring). `now` is wall-clock
    epoch seconds, `monotonic` the clock the back-off counts in."""
    sd = scale_down or ScaleDownSummary()
    deleting = set(sd.deleting)
    unneeded = {n.name for n in sd.unneeded}
    previous_groups = _by_name((previous or {}).get("nodeGroups"))
    total = _Readiness()
    for node in nodes:
        total.add(node, now, deleting)
    node_groups: JSONArray = []
    in_progress = False
    for g in sorted(groups.values(), key=lambda g: g.id):
        prev = previous_groups.get(g.id)
        readiness = _Readiness(unregistered=g.upcoming)
        for node in g.nodes:
            readiness.add(node, now, deleting)
        total.unregistered += g.upcoming
        health = _condition(
            HEALTHY if readiness.healthy() else UNHEALTHY,
            now,
            _sub(prev, "health"),
            nodeCounts=readiness.counts(),
            cloudProviderTarget=g.target,
            minSize=g.min_size,
            maxSize=g.max_size,
        )
        in_progress = in_progress or g.upcoming > 0
        scale_up = _group_scale_up(
            g, readiness.healthy(), backoff.info(g.id, monotonic), now, _sub(prev, "scaleUp")
        )
        group_nodes = {n.metadata.name for n in g.nodes}
        candidates = sum(1 for n in unneeded if n in group_nodes)
        node_groups.append(
            {
                "name": g.id,
                "health": health,
                "scaleUp": scale_up,
                "scaleDown": _scale_down(candidates, sd.probe_time, _sub(prev, "scaleDown")),
            }
        )
    return {
        "time": go_time(now),
        "autoscalerStatus": RUNNING,
        "clusterWide": {
            "health": _condition(
                HEALTHY if total.healthy() else UNHEALTHY,
                now,
                _sub(previous, "clusterWide", "health"),
                nodeCounts=total.counts(),
            ),
            "scaleUp": _condition(
                IN_PROGRESS if in_progress else NO_ACTIVITY,
                now,
                _sub(previous, "clusterWide", "scaleUp"),
            ),
            "scaleDown": _scale_down(
                len(unneeded), sd.probe_time, _sub(previous, "clusterWide", "scaleDown")
            ),
        },
        "nodeGroups": node_groups,
    }


def _scale_down(
    candidates: int, probe: float | None, previous: Mapping[str, object] | None
) -> JSONObject:
    extra: JSONObject = {"candidates": candidates} if candidates else {}
    return _condition(CANDIDATES_PRESENT if candidates else NO_CANDIDATES, probe, previous, **extra)


def status_text(status: Mapping[str, object]) -> str:
    """The YAML of the `status` key, fields in upstream's order."""
    return yaml.safe_dump(dict(status), sort_keys=False, default_flow_style=False)


class StatusWriter:
    """Writes the status ConfigMap once per loop (upstream WriteStatusConfigMap)."""

    def __init__(
        self,
        client: ApiClient,
        clock: Clock,
        list_nodes: Callable[[], Sequence[types_pb2.Node]],
        *,
        namespace: str = STATUS_NAMESPACE,
        name: str = STATUS_CONFIGMAP,
    ) -> None:
        self._client = client
        self._clock = clock
        self._list_nodes = list_nodes
        self.namespace = namespace
        self.name = name
        self.last: JSONObject | None = None

    async def initializing(self) -> None:
        """Upstream writes `autoscalerStatus: Initializing` before its first loop."""
        now = self._clock.now()
        await self._write({"time": go_time(now), "autoscalerStatus": INITIALIZING}, now)

    async def write(
        self,
        groups: Mapping[str, GroupState],
        backoff: Backoff,
        *,
        scale_up: ScaleUpResult | None = None,
        scale_down: ScaleDownSummary | None = None,
    ) -> None:
        """The status after a loop: `groups` as the loop read them, grown by its `scale_up`."""
        now = self._clock.now()
        option = scale_up.option if scale_up is not None else None
        if option is not None and option.group in groups:
            grown = dataclasses.replace(groups[option.group])
            grown.target += option.node_count
            groups = {**groups, option.group: grown}
        status = build_status(
            groups,
            self._list_nodes(),
            backoff,
            now=now,
            monotonic=self._clock.monotonic(),
            scale_down=scale_down,
            previous=self.last,
        )
        if await self._write(status, now):
            self.last = status

    async def _write(self, status: Mapping[str, object], now: float) -> bool:
        text = status_text(status)
        stamp = go_time(now)
        for attempt in range(2):
            try:
                await self._put(text, stamp)
                return True
            except (Conflict, AlreadyExists) as e:
                if attempt:
                    logger.warning("writing the status ConfigMap: %s", e)
            except ApiError as e:
                logger.warning("writing the status ConfigMap: %s", e)
                break
        return False

    async def _put(self, text: str, stamp: str) -> None:
        try:
            cm = await self._client.get(types_pb2.ConfigMap, self.name, self.namespace)
        except NotFound:
            cm = types_pb2.ConfigMap()
            cm.metadata.name = self.name
            cm.metadata.namespace = self.namespace
            cm.metadata.annotations[LAST_UPDATED_ANNOTATION] = stamp
            cm.data[STATUS_KEY] = text
            await self._client.create(cm)
            return
        cm.data[STATUS_KEY] = text
        cm.metadata.annotations[LAST_UPDATED_ANNOTATION] = stamp
        await self._client.update(cm)
