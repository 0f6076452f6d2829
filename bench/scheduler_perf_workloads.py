"""The workload files of `python -m bench scheduler_perf`: upstream's scheduler_perf format
(test/integration/scheduler_perf/*/performance-config.yaml and its templates/), parsed into
workloads whose ops bench.scheduler_perf runs, and the API objects those ops create.

A file is a list of test cases, each a `workloadTemplate` (ops run in order) instantiated by
`workloads` that give the `$params`. `createPodSets` is unrolled when parsed, as upstream does,
so op indices (and the default namespace `namespace-<op index>`) count the unrolled ops.
Anything the runner cannot do is a WorkloadError naming the field.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, TypedDict, TypeVar

import yaml
from google.protobuf.message import Message

from bench import scheduler_perf_template as gotemplate
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    DRA_EXTENDED_RESOURCE,
    FeatureGateError,
    FeatureGates,
    gate_modelled,
    newest_version_accepting,
)
from kemu.component.version import (
    DEFAULT_VERSION,
    MIN_VERSION,
    Version,
    parse_emulated_version,
)
from kemu.machinery import convert, kinds, podgroups
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import Invalid
from kemu.machinery.storage import ANN_MIGRATED_PLUGINS, CLAIM_BOUND, VOLUME_BOUND
from kemu.scheduling.config import config_from_dict

_T = TypeVar("_T")

WORKLOADS_DIR: Final = Path(__file__).parent / "workloads"
# kemu's own workload files, read unless told otherwise: the basic, preemption and
# nominated-node-name figures, the affinity workloads, and the workloads of every op.
# upstream's files run from a checkout of kubernetes/kubernetes with --config.
WORKLOADS_FILE: Final = WORKLOADS_DIR / "performance-config.yaml"
WORKLOAD_FILES: Final = (
    WORKLOADS_FILE,
    WORKLOADS_DIR / "affinity.yaml",
    WORKLOADS_DIR / "ops.yaml",
)
TEMPLATES_DIR: Final = WORKLOADS_DIR / "templates"
# What an op without a template creates: a bare Ready node of cpu 4, memory 32Gi, pods 110,
# and a pause pod asking 100m / 500Mi with containerPort 80 (the shape of upstream's
# defaults), kept as data files there.
DEFAULT_NODE_TEMPLATE_PATH: Final = TEMPLATES_DIR / "node-basic.yaml"
DEFAULT_POD_TEMPLATE_PATH: Final = TEMPLATES_DIR / "pod-basic.yaml"


# ---------------------------------------------------------------------- workloads


class WorkloadError(ValueError):
    """A workload file that cannot be used; the message names the offending field."""


@dataclass(frozen=True)
class NodeLabels:
    """upstream's labelNodePrepareStrategy: node i of the op gets `key` = values[i % len]."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class TemplateText:
    """A template file with Go text/template actions (upstream renders pod and node templates
    once per object with `.Index`, `.Count` and the op's templateParams): rendered per object."""

    text: str
    params: Mapping[str, object]
    where: str

    def render(self, index: int, count: int) -> dict[str, object]:
        env = {**self.params, "Index": index, "Count": count}
        return _yaml_mapping(render_template(self.text, env, self.where), self.where)

    def objects(self, count: int, kind: kinds.Kind) -> list[Message]:
        """The objects of indices 0..count-1, each rendered and read as `kind`."""
        return [object_message(kind, self.render(i, count), self.where) for i in range(count)]


@dataclass(frozen=True)
class NodeAllocatable:
    """upstream's nodeAllocatableStrategy (test/utils/runners.go NodeAllocatableStrategy):
    `allocatable` set in each node's status.allocatable, and a CSINode named after the node
    whose drivers are `csi_drivers` (name: allocatable count, None for no count) with the
    migrated-plugins annotation listing `migrated_plugins`."""

    allocatable: Mapping[str, str]
    csi_drivers: Mapping[str, int | None]
    migrated_plugins: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateNodes:
    count: int
    template: types_pb2.Node
    labels: NodeLabels | None = None
    text: TemplateText | None = None  # when the template file has actions: rendered per node
    allocatable: NodeAllocatable | None = None


@dataclass(frozen=True)
class PodVolumes:
    """upstream's persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath of a
    createPods op (scheduler_perf.go getPodStrategy, test/utils CreatePodWithPersistentVolume
    with bindVolume): pod i gets claim pvc-<i> and volume <namespace>-vol-<i>, made from these
    templates, created bound to each other before the pod (see volume_objects)."""

    volume: types_pb2.PersistentVolume
    claim: types_pb2.PersistentVolumeClaim


@dataclass(frozen=True)
class CreateNamespaces:
    """Namespaces `<prefix>-0` .. `<prefix>-<count-1>`, each a copy of the template (its
    labels are what namespaceSelectors match)."""

    prefix: str
    count: int
    template: types_pb2.Namespace

    def names(self) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class CreatePods:
    count: int
    template: types_pb2.Pod
    namespace: str
    collect_metrics: bool = False
    skip_wait: bool = False
    # The pods' priority, through the PriorityClass priority_class_name(priority) that the
    # run creates (the Priority admission plugin rejects a bare spec.priority).
    priority: int | None = None
    text: TemplateText | None = None  # when the template file has actions: rendered per pod
    volumes: PodVolumes | None = None
    # upstream's steadyState: `count` pods kept in flight for this many seconds (each pod
    # deleted once bound and another created), the throughput measured meanwhile; None: the
    # pods are created at once and waited for.
    steady_state: float | None = None


SCHEDULED: Final = "Scheduled"
ATTEMPTED: Final = "Attempted"


@dataclass(frozen=True)
class Barrier:
    """upstream's barrier: waits until, in each of `namespaces` (when empty, every namespace
    it knows: see bench.scheduler_perf.BarrierCounts), as many pods matching `label_selector`
    as the createPods ops that did not wait made there are bound (stage Scheduled) or were at
    least once tried by the scheduler, bound or with a PodScheduled condition (Attempted)."""

    namespaces: tuple[str, ...] = ()  # empty: every namespace
    label_selector: Mapping[str, str] = field(default_factory=dict)
    stage: str = SCHEDULED


CREATE: Final = "create"
RECREATE: Final = "recreate"


@dataclass(frozen=True)
class Churn:
    """upstream's churn op, in the background until the workload ends: every `interval`
    seconds one object of each template is created (mode create; at most `number` rounds,
    unlimited when 0), or (mode recreate) round k creates slot k % number of each template
    or, if that slot holds an object, deletes it."""

    mode: str
    number: int
    interval: float
    namespace: str
    templates: tuple[Message, ...]


@dataclass(frozen=True)
class StartCollectingMetrics:
    """Measures the pods bound in `namespaces` (matching `label_selector`) from here to the
    stopCollectingMetrics op."""

    name: str
    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StopCollectingMetrics:
    pass


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class DeletePods:
    """Deletes the pods of `namespace` (those matching `label_selector`, all when empty) that
    exist when the op runs: `per_second` of them a second, or all at once when 0; in the
    background when `skip_wait`."""

    namespace: str
    label_selector: Mapping[str, str] = field(default_factory=dict)
    skip_wait: bool = False
    per_second: int = 0


@dataclass(frozen=True)
class CreateAny:
    """upstream's createAny (operations.go): `count` objects (default 1), object i the
    template rendered with templateParams, Index i and Count, created in `namespace` ("" for a
    cluster-scoped kind) through kemu's client, a failed create retried every second for up to
    20 s. Does not wait for anything. `kind` is the kind of the template (rendered for index 0
    when parsed): a kind kemu serves."""

    count: int
    namespace: str
    text: TemplateText
    kind: kinds.Kind


@dataclass(frozen=True)
class WaitForPodGroups:
    """upstream's waitForPodGroups: waits until `count` PodGroups of `namespace` are visible
    to the scheduler (upstream: its informer cache; kemu: see bench.scheduler_perf
    wait_for_pod_groups)."""

    namespace: str
    count: int


@dataclass(frozen=True)
class CreatePodGroups:
    """upstream's createPodGroups: the PodGroups of `create`, then a wait until the scheduler
    has seen them (as createAny then waitForPodGroups)."""

    create: CreateAny

    @property
    def wait(self) -> WaitForPodGroups:
        return WaitForPodGroups(self.create.namespace, self.create.count)


@dataclass(frozen=True)
class CreateCompositePodGroups:
    """upstream's createCompositePodGroups (KEP-6012, the cpg/ test cases): the
    CompositePodGroups of `create` (countParam, namespace, templatePath, templateParams, as
    createPodGroups), then a wait until they are visible, as createPodGroups waits for its
    PodGroups."""

    create: CreateAny


@dataclass(frozen=True)
class CreateResourceDriver:
    """upstream's createResourceDriver (test/integration/scheduler_perf/dra.go, until the
    1.37 files create their slices with createAny): for every node whose name matches the
    glob `nodes` (Go's filepath.Match), one ResourceSlice named after the node, of driver
    `driver_name`, pool = the node (resourceSliceCount 1), with `max_claims_per_node` devices
    instance-<i> (see bench.scheduler_perf_dra.driver_slice)."""

    driver_name: str
    nodes: str
    max_claims_per_node: int


@dataclass(frozen=True)
class AllocResourceClaims:
    """upstream's allocResourceClaims (dra.go): every unallocated ResourceClaim of
    `namespace` (all namespaces when empty) allocated directly with the structured allocator
    on a node picked at random among those that fit, the allocation written to its status
    (no reservedFor), one claim after the other."""

    namespace: str = ""


RESIZE: Final = "resize"
STATUS: Final = "status"
UPDATE_SUBRESOURCES: Final = (RESIZE, STATUS)


@dataclass(frozen=True)
class UpdateAny:
    """upstream's updateAny (update.go): objects 0..count-1 of the template (rendered with
    Index and Count; upstream gives it no templateParams) written over the stored ones, through
    `subresources` (resize: the pod's resize subresource, status) or the object itself when
    none, `per_second` a second (all at once when 0)."""

    count: int
    namespace: str
    text: TemplateText
    kind: kinds.Kind
    per_second: int = 0
    subresources: tuple[str, ...] = ()


Op = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | Barrier
    | Sleep
    | DeletePods
    | Churn
    | StartCollectingMetrics
    | StopCollectingMetrics
    | CreateAny
    | WaitForPodGroups
    | CreatePodGroups
    | CreateCompositePodGroups
    | UpdateAny
    | CreateResourceDriver
    | AllocResourceClaims
)


THROUGHPUT: Final = "SchedulingThroughput"
DATA_BUCKETS: Final = ("Average", "Perc50", "Perc90", "Perc95", "Perc99")


@dataclass(frozen=True)
class ThresholdSelector:
    """upstream's thresholdMetricSelector (scheduler_perf.go): the data item the workload's
    threshold applies to: `name` (SchedulingThroughput, pods/s, or a histogram of the
    scheduler's, whose items are in milliseconds), the series' `labels`, the `data_bucket`
    (Average, Perc50, ...) and whether the value must stay under the threshold
    (`expect_lower`) or over it, strictly (upstream's valueWithinThreshold)."""

    name: str = THROUGHPUT
    labels: Mapping[str, str] = field(default_factory=dict)
    data_bucket: str = "Average"
    expect_lower: bool = False

    def met(self, value: float, threshold: float) -> bool:
        """upstream's valueWithinThreshold: strictly under (expectLower) or over."""
        return value < threshold if self.expect_lower else value > threshold

    @property
    def unit(self) -> str:
        return "pods/s" if self.name == THROUGHPUT else "ms"

    def bound(self, threshold: float) -> str:
        """The threshold and what it applies to: `100 pods/s` (the throughput average, over
        it), or `< 8 ms scheduler_podgroup_scheduling_attempt_duration_seconds{result=scheduled}
        Average` (expectLower: under it; upstream's comparisons are strict)."""
        if self.name == THROUGHPUT:
            return f"{threshold:g} pods/s"
        labels = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        comparison = "<" if self.expect_lower else ">"
        return f"{comparison} {threshold:g} ms {self.name}{{{labels}}} {self.data_bucket}"


@dataclass(frozen=True)
class MetricSelection:
    """One metric of upstream's metricsCollectorConfig: `name` and, per label, the values
    whose series are reported (none: the metric's series summed)."""

    name: str
    labels: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def combinations(self) -> list[dict[str, str]]:
        """The label sets reported, as upstream's uniqueLVCombos (scheduler_perf's util.go):
        every combination of one value of each label, the first label's values outermost
        (two labels of 5 and 3 values: 15 sets, each naming both labels); one empty set when
        no label is given."""
        combos: list[dict[str, str]] = [{}]
        for label, values in reversed(self.labels):
            combos = [{label: v, **rest} for v in values for rest in combos]
        return combos


@dataclass(frozen=True)
class Variant:
    """One run of a workload: the feature gates of its control plane. `name` is empty for a
    workload that is not an A/B comparison, else `Gate=true` / `Gate=false`."""

    name: str
    feature_gates: Mapping[str, bool]


class ClusterSettings(TypedDict):
    """The Workload fields of its control plane, read from the test case and the workload."""

    emulated_version: str | None
    feature_gates: Mapping[str, bool]
    scheduler_config: Mapping[str, Any] | None
    compare_gate: str | None
    not_modelled_gates: tuple[str, ...]


@dataclass(frozen=True)
class Workload:
    test_case: str
    name: str
    labels: tuple[str, ...]
    params: Mapping[str, object]
    ops: tuple[Op, ...]
    # The control plane (apiserver and scheduler) of every run of the workload.
    emulated_version: str | None = None  # None: the components' default
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    scheduler_config: Mapping[str, Any] | None = None  # a KubeSchedulerConfiguration (YAML)
    # A/B: the workload runs twice, this gate on then off, each on a fresh cluster.
    compare_gate: str | None = None
    # upstream's threshold, on the data item its thresholdMetricSelector names (by default
    # the least SchedulingThroughput average, pods/s).
    threshold: float | None = None
    threshold_selector: ThresholdSelector = field(default_factory=ThresholdSelector)
    # upstream's metricsCollectorConfig: the scheduler's histograms reported per run.
    metrics: tuple[MetricSelection, ...] = ()
    # Gates the workload sets that kemu knows (upstream's lifecycle) but does not model.
    not_modelled_gates: tuple[str, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.test_case}/{self.name}"

    def variants(self) -> list[Variant]:
        gate = self.compare_gate
        if gate is None:
            return [Variant("", dict(self.feature_gates))]
        return [
            Variant(f"{gate}={str(on).lower()}", {**self.feature_gates, gate: on})
            for on in (True, False)
        ]

    def priorities(self) -> list[int]:
        """The pod priorities the run needs a PriorityClass for, ascending."""
        found = {
            op.priority for op in self.ops if isinstance(op, CreatePods) and op.priority is not None
        }
        for op in self.ops:
            if isinstance(op, Churn):
                for t in op.templates:
                    if isinstance(t, types_pb2.Pod) and t.spec.HasField("priority"):
                        found.add(t.spec.priority)
        return sorted(found)

    @property
    def measured(self) -> CreatePods | None:
        return next(
            (op for op in self.ops if isinstance(op, CreatePods) and op.collect_metrics), None
        )

    def count(
        self, kind: type[CreateNodes] | type[CreatePods], *, measured: bool | None = None
    ) -> int:
        """Objects created by ops of `kind`; for pods, `measured` selects the measured op or the others."""
        total = 0
        for op in self.ops:
            if not isinstance(op, kind):
                continue
            if (
                measured is not None
                and isinstance(op, CreatePods)
                and op.collect_metrics != measured
            ):
                continue
            total += op.count
        return total


_CREATE_PODS_FIELDS: Final = frozenset(
    {
        "opcode",
        "count",
        "countParam",
        "podTemplate",
        "podTemplatePath",
        "namespace",
        "collectMetrics",
        "skipWaitToCompletion",
        "priority",
        "templateParams",
        "persistentVolumeTemplatePath",
        "persistentVolumeClaimTemplatePath",
        "countMultiplierParam",
        "steadyState",
        "steadyStateParam",
        "duration",
        "durationParam",
    }
)
_CREATE_ANY_FIELDS: Final = frozenset(
    {"opcode", "namespace", "templatePath", "count", "countParam", "templateParams"}
)
_OP_FIELDS: Final[dict[str, frozenset[str]]] = {
    "createNodes": frozenset(
        {"opcode", "count", "countParam", "nodeTemplate", "nodeTemplatePath",
         "labelNodePrepareStrategy", "nodeAllocatableStrategy", "templateParams"}
    ),
    "createNamespaces": frozenset(
        {"opcode", "prefix", "count", "countParam", "namespaceTemplate", "namespaceTemplatePath"}
    ),
    "createPods": _CREATE_PODS_FIELDS,
    "createPodSets": frozenset({"opcode", "count", "countParam", "namespacePrefix", "createPodsOp"}),
    "barrier": frozenset({"opcode", "namespaces", "labelSelector", "stageRequirement"}),
    "sleep": frozenset({"opcode", "duration"}),
    "deletePods": frozenset(
        {"opcode", "namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"}
    ),
    "churn": frozenset(
        {"opcode", "mode", "number", "intervalMilliseconds", "namespace", "templatePaths"}
    ),
    "startCollectingMetrics": frozenset({"opcode", "name", "namespaces", "labelSelector"}),
    "stopCollectingMetrics": frozenset({"opcode"}),
    "createAny": _CREATE_ANY_FIELDS,
    "createPodGroups": _CREATE_ANY_FIELDS,
    "createCompositePodGroups": _CREATE_ANY_FIELDS,
    "waitForPodGroups": frozenset({"opcode", "namespace", "count", "countParam"}),
    "updateAny": frozenset(
        {"opcode", "namespace", "templatePath", "count", "countParam", "updatePerSecond",
         "subresources"}
    ),
    "createResourceDriver": frozenset(
        {"opcode", "driverName", "nodes", "maxClaimsPerNode", "maxClaimsPerNodeParam"}
    ),
    "allocResourceClaims": frozenset({"opcode", "namespace"}),
}  # fmt: skip
# upstream's opcodes and fields kemu does not run: a workload using one is skipped with the
# reason, not refused.
_NOT_MODELLED_OPCODES: Final[Mapping[str, str]] = {
    "createResourceClaims": "not run by kemu (no upstream file of 1.33+ uses it)",
    "updateDeviceConditions": "the binding-condition workloads' op is not modelled",
    "checkPodScheduled": "the binding-condition workloads' op is not modelled",
}
_NOT_MODELLED_FIELDS: Final[Mapping[str, str]] = {
    "signatureBatchSize": "opportunistic batching signatures are not modelled",
    "signatureBatchSizeParam": "opportunistic batching signatures are not modelled",
    "uniqueNodeLabelStrategy": "uniqueNodeLabelStrategy is not modelled",
    "collectors": "collectors other than the throughput are not modelled",
}
_NODE_LABEL_FIELDS: Final = frozenset({"labelKey", "labelValues"})
_NODE_ALLOCATABLE_FIELDS: Final = frozenset(
    {"nodeAllocatable", "csiNodeAllocatable", "migratedPlugins"}
)
# upstream's in-tree PersistentVolume sources (core/v1 PersistentVolumeSource) kemu's volume
# does not have: it has awsElasticBlockStore (counted by NodeVolumeLimits as ebs.csi.aws.com's
# where the node's CSINode lists kubernetes.io/aws-ebs as migrated), hostPath, local and csi;
# a template with another in-tree source does not run.
_IN_TREE_PV_SOURCES: Final = frozenset(
    {
        "azureDisk", "azureFile", "cephfs", "cinder", "fc",
        "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "iscsi", "nfs",
        "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
        "vsphereVolume",
    }
)  # fmt: skip
# Fields that set up the control plane, given by a test case and/or a workload (the
# workload's win; featureGates are merged).
_CLUSTER_FIELDS: Final = frozenset(
    {
        "emulatedVersion",
        "featureGates",
        "schedulerConfig",
        "schedulerConfigPath",
        "compareFeatureGate",
    }
)
_TEST_CASE_FIELDS: Final = (
    frozenset(
        {
            "name",
            "labels",
            "defaultPodTemplatePath",
            "workloadTemplate",
            "workloads",
            "thresholdMetricSelector",
            "defaultThresholdMetricSelector",
            "metricsCollectorConfig",
        }
    )
    | _CLUSTER_FIELDS
)
_WORKLOAD_FIELDS: Final = (
    frozenset({"name", "labels", "params", "threshold", "thresholdMetricSelector"})
    | _CLUSTER_FIELDS
)
_SELECTOR_FIELDS: Final = frozenset({"name", "labels", "dataBucket", "expectLower"})
# PriorityClass values users may create (upstream's HighestUserDefinablePriority and int32).
MIN_PRIORITY: Final = -(2**31)
MAX_PRIORITY: Final = 1_000_000_000


class NotModelled(WorkloadError):
    """A workload that uses something kemu does not model; the message says what."""


@dataclass(frozen=True)
class Skipped:
    """A test case (`name` without a slash) or one workload that does not run: `refused` for an
    error in the file (the reason names the field), else for something kemu does not model."""

    name: str
    reason: str
    refused: bool = False


@dataclass(frozen=True)
class WorkloadFile:
    workloads: tuple[Workload, ...]
    skipped: tuple[Skipped, ...] = ()


def load_workloads(path: Path, *, emulated_version: Version | None = None) -> list[Workload]:
    """Every workload of a performance-config YAML file (template paths are relative to it);
    anything the runner cannot do is an error (kemu's own files). `emulated_version`: the
    version of the workloads that do not give their own `emulatedVersion` (default: the
    components' default)."""
    return _load(
        path,
        lambda data: parse_workloads(data, base_dir=path.parent, emulated_version=emulated_version),
    )


def load_workload_file(path: Path, *, emulated_version: Version | None = None) -> WorkloadFile:
    """The workloads of a performance-config YAML file that kemu can run, and the test cases
    and workloads it skips with their reasons (upstream's files): one bad test case does not
    refuse the others."""
    return _load(
        path,
        lambda data: parse_file(data, base_dir=path.parent, emulated_version=emulated_version),
    )


def _load(path: Path, parse: Callable[[object], _T]) -> _T:
    """Reads the YAML file and parses it; every error is prefixed with the file's path."""
    try:
        data = copy.deepcopy(_parsed_yaml(path.read_text()))
    except (OSError, yaml.YAMLError) as e:
        raise WorkloadError(f"{path}: {e}") from e
    try:
        return parse(data)
    except WorkloadError as e:
        raise WorkloadError(f"{path}: {e}") from e


def load_workload_files(
    paths: Sequence[Path], *, strict: bool = True, emulated_version: Version | None = None
) -> list[Workload]:
    """The workloads of several files, in order; a workload name must be unique over all."""
    return list(
        load_workload_file_set(paths, strict=strict, emulated_version=emulated_version).workloads
    )


def load_workload_file_set(
    paths: Sequence[Path], *, strict: bool = True, emulated_version: Version | None = None
) -> WorkloadFile:
    """The workloads (and, unless `strict`, the skipped ones) of several files, in order; a
    workload name must be unique over all."""
    out: list[Workload] = []
    skipped: list[Skipped] = []
    where: dict[str, Path] = {}
    for path in paths:
        if strict:
            loaded = WorkloadFile(tuple(load_workloads(path, emulated_version=emulated_version)))
        else:
            loaded = load_workload_file(path, emulated_version=emulated_version)
        skipped.extend(loaded.skipped)
        for w in loaded.workloads:
            if w.full_name in where:
                raise WorkloadError(
                    f"{path}: workload {w.full_name} is also in {where[w.full_name]}"
                )
            where[w.full_name] = path
            out.append(w)
    return WorkloadFile(tuple(out), tuple(skipped))


def parse_workloads(
    data: object, *, base_dir: Path | None = None, emulated_version: Version | None = None
) -> list[Workload]:
    """The workloads of the parsed YAML `data`: a list of test cases, each with a
    `workloadTemplate` (ops) and `workloads` (name, labels, params), as upstream's
    performance-config.yaml. `$name` in `countParam` is replaced by the workload's param.
    Strict: the first test case or workload that cannot run is a WorkloadError."""
    parsed = parse_file(data, base_dir=base_dir, strict=True, emulated_version=emulated_version)
    return list(parsed.workloads)


def parse_file(
    data: object,
    *,
    base_dir: Path | None = None,
    strict: bool = False,
    emulated_version: Version | None = None,
) -> WorkloadFile:
    """As parse_workloads, but a test case or workload that cannot run is listed in `skipped`
    with its reason while the others are parsed (unless `strict`). `emulated_version` (the
    bench's `--emulated-version`) is the version of every workload without its own
    `emulatedVersion`: its gates are checked there and its components run at it."""
    if not isinstance(data, list):
        raise WorkloadError(f"<root>: expected a list of test cases, got {_type_name(data)}")
    out: list[Workload] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for i, case in enumerate(data):
        where = f"[{i}]"
        name = case.get("name") if isinstance(case, dict) else None
        label = name if isinstance(name, str) and name else where
        try:
            workloads, case_skipped = _parse_test_case(
                case, where, base_dir, strict, emulated_version
            )
        except WorkloadError as e:
            if strict:
                raise
            skipped.append(Skipped(label, str(e), refused=not isinstance(e, NotModelled)))
            continue
        for workload in workloads:
            if workload.full_name in seen:
                error = WorkloadError(
                    f"[{i}] {workload.test_case}.workloads: duplicate workload {workload.full_name}"
                )
                if strict:
                    raise error
                skipped.append(Skipped(workload.full_name, str(error), refused=True))
                continue
            seen.add(workload.full_name)
            out.append(workload)
        skipped.extend(case_skipped)
    return WorkloadFile(tuple(out), tuple(skipped))


def _parse_test_case(
    case: object, where: str, base_dir: Path | None, strict: bool, emulated_version: Version | None
) -> tuple[list[Workload], list[Skipped]]:
    """One test case's workloads, and those skipped (all of them, if for the same reason, as
    the test case itself)."""
    case_map = _mapping(case, where, _TEST_CASE_FIELDS)
    name = _string(case_map, "name", where)
    where = f"[{where[1:-1]}] {name}"
    _threshold_selector(case_map, where, None)  # checked once for every workload
    case_labels = _labels(case_map, where)
    default_pod_path = _path(case_map, "defaultPodTemplatePath", where, base_dir)
    template = case_map.get("workloadTemplate")
    if not isinstance(template, list) or not template:
        raise WorkloadError(f"{where}.workloadTemplate: expected a non-empty list of ops")
    workloads = case_map.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        raise WorkloadError(f"{where}.workloads: expected a non-empty list of workloads")
    _metrics_config(case_map, where)
    out: list[Workload] = []
    skipped: list[Skipped] = []
    names: set[str] = set()
    for j, w in enumerate(workloads):
        w_where = f"{where}.workloads[{j}]"
        w_name = w.get("name") if isinstance(w, dict) else None
        full = f"{name}/{w_name}" if isinstance(w_name, str) and w_name else w_where
        try:
            if full in names:
                raise WorkloadError(f"{w_where}.name: duplicate workload {full}")
            names.add(full)
            out.append(
                _parse_workload(
                    case_map,
                    w,
                    name,
                    where,
                    w_where,
                    case_labels,
                    template,
                    default_pod_path,
                    base_dir,
                    emulated_version,
                )
            )
        except WorkloadError as e:
            if strict:
                raise
            skipped.append(Skipped(full, str(e), refused=not isinstance(e, NotModelled)))
    if not out and skipped and all(s.refused is False for s in skipped):
        reasons = {_strip_where(s.reason) for s in skipped}
        if len(reasons) == 1:
            return [], [Skipped(name, skipped[0].reason)]
    return out, skipped


def _strip_where(reason: str) -> str:
    return reason.split(": ", 1)[-1]


def _parse_workload(
    case_map: Mapping[str, object],
    w: object,
    name: str,
    where: str,
    w_where: str,
    case_labels: tuple[str, ...],
    template: Sequence[object],
    default_pod_path: Path | None,
    base_dir: Path | None,
    emulated_version: Version | None = None,
) -> Workload:
    w_map = _mapping(w, w_where, _WORKLOAD_FIELDS)
    w_name = _string(w_map, "name", w_where)
    params = _params(w_map.get("params", {}), f"{w_where}.params")
    threshold: float | None = None
    if "threshold" in w_map:
        threshold = workload_threshold(w_map["threshold"], f"{w_where}.threshold", base_dir)
    selector = threshold_selector(case_map, w_map, where, w_where)
    # The ops first: a workload kemu cannot run at any version (an op not modelled) is
    # skipped for that, not refused for its gates.
    ops = _parse_ops(template, where, params, w_name, default_pod_path, base_dir)
    cluster = _cluster_settings(case_map, w_map, where, w_where, base_dir, emulated_version)
    return Workload(
        test_case=name,
        name=w_name,
        labels=tuple(dict.fromkeys([*case_labels, *_labels(w_map, w_where)])),
        params=params,
        ops=tuple(ops),
        threshold=threshold,
        threshold_selector=selector,
        metrics=_metrics_config(case_map, where),
        **cluster,
    )


def threshold_topic(base_dir: Path | None) -> str:
    """The topic a file's per-topic thresholds are read for: its directory's name (upstream's
    BenchmarkPerfScheduling names it; dra/'s is "dra" for the default allocator)."""
    return base_dir.name if base_dir is not None else ""


def workload_threshold(value: object, where: str, base_dir: Path | None) -> float:
    """A workload's threshold: a number, or (upstream's newer files, e.g. dra/'s
    `threshold: {dra: 56}`) one per benchmark topic, of which kemu reads the file's
    (threshold_topic)."""
    if isinstance(value, dict):
        topic = threshold_topic(base_dir)
        if topic not in value:
            keys = ", ".join(sorted(map(str, value))) or "none"
            raise WorkloadError(
                f"{where}: no threshold for topic {topic!r} (the file's directory); has {keys}"
            )
        return workload_threshold(value[topic], f"{where}.{topic}", base_dir)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise WorkloadError(f"{where}: expected a non-negative number, got {value!r}")
    return float(value)


def threshold_selector(
    case: Mapping[str, object],
    workload: Mapping[str, object],
    case_where: str = "<test case>",
    where: str = "<workload>",
) -> ThresholdSelector:
    """The thresholdMetricSelector a workload's threshold applies to: the workload's, else its
    test case's, else upstream's default (SchedulingThroughput Average)."""
    selector = _threshold_selector(workload, where, None) or _threshold_selector(
        case, case_where, ThresholdSelector()
    )
    assert selector is not None
    return selector


def _threshold_selector(
    raw: Mapping[str, object], where: str, default: ThresholdSelector | None
) -> ThresholdSelector | None:
    """upstream's thresholdMetricSelector of a workload, or of a test case (named
    defaultThresholdMetricSelector in upstream's newer scheduler_perf.go, thresholdMetricSelector
    in older ones); `default` when it has none: name (default SchedulingThroughput), labels,
    dataBucket (default Average, as upstream's older files without one), expectLower."""
    keys = [k for k in ("thresholdMetricSelector", "defaultThresholdMetricSelector") if k in raw]
    if not keys:
        return default
    if len(keys) > 1:
        raise WorkloadError(f"{where}.{keys[1]}: give {keys[0]} or {keys[1]}, not both")
    s_where = f"{where}.{keys[0]}"
    value = _mapping(raw[keys[0]], s_where, _SELECTOR_FIELDS)
    name = value.get("name", THROUGHPUT)
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{s_where}.name: expected a metric name")
    bucket = value.get("dataBucket", "Average")
    if bucket not in DATA_BUCKETS:
        raise WorkloadError(
            f"{s_where}.dataBucket: expected one of {', '.join(DATA_BUCKETS)}, got {bucket!r}"
        )
    if name == THROUGHPUT and bucket != "Average":
        raise NotModelled(
            f"{s_where}.dataBucket: kemu reports the SchedulingThroughput threshold against its "
            "Average only"
        )
    return ThresholdSelector(
        name,
        _selector(value, "labels", s_where),
        str(bucket),
        _bool(value, "expectLower", s_where),
    )


def _metrics_config(case: Mapping[str, object], where: str) -> tuple[MetricSelection, ...]:
    """upstream's metricsCollectorConfig {metrics: {name: [{label, values}] | null}}: the
    scheduler's histograms each run reports (their averages over the measured phase, per
    label value given)."""
    if "metricsCollectorConfig" not in case:
        return ()
    c_where = f"{where}.metricsCollectorConfig"
    config = _mapping(case["metricsCollectorConfig"], c_where, frozenset({"metrics"}))
    metrics = config.get("metrics", {})
    if not isinstance(metrics, dict):
        raise WorkloadError(f"{c_where}.metrics: expected a mapping of metric names")
    out: list[MetricSelection] = []
    for name, labels in metrics.items():
        m_where = f"{c_where}.metrics.{name}"
        if labels is None:
            out.append(MetricSelection(str(name)))
            continue
        if not isinstance(labels, list):
            raise WorkloadError(f"{m_where}: expected a list of {{label, values}}, or null")
        pairs: list[tuple[str, tuple[str, ...]]] = []
        for k, entry in enumerate(labels):
            e_where = f"{m_where}[{k}]"
            e = _mapping(entry, e_where, frozenset({"label", "values"}))
            pairs.append((_string(e, "label", e_where), tuple(_strings(e, "values", e_where))))
        out.append(MetricSelection(str(name), tuple(pairs)))
    return tuple(out)


def select_workloads(
    workloads: Sequence[Workload], names: Sequence[str], label: str
) -> list[Workload]:
    """The workloads named (`TestCase/Workload`, or `TestCase` for all of its workloads, or
    `all`), or when no name is given those carrying `label`. KeyError names an unknown one."""
    if not names:
        return [w for w in workloads if label in w.labels]
    chosen: list[Workload] = []
    for name in names:
        matched = [
            w for w in workloads if name in ("all", w.full_name, w.test_case) and w not in chosen
        ]
        if not matched and not any(name in (w.full_name, w.test_case) for w in workloads):
            known = ", ".join(w.full_name for w in workloads)
            raise KeyError(f"no workload {name!r} (known: {known})")
        chosen.extend(matched)
    return chosen


def _parse_ops(
    template: Sequence[object],
    where: str,
    params: Mapping[str, object],
    workload: str,
    default_pod: Path | None,
    base_dir: Path | None,
) -> list[Op]:
    """The ops of one workload, createPodSets unrolled; checks what needs the ops together:
    one measured op, barriers on namespaces they know (as upstream's run does), collection
    started before it stops."""
    ops: list[Op] = []
    # The namespaces a barrier knows (upstream's numPodsScheduledPerNamespace): those of
    # createNamespaces ops and of createPods ops that do not wait for their pods, until a
    # barrier of stage Scheduled has waited on them.
    known: set[str] = set()
    measured: str | None = None
    collecting: str | None = None
    for k, raw in enumerate(template):
        op_where = f"{where}.workloadTemplate[{k}]"
        for op in _parse_op(raw, op_where, len(ops), params, workload, default_pod, base_dir):
            if isinstance(op, CreateNamespaces):
                known.update(op.names())
            elif isinstance(op, CreatePods):
                if op.skip_wait:
                    known.add(op.namespace)
                if op.collect_metrics:
                    if measured is not None or collecting is not None:
                        raise WorkloadError(
                            f"{op_where}.collectMetrics: only one op per workload can collect "
                            f"metrics ({measured or collecting} does)"
                        )
                    measured = op_where
            elif isinstance(op, Barrier):
                for ns in op.namespaces:
                    if ns not in known:
                        raise WorkloadError(
                            f"{op_where}.namespaces: no op before the barrier creates {ns!r} "
                            "(a barrier knows the namespaces of createNamespaces ops and of "
                            "createPods ops with skipWaitToCompletion, until a barrier of "
                            "stage Scheduled has waited on them)"
                        )
                if op.stage == SCHEDULED:
                    known.difference_update(op.namespaces or set(known))
            elif isinstance(op, StartCollectingMetrics):
                if collecting is not None or measured is not None:
                    raise WorkloadError(
                        f"{op_where}.opcode: metrics are already collected by "
                        f"{collecting or measured}"
                    )
                collecting = op_where
            elif isinstance(op, StopCollectingMetrics):
                if collecting is None:
                    raise WorkloadError(
                        f"{op_where}.opcode: no startCollectingMetrics op before it"
                    )
                measured, collecting = collecting, None
            ops.append(op)
    if collecting is not None:
        raise WorkloadError(f"{collecting}.opcode: no stopCollectingMetrics op after it")
    return ops


def _parse_op(
    raw: object,
    where: str,
    index: int,
    params: Mapping[str, object],
    workload: str,
    default_pod: Path | None,
    base_dir: Path | None,
) -> list[Op]:
    """The op(s) of one entry of a workloadTemplate: one, or for createPodSets one createPods
    per namespace. `index` is the op's index among the unrolled ops."""
    if not isinstance(raw, dict):
        raise WorkloadError(f"{where}: expected a mapping, got {_type_name(raw)}")
    opcode = raw.get("opcode")
    if isinstance(opcode, str) and opcode in _NOT_MODELLED_OPCODES:
        raise NotModelled(f"{where}.opcode: {opcode}: {_NOT_MODELLED_OPCODES[opcode]}")
    if opcode not in _OP_FIELDS:
        raise WorkloadError(
            f"{where}.opcode: expected one of {', '.join(sorted(_OP_FIELDS))}, got {opcode!r}"
        )
    _op_mapping(raw, where, _OP_FIELDS[opcode])
    if opcode == "barrier":
        return [_barrier(raw, where)]
    if opcode == "sleep":
        return [_sleep(raw, where)]
    if opcode == "deletePods":
        return [_delete_pods(raw, where)]
    if opcode == "churn":
        return [_churn(raw, where, index, base_dir)]
    if opcode == "startCollectingMetrics":
        namespaces = _strings(raw, "namespaces", where)
        if not namespaces:
            raise WorkloadError(f"{where}.namespaces: expected a non-empty list of namespaces")
        name = raw.get("name", "")
        if not isinstance(name, str):
            raise WorkloadError(f"{where}.name: expected a string, got {_type_name(name)}")
        return [
            StartCollectingMetrics(name, tuple(namespaces), _selector(raw, "labelSelector", where))
        ]
    if opcode == "stopCollectingMetrics":
        return [StopCollectingMetrics()]
    if opcode in ("createAny", "createPodGroups", "createCompositePodGroups"):
        create = _create_any(raw, where, params, workload, base_dir)
        if opcode == "createAny":
            return [create]
        expected = "PodGroup" if opcode == "createPodGroups" else "CompositePodGroup"
        if create.kind.kind != expected:
            raise WorkloadError(
                f"{where}.templatePath: expected a {expected}, got {create.kind.kind}"
            )
        if opcode == "createPodGroups":
            return [CreatePodGroups(create)]
        return [CreateCompositePodGroups(create)]
    if opcode == "updateAny":
        return [_update_any(raw, where, params, workload, base_dir)]
    if opcode == "allocResourceClaims":
        namespace = raw.get("namespace", "")
        if not isinstance(namespace, str):
            raise WorkloadError(
                f"{where}.namespace: expected a string, got {_type_name(namespace)}"
            )
        return [AllocResourceClaims(namespace)]
    if opcode == "createResourceDriver":
        return [_create_resource_driver(raw, where, params, workload)]
    count = _count(raw, where, params, workload)
    if opcode == "waitForPodGroups":
        return [WaitForPodGroups(_string(raw, "namespace", where), count)]
    if opcode == "createNodes":
        return [_create_nodes(raw, where, count, params, base_dir)]
    if opcode == "createNamespaces":
        prefix = _string(raw, "prefix", where)
        data = _template(raw, "namespaceTemplate", where, base_dir) or {}
        ns = _message(kinds.BY_KIND["Namespace"], data, f"{where}.namespaceTemplate")
        assert isinstance(ns, types_pb2.Namespace)
        return [CreateNamespaces(prefix, count, ns)]
    if opcode == "createPodSets":
        prefix = _string(raw, "namespacePrefix", where)
        inner_where = f"{where}.createPodsOp"
        inner = _op_mapping(raw.get("createPodsOp"), inner_where, _CREATE_PODS_FIELDS)
        if inner.get("opcode") != "createPods":
            raise WorkloadError(
                f"{inner_where}.opcode: expected createPods, got {inner.get('opcode')!r}"
            )
        if "namespace" in inner:
            raise WorkloadError(
                f"{inner_where}.namespace: the pods of set i go to namespace {prefix}-<i>"
            )
        pods = _create_pods(inner, inner_where, index, params, workload, default_pod, base_dir)
        return [
            replace(pods, namespace=f"{prefix}-{i}") for i in range(count)
        ]  # fmt: skip
    return [_create_pods(raw, where, index, params, workload, default_pod, base_dir)]


def _create_resource_driver(
    raw: Mapping[str, object], where: str, params: Mapping[str, object], workload: str
) -> CreateResourceDriver:
    """upstream's createResourceDriverOp: driverName and nodes required ("DriverName must be
    set", "Nodes must be set"), maxClaimsPerNode or maxClaimsPerNodeParam."""
    driver = _string(raw, "driverName", where)
    nodes = _string(raw, "nodes", where)
    _glob_check(nodes, f"{where}.nodes")
    if "maxClaimsPerNode" in raw and "maxClaimsPerNodeParam" in raw:
        raise WorkloadError(
            f"{where}.maxClaimsPerNodeParam: give maxClaimsPerNode or maxClaimsPerNodeParam, "
            "not both"
        )
    if "maxClaimsPerNodeParam" in raw:
        per_node = _count(raw, where, params, workload, "maxClaimsPerNodeParam")
    else:
        value = raw.get("maxClaimsPerNode")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WorkloadError(
                f"{where}.maxClaimsPerNode: expected a non-negative integer (or "
                f"maxClaimsPerNodeParam), got {value!r}"
            )
        per_node = value
    return CreateResourceDriver(driver, nodes, per_node)


def _glob_check(pattern: str, where: str) -> None:
    """Go's filepath.Match refuses a malformed pattern (ErrBadPattern): an unclosed `[`."""
    depth = 0
    escaped = False
    for c in pattern:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[":
            if depth:
                raise WorkloadError(f"{where}: {pattern!r}: syntax error in pattern")
            depth = 1
        elif c == "]":
            depth = 0
    if depth or escaped:
        raise WorkloadError(f"{where}: {pattern!r}: syntax error in pattern")


def _op_mapping(raw: object, where: str, allowed: frozenset[str]) -> dict[str, object]:
    """`raw` as an op's mapping: a field upstream has but kemu does not model is NotModelled,
    any other unknown field an error."""
    if isinstance(raw, dict):
        for key in raw:
            if key not in allowed and key in _NOT_MODELLED_FIELDS:
                raise NotModelled(f"{where}.{key}: {_NOT_MODELLED_FIELDS[key]}")
    return _mapping(raw, where, allowed)


def _barrier(raw: Mapping[str, object], where: str) -> Barrier:
    namespaces = _strings(raw, "namespaces", where)
    stage = raw.get("stageRequirement", SCHEDULED)
    if stage not in (SCHEDULED, ATTEMPTED):
        raise WorkloadError(
            f"{where}.stageRequirement: expected {SCHEDULED} or {ATTEMPTED}, got {stage!r}"
        )
    return Barrier(tuple(namespaces), _selector(raw, "labelSelector", where), stage)


_CHURN_KINDS: Final = ("Node", "Pod", "Service")


def _churn(raw: Mapping[str, object], where: str, index: int, base_dir: Path | None) -> Churn:
    mode = raw.get("mode")
    if mode not in (CREATE, RECREATE):
        raise WorkloadError(f"{where}.mode: expected {CREATE} or {RECREATE}, got {mode!r}")
    number = raw.get("number", 0)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise WorkloadError(f"{where}.number: expected a non-negative integer, got {number!r}")
    if mode == RECREATE and number == 0:
        raise WorkloadError(f"{where}.number: must be positive in mode {RECREATE}")
    interval = raw.get("intervalMilliseconds", 0)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
        raise WorkloadError(
            f"{where}.intervalMilliseconds: expected a non-negative integer, got {interval!r}"
        )
    namespace = raw.get("namespace", f"namespace-{index}")
    if not isinstance(namespace, str) or not namespace:
        raise WorkloadError(f"{where}.namespace: expected a non-empty string")
    paths = _strings(raw, "templatePaths", where)
    if not paths:
        raise WorkloadError(f"{where}.templatePaths: expected a non-empty list of paths")
    templates: list[Message] = []
    for k, value in enumerate(paths):
        t_where = f"{where}.templatePaths[{k}]"
        path = Path(value) if base_dir is None else base_dir / value
        data = _read_template(path, t_where)
        kind = data.get("kind")
        if kind not in _CHURN_KINDS:
            raise WorkloadError(f"{t_where}: kind {kind!r}; kemu churns {', '.join(_CHURN_KINDS)}")
        templates.append(_message(kinds.BY_KIND[kind], data, t_where))
    # upstream's default interval is 500 ms.
    return Churn(mode, number, (interval or 500) / 1000, namespace, tuple(templates))


def _create_nodes(
    raw: Mapping[str, object],
    where: str,
    count: int,
    params: Mapping[str, object],
    base_dir: Path | None,
) -> CreateNodes:
    t_params = _template_params(raw, where, params)
    text: TemplateText | None = None
    if "nodeTemplate" in raw:
        data = _template(raw, "nodeTemplate", where, base_dir) or {}
    else:
        path = _path(raw, "nodeTemplatePath", where, base_dir) or DEFAULT_NODE_TEMPLATE_PATH
        data, text = _text_template(path, f"{where}.nodeTemplatePath", t_params, count)
    node = _message(kinds.BY_KIND["Node"], data, f"{where}.nodeTemplate")
    assert isinstance(node, types_pb2.Node)
    if node.metadata.name and count > 1 and text is None:
        raise WorkloadError(
            f"{where}.count: the node template names its node ({node.metadata.name}), so it "
            f"makes one node, not {count}; use metadata.generateName"
        )
    labels: NodeLabels | None = None
    if "labelNodePrepareStrategy" in raw:
        s_where = f"{where}.labelNodePrepareStrategy"
        strategy = _mapping(raw["labelNodePrepareStrategy"], s_where, _NODE_LABEL_FIELDS)
        key = _string(strategy, "labelKey", s_where)
        values = strategy.get("labelValues")
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) for v in values)
        ):
            raise WorkloadError(f"{s_where}.labelValues: expected a non-empty list of strings")
        labels = NodeLabels(key, tuple(values))
    allocatable: NodeAllocatable | None = None
    if "nodeAllocatableStrategy" in raw:
        allocatable = _node_allocatable(
            raw["nodeAllocatableStrategy"], f"{where}.nodeAllocatableStrategy"
        )
    return CreateNodes(count, node, labels, text, allocatable)


def _node_allocatable(raw: object, where: str) -> NodeAllocatable:
    """upstream's NodeAllocatableStrategy: nodeAllocatable (resource name: quantity),
    csiNodeAllocatable (driver: {count}), migratedPlugins (in-tree plugin names)."""
    strategy = _mapping(raw, where, _NODE_ALLOCATABLE_FIELDS)
    allocatable = strategy.get("nodeAllocatable", {})
    if not isinstance(allocatable, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in allocatable.items()
    ):
        raise WorkloadError(
            f"{where}.nodeAllocatable: expected a mapping of resource names to quantities (strings)"
        )
    drivers_raw = strategy.get("csiNodeAllocatable", {})
    if not isinstance(drivers_raw, dict):
        raise WorkloadError(
            f"{where}.csiNodeAllocatable: expected a mapping of CSI driver names to "
            f"{{count: N}}, got {_type_name(drivers_raw)}"
        )
    drivers: dict[str, int | None] = {}
    for driver, value in drivers_raw.items():
        d_where = f"{where}.csiNodeAllocatable.{driver}"
        if not isinstance(driver, str) or not driver:
            raise WorkloadError(f"{d_where}: expected a CSI driver name")
        resources = _mapping({} if value is None else value, d_where, frozenset({"count"}))
        count = resources.get("count")
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or count < 0
        ):
            raise WorkloadError(f"{d_where}.count: expected a non-negative integer, got {count!r}")
        drivers[driver] = count
    plugins = _strings(strategy, "migratedPlugins", where)
    return NodeAllocatable(dict(allocatable), drivers, tuple(plugins))


def _create_pods(
    raw: Mapping[str, object],
    where: str,
    index: int,
    params: Mapping[str, object],
    workload: str,
    default_pod: Path | None,
    base_dir: Path | None,
) -> CreatePods:
    count = _count(raw, where, params, workload)
    if "countMultiplierParam" in raw:
        # upstream: Count *= the param ("the number of pods per pod group" for gangs).
        count *= _count(raw, where, params, workload, "countMultiplierParam")
    t_params = _template_params(raw, where, params)
    text: TemplateText | None = None
    if "podTemplate" in raw:
        data = _template(raw, "podTemplate", where, base_dir) or {}
    else:
        path = _path(raw, "podTemplatePath", where, base_dir)
        t_where = f"{where}.podTemplatePath"
        if path is None:
            path = default_pod or DEFAULT_POD_TEMPLATE_PATH
            t_where = f"{where} (defaultPodTemplatePath)" if default_pod else where
        data, text = _text_template(path, t_where, t_params, count)
    pod = _message(kinds.BY_KIND["Pod"], data, f"{where}.podTemplate")
    assert isinstance(pod, types_pb2.Pod)
    namespace = raw.get("namespace", pod.metadata.namespace or f"namespace-{index}")
    if not isinstance(namespace, str) or not namespace:
        raise WorkloadError(f"{where}.namespace: expected a non-empty string")
    collect = _bool(raw, "collectMetrics", where)
    skip = _bool(raw, "skipWaitToCompletion", where)
    if collect and skip:
        raise WorkloadError(
            f"{where}.skipWaitToCompletion: the op that collects metrics waits for its pods"
        )
    priority = _priority(raw, pod, where)
    steady = _steady_state(raw, where, params, workload)
    if steady is not None and skip:
        raise WorkloadError(
            f"{where}.skipWaitToCompletion: skipWaitToCompletion and steadyState cannot be "
            "true at the same time"
        )
    return CreatePods(
        count,
        pod,
        namespace,
        collect_metrics=collect,
        skip_wait=skip,
        priority=priority,
        text=text,
        volumes=_pod_volumes(raw, where, base_dir),
        steady_state=steady,
    )


def _steady_state(
    raw: Mapping[str, object], where: str, params: Mapping[str, object], workload: str
) -> float | None:
    """upstream's steadyState (or steadyStateParam, a boolean param) and duration (or
    durationParam, a param such as "10s"): the duration in seconds when steady, else None
    ("when creating pods in a steady state, the test duration must be > 0")."""
    steady = _param_or_field(raw, "steadyState", where, params, workload, bool)
    if not steady:
        return None
    text = _param_or_field(raw, "duration", where, params, workload, str)
    if not isinstance(text, str):
        raise WorkloadError(
            f"{where}.duration: when creating pods in a steady state, the test duration must be > 0"
        )
    try:
        seconds = parse_duration(text)
    except DurationError as e:
        raise WorkloadError(f"{where}.duration: {e}") from e
    if seconds <= 0:
        raise WorkloadError(
            f"{where}.duration: when creating pods in a steady state, the test duration must be > 0"
        )
    return seconds


def _param_or_field(
    raw: Mapping[str, object],
    key: str,
    where: str,
    params: Mapping[str, object],
    workload: str,
    kind: type[_T],
) -> _T | None:
    """An op's `key`, or the workload param its `keyParam` ($name) names, of type `kind`."""
    ref_key = key + "Param"
    if key in raw and ref_key in raw:
        raise WorkloadError(f"{where}.{ref_key}: give {key} or {ref_key}, not both")
    if ref_key in raw:
        ref = raw[ref_key]
        if not isinstance(ref, str) or not ref.startswith("$") or len(ref) < 2:
            raise WorkloadError(f"{where}.{ref_key}: expected $name, got {ref!r}")
        if ref[1:] not in params:
            raise WorkloadError(f"{where}.{ref_key}: workload {workload} has no param {ref[1:]!r}")
        value, field_where = params[ref[1:]], f"{where}.{ref_key} (param {ref[1:]!r})"
    elif key in raw:
        value, field_where = raw[key], f"{where}.{key}"
    else:
        return None
    if not isinstance(value, kind):
        raise WorkloadError(f"{field_where}: expected a {kind.__name__}, got {value!r}")
    return value


def _any_template(
    raw: Mapping[str, object],
    where: str,
    t_params: Mapping[str, object],
    count: int,
    base_dir: Path | None,
) -> tuple[str, TemplateText, kinds.Kind]:
    """createAny's and updateAny's namespace, template and kind (the kind of the template
    rendered for index 0, which must be one kemu serves, in the scope the namespace says:
    upstream's restMappingFromUnstructuredObj and its scope checks)."""
    path = _path(raw, "templatePath", where, base_dir)
    if path is None:
        raise WorkloadError(f"{where}.templatePath: required")
    t_where = f"{where}.templatePath"
    try:
        content = path.read_text()
    except OSError as e:
        raise WorkloadError(f"{t_where}: {e}") from e
    text = TemplateText(content, dict(t_params), t_where)
    first = text.render(0, max(count, 1))
    kind = object_kind(first, t_where)
    namespace = raw.get("namespace", "")
    if not isinstance(namespace, str):
        raise WorkloadError(f"{where}.namespace: expected a string, got {_type_name(namespace)}")
    if namespace and not kind.namespaced:
        raise WorkloadError(
            f"{where}.namespace: {namespace!r} set, but {kind.kind} is cluster-scoped"
        )
    if not namespace and kind.namespaced:
        raise WorkloadError(f"{where}.namespace: required, {kind.kind} is namespaced")
    obj = object_message(kind, first, t_where)  # object 0 decodes: the file is right
    if (
        isinstance(obj, types_pb2.DeviceClass)
        and obj.spec.extended_resource_name
        and not gate_modelled(DRA_EXTENDED_RESOURCE)
    ):
        # dra/extendedresource/: pods asking example.com/gpu-<i> would never fit (kemu's
        # scheduler reads no class's extendedResourceName): skipped, not run to its timeout.
        raise NotModelled(
            f"{t_where}: spec.extendedResourceName: extended resources backed by DRA "
            f"({DRA_EXTENDED_RESOURCE}) are not modelled by kemu's scheduler"
        )
    return namespace, text, kind


def _create_any(
    raw: Mapping[str, object],
    where: str,
    params: Mapping[str, object],
    workload: str,
    base_dir: Path | None,
) -> CreateAny:
    count = _count(raw, where, params, workload) if "count" in raw or "countParam" in raw else 1
    t_params = _template_params(raw, where, params)
    namespace, text, kind = _any_template(raw, where, t_params, count, base_dir)
    return CreateAny(count, namespace, text, kind)


def _update_any(
    raw: Mapping[str, object],
    where: str,
    params: Mapping[str, object],
    workload: str,
    base_dir: Path | None,
) -> UpdateAny:
    count = _count(raw, where, params, workload) if "count" in raw or "countParam" in raw else 1
    namespace, text, kind = _any_template(raw, where, {}, count, base_dir)
    rate = raw.get("updatePerSecond", 0)
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0:
        raise WorkloadError(
            f"{where}.updatePerSecond: expected a non-negative integer, got {rate!r}"
        )
    subresources = tuple(_strings(raw, "subresources", where))
    for sub in subresources:
        if sub not in UPDATE_SUBRESOURCES:
            raise NotModelled(
                f"{where}.subresources: {sub!r}: kemu's client updates through "
                f"{' and '.join(UPDATE_SUBRESOURCES)}"
            )
    if RESIZE in subresources and kind.kind != "Pod":
        raise WorkloadError(
            f"{where}.subresources: resize is a subresource of pods, not {kind.kind}"
        )
    return UpdateAny(count, namespace, text, kind, rate, subresources)


def object_kind(data: Mapping[str, object], where: str) -> kinds.Kind:
    """The kind kemu serves that a template's object is: by its `kind` and the group of its
    `apiVersion`. kemu's messages have one shape of each kind (PodGroup: 1.37's
    scheduling.k8s.io/v1beta1), and the bench creates through kemu's client in that shape: an
    object of another version upstream served the kind as is converted as kemuctl converts a
    manifest (kemu.machinery.podgroups.from_manifest), refused when a field does not decode
    (upstream creates with FieldValidation Strict). A kind kemu does not serve is NotModelled."""
    name = data.get("kind")
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{where}: kind: expected a kind")
    kind = kinds.BY_KIND.get(name)
    if kind is None:
        raise NotModelled(f"{where}: kind {name}: kemu does not serve it")
    api_version = data.get("apiVersion", kind.api_version)
    group = kind.api_version.rpartition("/")[0]
    if not isinstance(api_version, str) or api_version.rpartition("/")[0] != group:
        raise WorkloadError(
            f"{where}: apiVersion: {api_version!r} does not serve kind {name} "
            f"(expected {kind.api_version})"
        )
    return kind


def object_message(kind: kinds.Kind, data: Mapping[str, object], where: str) -> Message:
    """A rendered template's object as `kind`'s message (see object_kind for its version)."""
    object_kind(data, where)
    try:
        return podgroups.from_manifest(kind, dict(data))
    except Invalid as e:
        raise WorkloadError(f"{where}: {e}") from e


def _pod_volumes(raw: Mapping[str, object], where: str, base_dir: Path | None) -> PodVolumes | None:
    """The op's volume and claim templates, both or neither (upstream ignores a volume
    template without a claim one and fails on a claim template without a volume one)."""
    pv_key, pvc_key = "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath"
    if pv_key not in raw and pvc_key not in raw:
        return None
    for key, other in ((pv_key, pvc_key), (pvc_key, pv_key)):
        if key not in raw:
            raise WorkloadError(f"{where}.{key}: required with {other}")
    pv_data = _load_template_path(raw, pv_key, where, base_dir)
    pvc_data = _load_template_path(raw, pvc_key, where, base_dir)
    assert pv_data is not None and pvc_data is not None
    pv_where, pvc_where = f"{where}.{pv_key}", f"{where}.{pvc_key}"
    for data, t_where, kind in ((pv_data, pv_where, "PersistentVolume"),
                                (pvc_data, pvc_where, "PersistentVolumeClaim")):  # fmt: skip
        if data.get("kind", kind) != kind:
            raise WorkloadError(f"{t_where}: expected kind {kind}, got {data.get('kind')!r}")
    spec = pv_data.get("spec")
    if isinstance(spec, dict):
        in_tree = sorted(_IN_TREE_PV_SOURCES.intersection(spec))
        if in_tree:
            raise NotModelled(
                f"{pv_where}: spec.{in_tree[0]}: kemu's PersistentVolume has the "
                "awsElasticBlockStore, hostPath, local and csi sources, not upstream's other "
                "in-tree ones"
            )
    pv = _message(kinds.BY_KIND["PersistentVolume"], pv_data, pv_where)
    pvc = _message(kinds.BY_KIND["PersistentVolumeClaim"], pvc_data, pvc_where)
    assert isinstance(pv, types_pb2.PersistentVolume)
    assert isinstance(pvc, types_pb2.PersistentVolumeClaim)
    return PodVolumes(pv, pvc)


def _template_params(
    raw: Mapping[str, object], where: str, params: Mapping[str, object]
) -> dict[str, object]:
    """An op's templateParams, a `$name` value replaced by the workload's param (upstream's
    resolveTemplateParams)."""
    value = raw.get("templateParams", {})
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}.templateParams: expected a mapping, got {_type_name(value)}")
    out: dict[str, object] = {}
    for key, v in value.items():
        if isinstance(v, str) and v.startswith("$"):
            # `$name|default` (dra/listattributes): the default when the workload has no
            # such param, read as a YAML scalar (`$constraints|`: nil).
            name, bar, default = v[1:].partition("|")
            if name in params:
                v = params[name]
            elif bar:
                v = yaml.safe_load(default) if default else None
            else:
                raise WorkloadError(f"{where}.templateParams.{key}: no param {name!r}")
        out[str(key)] = v
    return out


def _text_template(
    path: Path, where: str, params: Mapping[str, object], count: int
) -> tuple[dict[str, object], TemplateText | None]:
    """A pod or node template file: its mapping (rendered for object 0 when it has actions,
    to check it) and, when it has actions, the text to render per object."""
    try:
        content = path.read_text()
    except OSError as e:
        raise WorkloadError(f"{where}: {e}") from e
    if "{{" not in content:
        return _yaml_mapping(content, where, path), None
    text = TemplateText(content, dict(params), where)
    return text.render(0, count), text


# ---------------------------------------------------------------------- templates


def render_template(text: str, env: Mapping[str, object], where: str) -> str:
    """`text` rendered as upstream's Go template with the data `env`
    (bench.scheduler_perf_template); WorkloadError names `where` and the action."""
    try:
        return gotemplate.render(text, env)
    except gotemplate.TemplateError as e:
        raise WorkloadError(f"{where}: template {e}") from e


@functools.lru_cache(maxsize=512)
def _parsed_yaml(text: str) -> object:
    """`text` parsed, kept by its text: `bench thresholds` loads a file once per emulated
    version, and the file and its rendered templates read alike at each (pure-Python YAML
    was 90% of that)."""
    return yaml.safe_load(text)


def _yaml_mapping(text: str, where: str, path: Path | None = None) -> dict[str, object]:
    try:
        data = copy.deepcopy(_parsed_yaml(text))  # a copy: the caller may change it
    except yaml.YAMLError as e:
        raise WorkloadError(f"{where}: {e}") from e
    if not isinstance(data, dict):
        raise WorkloadError(f"{where}: {path or 'the template'} does not hold a mapping")
    return data


def _sleep(raw: Mapping[str, object], where: str) -> Sleep:
    value = raw.get("duration")
    if not isinstance(value, str):
        raise WorkloadError(f'{where}.duration: expected a duration such as "5s", got {value!r}')
    try:
        return Sleep(parse_duration(value))
    except DurationError as e:
        raise WorkloadError(f"{where}.duration: {e}") from e


def _delete_pods(raw: Mapping[str, object], where: str) -> DeletePods:
    namespace = _string(raw, "namespace", where)
    selector = _selector(raw, "labelSelector", where)
    rate = raw.get("deletePodsPerSecond", 0)
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0:
        raise WorkloadError(
            f"{where}.deletePodsPerSecond: expected a non-negative integer, got {rate!r}"
        )
    return DeletePods(
        namespace,
        label_selector=dict(selector),
        skip_wait=_bool(raw, "skipWaitToCompletion", where),
        per_second=rate,
    )


def _priority(raw: Mapping[str, object], pod: types_pb2.Pod, where: str) -> int | None:
    """The op's `priority`, or the template's spec.priority (upstream's templates give it
    there, e.g. pod-high-priority.yaml); both given must agree."""
    value: int | None = None
    if "priority" in raw:
        given = raw["priority"]
        if isinstance(given, bool) or not isinstance(given, int):
            raise WorkloadError(f"{where}.priority: expected an integer, got {given!r}")
        value = given
    if pod.spec.HasField("priority"):
        if value is not None and value != pod.spec.priority:
            raise WorkloadError(
                f"{where}.priority: {value} differs from the template's spec.priority "
                f"{pod.spec.priority}"
            )
        value = pod.spec.priority
    if value is None:
        return None
    if pod.spec.priority_class_name:
        raise WorkloadError(
            f"{where}.priority: the template also names a PriorityClass "
            f"({pod.spec.priority_class_name}); give one or the other"
        )
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise WorkloadError(
            f"{where}.priority: {value} is outside [{MIN_PRIORITY}, {MAX_PRIORITY}]"
        )
    return value


def priority_class_name(priority: int) -> str:
    return (
        f"scheduler-perf-priority-{priority}"
        if priority >= 0
        else (f"scheduler-perf-priority-minus-{-priority}")
    )


def priority_class_objects(workload: Workload) -> list[types_pb2.PriorityClass]:
    """One PriorityClass per pod priority of the workload's ops (preemptionPolicy as the
    admission default, PreemptLowerPriority)."""
    out = []
    for value in workload.priorities():
        pc = types_pb2.PriorityClass(value=value, description="bench scheduler_perf")
        pc.metadata.name = priority_class_name(value)
        out.append(pc)
    return out


def _cluster_settings(
    case: Mapping[str, object],
    workload: Mapping[str, object],
    case_where: str,
    where: str,
    base_dir: Path | None,
    default_version: Version | None = None,
) -> ClusterSettings:
    """Workload fields emulated_version, feature_gates, scheduler_config and compare_gate from
    the test case's and the workload's fields (`default_version`, the bench's flag, when
    neither gives `emulatedVersion`); the gates are checked at the version for every variant,
    the scheduler configuration as the scheduler would. A gate setting refused at the version
    names the newest older version that accepts every setting, and the flag."""

    def pick(key: str) -> tuple[object, str] | None:
        for raw, w in ((workload, where), (case, case_where)):
            if key in raw:
                return raw[key], w
        return None

    version: str | None = None
    found = pick("emulatedVersion")
    found_version = found is not None
    if found is not None:
        value, w = found
        if not isinstance(value, str):
            raise WorkloadError(
                f'{w}.emulatedVersion: expected a quoted string such as "1.23", got {value!r}'
            )
        try:
            version = str(parse_emulated_version(value))
        except ValueError as e:
            raise WorkloadError(f"{w}.emulatedVersion: {e}") from e
    elif default_version is not None:
        version = str(default_version)

    gates: dict[str, bool] = {}
    for raw, w in ((case, case_where), (workload, where)):
        value = raw.get("featureGates", {})
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, bool) for k, v in value.items()
        ):
            raise WorkloadError(f"{w}.featureGates: expected a mapping of gate names to true/false")
        gates.update(value)

    compare: str | None = None
    found = pick("compareFeatureGate")
    if found is not None:
        value, w = found
        if not isinstance(value, str) or not value:
            raise WorkloadError(f"{w}.compareFeatureGate: expected a gate name")
        if value in gates:
            raise WorkloadError(
                f"{w}.compareFeatureGate: {value} is also set by featureGates; the comparison "
                "sets it on and off"
            )
        compare = value

    # The gates alone, then each variant of the comparison, at the version: the error names
    # the field that brought the offending setting in (the workload's if it has its own).
    at = Version.parse(version) if version is not None else DEFAULT_VERSION
    checks = [("featureGates", gates)]
    if compare is not None:
        checks += [("compareFeatureGate", {**gates, compare: on}) for on in (True, False)]
    for key, settings in checks:
        try:
            FeatureGates.for_version(at, settings)
        except FeatureGateError as e:
            w = where if key in workload or "emulatedVersion" in workload else case_where
            hint = _older_version_hint([s for _, s in checks], at, from_file=found_version)
            raise WorkloadError(f"{w}.{key}: {e}; {hint}") from e
    not_modelled = tuple(
        name for name in [*gates, *([compare] if compare else [])] if not gate_modelled(name)
    )

    config: Mapping[str, Any] | None = None
    for raw, w in ((workload, where), (case, case_where)):
        config = _template(raw, "schedulerConfig", w, base_dir)
        if config is not None:
            try:
                config_from_dict(config)
            except ValueError as e:
                raise WorkloadError(f"{w}.schedulerConfig: {e}") from e
            break
    return {
        "emulated_version": version,
        "feature_gates": gates,
        "scheduler_config": config,
        "compare_gate": compare,
        "not_modelled_gates": not_modelled,
    }


def _older_version_hint(
    settings: Sequence[Mapping[str, bool]], at: Version, *, from_file: bool
) -> str:
    """Where the refused gate settings would run: the newest older emulated version that
    accepts all of them (upstream ran its files at the binary version of their commit, where
    a gate locked or removed since could still be set), and how to choose it."""
    older = newest_version_accepting(settings, below=at)
    if older is None:
        return f"no emulated version kemu supports ({MIN_VERSION} to {at}) accepts them all"
    how = f'set emulatedVersion: "{older}"' if from_file else f"run with --emulated-version {older}"
    return f"every gate setting of the workload is valid at emulated version {older}: {how}"


def _count(
    raw: Mapping[str, object],
    where: str,
    params: Mapping[str, object],
    workload: str,
    key: str = "countParam",
) -> int:
    """The op's count: `count`, or the workload's param `key` ($name) names."""
    if key == "countParam" and "count" in raw and "countParam" in raw:
        raise WorkloadError(f"{where}.countParam: give count or countParam, not both")
    if key in raw:
        ref = raw[key]
        if not isinstance(ref, str) or not ref.startswith("$") or len(ref) < 2:
            raise WorkloadError(f"{where}.{key}: expected $name, got {ref!r}")
        if ref[1:] not in params:
            raise WorkloadError(f"{where}.{key}: workload {workload} has no param {ref[1:]!r}")
        value = params[ref[1:]]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WorkloadError(
                f"{where}.{key}: param {ref[1:]!r} of workload {workload} is a count: "
                f"expected a non-negative integer, got {value!r}"
            )
        return value
    if "count" not in raw:
        raise WorkloadError(f"{where}.count: required (or countParam)")
    value = raw["count"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WorkloadError(f"{where}.count: expected a non-negative integer, got {value!r}")
    return value


def _params(raw: object, where: str) -> dict[str, object]:
    """A workload's params: upstream's are a map[string]any (counts, and e.g. strings for
    templateParams); a param used as a count must be an integer (see _count)."""
    if not isinstance(raw, dict):
        raise WorkloadError(f"{where}: expected a mapping, got {_type_name(raw)}")
    out: dict[str, object] = {}
    for key, value in raw.items():
        # upstream's params are a map[string]any: dra/listattributes gives a list of
        # constraints, passed to a template's JSON.
        if not isinstance(value, str | int | float | bool | list | dict) and value is not None:
            raise WorkloadError(
                f"{where}.{key}: expected a number, a string, a list or a mapping, got "
                f"{_type_name(value)}"
            )
        out[str(key)] = value
    return out


def _template(
    raw: Mapping[str, object], key: str, where: str, base_dir: Path | None
) -> Mapping[str, object] | None:
    if key in raw and key + "Path" in raw:
        raise WorkloadError(f"{where}.{key}Path: give {key} or {key}Path, not both")
    if key in raw:
        value = raw[key]
        if not isinstance(value, dict):
            raise WorkloadError(f"{where}.{key}: expected a mapping, got {_type_name(value)}")
        return value
    return _load_template_path(raw, key + "Path", where, base_dir)


def _load_template_path(
    raw: Mapping[str, object], key: str, where: str, base_dir: Path | None
) -> Mapping[str, object] | None:
    path = _path(raw, key, where, base_dir)
    return None if path is None else _read_template(path, f"{where}.{key}")


def _path(raw: Mapping[str, object], key: str, where: str, base_dir: Path | None) -> Path | None:
    """The path `raw[key]`, relative to the file's directory as upstream resolves it."""
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise WorkloadError(f"{where}.{key}: expected a path, got {_type_name(value)}")
    return Path(value) if base_dir is None else base_dir / value


def _strings(raw: Mapping[str, object], key: str, where: str) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise WorkloadError(f"{where}.{key}: expected a list of strings")
    return value


def _selector(raw: Mapping[str, object], key: str, where: str) -> dict[str, str]:
    value = raw.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise WorkloadError(f"{where}.{key}: expected a mapping of label keys to values")
    return dict(value)


def _read_template(path: Path, where: str) -> Mapping[str, object]:
    """A YAML file holding one mapping (a template); WorkloadError naming `where` otherwise."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise WorkloadError(f"{where}: {e}") from e
    if not isinstance(data, dict):
        raise WorkloadError(f"{where}: {path} does not hold a mapping")
    return data


def _message(kind: kinds.Kind, data: Mapping[str, object], where: str) -> Message:
    try:
        return convert.from_dict(kind, dict(data))
    except Invalid as e:
        raise WorkloadError(f"{where}: {e}") from e


def _mapping(raw: object, where: str, allowed: frozenset[str]) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise WorkloadError(f"{where}: expected a mapping, got {_type_name(raw)}")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise WorkloadError(f"{where}.{unknown[0]}: unknown field")
    return raw


def _string(raw: Mapping[str, object], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise WorkloadError(f"{where}.{key}: expected a non-empty string")
    return value


def _bool(raw: Mapping[str, object], key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise WorkloadError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _labels(raw: Mapping[str, object], where: str) -> tuple[str, ...]:
    value = raw.get("labels", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WorkloadError(f"{where}.labels: expected a list of strings")
    return tuple(value)


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def node_objects(op: CreateNodes, op_index: int) -> list[types_pb2.Node]:
    """The nodes of a createNodes op: named <generateName><op>-<i> (a template that names its
    node makes that one node), labelled kubernetes.io/hostname as a kubelet would and with the
    op's labelNodePrepareStrategy, allocatable = capacity unless the template gives it."""
    fixed = op.template.metadata.name
    prefix = op.template.metadata.generate_name or "node-"
    out = []
    for i in range(op.count):
        node = types_pb2.Node()
        if op.text is not None:
            rendered = _message(kinds.BY_KIND["Node"], op.text.render(i, op.count), op.text.where)
            assert isinstance(rendered, types_pb2.Node)
            node.CopyFrom(rendered)
            fixed = node.metadata.name
            prefix = node.metadata.generate_name or "node-"
        else:
            node.CopyFrom(op.template)
        node.metadata.generate_name = ""
        node.metadata.name = fixed or f"{prefix}{op_index}-{i}"
        node.metadata.labels["kubernetes.io/hostname"] = node.metadata.name
        if op.labels is not None:
            values = op.labels.values
            node.metadata.labels[op.labels.key] = values[i % len(values)]
        if not node.status.allocatable:
            node.status.allocatable.update(node.status.capacity)
        if op.allocatable is not None:
            node.status.allocatable.update(op.allocatable.allocatable)
        out.append(node)
    return out


def csinode_objects(op: CreateNodes, nodes: Sequence[types_pb2.Node]) -> list[types_pb2.CSINode]:
    """The CSINodes of a createNodes op's nodeAllocatableStrategy (upstream's
    NodeAllocatableStrategy.createCSINode): one per node, named after it, with a driver of
    nodeID the node's name per csiNodeAllocatable entry and the migrated-plugins annotation
    (set, "" when the list is empty, as upstream does)."""
    strategy = op.allocatable
    if strategy is None:
        return []
    out = []
    for node in nodes:
        csinode = types_pb2.CSINode()
        csinode.metadata.name = node.metadata.name
        csinode.metadata.annotations[ANN_MIGRATED_PLUGINS] = ",".join(strategy.migrated_plugins)
        for driver, count in strategy.csi_drivers.items():
            d = csinode.spec.drivers.add(name=driver, node_id=node.metadata.name)
            d.allocatable.SetInParent()
            if count is not None:
                d.allocatable.count = count
        out.append(csinode)
    return out


def volume_objects(
    op: CreatePods, index: int
) -> tuple[types_pb2.PersistentVolumeClaim, types_pb2.PersistentVolume]:
    """Pod `index`'s claim and volume of a createPods op with volume templates, as upstream's
    CreatePodWithPersistentVolume (bindVolume) makes them: claim pvc-<index> in the op's
    namespace with spec.volumeName the volume's and phase Bound; volume <namespace>-vol-<index>
    (a CSI source's volumeHandle, an EBS source's volumeID, is the volume's name) with a claimRef to the claim and phase
    Bound. Created in this order, each status written after the create (which resets it); no
    controller binds them: the scheduler's VolumeBinding sees them bound."""
    assert op.volumes is not None
    claim = types_pb2.PersistentVolumeClaim()
    claim.CopyFrom(op.volumes.claim)
    claim.metadata.generate_name = ""
    claim.metadata.name = f"pvc-{index}"
    claim.metadata.namespace = op.namespace
    volume = types_pb2.PersistentVolume()
    volume.CopyFrom(op.volumes.volume)
    volume.metadata.generate_name = ""
    volume.metadata.name = f"{op.namespace}-vol-{index}"
    if volume.spec.HasField("csi"):
        volume.spec.csi.volume_handle = volume.metadata.name
    elif volume.spec.HasField("aws_elastic_block_store"):
        volume.spec.aws_elastic_block_store.volume_id = volume.metadata.name
    volume.spec.claim_ref.CopyFrom(
        types_pb2.ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=op.namespace,
            name=claim.metadata.name,
            api_version="v1",
        )
    )
    volume.status.phase = VOLUME_BOUND
    claim.spec.volume_name = volume.metadata.name
    claim.status.phase = CLAIM_BOUND
    return claim, volume


def namespace_objects(op: CreateNamespaces) -> list[types_pb2.Namespace]:
    """The namespaces of a createNamespaces op: the template named <prefix>-<i>."""
    out = []
    for name in op.names():
        ns = types_pb2.Namespace()
        ns.CopyFrom(op.template)
        ns.metadata.generate_name = ""
        ns.metadata.name = name
        out.append(ns)
    return out


def pod_objects(op: CreatePods, op_index: int) -> list[types_pb2.Pod]:
    """The pods of a createPods op: named <generateName><op>-<i> in the op's namespace."""
    return [pod_object(op, op_index, i) for i in range(op.count)]


def pod_object(op: CreatePods, op_index: int, i: int) -> types_pb2.Pod:
    """Pod `i` of a createPods op (in steady state, i grows past the op's count)."""
    prefix = op.template.metadata.generate_name or op.template.metadata.name or "pod-"
    if op.text is not None:
        prefix = op.template.metadata.generate_name or "pod-"
    pod = types_pb2.Pod()
    if op.text is not None:
        rendered = _message(kinds.BY_KIND["Pod"], op.text.render(i, op.count), op.text.where)
        assert isinstance(rendered, types_pb2.Pod)
        pod.CopyFrom(rendered)
    else:
        pod.CopyFrom(op.template)
    # A template rendered per pod may name each pod itself ({{.Index}}), as upstream's.
    name = pod.metadata.name if op.text is not None else ""
    pod.metadata.generate_name = ""
    pod.metadata.name = name or f"{prefix}{op_index}-{i}"
    pod.metadata.namespace = op.namespace
    if op.priority is not None:
        pod.spec.ClearField("priority")
        pod.spec.priority_class_name = priority_class_name(op.priority)
    if op.volumes is not None:
        # upstream replaces the template's volumes with the one claim.
        del pod.spec.volumes[:]
        pod.spec.volumes.add(
            name="vol",
            persistent_volume_claim=types_pb2.PersistentVolumeClaimVolumeSource(
                claim_name=f"pvc-{i}"
            ),
        )
    return pod
