"""Scheduling throughput of kemu's kube-scheduler, in the manner of upstream's scheduler_perf.

    python -m bench scheduler_perf [--workload NAME ...] [--quick] [--json FILE] [--html FILE]

Each workload of bench/workloads/performance-config.yaml and of the per-area files beside it
(affinity/, misc/, batching/: upstream's test cases; bench.scheduler_perf_workloads reads them)
runs on a fresh cluster (etcd, the apiserver and `python -m scheduler`, started with the test
harness in a temporary directory). Its ops run in order: `createNodes` creates bare Node
objects (no kubelet), `createNamespaces` labelled namespaces, `createPods` creates pods as fast
as the apiserver takes them (several creates in flight) and, unless told otherwise, waits until
all of them are bound (`createPodSets`: one such op per namespace); `barrier` waits until the
pods of the createPods ops that did not wait are bound (or tried), `sleep` sleeps, `deletePods` deletes a namespace's pods (at a rate, in the
background if told), `createAny` creates objects of any kind kemu serves from a template,
`createPodGroups` creates PodGroups and waits for them as `waitForPodGroups` does, `updateAny`
writes objects from a template (through pods/resize when told).

One watch of all pods, opened before the first op, records when each pod is first seen with
spec.nodeName set. For the op marked `collectMetrics`, the measured phase runs from its first
create to the binding of its last pod; it yields:

- SchedulingThroughput as scheduler_perf reports it: pods bound per one-second window of the
  phase (average, p50, p90, p99 of those samples);
- created-to-bound throughput: measured pods / the phase's length;
- the average scheduling_algorithm_duration (delta of the histogram's _sum over delta of its
  _count between scrapes of the scheduler's /metrics at both ends of the phase) and the
  schedule attempts by result over the phase;
- CPU (cores) of the scheduler, apiserver, etcd and this process over the phase, and their RSS
  at the end of the workload;
- preemption (attempts, victims by the metric and by the pods the watch saw deleted, against
  the minimum the workload's sizes allow), the successful cycles of nominated pods (kemu's
  KEP-1923 histograms: nodes through Filter, algorithm time), and the apiserver's pod calls per
  verb (apiserver_request_total scraped at both ends).

A workload's `threshold` applies to its thresholdMetricSelector's data item: the throughput
average by default, or a histogram of the scheduler's over the measured phase (gang scheduling's
`scheduler_podgroup_scheduling_attempt_duration_seconds`, in ms); `metricsCollectorConfig`
adds the series it selects to the table.

After the ops, on the same cluster, a baseline may measure what the apiserver alone takes for the
measured op's API calls (--bind-only-baseline): the bind-only baseline (SchedulingBasic: creates
and bindings) or the preemption API baseline (PreemptionBasic: creates, the victims' PATCHes and
DELETEs, the preemptors' status PATCHes, bindings and events; bench.scheduler_perf_baseline).

A test case or workload may set the control plane's emulated version, feature gates and
scheduler configuration, and name a gate to compare: the workload then runs twice (gate on,
then off, a fresh cluster and the same scheduler seed each) and the two runs are compared.

With --html FILE each run's timeline is recorded (kemu.timeline: every pod, node and
preemption) and the runs are drawn as the sections of one HTML page.

The cluster is always stopped at the end, also on Ctrl-C. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Protocol

import anyio
import anyio.abc
import yaml
from google.protobuf.message import Message
from prometheus_client.parser import text_string_to_metric_families

from bench.common import (
    Clock,
    CpuMeter,
    cpu_ceiling,
    cpu_ms_per_item,
    fmt,
    format_table,
    jsonable,
    pace,
    percentile,
    rate,
    ratio,
    rss_kib,
    run_concurrent,
    summarize_stacks,
)
from bench.scheduler_perf_baseline import (
    DEFAULT_SCHEDULER,
    PREEMPTION_BASELINE_NAMESPACE,
    Calls,
    for_no_scheduler,
    preemption_api_baseline,
    preemption_plan,
    record_scheduled,
    scheduler_recorder,
    set_up_victims,
)
from bench.scheduler_perf_cycle import DifferentialResult, render_differential, run_differential
from bench.scheduler_perf_dra import alloc_resource_claims, create_resource_driver
from bench.scheduler_perf_workloads import (
    ATTEMPTED,
    RECREATE,
    RESIZE,
    THROUGHPUT,
    WORKLOAD_FILES,
    AllocResourceClaims,
    Barrier,
    Churn,
    CreateAny,
    CreateCompositePodGroups,
    CreateNamespaces,
    CreateNodes,
    CreatePodGroups,
    CreatePods,
    CreateResourceDriver,
    DeletePods,
    Op,
    Skipped,
    Sleep,
    StartCollectingMetrics,
    StopCollectingMetrics,
    ThresholdSelector,
    UpdateAny,
    Variant,
    WaitForPodGroups,
    Workload,
    WorkloadError,
    WorkloadFile,
    csinode_objects,
    load_workload_file_set,
    namespace_objects,
    node_objects,
    pod_object,
    pod_objects,
    priority_class_name,
    priority_class_objects,
    select_workloads,
    volume_objects,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import ApiClient
from kemu.component.featuregate import (
    DRA_EXTENDED_RESOURCE,
    DYNAMIC_RESOURCE_ALLOCATION,
    POD_OBSERVED_GENERATION_TRACKING,
    SCHEDULER_ASYNC_PREEMPTION,
    FeatureGates,
)
from kemu.component.version import (
    DEFAULT_VERSION,
    MAX_VERSION,
    MIN_VERSION,
    Version,
    parse_emulated_version,
)
from kemu.machinery import kinds, quantity, resources
from kemu.machinery.errors import AlreadyExists, ApiError, Gone, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import default_requests_from_limits
from kemu.machinery.validation.resources import is_extended_resource
from kemu.machinery.virtual_time import ClockMode
from kemu.scheduling.config import API_VERSION as SCHEDULER_API_VERSION
from kemu.scheduling.config import KIND as SCHEDULER_KIND
from kemu.scheduling.dra_manager import IMPLICIT_EXTENDED_RESOURCE_PREFIX
from kemu.scheduling.interface import EventRecorder as EventRecorderLike
from kemu.testing.cluster import Cluster, Component, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import ProcessStartError, http_get
from kemu.timeline.model import MarkerKind, Timeline
from kemu.timeline.record import record_timeline
from kemu.timeline.render import OutputPathError, check_output_path, write_page

logger = logging.getLogger(__name__)

DEFAULT_LABEL: Final = "performance"
QUICK_LABEL: Final = "quick"
CREATORS: Final = 16  # creates in flight
BARRIER_POLL: Final = 0.2  # seconds between a barrier's pod lists (upstream polls every 1 s)
BARRIER_POLL_PODS: Final = 1000  # from this many pods in the namespace, every 1 s
RUNTIME_CONFIG: Final = MappingProxyType({"api/all": "true"})
"""The apiserver's --runtime-config: every API group version on, as upstream's scheduler_perf."""
SAMPLE_INTERVAL: Final = 1.0  # seconds per throughput sample, as scheduler_perf
WAIT_TIMEOUT: Final = 600.0  # for the pods of one op to be bound
ALGORITHM_DURATION: Final = "scheduler_scheduling_algorithm_duration_seconds"
ATTEMPT_DURATION: Final = "scheduler_scheduling_attempt_duration_seconds"
SCHEDULE_ATTEMPTS: Final = "scheduler_schedule_attempts_total"
SCHEDULED_CATCH_UP: Final = 3.0  # seconds a scrape waits (Runner.scheduler_metrics)
PENDING_PODS: Final = "scheduler_pending_pods"
PREEMPTION_ATTEMPTS: Final = "scheduler_preemption_attempts_total"
PREEMPTION_VICTIMS: Final = "scheduler_preemption_victims"
NOMINATED_FILTER_EVALUATIONS: Final = "scheduler_kemu_nominated_pod_filter_evaluations"
NOMINATED_ALGORITHM_DURATION: Final = (
    "scheduler_kemu_nominated_pod_scheduling_algorithm_duration_seconds"
)
FILTER_EVALUATIONS: Final = "scheduler_kemu_filter_evaluations_total"
ALGORITHM_CPU: Final = "scheduler_kemu_scheduling_algorithm_cpu_seconds_total"
API_REQUESTS: Final = "apiserver_request_total"
POD_RESOURCES: Final = ("pods", "pods/binding", "pods/resize")
SEED: Final = 1  # the scheduler's --seed, the same for both runs of an A/B comparison
PY_SPY_SECONDS: Final = 20
PROFILED: Final = ("scheduler", "apiserver", "bench")  # the Python processes of a run
BIND_ONLY_NAMESPACE: Final = "bind-only"
BIND_ONLY_SCHEDULER: Final = "kemu-bench-bind-only"  # no profile: the scheduler ignores them
BIND_ONLY_MODES: Final = ("auto", "always", "never")
BIND_ONLY: Final = "bind-only"  # the baselines (baseline_kind)
PREEMPTION_API: Final = "preemption-api"
BASELINE_RESOURCES: Final = (*POD_RESOURCES, "events")
BATCH: Final = "batch"
PER_NODE: Final = "per-node"
PATH_CHOICES: Final = {BATCH: (BATCH,), PER_NODE: (PER_NODE,), "both": (PER_NODE, BATCH)}
RECORD_CHOICES: Final = {"off": (False,), "on": (True,), "both": (False, True)}
"""--record-decisions: the scheduler without and/or with its decision record (issue #32)."""


HARNESS_CLIENT: Final = {"qps": 5000, "burst": 5000}
"""The client settings of upstream's harness (test/integration/scheduler_perf
mustSetupCluster: cfg.QPS = 5000, cfg.Burst = 5000), which its scheduler and its controllers
use whatever their configuration says: so a bench measures the scheduler, not client-go's
defaults (kemu.client.flowcontrol)."""
HARNESS_CONTROLLER_MANAGER_ARGS: Final = (
    "--kube-api-qps",
    str(HARNESS_CLIENT["qps"]),
    "--kube-api-burst",
    str(HARNESS_CLIENT["burst"]),
)


def harness_scheduler_config(
    workload_config: Mapping[str, Any] | None, opts: Options
) -> dict[str, Any]:
    """The scheduler's KubeSchedulerConfiguration for a run: the workload's own, else
    --scheduler-config's, else the default; its clientConnection upstream's harness's."""
    if workload_config is not None:
        config = dict(workload_config)
    elif opts.scheduler_config is not None:
        config = dict(yaml.safe_load(Path(opts.scheduler_config).read_text()) or {})
    else:
        config = {"apiVersion": SCHEDULER_API_VERSION, "kind": SCHEDULER_KIND}
    config["clientConnection"] = {**(config.get("clientConnection") or {}), **HARNESS_CLIENT}
    return config


# ---------------------------------------------------------------------- measurement (pure)


def throughput_samples(
    bound_times: Iterable[float], start: float, end: float, interval: float = SAMPLE_INTERVAL
) -> list[float]:
    """Pods bound per second in consecutive windows of `interval` seconds from `start` to `end`.

    Window k is [start + k*interval, start + (k+1)*interval); a time at `end` belongs to the
    last window. When the phase does not end on a window boundary, the last, partial window is
    divided by its own length; if it is shorter than half an interval it is merged into the
    window before it instead, so that a few pods bound just after a boundary do not make an
    outlier sample. Times outside [start, end] are ignored. No samples when end <= start.
    """
    if interval <= 0:
        raise ValueError("the interval must be positive")
    length = end - start
    if length <= 0:
        return []
    full = int(length // interval)
    tail = length - full * interval
    if tail < 1e-9 * interval:
        windows = [interval] * full
    elif full == 0 or tail >= interval / 2:
        windows = [interval] * full + [tail]
    else:
        windows = [interval] * (full - 1) + [interval + tail]
    counts = [0] * len(windows)
    for t in bound_times:
        if t < start or t > end:
            continue
        k = min(int((t - start) // interval), len(windows) - 1)
        counts[k] += 1
    return [c / w for c, w in zip(counts, windows, strict=True)]


@dataclass(frozen=True)
class ThroughputStats:
    """scheduler_perf's SchedulingThroughput: statistics of the per-second samples (pods/s)."""

    average: float
    p50: float
    p90: float
    p99: float
    samples: int


def throughput_stats(samples: Sequence[float]) -> ThroughputStats:
    values = sorted(samples)
    if not values:
        return ThroughputStats(math.nan, math.nan, math.nan, math.nan, 0)
    return ThroughputStats(
        average=math.fsum(values) / len(values),
        p50=percentile(values, 50),
        p90=percentile(values, 90),
        p99=percentile(values, 99),
        samples=len(values),
    )


LabelSet = tuple[tuple[str, str], ...]
Samples = dict[str, dict[LabelSet, float]]


def parse_metrics(text: str) -> Samples:
    """Prometheus text -> {sample name: {sorted (label, value) pairs: value}}.

    Sample names are as exposed (`x_total`, `h_sum`, `h_count`, `h_bucket`), not family names.
    """
    out: Samples = defaultdict(dict)
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[s.name][tuple(sorted(s.labels.items()))] = float(s.value)
    except ValueError as e:
        raise ValueError(f"unreadable metrics text: {e}") from e
    return dict(out)


def metric_sum(samples: Samples, name: str, **match: str) -> float:
    """The sum of the `name` samples whose labels include `match` (0 when none)."""
    total = 0.0
    for labels, value in samples.get(name, {}).items():
        d = dict(labels)
        if all(d.get(k) == v for k, v in match.items()):
            total += value
    return total


def metric_delta(before: Samples, after: Samples, name: str, **match: str) -> float:
    return metric_sum(after, name, **match) - metric_sum(before, name, **match)


def histogram_mean_delta(before: Samples, after: Samples, histogram: str, **match: str) -> float:
    """The mean of the observations made between two scrapes: delta _sum / delta _count
    (NaN when nothing was observed)."""
    count = metric_delta(before, after, histogram + "_count", **match)
    if count <= 0:
        return math.nan
    return metric_delta(before, after, histogram + "_sum", **match) / count


def histogram_value_delta(
    before: Samples, after: Samples, histogram: str, bucket: str, **match: str
) -> float:
    """upstream's data item `bucket` (Average, Perc50, Perc90, Perc95, Perc99) of the
    observations made between two scrapes (NaN when none): the mean, or the quantile
    interpolated linearly within its bucket (as upstream's metricsCollector, through
    component-base's histogram Quantile)."""
    if bucket == "Average":
        return histogram_mean_delta(before, after, histogram, **match)
    q = int(bucket.removeprefix("Perc")) / 100
    counts: dict[float, float] = defaultdict(float)
    for samples, sign in ((after, 1.0), (before, -1.0)):
        for labels, value in samples.get(histogram + "_bucket", {}).items():
            d = dict(labels)
            if all(d.get(k) == v for k, v in match.items()):
                counts[float(d["le"])] += sign * value
    bounds = sorted(counts)
    if not bounds or counts[bounds[-1]] <= 0:
        return math.nan
    rank = q * counts[bounds[-1]]
    lower, below = 0.0, 0.0
    for le in bounds:
        if counts[le] >= rank:
            if math.isinf(le):
                return lower
            width = counts[le] - below
            return lower + (le - lower) * ((rank - below) / width if width else 0.0)
        lower, below = le, counts[le]
    return lower


def counter_mean_delta(before: Samples, after: Samples, counter: str, histogram: str) -> float:
    """`counter`'s increase between two scrapes per observation of `histogram` in between,
    in milliseconds (NaN when nothing was observed or the counter is not exposed: an older
    scheduler)."""
    count = metric_delta(before, after, histogram + "_count")
    if count <= 0 or counter not in after:
        return math.nan
    return metric_delta(before, after, counter) / count * 1000


def delta_by_label(before: Samples, after: Samples, name: str, label: str) -> dict[str, float]:
    """The increase of `name` between two scrapes, summed per value of `label` (zero
    increases left out)."""
    out: dict[str, float] = {}
    values = {dict(ls).get(label, "") for ls in after.get(name, {})}
    for v in sorted(values):
        d = metric_delta(before, after, name, **{label: v})
        if d:
            out[v] = d
    return out


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    """The current value of `name`, summed per value of `label`."""
    out: dict[str, float] = defaultdict(float)
    for labels, value in samples.get(name, {}).items():
        out[dict(labels).get(label, "")] += value
    return dict(out)


def api_calls(before: Samples, after: Samples, resources: Iterable[str]) -> dict[str, float]:
    """The increase of apiserver_request_total between two scrapes, per "verb resource" for
    the given resources (the apiserver labels verb, resource and code; a PATCH of pods/status
    counts as `patch pods`, a binding as `create pods/binding`). Zero increases left out."""
    wanted = set(resources)
    keys = {
        (d.get("verb", ""), d.get("resource", ""))
        for d in (dict(ls) for ls in after.get(API_REQUESTS, {}))
        if d.get("resource", "") in wanted
    }
    out: dict[str, float] = {}
    for verb, resource in sorted(keys):
        delta = metric_delta(before, after, API_REQUESTS, verb=verb, resource=resource)
        if delta:
            out[f"{verb} {resource}"] = delta
    return out


@dataclass(frozen=True)
class PreemptionFigures:
    """What the scheduler's preemption metrics say about a phase (increases between scrapes)."""

    attempts: float  # scheduler_preemption_attempts_total: PostFilter calls
    preemptions: float  # scheduler_preemption_victims _count: preemptions carried out
    victims: float  # scheduler_preemption_victims _sum


def preemption_figures(before: Samples, after: Samples) -> PreemptionFigures:
    return PreemptionFigures(
        attempts=metric_delta(before, after, PREEMPTION_ATTEMPTS),
        preemptions=metric_delta(before, after, PREEMPTION_VICTIMS + "_count"),
        victims=metric_delta(before, after, PREEMPTION_VICTIMS + "_sum"),
    )


@dataclass(frozen=True)
class NominatedFigures:
    """kemu's KEP-1923 histograms, observed in the successful cycle of a pod that had
    status.nominatedNodeName set: how many, and the mean nodes run through Filter and the mean
    scheduling_algorithm duration of that cycle (all profiles together)."""

    pods: float
    filter_nodes: float  # NaN when no pod was observed
    algorithm_ms: float


def nominated_figures(before: Samples, after: Samples) -> NominatedFigures:
    return NominatedFigures(
        pods=metric_delta(before, after, NOMINATED_FILTER_EVALUATIONS + "_count"),
        filter_nodes=histogram_mean_delta(before, after, NOMINATED_FILTER_EVALUATIONS),
        algorithm_ms=histogram_mean_delta(before, after, NOMINATED_ALGORITHM_DURATION) * 1000,
    )


def pod_requests(pod: types_pb2.Pod) -> dict[str, int]:
    """What a pod from a template will request once created, as the scheduler counts a pending
    pod (kemu.machinery.resources.pod_requests: sidecars, init containers, overhead), plus
    `pods: 1`. Templates are not defaulted yet, so a limit stands for a missing request, as the
    apiserver's defaulting will make it. The default options are the newest rules (a template
    has no status, so the in-place resize aggregation rule never applies)."""
    defaulted = types_pb2.Pod()
    defaulted.spec.CopyFrom(pod.spec)
    default_requests_from_limits(defaulted.spec)
    return {"pods": 1, **resources.pod_requests(defaulted)}


def expected_min_victims(workload: Workload) -> int | None:
    """preemption_shape's victims per measured pod (None for any other shape)."""
    shape = preemption_shape(workload)
    return shape.victims if shape is not None else None


@dataclass(frozen=True)
class PreemptionShape:
    """A PreemptionBasic-shaped workload (preemption_shape): its low-priority op, the fewest
    victims each measured pod needs, and the resources a full node has too little of for a
    measured pod (the "Insufficient" reasons of its FitError)."""

    low: CreatePods
    low_index: int  # the low op's index in the workload's ops
    victims: int
    insufficient: tuple[str, ...]


def preemption_shape(workload: Workload) -> PreemptionShape | None:
    """The fewest victims each measured pod needs (and what it lacks on a full node) when the
    workload is PreemptionBasic-shaped: one createNodes op, one other createPods op whose lower-priority pods are spread evenly
    over the nodes (count a multiple of the nodes, and fitting), and at most one measured pod
    per node. None for any other shape, so that nothing is claimed that was not computed.

    A node holds k = init/nodes low pods; the preemptor fits once k - v are left, so the
    minimum v is the smallest with (k - v) * low + preemptor <= allocatable for every
    resource (cpu, memory, pods, ...)."""
    measured = workload.measured
    node_ops = [op for op in workload.ops if isinstance(op, CreateNodes)]
    others = [op for op in workload.ops if isinstance(op, CreatePods) and not op.collect_metrics]
    if measured is None or len(node_ops) != 1 or len(others) != 1:
        return None
    (nodes,), (low,) = node_ops, others
    low_index = next(i for i, op in enumerate(workload.ops) if op is low)
    if (low.priority or 0) >= (measured.priority or 0):
        return None
    if nodes.count == 0 or low.count % nodes.count or measured.count > nodes.count:
        return None
    status = nodes.template.status
    allocatable = dict(status.allocatable) or dict(status.capacity)
    alloc = {name: quantity.to_int(name, text) for name, text in allocatable.items()}
    low_req, pre_req = pod_requests(low.template), pod_requests(measured.template)
    per_node = low.count // nodes.count

    def fits(lows: int, preemptor: bool) -> bool:
        names = set(low_req) | set(pre_req)
        return all(
            lows * low_req.get(r, 0) + (pre_req.get(r, 0) if preemptor else 0) <= alloc.get(r, 0)
            for r in names
        )

    if not fits(per_node, preemptor=False):
        return None  # the low pods would not spread evenly
    insufficient = tuple(
        sorted(
            r
            for r in set(low_req) | set(pre_req)
            if per_node * low_req.get(r, 0) + pre_req.get(r, 0) > alloc.get(r, 0)
        )
    )
    for victims in range(per_node + 1):
        if fits(per_node - victims, preemptor=True):
            return PreemptionShape(low, low_index, victims, insufficient)
    return None  # the preemptor does not fit even on an empty node


# ---------------------------------------------------------------------- binding tracker


class BindTracker:
    """Fed with every pod the watch delivers; remembers when each expected pod was first seen
    bound (spec.nodeName set), per op, and wakes whoever waits for an op."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._owner: dict[str, int] = {}  # namespace/name -> op index
        self._expected: Counter[int] = Counter()
        self._namespace_of: dict[int, str] = {}
        self._bound: set[str] = set()
        self._pinned: set[str] = set()  # created with spec.nodeName: never scheduled
        self.scheduler_bound = 0  # expected pods seen bound that were created unbound
        self.bound_at: dict[int, list[float]] = defaultdict(list)
        self.bound_keys: dict[int, list[str]] = defaultdict(list)  # in the order seen bound
        self.bound_in: Counter[str] = Counter()  # per namespace
        self.created_in: Counter[str] = Counter()
        # Deleted pods (preemption victims): per op, and those deleted before being bound,
        # which count as done for the waits (they will never be bound).
        self.deleted_at: dict[int, list[float]] = defaultdict(list)
        self._deleted: set[str] = set()
        self._requested: set[str] = set()  # deleted by a deletePods op
        self._gone_unbound: Counter[int] = Counter()
        self._gone_unbound_in: Counter[str] = Counter()
        self._changed = anyio.Event()
        self.events = 0
        # (time, namespace, labels) of each pod of the run's createPods ops seen bound.
        self.bound_log: list[tuple[float, str, dict[str, str]]] = []

    def expect(self, op_index: int, pods: Sequence[types_pb2.Pod]) -> None:
        """Registers the pods an op is about to create (before creating them)."""
        for pod in pods:
            key = object_key(pod)
            self._owner[key] = op_index
            if pod.spec.node_name:
                self._pinned.add(key)
            self.created_in[pod.metadata.namespace] += 1
            self._namespace_of[op_index] = pod.metadata.namespace
        self._expected[op_index] += len(pods)

    def expect_deletion(self, pods: Sequence[types_pb2.Pod]) -> None:
        """Registers pods a deletePods op is about to delete: their deletions are the
        workload's, not preemption victims, so deleted() leaves them out."""
        self._requested.update(object_key(p) for p in pods)

    def observe(self, pod: types_pb2.Pod, event_type: str = "MODIFIED") -> None:
        """One watch event (`event_type` ADDED, MODIFIED or DELETED) of `pod`."""
        self.events += 1
        if event_type == "DELETED":
            self._observe_deleted(pod)
            return
        if not pod.spec.node_name:
            return
        key = object_key(pod)
        if key in self._bound or key in self._deleted:
            return
        self._bound.add(key)
        op = self._owner.get(key)
        if op is None:
            return
        self.bound_log.append((self._clock(), pod.metadata.namespace, dict(pod.metadata.labels)))
        self.bound_at[op].append(self._clock())
        self.bound_keys[op].append(key)
        if key not in self._pinned:
            self.scheduler_bound += 1
        self.bound_in[pod.metadata.namespace] += 1
        self._changed.set()
        self._changed = anyio.Event()

    def _observe_deleted(self, pod: types_pb2.Pod) -> None:
        key = object_key(pod)
        op = self._owner.get(key)
        if op is None or key in self._deleted:
            return
        self._deleted.add(key)
        self.deleted_at[op].append(self._clock())
        if key not in self._bound:
            self._gone_unbound[op] += 1
            self._gone_unbound_in[pod.metadata.namespace] += 1
        self._changed.set()
        self._changed = anyio.Event()

    def deleted(self) -> int:
        """Pods of the run deleted so far, except those a deletePods op deleted."""
        return len(self._deleted - self._requested)

    def op_done(self, op_index: int) -> bool:
        done = len(self.bound_at[op_index]) + self._gone_unbound[op_index]
        return done >= self._expected[op_index]

    def pending(self) -> int:
        done = sum(self.bound_in.values()) + sum(self._gone_unbound_in.values())
        return sum(self.created_in.values()) - done

    async def wait_op(self, op_index: int, within: float) -> None:
        await self._wait(lambda: self.op_done(op_index), within, f"op {op_index}")

    async def wait_bound(self, op_index: int, seen: int) -> None:
        """Until more than `seen` pods of the op have been seen bound (no deadline: the
        caller's scope bounds it)."""
        while len(self.bound_keys[op_index]) <= seen:
            await self._changed.wait()

    async def wait_seen(self, keys: Iterable[str], within: float) -> None:
        """Until the watch has shown every pod of `keys` (namespace/name) bound, or deleted."""
        wanted = set(keys)
        await self._wait(
            lambda: wanted <= self._bound | self._deleted, within, "the barrier (by watch)"
        )

    async def _wait(self, done: Callable[[], bool], within: float, what: str) -> None:
        with anyio.move_on_after(within) as scope:
            while not done():
                await self._changed.wait()
        if scope.cancelled_caught:
            raise TimeoutError(
                f"the pods of {what} were not all bound within {within:g} s "
                f"({self.pending()} pods not bound)"
            )

    async def run(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Lists pods for a resourceVersion, then watches from it until cancelled; a watch
        that ends or fails is resumed from the last resourceVersion seen."""
        rv = (await client.list(types_pb2.Pod, limit=1)).resource_version
        task_status.started()
        while True:
            try:
                async with client.watch(types_pb2.Pod, resource_version=rv) as events:
                    async for event in events:
                        rv = event.object.metadata.resource_version or rv
                        if event.type != "BOOKMARK":
                            self.observe(event.object, event.type)
            except Gone:
                raise
            except ApiError as e:
                logger.warning("the pod watch failed (%s); resuming from %s", e, rv)
                await anyio.sleep(0.1)


# ---------------------------------------------------------------------- a run


@dataclass
class Result:
    workload: str
    variant: str = ""  # Gate=true / Gate=false for an A/B comparison
    # The scheduler's Filter and Score path when --paths compares them: "batch" (node
    # columns, the default) or "per-node" (--no-batch); "" when not compared.
    path: str = ""
    record_decisions: bool = False
    """The scheduler ran with --record-decisions."""
    record_bytes_per_attempt: float = math.nan
    """What one decision record held on average at the end of the run (its summary)."""
    emulated_version: str = ""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    nodes: int = 0
    init_pods: int = 0
    measured_pods: int = 0
    node_create_rate: float = math.nan
    pod_create_rate: float = math.nan  # of the measured op
    phase_seconds: float = math.nan  # first measured create -> last measured pod bound
    created_to_bound: float = math.nan  # measured pods / phase_seconds
    # The apiserver's limit on the same cluster: creates plus bindings, no scheduling
    # (bind_only_baseline below); NaN when not measured.
    bind_only_baseline: float = math.nan
    bind_only_pods: int = 0
    # For PreemptionBasic: the same cluster's limit for the preemptors' API calls (creates,
    # the victims' DisruptionTarget PATCHes and DELETEs, the preemptors' status PATCHes,
    # bindings and the scheduler's events; bench.scheduler_perf_baseline), preemptors/s.
    preemption_api_baseline: float = math.nan
    preemption_baseline_pods: int = 0  # preemptors
    preemption_baseline_victims: int = 0  # per preemptor
    preemption_baseline_events_dropped: int = 0  # by its event writer, its queue full
    # CPU (cores) of each process over the preemption API baseline's timed part, the CPU
    # milliseconds each spent per preemptor, and the preemptors/s at which that CPU would use
    # every core of the host (bench.common.cpu_ceiling): no scheduler can go faster here.
    preemption_baseline_cpu_cores: dict[str, float] = field(default_factory=dict)
    preemption_baseline_cpu_ms_per_pod: dict[str, float] = field(default_factory=dict)
    preemption_baseline_cpu_ceiling: float = math.nan
    # created_to_bound / the preemption API baseline when measured, else / the bind-only one.
    scheduler_to_limit: float = math.nan
    throughput: ThroughputStats = field(
        default_factory=lambda: ThroughputStats(math.nan, math.nan, math.nan, math.nan, 0)
    )
    samples: list[float] = field(default_factory=list)
    algorithm_ms: float = math.nan  # mean scheduling_algorithm_duration over the phase
    # The scheduler thread's mean CPU time over those spans (kemu's counter): algorithm_ms
    # less the time the process waited for a core on this machine.
    algorithm_cpu_ms: float = math.nan
    attempt_ms: float = math.nan  # mean scheduling_attempt_duration over the phase
    attempts: dict[str, float] = field(default_factory=dict)
    pending_end: dict[str, float] = field(default_factory=dict)
    # Over the measured phase (metric increases between the scrapes at both ends).
    filter_evaluations: float = math.nan  # nodes run through Filter (kemu's counter)
    preemption: PreemptionFigures | None = None
    deleted_pods: int = 0  # pods of the run deleted (preemption victims), seen by the watch
    expected_min_victims: int | None = None  # per measured pod, from the workload's sizes
    nominated: NominatedFigures | None = None
    api_calls: dict[str, float] = field(default_factory=dict)  # "verb resource" for pods
    event_calls: dict[str, float] = field(default_factory=dict)  # "verb events", the phase's
    # The baseline's calls ("verb resource" for pods and events), when measured.
    baseline_api_calls: dict[str, float] = field(default_factory=dict)
    cpu_cores: dict[str, float] = field(default_factory=dict)
    # CPU milliseconds of each process per measured pod over the phase, and the pods/s at which
    # that CPU would use every core of the host.
    cpu_ms_per_pod: dict[str, float] = field(default_factory=dict)
    cpu_ceiling: float = math.nan
    rss_kib: dict[str, int | None] = field(default_factory=dict)
    watch_events: int = 0
    load_avg_start: list[float] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    # upstream's threshold (on the data item threshold_selector names: by default pods/s, the
    # throughput average), the value measured for it and whether it was met.
    threshold: float | None = None
    threshold_met: bool | None = None
    threshold_selector: ThresholdSelector = field(default_factory=ThresholdSelector)
    threshold_value: float = math.nan
    # upstream's metricsCollectorConfig: each selected series of the scheduler's over the
    # measured phase (a histogram's mean in ms, a counter's increase).
    metrics: dict[str, float] = field(default_factory=dict)
    not_modelled_gates: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def label(self) -> str:
        """The column header: the workload, and for an A/B run whether its gate was on (the
        "feature gates" row names it)."""
        label = self.workload
        if self.variant:
            label += f" [{'on' if self.variant.endswith('=true') else 'off'}]"
        if self.path:
            label += f" [{self.path}]"
        return label

    @property
    def pod_patches_per_pod(self) -> float:
        return ratio(self.api_calls.get("patch pods", 0.0), float(self.measured_pods))


@dataclass(frozen=True)
class PhaseStart:
    """A measured phase's start: when, the scheduler's and the apiserver's metrics, the pods
    deleted so far, and the CPU meter of the run's processes."""

    start: float
    before: Samples
    api_before: Samples
    deleted: int
    meter: CpuMeter


@dataclass(frozen=True)
class Options:
    workloads: tuple[Workload, ...]
    json_path: str | None
    scheduler_config: str | None
    creators: int
    seed: int
    timeout: float
    py_spy: str | None  # output file of a py-spy profile of the measured phase
    py_spy_bin: str
    py_spy_seconds: int
    keep_dir: str | None = None  # keep each run's cluster directory (logs) under it
    py_spy_process: str = "scheduler"  # the process --py-spy profiles (one of PROFILED)
    # Measure the baseline (baseline_kind): "auto" (bind-only for the SchedulingBasic test
    # cases, preemption API for PreemptionBasic), "always", "never".
    bind_only: str = "auto"
    # The scheduler's Filter/Score paths to run each workload with, in order ("batch",
    # "per-node"); () for the scheduler's default without a path label.
    paths: tuple[str, ...] = ()
    clock: ClockMode = ClockMode.REAL
    # The scheduler without/with --record-decisions, in order.
    record: tuple[bool, ...] = (False,)
    # --html FILE: each run's timeline recorded (kemu.timeline) and drawn as a section of it.
    html_path: str | None = None


class Runner:
    def __init__(
        self, cluster: Cluster, workload: Workload, variant: Variant, opts: Options
    ) -> None:
        self.cluster = cluster
        self.workload = workload
        self.variant = variant
        self.opts = opts
        self.result = Result(
            workload.full_name,
            variant=variant.name,
            emulated_version=workload.emulated_version or str(DEFAULT_VERSION),
            feature_gates=dict(variant.feature_gates),
            nodes=workload.count(CreateNodes),
            init_pods=workload.count(CreatePods, measured=False),
            measured_pods=workload.count(CreatePods, measured=True),
            expected_min_victims=expected_min_victims(workload),
            load_avg_start=list(os.getloadavg()),
            threshold=workload.threshold,
            threshold_selector=workload.threshold_selector,
            not_modelled_gates=list(workload.not_modelled_gates),
        )
        self.pids: dict[str, int | None] = {
            "scheduler": cluster.processes["scheduler"].pid,
            "apiserver": cluster.processes["apiserver"].pid,
            "etcd": cluster.processes["etcd"].pid,
            "bench": os.getpid(),
        }
        if "controllermanager" in cluster.processes:  # DRA's claim controllers
            self.pids["controllermanager"] = cluster.processes["controllermanager"].pid
        self._tg: anyio.abc.TaskGroup | None = None
        self._background: anyio.abc.TaskGroup | None = None  # ops running on after their turn
        self._profiled: anyio.Event | None = None  # while a py-spy profile runs
        self.node_names: list[str] = []  # of the createNodes ops, in creation order
        self._churn: anyio.abc.TaskGroup | None = None  # churn ops, until the ops are done
        self.barrier_counts = BarrierCounts()
        self._collecting: tuple[StartCollectingMetrics, PhaseStart] | None = None
        self.timeline: Timeline | None = None
        """Recorded while the run lasts when set (--html)."""

    async def run(self) -> Result:
        async with Client(self.cluster.server, user_agent="bench-scheduler-perf") as client:
            await client.wait_ready(timeout=30)
            if self.timeline is None:
                return await self._run(client)
            async with record_timeline(client, self.timeline):
                return await self._run(client)

    def mark(self, label: str, start: float) -> None:
        """A phase of the run on its timeline (--html): from `start` to now."""
        if self.timeline is not None:
            tl = self.timeline
            tl.mark(MarkerKind.NOTE, label, at=tl.since_monotonic(start), until=tl.clock())

    async def _run(self, client: Client) -> Result:
        tracker = BindTracker()
        for pc in priority_class_objects(self.workload):
            await client.create(pc)
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(tracker.run, client)
            # Ops that do not wait for completion (deletePods) finish before the run ends.
            async with anyio.create_task_group() as background:
                self._background = background
                async with anyio.create_task_group() as churn:
                    self._churn = churn
                    for index, op in enumerate(self.workload.ops):
                        await self.run_op(client, tracker, index, op)
                    churn.cancel_scope.cancel()  # upstream's churn ends with the workload
            for kind in baselines(self.workload, self.opts.bind_only):
                start = time.monotonic()
                if kind == BIND_ONLY:
                    await self.bind_only(client, tracker)
                else:
                    await self.preemption_baseline(client, tracker)
                self.mark(f"{kind} baseline", start)
            if self._profiled is not None:
                await self._profiled.wait()
            tg.cancel_scope.cancel()
        self.result.watch_events = tracker.events
        self.result.rss_kib = {n: rss_kib(p) for n, p in self.pids.items() if p is not None}
        return self.result

    async def run_op(self, client: Client, tracker: BindTracker, index: int, op: Op) -> None:
        opts = self.opts
        if isinstance(op, Barrier):
            want = self.barrier_counts.targets(op)
            logger.info("op %d: barrier (%s) for %s", index, op.stage, want)
            bound = await barrier_by_listing(client, want, op, opts.timeout)
            # upstream's barrier and its throughput collector read one informer: a pod the
            # barrier saw bound is counted. kemu's lists may run ahead of the tracker's watch.
            await tracker.wait_seen(bound, opts.timeout)
            self.barrier_counts.passed(op)
            return
        if isinstance(op, Churn):
            logger.info("op %d: churn (%s) in %s", index, op.mode, op.namespace)
            await ensure_namespace(client, op.namespace)
            assert self._churn is not None
            self._churn.start_soon(churn, client, op, index)
            return
        if isinstance(op, StartCollectingMetrics):
            self._collecting = (op, await self.phase_start(tracker))
            return
        if isinstance(op, StopCollectingMetrics):
            assert self._collecting is not None
            start_op, phase = self._collecting
            r = self.result
            r.cpu_cores = phase.meter.stop()
            end = time.monotonic()
            self.mark(f"collection window {start_op.name} (op {index})", phase.start)
            self.collected(tracker, start_op, phase.start, end)
            r.cpu_ms_per_pod = cpu_ms_per_item(r.cpu_cores, phase.meter.wall, r.measured_pods)
            r.cpu_ceiling = cpu_ceiling(r.cpu_ms_per_pod, os.cpu_count())
            after = await self.scheduler_metrics(tracker.scheduler_bound)
            await self.phase_figures(tracker, phase, after)
            self._collecting = None
            return
        if isinstance(op, CreatePodGroups):
            await create_any(client, op.create, opts.creators)
            await wait_for_pod_groups(client, op.wait, opts.timeout)
            return
        if isinstance(op, CreateCompositePodGroups):
            await create_any(client, op.create, opts.creators)
            await wait_for_listed(
                client, types_pb2.CompositePodGroup, op.create.namespace, op.create.count,
                opts.timeout, "createCompositePodGroups",
            )  # fmt: skip
            return
        if isinstance(op, CreateAny):
            await create_any(client, op, opts.creators)
            return
        if isinstance(op, WaitForPodGroups):
            await wait_for_pod_groups(client, op, opts.timeout)
            return
        if isinstance(op, UpdateAny):
            await update_any(client, op)
            return
        if isinstance(op, CreateResourceDriver):
            await create_resource_driver(client, op, self.node_names)
            return
        if isinstance(op, AllocResourceClaims):
            start = time.monotonic()
            done = await alloc_resource_claims(client, op, self.gates, random.Random(opts.seed))
            logger.info(
                "op %d: %d claims allocated in %.1f s", index, done, time.monotonic() - start
            )
            return
        if isinstance(op, CreateNodes):
            logger.info("op %d: creating %d nodes", index, op.count)
            nodes = node_objects(op, index)
            self.node_names.extend(n.metadata.name for n in nodes)
            res = await run_concurrent(len(nodes), opts.creators, lambda i: client.create(nodes[i]))
            _raise_errors(res.errors, res.first_error, "node")
            self.result.node_create_rate = res.ops_per_second
            logger.info("op %d: %d nodes at %.0f/s", index, op.count, res.ops_per_second)
            csinodes = csinode_objects(op, nodes)
            if csinodes:
                res = await run_concurrent(
                    len(csinodes), opts.creators, lambda i: client.create(csinodes[i])
                )
                _raise_errors(res.errors, res.first_error, "CSINode")
            return
        if isinstance(op, CreateNamespaces):
            logger.info("op %d: creating %d namespaces %s-<i>", index, op.count, op.prefix)
            await create_namespaces(client, op, opts.creators)
            self.barrier_counts.namespaces_created(op.names())
            return
        if isinstance(op, Sleep):
            logger.info("op %d: sleeping %g s", index, op.seconds)
            await anyio.sleep(op.seconds)
            return
        if isinstance(op, DeletePods):
            victims = await pods_to_delete(client, op)
            tracker.expect_deletion(victims)
            logger.info("op %d: deleting %d pods of %s", index, len(victims), op.namespace)
            if op.skip_wait:
                assert self._background is not None
                self._background.start_soon(delete_pods, client, op, victims, opts.creators)
            else:
                await delete_pods(client, op, victims, opts.creators)
            return
        await ensure_namespace(client, op.namespace)
        if op.steady_state is not None:
            await self.steady_state(client, tracker, index, op, op.steady_state)
            return
        pods = pod_objects(op, index)
        tracker.expect(index, pods)
        self.barrier_counts.pods_created(op)
        if op.collect_metrics:
            await self.measure(client, tracker, index, op, pods)
            return
        logger.info("op %d: creating %d pods in %s", index, op.count, op.namespace)
        res = await run_concurrent(len(pods), opts.creators, pod_creator(client, op, pods))
        _raise_errors(res.errors, res.first_error, "pod")
        if not op.skip_wait:
            await tracker.wait_op(index, opts.timeout)
            logger.info("op %d: all %d pods bound", index, op.count)

    @property
    def gates(self) -> FeatureGates:
        """The run's feature gates at its emulated version (the control plane's)."""
        w = self.workload
        version = parse_emulated_version(w.emulated_version) if w.emulated_version else None
        return FeatureGates.for_version(
            version or DEFAULT_VERSION, dict(self.variant.feature_gates)
        )

    async def steady_state(
        self, client: Client, tracker: BindTracker, index: int, op: CreatePods, seconds: float
    ) -> None:
        """upstream's createPods in steady state (scheduler_perf.go createPodsSteadily): the
        op's `count` pods created, then for `seconds` each pod seen bound is deleted (grace 0:
        no kubelet finishes it) and another created, so that `count` pods wait for the
        scheduler all along; the throughput is that of the binds in the window (the measured
        phase when the op collects metrics). The pods still pending at the end are left."""
        r = self.result
        serial = itertools.count()
        pods: dict[str, types_pb2.Pod] = {}

        def new_pod() -> types_pb2.Pod:
            pod = pod_object(op, index, next(serial))
            tracker.expect(index, [pod])
            pods[object_key(pod)] = pod
            return pod

        async def replace_pod(pod: types_pb2.Pod) -> None:
            with contextlib.suppress(NotFound):
                await client.delete(
                    types_pb2.Pod, pod.metadata.name, pod.metadata.namespace,
                    grace_period_seconds=0,
                )  # fmt: skip
            await client.create(new_pod())

        phase = await self.phase_start(tracker) if op.collect_metrics else None
        if phase is not None and self.opts.py_spy:
            # --py-spy: as for the measured createPods op (in the run's task group).
            self._profiled = anyio.Event()
            assert self._tg is not None
            self._tg.start_soon(self.profile, self.opts.py_spy_process)
        first = [new_pod() for _ in range(op.count)]
        logger.info(
            "op %d: %d pods in steady state for %g s in %s", index, op.count, seconds, op.namespace
        )
        start = time.monotonic()
        res = await run_concurrent(
            len(first), self.opts.creators, lambda i: client.create(first[i])
        )
        _raise_errors(res.errors, res.first_error, "pod")
        seen = 0
        with anyio.move_on_after(seconds):
            while True:
                await tracker.wait_bound(index, seen)
                keys = tracker.bound_keys[index][seen:]
                seen += len(keys)
                gone = [pods.pop(k) for k in keys]
                tracker.expect_deletion(gone)
                async with anyio.create_task_group() as tg:
                    for pod in gone:
                        tg.start_soon(replace_pod, pod)
        end = time.monotonic()
        self.mark(f"steady state: {op.count} pods for {seconds:g} s (op {index})", start)
        if phase is None:
            return
        r.cpu_cores = phase.meter.stop()
        times = [t for t in tracker.bound_at[index] if start <= t <= end]
        r.measured_pods = len(times)
        r.phase_seconds = end - start
        r.created_to_bound = rate(len(times), r.phase_seconds)
        r.samples = throughput_samples(times, start, end)
        r.throughput = throughput_stats(r.samples)
        r.cpu_ms_per_pod = cpu_ms_per_item(r.cpu_cores, phase.meter.wall, len(times))
        r.cpu_ceiling = cpu_ceiling(r.cpu_ms_per_pod, os.cpu_count())
        after = await self.scheduler_metrics(tracker.scheduler_bound)
        await self.phase_figures(tracker, phase, after)

    async def measure(
        self,
        client: Client,
        tracker: BindTracker,
        index: int,
        op: CreatePods,
        pods: Sequence[types_pb2.Pod],
    ) -> None:
        r = self.result
        phase = await self.phase_start(tracker)
        before, meter = phase.before, phase.meter  # the meter restarts with the creates
        logger.info(
            "op %d: creating %d measured pods in %s",
            index,
            len(pods),
            pods[0].metadata.namespace if pods else "-",
        )
        if self.opts.py_spy:
            # In the run's task group: it may outlast the phase, and its output is read after.
            self._profiled = anyio.Event()
            assert self._tg is not None
            self._tg.start_soon(self.profile, self.opts.py_spy_process)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.progress, tracker, index, len(pods))
            meter.start()
            start = time.monotonic()
            res = await run_concurrent(len(pods), self.opts.creators, pod_creator(client, op, pods))
            _raise_errors(res.errors, res.first_error, "pod")
            r.pod_create_rate = res.ops_per_second
            await tracker.wait_op(index, self.opts.timeout)
            r.cpu_cores = meter.stop()
            tg.cancel_scope.cancel()
        self.mark(f"measured phase: {len(pods)} pods (op {index})", start)
        r.cpu_ms_per_pod = cpu_ms_per_item(r.cpu_cores, meter.wall, len(pods))
        r.cpu_ceiling = cpu_ceiling(r.cpu_ms_per_pod, os.cpu_count())
        times = tracker.bound_at[index]
        end = max(times, default=start)
        r.phase_seconds = end - start
        r.created_to_bound = rate(len(times), r.phase_seconds)
        r.samples = throughput_samples(times, start, end)
        r.throughput = throughput_stats(r.samples)
        scheduled = metric_sum(before, SCHEDULE_ATTEMPTS, result="scheduled") + len(pods)
        after = await self.scheduler_metrics(scheduled)
        await self.phase_figures(tracker, phase, after)

    async def phase_start(self, tracker: BindTracker) -> PhaseStart:
        """The scrapes and counts at the start of a measured phase (a collectMetrics op or a
        startCollectingMetrics window), and the CPU meter started. The scheduler's scrape waits
        for its count of scheduled attempts to include every binding seen so far, so that the
        previous ops' last attempts are not counted in the phase."""
        before = await self.scheduler_metrics(tracker.scheduler_bound)
        api_before = parse_metrics(
            await anyio.to_thread.run_sync(scrape, self.cluster.component("apiserver"))
        )
        meter = CpuMeter(self.pids)
        meter.start()
        return PhaseStart(time.monotonic(), before, api_before, tracker.deleted(), meter)

    async def phase_figures(self, tracker: BindTracker, phase: PhaseStart, after: Samples) -> None:
        """What the scheduler and the apiserver did between the phase's start and `after` (the
        scheduler's scrape at its end): attempts, preemptions, pods deleted, API calls, the
        threshold and the metricsCollectorConfig's series."""
        r, before = self.result, phase.before
        api_after = parse_metrics(
            await anyio.to_thread.run_sync(scrape, self.cluster.component("apiserver"))
        )
        r.algorithm_ms = histogram_mean_delta(before, after, ALGORITHM_DURATION) * 1000
        r.algorithm_cpu_ms = counter_mean_delta(before, after, ALGORITHM_CPU, ALGORITHM_DURATION)
        r.attempt_ms = histogram_mean_delta(before, after, ATTEMPT_DURATION) * 1000
        r.attempts = delta_by_label(before, after, SCHEDULE_ATTEMPTS, "result")
        r.pending_end = by_label(after, PENDING_PODS, "queue")
        r.filter_evaluations = metric_delta(before, after, FILTER_EVALUATIONS)
        r.preemption = preemption_figures(before, after)
        r.nominated = nominated_figures(before, after)
        r.deleted_pods = tracker.deleted() - phase.deleted
        r.api_calls = api_calls(phase.api_before, api_after, POD_RESOURCES)
        r.event_calls = api_calls(phase.api_before, api_after, ("events",))
        self.judge_threshold(before, after)

    async def scheduler_metrics(self, scheduled: float) -> Samples:
        """The scheduler's metrics once its `scheduler_schedule_attempts_total{result=scheduled}`
        reaches `scheduled`, or as they are after SCHEDULED_CATCH_UP s: it counts an attempt
        after its binding's write returns, which the run's watch may have shown already."""
        with anyio.move_on_after(SCHEDULED_CATCH_UP):
            while True:
                samples = parse_metrics(await anyio.to_thread.run_sync(scrape, self.scheduler))
                if metric_sum(samples, SCHEDULE_ATTEMPTS, result="scheduled") >= scheduled:
                    return samples
                await anyio.sleep(0.05)
        return parse_metrics(await anyio.to_thread.run_sync(scrape, self.scheduler))

    @property
    def scheduler(self) -> Component:
        return self.cluster.component("scheduler")

    def judge_threshold(self, before: Samples, after: Samples) -> None:
        """The measured phase's value of the workload's thresholdMetricSelector (the
        throughput average, or the scheduler's histogram between the scrapes `before` and
        `after` at both ends of the phase, in ms as upstream's data items) against its
        threshold, and the metricsCollectorConfig's series."""
        r = self.result
        selector = self.workload.threshold_selector
        if selector.name == THROUGHPUT:
            value = r.throughput.average
        else:
            value = 1000 * histogram_value_delta(
                before, after, selector.name, selector.data_bucket, **selector.labels
            )
        r.threshold_value = value
        # upstream's applyThreshold: a threshold of 0 is no check.
        if r.threshold and not math.isnan(value):
            r.threshold_met = selector.met(value, r.threshold)
        r.metrics = collected_metrics(self.workload, before, after)

    def collected(
        self, tracker: BindTracker, op: StartCollectingMetrics, start: float, end: float
    ) -> None:
        """startCollectingMetrics .. stopCollectingMetrics: the throughput of the pods bound in
        the op's namespaces (matching its label selector) between the two."""
        times = [
            t
            for t, ns, labels in tracker.bound_log
            if start <= t <= end
            and ns in op.namespaces
            and all(labels.get(k) == v for k, v in op.label_selector.items())
        ]
        r = self.result
        r.measured_pods = len(times)
        r.phase_seconds = end - start
        r.created_to_bound = rate(len(times), r.phase_seconds)
        r.samples = throughput_samples(sorted(times), start, end)
        r.throughput = throughput_stats(r.samples)

    async def bind_only(self, client: Client, tracker: BindTracker) -> None:
        """The bind-only baseline, after the workload's ops on the same cluster (so that its
        pods, bound by hand, cannot change the measured placements)."""
        measured = self.workload.measured
        r = self.result
        if measured is None or not self.node_names:
            return
        index = len(self.workload.ops)  # a tracker key no op uses
        pods = bind_only_pods(pod_objects(measured, index))
        await ensure_namespace(client, BIND_ONLY_NAMESPACE)
        logger.info("bind-only baseline: %d pods on %d nodes", len(pods), len(self.node_names))
        writer, recorder = scheduler_recorder(client)
        with quiet_event_drops():
            async with anyio.create_task_group() as tg:
                await tg.start(writer.run)
                r.bind_only_baseline = await bind_only_baseline(
                    client,
                    tracker,
                    index,
                    pods,
                    self.node_names,
                    self.opts.creators,
                    self.opts.timeout,
                    recorder=recorder,
                )
                tg.cancel_scope.cancel()
        r.bind_only_pods = len(pods)
        r.scheduler_to_limit = ratio(r.created_to_bound, r.bind_only_baseline)

    async def preemption_baseline(self, client: Client, tracker: BindTracker) -> None:
        """The preemption API baseline (bench.scheduler_perf_baseline), after the workload's
        ops on the same cluster: victims set up untimed, then the preemptors' calls timed; the
        apiserver's pod and event calls of the timed part are scraped at both ends."""
        w = self.workload
        measured, shape = w.measured, preemption_shape(w)
        if measured is None or shape is None or not shape.victims or not self.node_names:
            return
        r = self.result
        index = len(w.ops) + 1  # a tracker key no op (nor the bind-only baseline) uses
        plan = preemption_plan(
            pod_objects(measured, index),
            pod_objects(shape.low, shape.low_index),
            self.node_names,
            shape.victims,
            BIND_ONLY_SCHEDULER,
            shape.insufficient,
        )
        await ensure_namespace(client, PREEMPTION_BASELINE_NAMESPACE)
        logger.info(
            "preemption API baseline: %d preemptors, %d victims each, on %d nodes",
            len(plan.preemptors),
            shape.victims,
            len(self.node_names),
        )
        victims = await set_up_victims(client, plan, self.opts.creators)
        version = parse_emulated_version(w.emulated_version) if w.emulated_version else None
        gates = FeatureGates.for_version(
            version or DEFAULT_VERSION, dict(self.variant.feature_gates)
        )
        calls = Calls(
            scheduler_name=measured.template.spec.scheduler_name or DEFAULT_SCHEDULER,
            async_preemption=gates.enabled(SCHEDULER_ASYNC_PREEMPTION),
            tracking=gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
        )
        apiserver = self.cluster.component("apiserver")
        before = parse_metrics(await anyio.to_thread.run_sync(scrape, apiserver))
        writer, recorder = scheduler_recorder(client)
        meter = CpuMeter(self.pids)
        with quiet_event_drops():
            async with anyio.create_task_group() as tg:
                await tg.start(writer.run)
                meter.start()
                r.preemption_api_baseline = await preemption_api_baseline(
                    client,
                    tracker,
                    index,
                    plan,
                    victims,
                    self.opts.creators,
                    self.opts.timeout,
                    calls=calls,
                    recorder=recorder,
                )
                r.preemption_baseline_cpu_cores = meter.stop()
                tg.cancel_scope.cancel()
        r.preemption_baseline_cpu_ms_per_pod = cpu_ms_per_item(
            r.preemption_baseline_cpu_cores, meter.wall, len(plan.preemptors)
        )
        r.preemption_baseline_cpu_ceiling = cpu_ceiling(
            r.preemption_baseline_cpu_ms_per_pod, os.cpu_count()
        )
        r.preemption_baseline_events_dropped = writer.dropped
        after = parse_metrics(await anyio.to_thread.run_sync(scrape, apiserver))
        r.baseline_api_calls = api_calls(before, after, BASELINE_RESOURCES)
        r.preemption_baseline_pods = len(plan.preemptors)
        r.preemption_baseline_victims = shape.victims
        r.scheduler_to_limit = ratio(r.created_to_bound, r.preemption_api_baseline)

    async def progress(self, tracker: BindTracker, index: int, total: int) -> None:
        last = 0
        while True:
            await anyio.sleep(SAMPLE_INTERVAL)
            bound = len(tracker.bound_at[index])
            logger.info("  %d/%d bound (+%d)", bound, total, bound - last)
            last = bound
            if bound >= total:
                return

    async def profile(self, process: str) -> None:
        """py-spy on `process` (the scheduler, the apiserver or the bench) from the start of
        the measured phase (raw, GIL-holding samples); the summary goes into the result."""
        pid = self.pids[process]
        assert self.opts.py_spy is not None and pid is not None
        out = Path(self.opts.py_spy)
        argv = [
            self.opts.py_spy_bin, "record", "-p", str(pid), "-d", str(self.opts.py_spy_seconds),
            "-f", "raw", "-o", str(out), "--gil",
        ]  # fmt: skip
        try:
            proc = await anyio.open_process(argv, stdout=subprocess.DEVNULL, stderr=None)
        except OSError as e:
            self.result.profile = {"error": f"cannot run {argv[0]}: {e}"}
            assert self._profiled is not None
            self._profiled.set()
            return
        try:
            with anyio.fail_after(self.opts.py_spy_seconds + 60):
                await proc.wait()
            if proc.returncode != 0:
                self.result.profile = {"error": f"py-spy exited with code {proc.returncode}"}
                return
            total, own, inclusive = summarize_stacks(await anyio.Path(out).read_text(), top=25)
            self.result.profile = {
                "process": process, "file": str(out), "samples": total, "self": own,
                "inclusive": inclusive,
            }  # fmt: skip
        finally:
            assert self._profiled is not None
            self._profiled.set()
            with anyio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                await proc.aclose()


class CreateBindClient(Protocol):
    """What the bind-only baseline needs of an ApiClient."""

    async def create(self, obj: types_pb2.Pod) -> types_pb2.Pod: ...

    async def bind(self, namespace: str, name: str, node_name: str, *, uid: str = "") -> None: ...


def baselines(workload: Workload, mode: str) -> tuple[str, ...]:
    """The baselines a run measures after its ops, in order, by `mode` (--bind-only-baseline):
    "never" none; "auto" the bind-only baseline for the SchedulingBasic test cases (plain
    creates and bindings) and the preemption API baseline for PreemptionBasic's (a
    PreemptionBasic-shaped workload whose measured pods must preempt); "always" the bind-only
    baseline and, for a workload of that shape, the preemption API baseline after it. None
    without a measured op."""
    if mode not in BIND_ONLY_MODES:
        raise ValueError(f"bind-only mode: {mode!r} is not one of {', '.join(BIND_ONLY_MODES)}")
    if workload.measured is None or mode == "never":
        return ()
    shape = preemption_shape(workload)
    preempting = shape is not None and shape.victims > 0
    if mode == "always":
        return (BIND_ONLY, PREEMPTION_API) if preempting else (BIND_ONLY,)
    if workload.test_case == "SchedulingBasic":
        return (BIND_ONLY,)
    if workload.test_case == "PreemptionBasic" and preempting:
        return (PREEMPTION_API,)
    return ()


@contextlib.contextmanager
def quiet_event_drops() -> Iterator[None]:
    """A baseline's event queue may fill as the scheduler's may: its drops are counted
    (`EventRecorder.dropped`), not logged one by one."""
    events_log = logging.getLogger("kemu.client.events")
    level = events_log.level
    events_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        events_log.setLevel(level)


def wants_bind_only_baseline(workload: Workload, mode: str) -> bool:
    """Whether a run measures the bind-only baseline (baselines)."""
    return BIND_ONLY in baselines(workload, mode)


def bind_only_pods(pods: Sequence[types_pb2.Pod]) -> list[types_pb2.Pod]:
    """Copies of the measured op's pods for the bind-only baseline: in their own namespace,
    renamed, and for a scheduler no profile serves (so the scheduler leaves them alone)."""
    return [
        for_no_scheduler(
            pod, BIND_ONLY_NAMESPACE, f"bind-only-{pod.metadata.name}", BIND_ONLY_SCHEDULER
        )
        for pod in pods
    ]


async def bind_only_baseline(
    client: CreateBindClient,
    tracker: BindTracker,
    index: int,
    pods: Sequence[types_pb2.Pod],
    node_names: Sequence[str],
    creators: int,
    within: float,
    *,
    clock: Clock = time.monotonic,
    recorder: EventRecorderLike | None = None,
) -> float:
    """What the apiserver alone can take: `pods` created with `creators` in flight, as the
    measured phase creates, and each bound as soon as its create returns, round-robin over
    `node_names`, in its own task as the scheduler's binding cycles (so bindings are as
    concurrent as the scheduler's), with the scheduler's Scheduled event to `recorder` (the
    caller runs its writer). Pods/s from the first create until the watch (`tracker`, under
    the key `index`) has seen the last one bound, as created_to_bound is measured."""
    if not pods:
        return math.nan
    if not node_names:
        raise ValueError("the bind-only baseline needs nodes")
    tracker.expect(index, pods)
    failures: list[str] = []

    async with anyio.create_task_group() as binders:

        async def bind(pod: types_pb2.Pod, node: str) -> None:
            try:
                await client.bind(
                    pod.metadata.namespace, pod.metadata.name, node, uid=pod.metadata.uid
                )
            except ApiError as e:
                failures.append(f"{pod.metadata.name}: {e}")
                return
            if recorder is not None:
                record_scheduled(recorder, pod, node)

        async def create_and_bind(i: int) -> None:
            created = await client.create(pods[i])
            binders.start_soon(bind, created, node_names[i % len(node_names)])

        start = clock()
        res = await run_concurrent(len(pods), creators, create_and_bind)
        _raise_errors(res.errors, res.first_error, "bind-only pod")
    if failures:
        raise RuntimeError(f"{len(failures)} bind-only bindings failed; the first: {failures[0]}")
    await tracker.wait_op(index, within)
    times = tracker.bound_at[index]
    return rate(len(times), max(times, default=start) - start)


def pod_creator(
    client: ApiClient, op: CreatePods, pods: Sequence[types_pb2.Pod]
) -> Callable[[int], Awaitable[object]]:
    """Creates pod i of a createPods op; with volume templates, first its claim and volume,
    each create followed by its status update (upstream's CreatePodWithPersistentVolume, run
    per pod as upstream's workers do, so a measured op's rate includes them as upstream's)."""
    if op.volumes is None:
        return lambda i: client.create(pods[i])

    async def create(i: int) -> object:
        claim, volume = volume_objects(op, i)
        created_claim = await client.create(claim)
        created_claim.status.CopyFrom(claim.status)
        await client.update_status(created_claim)
        created_volume = await client.create(volume)
        created_volume.status.CopyFrom(volume.status)
        await client.update_status(created_volume)
        return await client.create(pods[i])

    return create


async def create_namespaces(client: ApiClient, op: CreateNamespaces, creators: int) -> None:
    """The op's namespaces; one that exists already is fine (as upstream's preparer)."""
    namespaces = namespace_objects(op)

    async def create(i: int) -> None:
        with contextlib.suppress(AlreadyExists):
            await client.create(namespaces[i])

    res = await run_concurrent(len(namespaces), creators, create)
    _raise_errors(res.errors, res.first_error, "namespace")


def collected_metrics(workload: Workload, before: Samples, after: Samples) -> dict[str, float]:
    """The metricsCollectorConfig's series over the phase, one per label set upstream reports
    (MetricSelection.combinations: every combination of the values given, named
    `name{a=x,b=y}`; `name` alone when no label is given, all its series together): a
    histogram's mean (ms); NaN for a metric the scheduler does not expose (an older scheduler,
    a gate off). upstream's collector reads histograms only (collectHistogramVec) and gives a
    counter no data item; kemu reports a counter's increase over the phase."""
    out: dict[str, float] = {}
    for m in workload.metrics:
        histogram = m.name + "_count" in after
        exposed = histogram or m.name in after
        for match in m.combinations():
            key = m.name
            if match:
                key += "{" + ",".join(f"{k}={v}" for k, v in match.items()) + "}"
            if not exposed:
                out[key] = math.nan
            elif histogram:
                out[key] = 1000 * histogram_mean_delta(before, after, m.name, **match)
            else:
                out[key] = metric_delta(before, after, m.name, **match)
    return out


CREATE_ANY_RETRY: Final = 20.0  # upstream's createAny retries a failed create for 20 s
CREATE_ANY_INTERVAL: Final = 1.0  # every 1 s


async def create_any(client: ApiClient, op: CreateAny, creators: int) -> None:
    """upstream's createAny: each object of the op created in its namespace (made first, as
    upstream's requiredNamespaces), a failed create retried every second for 20 s."""
    objects = op.text.objects(op.count, op.kind)
    logger.info("creating %d %s in %s", len(objects), op.kind.resource, op.namespace or "-")
    if op.namespace:
        await ensure_namespace(client, op.namespace)
    for value in sorted({v for obj in objects if (v := through_priority_class(obj)) is not None}):
        with contextlib.suppress(AlreadyExists):
            pc = types_pb2.PriorityClass(value=value, description="bench scheduler_perf")
            pc.metadata.name = priority_class_name(value)
            await client.create(pc)

    async def create(i: int) -> object:
        obj = objects[i]
        if op.namespace:
            obj.metadata.namespace = op.namespace  # type: ignore[attr-defined]
        deadline = time.monotonic() + CREATE_ANY_RETRY
        while True:
            try:
                return await client.create(obj)
            except ApiError as e:
                if time.monotonic() >= deadline:
                    raise WorkloadError(
                        f"{op.text.where}: creating {op.kind.kind} {obj.metadata.name}: {e}"  # type: ignore[attr-defined]
                    ) from e
            await anyio.sleep(CREATE_ANY_INTERVAL)

    res = await run_concurrent(len(objects), creators, create)
    _raise_errors(res.errors, res.first_error, op.kind.kind)


POD_GROUPS_POLL: Final = 0.1  # seconds between waitForPodGroups' lists


async def wait_for_pod_groups(client: ApiClient, op: WaitForPodGroups, within: float) -> None:
    """upstream's waitForPodGroups waits until the scheduler's informer cache holds `count`
    PodGroups of the namespace. kemu's scheduler exposes no count of its informer's objects:
    the op waits until the apiserver lists them (their watch events then are on their way to
    the scheduler, which may see a member pod before its PodGroup: the gang plugin waits for
    the group at PreEnqueue, as upstream's when its cache lags)."""
    await wait_for_listed(
        client, types_pb2.PodGroup, op.namespace, op.count, within, "waitForPodGroups"
    )


async def wait_for_listed(
    client: ApiClient,
    kind: type[Message],
    namespace: str,
    count: int,
    within: float,
    what: str,
) -> None:
    """Until the apiserver lists `count` objects of `kind` in `namespace` (PodGroups for
    waitForPodGroups, CompositePodGroups for createCompositePodGroups); TimeoutError naming
    `what` past `within` seconds."""
    found = 0
    name = kinds.kind_of(kind()).kind
    with anyio.move_on_after(within):
        while True:
            listed = await client.list(kind, namespace=namespace)
            found = len(listed.items)
            if found >= count:
                logger.info("%d %ss in %s", found, name, namespace)
                return
            await anyio.sleep(POD_GROUPS_POLL)
    raise TimeoutError(f"{what}: {found} of {count} {name}s in {namespace} after {within:g} s")


async def update_any(client: ApiClient, op: UpdateAny) -> None:
    """upstream's updateAny (update.go): object i of the template written over the stored one
    through each subresource given (resize: the pod's resize subresource; status), or the
    object itself when none, and then, as upstream's op does every time, through the status
    subresource: the template's status (none, in upstream's templates) replaces the stored
    one. On the bench's bare nodes a pod's status is only what the apiserver and the scheduler
    wrote (its phase, PodScheduled, nominatedNodeName), which upstream's run clears the same
    way; the apiserver keeps the qosClass. Both writes are unconditional (the template has no
    resourceVersion). `per_second` a second, all at once (one after the other) when 0."""
    objects = op.text.objects(op.count, op.kind)
    logger.info("updating %d %s (%s)", len(objects), op.kind.resource, op.subresources or "-")

    async def update(obj: Message) -> None:
        if op.namespace:
            obj.metadata.namespace = op.namespace  # type: ignore[attr-defined]
        if not op.subresources:
            await client.update(obj)
        for sub in op.subresources:
            if sub == RESIZE:
                assert isinstance(obj, types_pb2.Pod)
                await client.resize(obj)
            else:
                await client.update_status(obj)
        await client.update_status(obj)

    if op.per_second == 0:
        for obj in objects:
            await update(obj)
        return
    async for i, _ in pace(len(objects), op.per_second):
        await update(objects[i])


def through_priority_class(obj: Message) -> int | None:
    """A pod's, a PodGroup's or a CompositePodGroup's literal spec.priority (upstream's
    templates set it: scheduler_perf's
    apiserver runs no Priority admission) turned into the run's PriorityClass of that value,
    which kemu's Priority admission resolves back; the value, or None when it had none."""
    if not isinstance(obj, (types_pb2.Pod, types_pb2.PodGroup, types_pb2.CompositePodGroup)):
        return None
    spec = obj.spec
    if not spec.HasField("priority") or spec.priority_class_name:
        return None
    value = spec.priority
    spec.priority_class_name = priority_class_name(value)
    spec.ClearField("priority")
    return value


def churn_object(template: Message, op_index: int, serial: int) -> Message:
    """An object of a churn op: the template named <generateName>churn-<op>-<serial>
    (upstream lets the apiserver generate the suffix; kemu's names are deterministic)."""
    obj = type(template)()
    obj.CopyFrom(template)
    meta = obj.metadata  # type: ignore[attr-defined]
    prefix = meta.generate_name or meta.name or "churn-"
    meta.generate_name = ""
    meta.name = f"{prefix}{op_index}-{serial}"
    through_priority_class(obj)  # (as createPods: the priority through the run's class)
    return obj


async def churn(client: ApiClient, op: Churn, op_index: int) -> None:
    """upstream's churn op until cancelled: each tick (op.interval) creates one object of each
    template (mode create, at most op.number ticks when it is not 0), or (mode recreate)
    deletes the object in slot tick % number of each template if it holds one, else creates
    one there. Failures are logged and churning goes on, as upstream's."""
    serial = 0
    slots: list[list[Message | None]] = [[None] * max(op.number, 1) for _ in op.templates]
    tick = 0
    start = time.monotonic()
    while op.mode == RECREATE or not op.number or tick < op.number:
        # A ticker: the first round one interval after the op, on an absolute schedule.
        await anyio.sleep(max(0.0, start + (tick + 1) * op.interval - time.monotonic()))
        for k, template in enumerate(op.templates):
            try:
                if op.mode == RECREATE:
                    slot = tick % op.number
                    held = slots[k][slot]
                    if held is not None:
                        slots[k][slot] = None
                        meta = held.metadata  # type: ignore[attr-defined]
                        await client.delete(type(held), meta.name, meta.namespace)
                        continue
                    obj = churn_object(template, op_index, serial)
                    serial += 1
                    slots[k][slot] = await _churn_create(client, obj, op.namespace)
                else:
                    obj = churn_object(template, op_index, serial)
                    serial += 1
                    await _churn_create(client, obj, op.namespace)
            except ApiError as e:
                logger.warning("churn: %s", e)
        tick += 1


async def _churn_create(client: ApiClient, obj: Message, namespace: str) -> Message:
    kind = kinds.BY_KIND[type(obj).__name__]
    if kind.namespaced:
        obj.metadata.namespace = namespace  # type: ignore[attr-defined]
    return await client.create(obj)


def _matches(pod: types_pb2.Pod, selector: Mapping[str, str]) -> bool:
    return all(pod.metadata.labels.get(k) == v for k, v in selector.items())


def attempted(pod: types_pb2.Pod) -> bool:
    """Bound, or at least once through a scheduling cycle (or gated): it has a PodScheduled
    condition (upstream's isAttempted)."""
    return bool(pod.spec.node_name) or any(c.type == "PodScheduled" for c in pod.status.conditions)


SCRAPE_TIMEOUT: Final = 30.0  # seconds; a loaded scheduler's /metrics may take a while


def scrape(component: Component) -> str:
    """The Prometheus text of `component`'s /metrics, waiting up to SCRAPE_TIMEOUT: a
    scheduler working through a backlog on a loaded machine answers /metrics late, which
    must not fail the run."""
    status, body = http_get(component.metrics_url, timeout=SCRAPE_TIMEOUT)
    if status != 200:
        raise RuntimeError(f"{component.name}: GET {component.metrics_url} answered {status}")
    return body.decode()


class BarrierCounts:
    """upstream's numPodsScheduledPerNamespace: what a barrier waits for in each namespace.
    A createNamespaces op makes its namespaces known (0 pods); a createPods op with
    skipWaitToCompletion adds its pod count to its namespace (one that waits for its pods adds
    nothing: they are bound already); a barrier of stage Scheduled forgets the namespaces it
    waited on (all of them when it names none), one of stage Attempted forgets nothing."""

    def __init__(self) -> None:
        self.want: dict[str, int] = {}

    def namespaces_created(self, names: Iterable[str]) -> None:
        for name in names:
            self.want.setdefault(name, 0)

    def pods_created(self, op: CreatePods) -> None:
        if op.skip_wait:
            self.want[op.namespace] = self.want.get(op.namespace, 0) + op.count

    def targets(self, op: Barrier) -> dict[str, int]:
        """Namespace -> pods to wait for; ValueError names a namespace the barrier does not
        know (the file check refuses such a barrier already)."""
        names = list(op.namespaces) or sorted(self.want)
        unknown = [n for n in names if n not in self.want]
        if unknown:
            raise ValueError(f"barrier: unknown namespace {unknown[0]}")
        return {n: self.want[n] for n in names}

    def passed(self, op: Barrier) -> None:
        if op.stage == ATTEMPTED:
            return
        if not op.namespaces:
            self.want.clear()
        for name in op.namespaces:
            self.want.pop(name, None)


async def barrier_by_listing(
    client: ApiClient, want: Mapping[str, int], op: Barrier, within: float
) -> list[str]:
    """upstream's barrier: polls the pods of each namespace of `want` until as many pods
    matching the op's label selector as `want` says (every pod the ops created there, matching
    or not, as upstream counts) are bound (stage Scheduled) or attempted (Attempted). Returns
    the keys of the bound pods its last lists saw."""
    check = attempted if op.stage == ATTEMPTED else (lambda p: bool(p.spec.node_name))
    seen_bound: list[str] = []
    with anyio.fail_after(within):
        for ns, count in want.items():
            while True:
                pods = (await client.list_all(types_pb2.Pod, ns)).items
                done = sum(1 for p in pods if _matches(p, op.label_selector) and check(p))
                if done >= count:
                    seen_bound.extend(object_key(p) for p in pods if p.spec.node_name)
                    break
                # upstream polls its informer every 1 s; a list is dearer, but small
                # namespaces are polled more often so that short workloads stay short.
                await anyio.sleep(BARRIER_POLL if len(pods) < BARRIER_POLL_PODS else 1.0)
    return seen_bound


async def pods_to_delete(client: ApiClient, op: DeletePods) -> list[types_pb2.Pod]:
    """The pods a deletePods op deletes: those of its namespace (matching its label selector)
    that exist now."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(op.label_selector.items()))
    return (await client.list_all(types_pb2.Pod, op.namespace, label_selector=selector)).items


async def delete_pods(
    client: ApiClient, op: DeletePods, pods: Sequence[types_pb2.Pod], creators: int
) -> None:
    """Deletes `pods` with default options (a bound pod then terminates for its grace period,
    as in upstream's scheduler_perf, where no kubelet finishes it either): `per_second` of
    them a second on an absolute schedule, else all at once (`creators` in flight). A pod
    already gone is fine; other failures are logged, as upstream's op does."""

    async def delete(pod: types_pb2.Pod) -> None:
        try:
            await client.delete(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
        except NotFound:
            pass
        except ApiError as e:
            logger.warning("deletePods: cannot delete %s: %s", pod.metadata.name, e)

    if op.per_second > 0:
        async with anyio.create_task_group() as tg:
            async for i, _ in pace(len(pods), op.per_second):
                tg.start_soon(delete, pods[i])
        return
    await run_concurrent(len(pods), creators, lambda i: delete(pods[i]))


def _raise_errors(errors: int, first_error: str, what: str) -> None:
    if errors:
        raise RuntimeError(f"{errors} {what} creates failed; the first: {first_error}")


def run_workload(
    workload: Workload,
    variant: Variant,
    opts: Options,
    path: str = "",
    record: bool = False,
    timelines: list[Timeline] | None = None,
) -> Result:
    """One run of a workload on a fresh cluster (the apiserver and the scheduler at the
    workload's emulated version with the variant's feature gates); the cluster is stopped on
    return, error or Ctrl-C. With `timelines` (--html), the run's timeline is appended to it,
    also when the run fails (up to the failure)."""
    with contextlib.ExitStack() as stack:
        if opts.keep_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="kemu-bench-sched-"))
        else:
            name = f"{workload.full_name}-{variant.name}" if variant.name else workload.full_name
            name += f"-{path}" if path else ""
            tmp = str(Path(opts.keep_dir) / name.replace("/", "-"))
            shutil.rmtree(tmp, ignore_errors=True)
            Path(tmp).mkdir(parents=True)
        cluster = stack.enter_context(Cluster(Path(tmp), clock=opts.clock))
        config = str(Path(tmp) / "scheduler-config.yaml")
        Path(config).write_text(
            yaml.safe_dump(harness_scheduler_config(workload.scheduler_config, opts))
        )
        gates = dict(variant.feature_gates) or None
        cluster.start_etcd()
        # upstream's scheduler_perf (test/integration/scheduler_perf mustSetupCluster) runs its
        # test apiserver with every API on (the test server's --runtime-config=api/all=true),
        # so that a workload's gated APIs (1.35-1.37's pod groups) are served with their gates
        cluster.start_apiserver(
            emulated_version=workload.emulated_version,
            feature_gates=gates,
            runtime_config=RUNTIME_CONFIG,
        )
        cluster.start_scheduler(
            config=config,
            emulated_version=workload.emulated_version,
            feature_gates=gates,
            extra_args=[
                "--seed",
                str(opts.seed),
                *(["--no-batch"] if path == PER_NODE else []),
                *(["--record-decisions"] if record else []),
            ],
        )
        if needs_claim_controller(workload):
            # upstream's mustSetupCluster runs the resourceclaim controller with DRA on (it
            # makes the claims of the pods' ResourceClaimTemplates) beside the garbage
            # collector (which deletes a deleted pod's claims, their owner gone).
            cluster.start_controllermanager(
                emulated_version=workload.emulated_version,
                feature_gates=gates,
                extra_args=[
                    "--controllers",
                    ",".join(CLAIM_CONTROLLERS),
                    *HARNESS_CONTROLLER_MANAGER_ARGS,
                ],
                cluster_cidr=None,
            )
        runner = Runner(cluster, workload, variant, opts)
        if timelines is not None:
            runner.timeline = run_timeline(workload, variant, path, record, opts.seed)
        try:
            result = anyio.run(runner.run)
        finally:
            if runner.timeline is not None and timelines is not None:
                timelines.append(runner.timeline)
        result.path = path
        result.record_decisions = record
        if record:
            summary = cluster.component("scheduler").debug("decisions")
            result.record_bytes_per_attempt = float(summary["bytesPerAttempt"])
        return result


# upstream's names.ResourceClaimController and GarbageCollectorController
# (cmd/kube-controller-manager/names).
CLAIM_CONTROLLERS: Final = ("resourceclaim-controller", "garbagecollector")


def needs_claim_controller(workload: Workload) -> bool:
    """Whether the workload's control plane runs the resourceclaim controller: upstream's
    does when the DynamicResourceAllocation gate is on (set by the workload, or on by default
    at its emulated version: GA from 1.34, where upstream's dra/ file no longer sets it), and
    kemu's only when a pod or PodGroup of its ops names a ResourceClaimTemplate, or, with
    DRAExtendedResource, a pod requests an extended resource (a class may back it: the
    scheduler's special claim, deleted when its binding fails, keeps its allocation until the
    controller takes its finalizer off)."""
    version = parse_emulated_version(workload.emulated_version or str(DEFAULT_VERSION))
    gates = FeatureGates.for_version(version, dict(workload.feature_gates))
    if not gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        return False
    extended = gates.enabled(DRA_EXTENDED_RESOURCE)
    for op in workload.ops:
        if isinstance(op, CreatePods):
            pod = op.template
            if any(c.resource_claim_template_name for c in pod.spec.resource_claims):
                return True
            if extended and any(
                is_extended_resource(name) or name.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX)
                for c in (*pod.spec.init_containers, *pod.spec.containers)
                for name in c.resources.requests
            ):
                return True
        target = op.create if isinstance(op, CreatePodGroups) else op
        if isinstance(target, CreateAny) and target.kind.kind == "PodGroup":
            group = target.text.objects(1, target.kind)[0]
            assert isinstance(group, types_pb2.PodGroup)
            if any(c.resource_claim_template_name for c in group.spec.resource_claims):
                return True
    return False


def run_timeline(
    workload: Workload, variant: Variant, path: str, record: bool, seed: int
) -> Timeline:
    """An empty timeline for one run, titled as its column of the table."""
    title = Result(workload.full_name, variant=variant.name, path=path).label
    if record:
        title += " [decision record]"
    timeline = Timeline(title)
    timeline.notes.append(
        f"{workload.count(CreateNodes)} nodes, {workload.count(CreatePods, measured=False)} "
        f"pods before the measured op, {workload.count(CreatePods, measured=True)} measured; "
        f"emulated {workload.emulated_version or DEFAULT_VERSION}; scheduler --seed {seed}"
        + (f"; {_gates_text(variant.feature_gates)}" if variant.feature_gates else "")
    )
    return timeline


# ---------------------------------------------------------------------- output


def _mib(kib: int | None) -> str:
    return fmt(kib / 1024 if kib is not None else None, 0)


def render(results: Sequence[Result]) -> str:
    """One table: a row per figure, a column per workload."""
    rows: list[list[str]] = []

    def row(label: str, values: Iterable[str]) -> None:
        rows.append([label, *values])

    rs = list(results)
    if any(r.feature_gates or r.emulated_version not in ("", str(DEFAULT_VERSION)) for r in rs):
        row("emulated version", (r.emulated_version or "-" for r in rs))
        row("feature gates", (_gates_text(r.feature_gates) for r in rs))
    if any(r.not_modelled_gates for r in rs):
        row("gates not modelled", (", ".join(r.not_modelled_gates) or "-" for r in rs))
    if any(r.record_decisions for r in rs):
        row("decision record", ("on" if r.record_decisions else "off" for r in rs))
        row("  bytes per attempt", (fmt(r.record_bytes_per_attempt, 0) for r in rs))
    row("nodes", (str(r.nodes) for r in rs))
    row("init pods / measured pods", (f"{r.init_pods} / {r.measured_pods}" for r in rs))
    row("node creates/s", (fmt(r.node_create_rate, 0) for r in rs))
    row("measured pod creates/s", (fmt(r.pod_create_rate, 0) for r in rs))
    row("measured phase s", (fmt(r.phase_seconds, 1) for r in rs))
    row("created-to-bound pods/s", (fmt(r.created_to_bound, 1) for r in rs))
    if any(not math.isnan(r.bind_only_baseline) for r in rs):
        row("bind-only baseline pods/s", (fmt(r.bind_only_baseline, 1) for r in rs))
        row("scheduler / bind-only", (
            fmt(ratio(r.created_to_bound, r.bind_only_baseline), 2) for r in rs
        ))  # fmt: skip
    if any(not math.isnan(r.preemption_api_baseline) for r in rs):
        row("preemption API baseline preemptors/s", (
            fmt(r.preemption_api_baseline, 1) for r in rs
        ))  # fmt: skip
        row("scheduler / preemption API", (
            fmt(ratio(r.created_to_bound, r.preemption_api_baseline), 2) for r in rs
        ))  # fmt: skip
    row("throughput avg pods/s", (fmt(r.throughput.average, 1) for r in rs))
    if any(r.threshold is not None for r in rs):
        row("upstream threshold", (_threshold_text(r) for r in rs))
    row("throughput p50 / p90 / p99", (
        f"{fmt(r.throughput.p50, 0)} / {fmt(r.throughput.p90, 0)} / {fmt(r.throughput.p99, 0)}"
        for r in rs
    ))  # fmt: skip
    row("throughput samples", (str(r.throughput.samples) for r in rs))
    row("scheduling_algorithm avg ms", (fmt(r.algorithm_ms, 2) for r in rs))
    row("  of it CPU (scheduler thread) ms", (fmt(r.algorithm_cpu_ms, 2) for r in rs))
    row("scheduling_attempt avg ms", (fmt(r.attempt_ms, 2) for r in rs))
    # metricsCollectorConfig's series: a histogram's mean in ms, a counter's increase.
    for name in dict.fromkeys(k for r in rs for k in r.metrics):
        row(name, (fmt(r.metrics.get(name, math.nan), 2) for r in rs))
    row("attempts", (
        " ".join(f"{k}={v:.0f}" for k, v in sorted(r.attempts.items())) or "-" for r in rs
    ))  # fmt: skip
    row("filter node evaluations / measured pod", (
        fmt(ratio(r.filter_evaluations, float(r.measured_pods)), 1) for r in rs
    ))  # fmt: skip
    if any(r.preemption is not None and r.preemption.attempts for r in rs) or any(
        r.expected_min_victims is not None for r in rs
    ):
        row("preemption attempts / preemptions", (_preemptions_text(r) for r in rs))
        row("victims: metric sum / pods deleted", (
            f"{fmt(r.preemption.victims, 0)} / {r.deleted_pods}" if r.preemption else "-"
            for r in rs
        ))  # fmt: skip
        row("victims per preemptor: metric / deleted", (
            f"{fmt(victims_per_preemptor(r), 2)} / "
            f"{fmt(ratio(float(r.deleted_pods), float(r.measured_pods)), 2)}"
            for r in rs
        ))  # fmt: skip
        row("victims per preemptor: expected minimum", (
            str(r.expected_min_victims) if r.expected_min_victims is not None else "-"
            for r in rs
        ))  # fmt: skip
    if any(r.nominated is not None and r.nominated.pods for r in rs):
        row("nominated pods' final attempts", (
            fmt(r.nominated.pods, 0) if r.nominated else "-" for r in rs
        ))  # fmt: skip
        row("  filter node evaluations avg", (
            fmt(r.nominated.filter_nodes, 1) if r.nominated else "-" for r in rs
        ))  # fmt: skip
        row("  scheduling_algorithm avg ms", (
            fmt(r.nominated.algorithm_ms, 2) if r.nominated else "-" for r in rs
        ))  # fmt: skip
    row("api pod calls", (_api_text(r.api_calls) for r in rs))
    if any(r.baseline_api_calls for r in rs):
        row("  of the baseline (with events)", (_api_text(r.baseline_api_calls) for r in rs))
        row("  baseline events dropped", (
            str(r.preemption_baseline_events_dropped) if r.baseline_api_calls else "-"
            for r in rs
        ))  # fmt: skip
    row("api event calls", (_api_text(r.event_calls) for r in rs))
    row("pod PATCHes / measured pod", (fmt(r.pod_patches_per_pod, 2) for r in rs))
    measured = ["scheduler", "apiserver", "etcd", "bench"]
    if any("controllermanager" in r.cpu_cores for r in rs):
        measured.insert(3, "controllermanager")  # DRA's claim controllers
    for name in measured:
        row(f"cpu {name} cores", (fmt(r.cpu_cores.get(name), 2) for r in rs))
    for name in measured:
        row(f"cpu {name} ms / measured pod", (fmt(r.cpu_ms_per_pod.get(name), 2) for r in rs))
    row(f"CPU ceiling on {os.cpu_count()} cpus pods/s", (fmt(r.cpu_ceiling, 1) for r in rs))
    if any(r.preemption_baseline_cpu_cores for r in rs):
        for name in ("scheduler", "apiserver", "etcd", "bench"):
            row(f"  preemption API baseline: cpu {name}", (
                fmt(r.preemption_baseline_cpu_cores.get(name), 2) for r in rs
            ))  # fmt: skip
        for name in ("scheduler", "apiserver", "etcd", "bench"):
            row(f"  preemption API baseline: cpu {name} ms / preemptor", (
                fmt(r.preemption_baseline_cpu_ms_per_pod.get(name), 2) for r in rs
            ))  # fmt: skip
        row(f"  preemption API baseline: CPU ceiling on {os.cpu_count()} cpus", (
            fmt(r.preemption_baseline_cpu_ceiling, 1) for r in rs
        ))  # fmt: skip
    for name in ("scheduler", "apiserver", "etcd"):
        row(f"rss {name} MiB", (_mib(r.rss_kib.get(name)) for r in rs))
    row(
        "load average at start",
        (f"{r.load_avg_start[0]:.2f}" if r.load_avg_start else "-" for r in rs),
    )
    lines = [
        f"scheduler_perf: {len(rs)} run(s), {os.cpu_count()} cpus; throughput samples are "
        f"pods bound per {SAMPLE_INTERVAL:g} s window of the measured phase",
        "",
        format_table(["", *(r.label for r in rs)], rows),
    ]
    for on, off in comparison_pairs(rs):
        lines.append("")
        lines.append(render_comparison(on, off))
    for per_node, batch in path_pairs(rs):
        lines.append("")
        lines.append(render_path_comparison(per_node, batch))
    for r in rs:
        if r.error:
            lines.append(f"{r.label}: FAILED: {r.error}")
        p = r.profile
        if p.get("error"):
            lines.append(f"{r.label}: py-spy: {p['error']}")
        elif p:
            lines.append("")
            lines.append(
                f"{r.label}: py-spy of the {p['process']} ({p['samples']} GIL samples, {p['file']})"
            )
            for title, key in (("self", "self"), ("inclusive", "inclusive")):
                lines.append(f"  top {title}:")
                for frame, count in p[key]:
                    lines.append(f"    {100 * ratio(count, p['samples']):5.1f}%  {frame}")
    return "\n".join(lines)


RUN_FAILURES: Final = (ProcessStartError, RuntimeError, TimeoutError, ApiError)


def run_failure(raised: BaseException) -> BaseException | None:
    """The failure of one run that the others survive (a timeout, an API error, ...), found
    inside the exception groups of the run's task groups; None for anything else."""
    while isinstance(raised, BaseExceptionGroup) and len(raised.exceptions) == 1:
        raised = raised.exceptions[0]
    return raised if isinstance(raised, RUN_FAILURES) else None


def _selected(skipped: Skipped, names: Sequence[str]) -> bool:
    """Whether a skipped test case or workload is among those asked for by name (all when
    none is named)."""
    if not names or "all" in names:
        return True
    case = skipped.name.split("/", 1)[0]
    return any(n in (skipped.name, case) or skipped.name.startswith(n + "/") for n in names)


def render_skipped(skipped: Sequence[Skipped]) -> str:
    """The test cases and workloads that do not run, with the reasons."""
    if not skipped:
        return "skipped: none"
    lines = [f"skipped ({len(skipped)}):"]
    for s in skipped:
        kind = "refused" if s.refused else "not modelled"
        lines.append(f"  {s.name}: {kind}: {s.reason}")
    return "\n".join(lines)


def _threshold_text(r: Result) -> str:
    if r.threshold is None:
        return "-"
    verdict = "-" if r.threshold_met is None else ("met" if r.threshold_met else "NOT met")
    if r.threshold_selector.name == THROUGHPUT:
        return f"{r.threshold:g} ({verdict}, {fmt(ratio(r.throughput.average, r.threshold), 2)}x)"
    return f"{r.threshold_selector.bound(r.threshold)}: {fmt(r.threshold_value, 2)} ({verdict})"


def _gates_text(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items())) or "-"


def _preemptions_text(r: Result) -> str:
    p = r.preemption
    return f"{fmt(p.attempts, 0)} / {fmt(p.preemptions, 0)}" if p is not None else "-"


def _api_text(calls: Mapping[str, float]) -> str:
    short = {
        "create pods/binding": "bind",
        "update pods/resize": "resize",
        "update_status pods": "update-status",
        "create events": "event",
        "patch events": "event-patch",
    }
    return " ".join(f"{short.get(k, k.split()[0])}={v:.0f}" for k, v in calls.items()) or "-"


def victims_per_preemptor(r: Result) -> float:
    """scheduler_preemption_victims' sum over the measured pods (NaN when nothing was
    attempted)."""
    if r.preemption is None or not r.preemption.attempts:
        return math.nan
    return ratio(r.preemption.victims, float(r.measured_pods))


def path_pairs(results: Sequence[Result]) -> list[tuple[Result, Result]]:
    """(per-node, batch) for each workload (and variant) run both ways, both successful."""
    per_node: dict[tuple[str, str], Result] = {}
    pairs = []
    for r in results:
        if r.error:
            continue
        key = (r.workload, r.variant)
        if r.path == PER_NODE:
            per_node[key] = r
        elif r.path == BATCH and key in per_node:
            pairs.append((per_node.pop(key), r))
    return pairs


def render_path_comparison(per_node: Result, batch: Result) -> str:
    """The figures the batch path is about, per-node vs batch, with their ratios."""
    rows = [
        ("scheduling_algorithm avg ms", per_node.algorithm_ms, batch.algorithm_ms),
        ("created-to-bound pods/s", per_node.created_to_bound, batch.created_to_bound),
        ("bind-only baseline pods/s", per_node.bind_only_baseline, batch.bind_only_baseline),
        ("preemption API baseline preemptors/s", per_node.preemption_api_baseline,
         batch.preemption_api_baseline),
        ("scheduler / baseline", per_node.scheduler_to_limit, batch.scheduler_to_limit),
        ("cpu scheduler cores", per_node.cpu_cores.get("scheduler", math.nan),
         batch.cpu_cores.get("scheduler", math.nan)),
    ]  # fmt: skip
    table = format_table(
        ["", "per-node", "batch", "batch/per-node"],
        [
            [name, fmt(a, 2), fmt(b, 2), fmt(ratio(b, a), 3)]
            for name, a, b in rows
            if not (math.isnan(a) and math.isnan(b))
        ],
    )
    return f"{batch.workload}: per-node vs batch (a fresh cluster and the same seed each)\n{table}"


def comparison_pairs(results: Sequence[Result]) -> list[tuple[Result, Result]]:
    """(gate on, gate off) for each A/B workload of which both runs succeeded, in order."""
    on: dict[str, Result] = {}
    pairs = []
    for r in results:
        if not r.variant or r.error:
            continue
        if r.variant.endswith("=true"):
            on[r.workload] = r
        elif r.variant.endswith("=false") and r.workload in on:
            pairs.append((on.pop(r.workload), r))
    return pairs


def comparison_rows(on: Result, off: Result) -> list[tuple[str, float, float]]:
    """(figure, gate on, gate off) for the figures an A/B comparison is about: throughput,
    the algorithm's time, the nominated pods' final attempts (KEP-1923), pod PATCHes
    (KEP-5278) and preemption victims; figures absent from both runs are left out."""

    def nominated(r: Result, key: str) -> float:
        if r.nominated is None or not r.nominated.pods:
            return math.nan
        return float(getattr(r.nominated, key))

    rows = [
        ("created-to-bound pods/s", on.created_to_bound, off.created_to_bound),
        ("throughput avg pods/s", on.throughput.average, off.throughput.average),
        ("scheduling_algorithm avg ms", on.algorithm_ms, off.algorithm_ms),
        (
            "filter node evaluations / measured pod",
            ratio(on.filter_evaluations, float(on.measured_pods)),
            ratio(off.filter_evaluations, float(off.measured_pods)),
        ),
        ("nominated pods' final attempts", nominated(on, "pods"), nominated(off, "pods")),
        (
            "  filter node evaluations avg",
            nominated(on, "filter_nodes"),
            nominated(off, "filter_nodes"),
        ),
        (
            "  scheduling_algorithm avg ms",
            nominated(on, "algorithm_ms"),
            nominated(off, "algorithm_ms"),
        ),
        ("victims per preemptor", victims_per_preemptor(on), victims_per_preemptor(off)),
        ("pod PATCHes / measured pod", on.pod_patches_per_pod, off.pod_patches_per_pod),
        (
            "pod PATCHes",
            on.api_calls.get("patch pods", 0.0),
            off.api_calls.get("patch pods", 0.0),
        ),
    ]
    return [(name, a, b) for name, a, b in rows if not (math.isnan(a) and math.isnan(b))]


def render_comparison(on: Result, off: Result) -> str:
    gate = on.variant.rpartition("=")[0]
    others = {k: v for k, v in on.feature_gates.items() if k != gate}
    title = (
        f"{on.workload}: {gate} on vs off (emulated {on.emulated_version}"
        + (f", {_gates_text(others)}" if others else "")
        + ", same seed, a fresh cluster each)"
    )
    rows = [
        [name, fmt(a, 2), fmt(b, 2), fmt(a - b, 2), fmt(ratio(a, b), 3), fmt(ratio(b, a), 3)]
        for name, a, b in comparison_rows(on, off)
    ]
    table = format_table(["", "on", "off", "on - off", "on/off", "off/on"], rows)
    return f"{title}\n{table}"


# ---------------------------------------------------------------------- main


def default_py_spy() -> str:
    """py-spy on PATH, else the one installed in this Python's environment (a venv that is
    not activated), else the bare name (the error then says it cannot be run)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else "py-spy"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench scheduler_perf",
        description="scheduling throughput of kube-scheduler on bare nodes (scheduler_perf)",
    )
    parser.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME",
        help="TestCase/Workload, a TestCase, or 'all' (repeatable; default: the workloads "
        f"labelled {DEFAULT_LABEL!r}; with --quick or --label, those are run as well)",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"the workloads labelled {QUICK_LABEL!r} (tiny)"
    )
    parser.add_argument(
        "--label",
        help=f"the workloads with this label (default {DEFAULT_LABEL!r}; --quick is "
        f"--label {QUICK_LABEL})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=SEED,
        help=f"the scheduler's --seed (default {SEED}; the same for every run)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also record each run's timeline (every pod, node and preemption, through a "
        "watch of this process: its CPU and RSS figures include it) and write them to FILE, "
        "one self-contained HTML page with a section per run (workload, variant, path), in "
        "the order run: a lane per node, pods as bars from binding to deletion coloured by "
        "priority, nominatedNodeName spans, preemptions, pending pods and nodes over time, "
        "the measured phase and the baselines marked, each pod's story on hover or click",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        help="a workloads YAML file (repeatable; default: "
        + ", ".join(str(p.relative_to(WORKLOAD_FILES[0].parent.parent)) for p in WORKLOAD_FILES)
        + ")",
    )
    parser.add_argument("--scheduler-config", metavar="FILE", help="the scheduler's --config")
    parser.add_argument(
        "--emulated-version",
        metavar="X.Y",
        type=_emulated_version,
        help="the --emulated-version of the apiserver and the scheduler for every workload "
        "without its own emulatedVersion, and the version its feature gates are checked at "
        "(default: the components' default, "
        f"{DEFAULT_VERSION}); e.g. 1.33 for upstream's files that set SchedulerQueueingHints",
    )
    parser.add_argument("--creators", type=int, default=CREATORS, help="creates in flight")
    parser.add_argument(
        "--timeout", type=float, default=WAIT_TIMEOUT, help="seconds for one op's pods to bind"
    )
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="profile a process (--py-spy-process) with py-spy (raw, --gil) from the start "
        "of the measured phase into FILE, and print its top frames",
    )
    parser.add_argument(
        "--py-spy-bin",
        default=default_py_spy(),
        help="the py-spy binary (default: on PATH, else next to this Python)",
    )
    parser.add_argument("--py-spy-seconds", type=int, default=PY_SPY_SECONDS)
    parser.add_argument(
        "--py-spy-process",
        choices=PROFILED,
        default="scheduler",
        help="the process --py-spy profiles (default: the scheduler)",
    )
    parser.add_argument(
        "--keep-dir",
        metavar="DIR",
        help="run each cluster in DIR/<test case>-<workload>[-<variant>] and keep it (the "
        "processes' logs are in its logs/), instead of a temporary directory",
    )
    parser.add_argument(
        "--bind-only-baseline",
        choices=BIND_ONLY_MODES,
        default="auto",
        help="after the ops, on the same cluster, the apiserver's limit for the measured "
        "op's API calls with no scheduling: the bind-only baseline (the measured pods created "
        "again for no scheduler and bound round-robin by the bench) or, for a "
        "PreemptionBasic-shaped workload, the preemption API baseline (victims set up, then "
        "each preemptor's create, victim PATCHes and DELETEs, status PATCH, binding and "
        "events); auto: bind-only for the SchedulingBasic test cases, preemption API for "
        "PreemptionBasic (default); always: bind-only, and after it preemption API for a "
        "PreemptionBasic-shaped workload",
    )
    parser.add_argument(
        "--paths",
        choices=PATH_CHOICES,
        help="the scheduler's Filter/Score path: batch (node columns, its default), per-node "
        "(--no-batch), or both: each workload runs per-node then batch (a fresh cluster and "
        "the same seed each), side by side in the table",
    )
    parser.add_argument(
        "--record-decisions",
        choices=RECORD_CHOICES,
        default="off",
        help="the scheduler without (off, the default) or with (on) its decision record "
        "(--record-decisions), or both: each workload runs without then with it, side by side "
        "in the table with the record's bytes per attempt",
    )
    parser.add_argument(
        "--differential",
        action="store_true",
        help="no cluster: schedule every pod of each workload in this process on the per-node "
        "and the batch path (same seed), compare every outcome, and time the cycles; exit 1 "
        "on the first difference (bench.scheduler_perf_cycle); with --paths batch or "
        "per-node, only that path runs (timed, nothing compared)",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    add_clock_argument(parser)
    return parser


def differential(
    workloads: Sequence[Workload], seed: int, json_path: str | None, paths: str | None = None
) -> int:
    """--differential: bench.scheduler_perf_cycle over the chosen workloads (one path alone
    with `paths` batch or per-node)."""
    only = None if paths in (None, "both") else paths == BATCH
    results: list[DifferentialResult] = []
    for w in workloads:
        results.append(run_differential(w, seed, only=only))
    print(render_differential(results))
    if json_path:
        data = {"host": {"cpus": os.cpu_count()}, "differential": jsonable(results)}
        Path(json_path).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if any(r.mismatch for r in results) else 0


def refused_by_name(
    names: Sequence[str],
    loaded: WorkloadFile,
    paths: Sequence[Path],
    config: Sequence[str] | None,
    emulated_version: Version | None,
) -> str:
    """For a workload or test case named with --workload that none of the loaded workloads
    is but a skipped one is: why it does not run, and the emulated versions at which it does
    (each of kemu's versions tried, newest first); "" when every name runs or is unknown."""
    at = emulated_version or DEFAULT_VERSION
    for name in names:
        if name == "all" or any(name in (w.full_name, w.test_case) for w in loaded.workloads):
            continue
        why = [s for s in loaded.skipped if _selected(s, [name])]
        if not why:
            continue
        accepted = [
            v
            for v in (
                Version(1, minor) for minor in range(MAX_VERSION.minor, MIN_VERSION.minor - 1, -1)
            )
            if v != at and _runs_at(name, paths, config, v)
        ]
        where = (
            f"the emulated versions that run it: {_version_ranges(accepted)}"
            if accepted
            else f"it runs at no emulated version kemu has ({MIN_VERSION} to {MAX_VERSION})"
        )
        reasons = "; ".join(s.reason for s in why[:3])
        return f"{name} does not run at emulated version {at}: {reasons}; {where}"
    return ""


def _version_ranges(versions: Sequence[Version]) -> str:
    """ "1.21 to 1.33, 1.36" for versions given newest first."""
    ranges: list[list[Version]] = []
    for v in sorted(versions):
        if ranges and v.minor == ranges[-1][-1].minor + 1:
            ranges[-1].append(v)
        else:
            ranges.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]} to {r[-1]}" for r in ranges)


def _runs_at(name: str, paths: Sequence[Path], config: Sequence[str] | None, v: Version) -> bool:
    try:
        loaded = load_workload_file_set(paths, strict=not config, emulated_version=v)
    except WorkloadError:
        return False
    return any(name in (w.full_name, w.test_case) for w in loaded.workloads)


def _emulated_version(text: str) -> Version:
    try:
        return parse_emulated_version(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        paths = [Path(p) for p in args.config] if args.config else list(WORKLOAD_FILES)
        # kemu's own files must run whole; a file given with --config (upstream's) runs what
        # kemu can, and lists the rest as skipped with the reason.
        loaded = load_workload_file_set(
            paths, strict=not args.config, emulated_version=args.emulated_version
        )
        workloads = list(loaded.workloads)
        skipped = [s for s in loaded.skipped if _selected(s, args.workload)]
        refused = refused_by_name(args.workload, loaded, paths, args.config, args.emulated_version)
        if refused:
            print(f"bench scheduler_perf: {refused}", file=sys.stderr)
            return 2
        label = QUICK_LABEL if args.quick else (args.label or DEFAULT_LABEL)
        chosen = select_workloads(workloads, args.workload, label)
        if args.workload and (args.quick or args.label):  # both given: the named and labelled
            chosen += [w for w in select_workloads(workloads, [], label) if w not in chosen]
    except (WorkloadError, KeyError) as e:
        print(
            f"bench scheduler_perf: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr
        )
        return 2
    if args.list:
        for w in workloads:
            params = ", ".join(f"{k}={v}" for k, v in w.params.items())
            extra = []
            if w.emulated_version:
                extra.append(f"emulated {w.emulated_version}")
            if w.feature_gates:
                extra.append(_gates_text(w.feature_gates))
            if w.compare_gate:
                extra.append(f"{w.compare_gate} on vs off")
            if w.scheduler_config is not None:
                extra.append("own scheduler config")
            if w.threshold is not None:
                extra.append(f"threshold {w.threshold_selector.bound(w.threshold)}")
            tail = f"  ({'; '.join(extra)})" if extra else ""
            print(f"{w.full_name}  [{', '.join(w.labels)}]  {params}{tail}")
        print(render_skipped(loaded.skipped))
        return 0
    if not chosen:
        # Every workload the selection could have named may be skipped (a file of another
        # version, as gangscheduling/ at 1.37): the first reason says what to do.
        why = (
            f" ({len(skipped)} skipped; {skipped[0].name}: {skipped[0].reason})" if skipped else ""
        )
        print(f"bench scheduler_perf: no workload selected{why}", file=sys.stderr)
        return 2
    if args.differential:
        if args.html:
            print(
                "bench scheduler_perf: --html: not with --differential (no cluster runs)",
                file=sys.stderr,
            )
            return 2
        return differential(chosen, args.seed, args.json, args.paths)
    if args.html is not None:
        try:
            check_output_path(args.html)
        except OutputPathError as e:
            print(f"bench scheduler_perf: --html: {e}", file=sys.stderr)
            return 2
    if args.creators < 1:
        print("bench scheduler_perf: --creators must be at least 1", file=sys.stderr)
        return 2
    opts = Options(
        clock=ClockMode(args.clock),
        workloads=tuple(chosen),
        json_path=args.json,
        scheduler_config=args.scheduler_config,
        creators=args.creators,
        seed=args.seed,
        timeout=args.timeout,
        py_spy=args.py_spy,
        py_spy_bin=args.py_spy_bin,
        py_spy_seconds=args.py_spy_seconds,
        py_spy_process=args.py_spy_process,
        keep_dir=args.keep_dir,
        bind_only=args.bind_only_baseline,
        paths=PATH_CHOICES[args.paths] if args.paths else (),
        record=RECORD_CHOICES[args.record_decisions],
        html_path=args.html,
    )
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    results: list[Result] = []
    timelines: list[Timeline] | None = [] if opts.html_path else None
    status = 0
    try:
        for w in chosen:
            for variant in w.variants():
                for path, record in itertools.product(opts.paths or ("",), opts.record):
                    logger.info("workload %s %s %s", w.full_name, variant.name, path)
                    try:
                        results.append(run_workload(w, variant, opts, path, record, timelines))
                    except Exception as raised:  # one run's failure, else re-raised
                        failure = run_failure(raised)
                        if failure is None:
                            raise
                        error = f"{type(failure).__name__}: {failure}"
                        results.append(
                            Result(w.full_name, variant=variant.name, path=path, error=error)
                        )
                        status = 1
    except KeyboardInterrupt:
        print("bench scheduler_perf: interrupted; the cluster was stopped", file=sys.stderr)
        return 130
    print(render(results))
    if skipped:
        print(render_skipped(skipped))
    if opts.json_path:
        data = {
            "host": {"cpus": os.cpu_count()},
            "results": jsonable(results),
            "skipped": jsonable(skipped),
        }
        Path(opts.json_path).write_text(json.dumps(data, indent=2) + "\n")
    if opts.html_path and timelines is not None:
        try:
            write_page(opts.html_path, timelines, "bench scheduler_perf")
        except OSError as e:
            print(f"bench scheduler_perf: --html: {e}", file=sys.stderr)
            return 1
    return status
