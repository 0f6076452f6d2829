"""Alibaba's GPU cluster trace of 2023 ("openb") as a kemu trace and its cluster.

The data set is alibaba/clusterdata's `cluster-trace-gpu-v2023` (the ATC '23 paper "Beware
of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"); its
terms allow research and study use only, so kemu ships none of it: `convert` reads the files
a user has. The columns, as its README and CSV headers have them:

    openb_node_list_*.csv  sn, cpu_milli, memory_mib, gpu, model
    openb_pod_list_*.csv   name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
                           pod_phase, creation_time, deletion_time, scheduled_time

A node's `gpu` is its GPU count and `model` its GPU type (empty on a CPU node; G1, G2, G3 are
undisclosed codes). A pod's `num_gpu` is 0 to 8 whole GPUs, `gpu_milli` the share of one GPU
a GPU-sharing pod (num_gpu 1) asks for (1000 a whole one), `gpu_spec` the GPU types it may
run on ("V100M16|V100M32"; empty: any), `qos` LS, BE, Burstable or Guaranteed, times seconds
from the trace's start (`scheduled_time` empty for a pod never scheduled). The
`openb_pod_list_multigpu*.csv` files have the first five columns only: no times.

The rules (docs/traces.md "Alibaba's GPU trace"):

- A pod is a bare Pod in `namespace`, created at EPOCH + creation_time and deleted at EPOCH +
  deletion_time (empty or 0: never); without time columns every pod is created at EPOCH in
  the file's order and never deleted (as the paper's simulator schedules them). One container
  requests and limits (the data set's own pod_csv_to_yaml.py sets limits to the requests)
  `cpu_milli`m, `memory_mib`Mi and `nvidia.com/gpu` num_gpu; a zero is left out. Its
  containers exit at once when it is deleted (SHUTDOWN_DURATION), so that its resources are
  free at deletion_time.
- A GPU-sharing pod (num_gpu 1, gpu_milli below 1000) cannot ask for a fraction of an integer
  extended resource: with GpuSharing.WHOLE it asks for a whole GPU and keeps its share in
  the annotation `alibabacloud.com/gpu-milli` (the data set's own name for it), with
  GpuSharing.SKIP it is left out; the summary counts them either way.
- A GPU pod's `gpu_spec` is a required node affinity on the node label
  `alibabacloud.com/gpu-card-model` (the data set's name), which the nodes get from `model`.
- `qos`, `pod_phase` and the times are kept as `openb.kemu.io/` annotations and nothing else:
  the trace gives no priorities (the paper's simulator ignores qos too), and a priority class
  of kemu's choosing would make preemptions the trace never had.
- Nodes with the same cpu, memory, GPUs and model are one pool of CLUSTER.yaml
  (kemu/trace/cluster_config.py), named after them, with `nvidia.com/gpu` in its capacity.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

import yaml

from kemu.machinery.jsonvalue import JSONObject
from kemu.trace.cluster_config import PoolDocument
from kemu.trace.model import (
    POD_GVK,
    POD_SPEC_TEMPLATE_PATHS,
    Trace,
    TraceEvent,
    TrackedObject,
    stable_hash,
)

GPU: Final = "nvidia.com/gpu"
GPU_MODEL_LABEL: Final = "alibabacloud.com/gpu-card-model"
GPU_MILLI_ANNOTATION: Final = "alibabacloud.com/gpu-milli"
ANNOTATION_PREFIX: Final = "openb.kemu.io/"
EPOCH: Final = 1_672_531_200
"""The trace's time 0 as Unix seconds (2023-01-01T00:00:00Z; the data set does not say when
it starts): SimKube's `ts` are Unix seconds."""
SHUTDOWN_DURATION: Final = "kubelet.kemu.io/shutdown-duration"
"""kemu's kubelet (kubelet/runtime.py): how long a deleted pod's containers take to exit. "0s":
a pod frees its resources at its deletion_time, not a grace period (30 s) later."""
DEFAULT_NAMESPACE: Final = "openb"
IMAGE: Final = "openb/task"
"""The containers' image (kemu's kubelet runs none; the data set has none)."""
PODS_PER_NODE: Final = "110"

NODE_COLUMNS: Final = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS: Final = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_OPTIONAL_COLUMNS: Final = (
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
_INTEGER: Final = re.compile(r"\d+(\.0*)?")
"""A count or a time; "12.0" too (a file pandas wrote back, a column with blanks as floats)."""
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class OpenbError(ValueError):
    """A file is not an openb list; the message names the file, its line and the column."""


class GpuSharing(StrEnum):
    """What becomes of a pod that shares a GPU (num_gpu 1, gpu_milli < 1000)."""

    WHOLE = "whole"
    """It asks for one whole GPU; its share is the annotation alibabacloud.com/gpu-milli."""
    SKIP = "skip"
    """It is left out."""


@dataclass(frozen=True)
class NodeRow:
    sn: str
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str
    line: int


@dataclass(frozen=True)
class PodRow:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...]
    qos: str
    pod_phase: str
    creation_time: int | None
    """None when the file has no time columns."""
    deletion_time: int | None
    scheduled_time: int | None
    line: int

    @property
    def shares_gpu(self) -> bool:
        return self.num_gpu == 1 and self.gpu_milli < 1000


@dataclass(frozen=True)
class Options:
    namespace: str = DEFAULT_NAMESPACE
    gpu_sharing: GpuSharing = GpuSharing.WHOLE
    start: int | None = None
    """Only pods created at or after (trace seconds)."""
    end: int | None = None
    """Only pods created before (trace seconds); a deletion at or after it is left out (the
    pod still runs at the trace's end)."""
    limit: int | None = None
    """Only the first N pods (by creation time, then the file's order) of those kept."""


@dataclass
class Summary:
    """What `convert` did, for the command's report line."""

    pods_read: int = 0
    pods: int = 0
    sharing: int = 0
    """Pods that share a GPU (num_gpu 1, gpu_milli < 1000) among those read and in range."""
    sharing_skipped: int = 0
    outside_window: int = 0
    over_limit: int = 0
    deletions: int = 0
    deletions_dropped: int = 0
    """Deletions at or after --end."""
    gpu_requests: int = 0
    """The whole GPUs the trace's pods ask for, together."""
    nodes: int = 0
    pools: int = 0
    gpus: int = 0


@dataclass
class Converted:
    trace: Trace
    pools: list[PoolDocument]
    """CLUSTER.yaml's `nodes`."""
    summary: Summary = field(default_factory=Summary)

    def cluster_yaml(self) -> str:
        """CLUSTER.yaml for the replay (kemu/trace/cluster_config.py)."""
        header = (
            "# The nodes of an openb node list (python -m kemu.trace convert-openb).\n"
            f"# {GPU_MODEL_LABEL}: the GPU model; pods of a gpu_spec ask for it.\n"
        )
        return header + yaml.safe_dump({"nodes": self.pools}, sort_keys=False)


# ------------------------------------------------------------------ reading


def _rows(
    text: str, source: str, required: Sequence[str], optional: Sequence[str] = ()
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, {column: value}) of each row; the header must have `required`."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise OpenbError(f"{source}: empty (expected the header {','.join(required)})") from None
    header = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise OpenbError(
            f"{source}: line 1: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (expected {','.join(required)}; found {','.join(header)})"
        )
    wanted = [c for c in (*required, *optional) if c in header]
    columns = {c: header.index(c) for c in wanted}
    try:
        for row in reader:
            if not row or all(not v.strip() for v in row):
                continue
            line = reader.line_num
            if len(row) < len(header):
                raise OpenbError(
                    f"{source}: line {line}: {len(row)} fields, the header has {len(header)}"
                )
            yield line, {c: row[i].strip() for c, i in columns.items()}
    except csv.Error as e:
        raise OpenbError(f"{source}: line {reader.line_num}: {e}") from None


def _int(value: str, source: str, line: int, column: str) -> int:
    if not _INTEGER.fullmatch(value):
        what = "empty" if not value else repr(value)
        raise OpenbError(f"{source}: line {line}: column {column}: {what} is not an integer >= 0")
    return int(value.split(".")[0])


def _time(value: str, source: str, line: int, column: str) -> int | None:
    """A time column's value; empty is None."""
    return None if not value else _int(value, source, line, column)


def read_nodes(text: str, source: str) -> list[NodeRow]:
    """The rows of an openb_node_list_*.csv; OpenbError names the line and column."""
    nodes = []
    for line, row in _rows(text, source, NODE_COLUMNS):
        if not row["sn"]:
            raise OpenbError(f"{source}: line {line}: column sn: empty")
        nodes.append(
            NodeRow(
                sn=row["sn"],
                cpu_milli=_int(row["cpu_milli"], source, line, "cpu_milli"),
                memory_mib=_int(row["memory_mib"], source, line, "memory_mib"),
                gpu=_int(row["gpu"], source, line, "gpu"),
                model="" if row["model"] in ("", "nan") else row["model"],
                line=line,
            )
        )
    return nodes


def read_pods(text: str, source: str) -> list[PodRow]:
    """The rows of an openb_pod_list_*.csv; OpenbError names the line and column."""
    pods = []
    for line, row in _rows(text, source, POD_COLUMNS, POD_OPTIONAL_COLUMNS):
        name = row["name"]
        if not _NAME.fullmatch(name) or len(name) > 253:
            raise OpenbError(
                f"{source}: line {line}: column name: {name!r} is not a pod name "
                "(lower case letters, digits and '-')"
            )
        num_gpu = _int(row["num_gpu"], source, line, "num_gpu")
        gpu_milli = _int(row["gpu_milli"], source, line, "gpu_milli")
        if gpu_milli > 1000:
            raise OpenbError(
                f"{source}: line {line}: column gpu_milli: {gpu_milli} is more than one GPU (1000)"
            )
        if num_gpu == 0 or gpu_milli == 0:
            gpu_milli = 1000 if num_gpu else 0  # no share: whole GPUs, or none
        spec = row.get("gpu_spec", "")
        models = () if spec in ("", "nan") else tuple(sorted({m for m in spec.split("|") if m}))
        creation = deletion = scheduled = None
        if "creation_time" in row:
            creation = _int(row["creation_time"], source, line, "creation_time")
            deletion = _time(row.get("deletion_time", ""), source, line, "deletion_time") or None
            scheduled = _time(row.get("scheduled_time", ""), source, line, "scheduled_time")
            if deletion is not None and deletion < creation:
                raise OpenbError(
                    f"{source}: line {line}: column deletion_time: {deletion} is before "
                    f"creation_time {creation}"
                )
        pods.append(
            PodRow(
                name=name,
                cpu_milli=_int(row["cpu_milli"], source, line, "cpu_milli"),
                memory_mib=_int(row["memory_mib"], source, line, "memory_mib"),
                num_gpu=num_gpu,
                gpu_milli=gpu_milli,
                gpu_spec=models,
                qos=row.get("qos", ""),
                pod_phase=row.get("pod_phase", ""),
                creation_time=creation,
                deletion_time=deletion,
                scheduled_time=scheduled,
                line=line,
            )
        )
    names: dict[str, int] = {}
    for pod in pods:
        if pod.name in names:
            raise OpenbError(
                f"{source}: line {pod.line}: column name: {pod.name!r} is also on line "
                f"{names[pod.name]}"
            )
        names[pod.name] = pod.line
    return pods


# ------------------------------------------------------------------ converting


def _resources(cpu_milli: int, memory_mib: int, gpus: int) -> dict[str, str]:
    """Requests or capacity as quantities (whole cores and GiB when they are), zeros left out."""
    out = {}
    if cpu_milli:
        out["cpu"] = f"{cpu_milli // 1000}" if not cpu_milli % 1000 else f"{cpu_milli}m"
    if memory_mib:
        out["memory"] = f"{memory_mib // 1024}Gi" if not memory_mib % 1024 else f"{memory_mib}Mi"
    if gpus:
        out[GPU] = str(gpus)
    return out


def pod_object(pod: PodRow, namespace: str) -> JSONObject:
    """The row as a Pod (Kubernetes JSON, as a trace holds it)."""
    resources: JSONObject = {**_resources(pod.cpu_milli, pod.memory_mib, pod.num_gpu)}
    annotations: JSONObject = {SHUTDOWN_DURATION: "0s"}
    if pod.shares_gpu:
        annotations[GPU_MILLI_ANNOTATION] = str(pod.gpu_milli)
    for key, value in (
        ("qos", pod.qos),
        ("pod-phase", pod.pod_phase),
        ("creation-time", pod.creation_time),
        ("scheduled-time", pod.scheduled_time),
        ("deletion-time", pod.deletion_time),
        ("gpu-spec", "|".join(pod.gpu_spec)),
    ):
        if value is not None and value != "":
            annotations[ANNOTATION_PREFIX + key] = str(value)
    container: JSONObject = {"name": "main", "image": IMAGE}
    if resources:
        container["resources"] = {"requests": resources, "limits": dict(resources)}
    spec: JSONObject = {"containers": [container]}
    if pod.num_gpu and pod.gpu_spec:
        term: JSONObject = {"key": GPU_MODEL_LABEL, "operator": "In", "values": [*pod.gpu_spec]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
    metadata: JSONObject = {"name": pod.name, "namespace": namespace, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _pool_name(node: NodeRow) -> str:
    model = re.sub(r"[^a-z0-9]+", "-", node.model.lower()).strip("-")
    gib, rest = divmod(node.memory_mib, 1024)
    memory = f"{gib}g" if not rest else f"{node.memory_mib}m"
    cpu = f"{node.cpu_milli // 1000}c" if not node.cpu_milli % 1000 else f"{node.cpu_milli}m"
    head = f"{model}x{node.gpu}" if node.gpu else "cpu"
    return f"{head}-{cpu}-{memory}"[:50].strip("-")


def pools_of(nodes: Sequence[NodeRow]) -> list[PoolDocument]:
    """CLUSTER.yaml's node pools: one per shape (cpu, memory, GPUs, model), in the order the
    shapes first appear."""
    pools: dict[tuple[int, int, int, str], PoolDocument] = {}
    for node in nodes:
        shape = (node.cpu_milli, node.memory_mib, node.gpu, node.model)
        pool = pools.get(shape)
        if pool is None:
            capacity = _resources(node.cpu_milli, node.memory_mib, node.gpu)
            capacity["pods"] = PODS_PER_NODE
            pool = {"name": _pool_name(node), "count": 0, "capacity": capacity}
            if node.model:
                pool["labels"] = {GPU_MODEL_LABEL: node.model}
            pools[shape] = pool
        pool["count"] += 1
    names: dict[str, int] = {}
    for pool in pools.values():  # two models that normalize alike ("A10", "a10")
        seen = names.get(pool["name"], 0)
        names[pool["name"]] = seen + 1
        if seen:
            pool["name"] = f"{pool['name']}-{seen + 1}"
    return list(pools.values())


def convert(nodes: Sequence[NodeRow], pods: Sequence[PodRow], options: Options) -> Converted:
    """The pods as a trace (bare pods created and deleted at their times) and the nodes as
    CLUSTER.yaml's pools."""
    summary = Summary(pods_read=len(pods), nodes=len(nodes), gpus=sum(n.gpu for n in nodes))
    kept = []
    for pod in pods:
        created = pod.creation_time or 0
        if (options.start is not None and created < options.start) or (
            options.end is not None and created >= options.end
        ):
            summary.outside_window += 1
            continue
        if pod.shares_gpu:
            summary.sharing += 1
            if options.gpu_sharing is GpuSharing.SKIP:
                summary.sharing_skipped += 1
                continue
        kept.append(pod)
    kept.sort(key=lambda p: p.creation_time or 0)  # (stable: the file's order at one time)
    if options.limit is not None and len(kept) > options.limit:
        summary.over_limit = len(kept) - options.limit
        kept = kept[: options.limit]
    events: dict[int, TraceEvent] = {}

    def at(t: int) -> TraceEvent:
        return events.setdefault(t, TraceEvent(ts=EPOCH + t))

    index: dict[str, int] = {}
    deletions: list[tuple[int, JSONObject]] = []
    for pod in kept:
        obj = pod_object(pod, options.namespace)
        at(pod.creation_time or 0).applied.append(obj)
        index[f"{options.namespace}/{pod.name}"] = stable_hash(obj)
        summary.gpu_requests += pod.num_gpu
        if pod.deletion_time is not None:
            if options.end is not None and pod.deletion_time >= options.end:
                summary.deletions_dropped += 1
            else:
                deletions.append((pod.deletion_time, obj))
    deletions.sort(key=lambda d: d[0])
    for t, obj in deletions:
        at(t).deleted.append(obj)
    summary.pods = len(kept)
    summary.deletions = len(deletions)
    pools = pools_of(nodes)
    summary.pools = len(pools)
    trace = Trace(
        tracked={
            POD_GVK: TrackedObject(POD_SPEC_TEMPLATE_PATHS[POD_GVK], skip_owned=True),
        },
        events=[events[t] for t in sorted(events)],
        index={POD_GVK: index} if index else {},
    )
    return Converted(trace, pools, summary)


def describe(summary: Summary, sharing: GpuSharing) -> str:
    """One line of what was converted."""
    s = summary
    parts = [f"{s.pods} of {s.pods_read} pods ({s.gpu_requests} GPUs asked for)"]
    if s.sharing:
        rule = "skipped" if sharing is GpuSharing.SKIP else "asking for a whole GPU each"
        parts.append(f"{s.sharing} sharing a GPU {rule}")
    if s.outside_window:
        parts.append(f"{s.outside_window} created outside --start/--end")
    if s.over_limit:
        parts.append(f"{s.over_limit} over --limit")
    parts.append(f"{s.deletions} deletions")
    if s.deletions_dropped:
        parts.append(f"{s.deletions_dropped} deletions at or after --end left out")
    parts.append(f"{s.nodes} nodes in {s.pools} pools ({s.gpus} GPUs)")
    return "; ".join(parts)
