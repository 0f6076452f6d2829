"""scheduler_perf's DRA ops as upstream's dra.go and dra/ files use them (S-BENCH-DRA-*):
createResourceDriver's slices, allocResourceClaims' direct allocation, createAny of the DRA
kinds, createPods in steady state, per-topic thresholds, the Go template features of dra/'s
templates, and upstream's dra/ files parsed unchanged when a checkout is at hand."""

from __future__ import annotations

import os
import random
from pathlib import Path

import anyio
import pytest
import yaml

from bench import thresholds
from bench.scheduler_perf import needs_claim_controller
from bench.scheduler_perf_dra import (
    AllocationFailed,
    alloc_resource_claims,
    create_resource_driver,
    driver_slice,
    matching_nodes,
)
from bench.scheduler_perf_template import render
from bench.scheduler_perf_workloads import (
    AllocResourceClaims,
    CreateAny,
    CreatePods,
    CreateResourceDriver,
    NotModelled,
    WorkloadError,
    load_workload_file,
    parse_file,
    parse_workloads,
    pod_object,
    workload_threshold,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.featuregate import FeatureGates, gate_modelled
from kemu.component.version import DEFAULT_VERSION
from kemu.scheduling.dra.cel_cache import CelCache, CelCompileError

DRIVER = "test-driver.cdi.k8s.io"


def _parse_one(text: str, base_dir: Path | None = None) -> list[object]:
    (w,) = parse_workloads(yaml.safe_load(text), base_dir=base_dir)
    return list(w.ops)


def _error(text: str, base_dir: Path | None = None) -> str:
    with pytest.raises(WorkloadError) as e:
        parse_workloads(yaml.safe_load(text), base_dir=base_dir)
    return str(e.value)


# ---------------------------------------------------------------------- templates


def test_s_bench_dra_1_templates_use_variables_range_int_json() -> None:
    """S-BENCH-DRA-1: dra/'s templates: `{{$n := or .numDevices 10}}`, `range` over an
    integer (with `$i :=`), `| Int`, `| JSON` printed unescaped, `mod`, `$` the data."""
    text = (
        "{{$n := or .numDevices 10}}{{$c := (or .constraints nil) | JSON}}"
        "c: {{$c}}\n{{range ($n | Int)}}- d-{{.}}\n{{end}}"
        "{{range $i, $v := .l}}{{$i}}={{$v}};{{else}}none{{end}} "
        "{{mod .Index 25}} {{$.Index}}"
    )
    out = render(text, {"Index": 27, "numDevices": 2, "constraints": [{"m": "a<b"}]})
    assert out == 'c: [{"m":"a<b"}]\n- d-0\n- d-1\nnone 2 27'
    assert render("{{(or .s nil) | JSON}} {{range $i := 3}}{{$i}}{{end}}", {}) == "null 012"
    # a variable lives until the end of its block
    assert render("{{if true}}{{$x := 1}}{{end}}{{$x := 2}}{{$x}}", {}) == "2"


# ---------------------------------------------------------------------- createResourceDriver

DRIVER_CASE = """
- name: D
  featureGates: {{DynamicResourceAllocation: true}}
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - opcode: createResourceDriver
    {driver}
  - opcode: allocResourceClaims
    namespace: init
  workloads:
  - name: w
    params: {{perNode: 3}}
"""


def test_s_bench_dra_2_create_resource_driver_parses_as_upstreams_op() -> None:
    """S-BENCH-DRA-2: createResourceDriver {driverName, nodes, maxClaimsPerNode(Param)};
    allocResourceClaims {namespace}."""
    ops = _parse_one(
        DRIVER_CASE.format(
            driver=f"driverName: {DRIVER}\n    nodes: scheduler-perf-dra-*\n"
            "    maxClaimsPerNodeParam: $perNode"
        )
    )
    assert ops[1] == CreateResourceDriver(DRIVER, "scheduler-perf-dra-*", 3)
    assert ops[2] == AllocResourceClaims("init")


@pytest.mark.parametrize(
    ("driver", "message"),
    [
        ("nodes: x*\n    maxClaimsPerNode: 1", "workloadTemplate[1].driverName: expected a non-empty string"),
        (f"driverName: {DRIVER}\n    maxClaimsPerNode: 1", "workloadTemplate[1].nodes: expected a non-empty string"),
        (f"driverName: {DRIVER}\n    nodes: x*", "workloadTemplate[1].maxClaimsPerNode: expected a non-negative integer"),
        (f"driverName: {DRIVER}\n    nodes: x*\n    maxClaimsPerNodeParam: $nope", "workloadTemplate[1].maxClaimsPerNodeParam: workload w has no param 'nope'"),
        (f"driverName: {DRIVER}\n    nodes: x*\n    maxClaimsPerNode: 1\n    maxClaimsPerNodeParam: $perNode", "maxClaimsPerNodeParam: give maxClaimsPerNode or maxClaimsPerNodeParam, not both"),
        (f"driverName: {DRIVER}\n    nodes: 'x[*'\n    maxClaimsPerNode: 1", "workloadTemplate[1].nodes: 'x[*': syntax error in pattern"),
        (f"driverName: {DRIVER}\n    nodes: x*\n    maxClaimsPerNode: 1\n    capacity: 2", "workloadTemplate[1].capacity: unknown field"),
    ],
)  # fmt: skip
def test_s_bench_dra_2_create_resource_driver_errors_name_the_field(
    driver: str, message: str
) -> None:
    assert message in _error(DRIVER_CASE.format(driver=driver))


def test_s_bench_dra_3_driver_slices_as_upstreams_resource_slice() -> None:
    """S-BENCH-DRA-3: one slice per node the glob matches, named after it, pool = the node,
    devices instance-<i> with upstream's attributes and capacity."""
    assert matching_nodes("scheduler-perf-dra-*", ["node-0", "scheduler-perf-dra-1"]) == [
        "scheduler-perf-dra-1"
    ]
    s = driver_slice(DRIVER, "n1", 2)
    assert (s.metadata.name, s.spec.node_name, s.spec.pool.name) == ("n1", "n1", "n1")
    assert s.spec.pool.resource_slice_count == 1
    assert [d.name for d in s.spec.devices] == ["instance-0", "instance-1"]
    d = s.spec.devices[1]
    assert d.attributes["model"].string_value == "A100"
    assert d.attributes["driverVersion"].version_value == "1.2.3"
    assert d.attributes["dra.example.com/numa"].int_value == 1
    assert d.capacity["memory"].value == "1Gi"

    async def main() -> list[str]:
        async with FakeClient() as client:
            done = await create_resource_driver(
                client,
                CreateResourceDriver(DRIVER, "dra-*", 1),
                ["dra-0", "plain-0", "dra-1"],
            )
            assert done == 2
            slices = await client.list(types_pb2.ResourceSlice)
            return sorted(s.spec.node_name for s in slices.items)

    assert anyio.run(main) == ["dra-0", "dra-1"]


# ---------------------------------------------------------------------- allocResourceClaims


class DriverIs:
    """A CEL stand-in for `device.driver == "<name>"` selectors."""

    def evaluate(
        self, expression: str, driver: str, device: types_pb2.Device, device_key: bytes
    ) -> bool:
        prefix = 'device.driver == "'
        if not expression.startswith(prefix) or not expression.endswith('"'):
            raise CelCompileError(f"unsupported {expression!r}")
        return driver == expression[len(prefix) : -1]


def _claim(name: str, namespace: str = "init") -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.name, c.metadata.namespace = name, namespace
    c.spec.devices.requests.add(name="req-0").exactly.device_class_name = "test-class"
    return c


def _cluster(nodes: int, per_node: int, claims: int) -> FakeClient:
    objects: list[types_pb2.Node | types_pb2.ResourceSlice | types_pb2.DeviceClass] = []
    for i in range(nodes):
        n = types_pb2.Node()
        n.metadata.name = f"dra-{i}"
        objects += [n, driver_slice(DRIVER, n.metadata.name, per_node)]
    cls = types_pb2.DeviceClass()
    cls.metadata.name = "test-class"
    cls.spec.selectors.add().cel.expression = f'device.driver == "{DRIVER}"'
    client = FakeClient(*objects, cls)
    for i in range(claims):
        client.add(_claim(f"test-claim-{i}"))
    return client


def test_s_bench_dra_4_alloc_resource_claims_allocates_each_claim_once() -> None:
    """S-BENCH-DRA-4: every unallocated claim of the namespace gets devices no other claim
    has, written to its status (no reservedFor); a claim that fits nowhere fails with
    upstream's message."""
    gates = FeatureGates.for_version(DEFAULT_VERSION)

    async def main(claims: int) -> list[types_pb2.ResourceClaim]:
        async with _cluster(2, 2, claims) as client:
            done = await alloc_resource_claims(
                client, AllocResourceClaims("init"), gates, random.Random(1), CelCache(DriverIs())
            )
            assert done == claims
            return list((await client.list(types_pb2.ResourceClaim, "init")).items)

    allocated = anyio.run(main, 4)
    devices = set()
    for c in allocated:
        (r,) = c.status.allocation.devices.results
        devices.add((r.pool, r.device))
        assert r.driver == DRIVER and not c.status.reserved_for
    assert len(devices) == 4  # the cluster is full, no device twice
    with pytest.raises(AllocationFailed, match="Could not allocate claim 4 out of 5"):
        anyio.run(main, 5)


def test_s_bench_dra_4_alloc_resource_claims_on_kemus_cel() -> None:
    """S-BENCH-DRA-4: by default the allocator evaluates the classes' selectors with kemu's
    CEL environment (the scheduler's)."""
    gates = FeatureGates.for_version(DEFAULT_VERSION)

    async def main() -> int:
        async with _cluster(1, 2, 2) as client:
            return await alloc_resource_claims(
                client, AllocResourceClaims(""), gates, random.Random(1)
            )

    assert anyio.run(main) == 2


# ---------------------------------------------------------------------- steady state, thresholds

STEADY = """
- name: S
  workloadTemplate:
  - opcode: createNodes
    count: 1
  - opcode: createPods
    count: 2
    {steady}
    collectMetrics: true
  workloads:
  - name: w
    params: {{st: true, sf: false, d: 3s, zero: 0s}}
"""


def test_s_bench_dra_5_steady_state_from_the_op_or_its_params() -> None:
    """S-BENCH-DRA-5: steadyState/steadyStateParam and duration/durationParam as upstream's
    createPodsOp; burst when false; upstream's validation messages."""
    (_, pods) = _parse_one(STEADY.format(steady="steadyStateParam: $st\n    durationParam: $d"))
    assert isinstance(pods, CreatePods) and pods.steady_state == 3.0
    (_, pods) = _parse_one(STEADY.format(steady="steadyStateParam: $sf\n    durationParam: $d"))
    assert isinstance(pods, CreatePods) and pods.steady_state is None
    (_, pods) = _parse_one(STEADY.format(steady="steadyState: true\n    duration: 500ms"))
    assert isinstance(pods, CreatePods) and pods.steady_state == 0.5
    assert "the test duration must be > 0" in _error(
        STEADY.format(steady="steadyState: true\n    durationParam: $zero")
    )
    assert "steadyStateParam (param 'd'): expected a bool" in _error(
        STEADY.format(steady="steadyStateParam: $d\n    duration: 1s")
    )
    # steady pods get names past the op's count
    assert pod_object(pods, 1, 7).metadata.name == "pod-1-7"


def test_s_bench_dra_6_thresholds_per_topic() -> None:
    """S-BENCH-DRA-6: `threshold: {dra: 56}` (upstream's newer files: one per benchmark
    topic) is read for the file's directory; a number as before."""
    assert workload_threshold({"dra": 56, "dra_experimental": 40}, "t", Path("/x/dra")) == 56.0
    assert workload_threshold(64, "t", Path("/x/dra")) == 64.0
    with pytest.raises(WorkloadError, match="t: no threshold for topic 'misc'.*has dra"):
        workload_threshold({"dra": 56}, "t", Path("/x/misc"))


def test_s_bench_dra_7_template_params_defaults_and_list_params(tmp_path: Path) -> None:
    """S-BENCH-DRA-7: templateParams `$name|default` (the default when the workload has no
    such param, `$x|` nil) and a list param handed to a template's JSON."""
    (tmp_path / "rct.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n"
        "  name: t-{{.n}}\nspec:\n  spec:\n    devices:\n"
        "      constraints: {{(or .c nil) | JSON}}\n"
        "      requests:\n      - name: r\n        exactly: {deviceClassName: c}\n"
    )
    text = """
- name: P
  workloadTemplate:
  - opcode: createAny
    templatePath: rct.yaml
    namespace: test
    templateParams: {n: $n|64, c: $c|}
  workloads:
  - name: a
  - name: b
    params: {n: 2, c: [{matchAttribute: x.example.com/a}]}
"""
    a, b = parse_file(yaml.safe_load(text), base_dir=tmp_path, strict=True).workloads
    op_a, op_b = a.ops[0], b.ops[0]
    assert isinstance(op_a, CreateAny) and isinstance(op_b, CreateAny)
    (ta,) = op_a.text.objects(1, op_a.kind)
    (tb,) = op_b.text.objects(1, op_b.kind)
    assert isinstance(ta, types_pb2.ResourceClaimTemplate)
    assert isinstance(tb, types_pb2.ResourceClaimTemplate)
    assert ta.metadata.name == "t-64" and not ta.spec.spec.devices.constraints
    assert tb.metadata.name == "t-2"
    assert tb.spec.spec.devices.constraints[0].match_attribute == "x.example.com/a"


def test_s_bench_dra_8_other_dra_ops_are_skipped_with_the_reason() -> None:
    """S-BENCH-DRA-8: the binding-condition workloads' ops are skipped, not refused."""
    text = """
- name: B
  workloadTemplate:
  - {opcode: updateDeviceConditions, namespace: test}
  workloads:
  - {name: a}
"""
    (skipped,) = parse_file(yaml.safe_load(text)).skipped
    assert not skipped.refused and "updateDeviceConditions" in skipped.reason
    with pytest.raises(NotModelled):
        parse_workloads(yaml.safe_load(text))


# ---------------------------------------------------------------------- upstream's files

UPSTREAM = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf"
)
DRA_FILES = (
    "dra/performance-config.yaml",
    "dra/extendedresource/performance-config.yaml",
    "dra/extendedresource/scoring/performance-config.yaml",
    "dra/partitionabledevices/performance-config.yaml",
    "dra/prioritizedlist/performance-config.yaml",
    "dra/devicetaints/performance-config.yaml",
    "dra/consumablecapacity/performance-config.yaml",
    "dra/listattributes/performance-config.yaml",
    "dra/compatibilitygroups/performance-config.yaml",
    "dra/workloadresourceclaims/performance-config.yaml",
)


def _upstream(area: str) -> Path:
    path = UPSTREAM / area
    if not path.exists():
        pytest.skip(
            f"no kubernetes/kubernetes checkout with {area} (set KEMU_K8S_CHECKOUT to one; see "
            "docs/benchmarks.md)"
        )
    return path


@pytest.mark.parametrize("area", DRA_FILES)
def test_s_bench_dra_9_upstreams_dra_files_parse_unchanged(area: str) -> None:
    """S-BENCH-DRA-9: every test case of each dra/ file runs at least one workload or is
    listed with its reason naming the field."""
    path = _upstream(area)
    parsed = load_workload_file(path)
    data = yaml.safe_load(path.read_text())
    cases = {w.test_case for w in parsed.workloads} | {s.name.split("/")[0] for s in parsed.skipped}
    assert cases == {case["name"] for case in data}
    for s in parsed.skipped:
        assert s.reason.startswith("["), s.reason  # names the field


def test_s_bench_dra_10_upstreams_dra_file_runs_its_ops() -> None:
    """S-BENCH-DRA-10: dra/performance-config.yaml (1.37): slices by createAny of
    resourceslice-basic-devices.yaml, claims allocated by allocResourceClaims, pods with a
    claim template (the resourceclaim controller runs), thresholds of topic dra."""
    parsed = load_workload_file(_upstream("dra/performance-config.yaml"))
    names = {w.full_name: w for w in parsed.workloads}
    fast = names["SchedulingWithResourceClaimTemplate/fast"]
    kinds = [op.kind.kind if isinstance(op, CreateAny) else type(op).__name__ for op in fast.ops]
    assert kinds == ["CreateNodes", "CreateNodes", "ResourceSlice", "DeviceClass",
                     "ResourceClaim", "AllocResourceClaims", "ResourceClaimTemplate",
                     "CreatePods"]  # fmt: skip
    slices = fast.ops[2]
    assert isinstance(slices, CreateAny) and slices.count == 1
    (s,) = slices.text.objects(1, slices.kind)
    assert isinstance(s, types_pb2.ResourceSlice)
    assert s.spec.node_name == "scheduler-perf-dra-0" and len(s.spec.devices) == 10
    assert needs_claim_controller(fast)
    assert not needs_claim_controller(names["SchedulingWithResourceClaim/fast"])
    big = names["SchedulingWithResourceClaimTemplate/5000pods_500nodes"]
    assert big.threshold == 56.0
    half = names["SchedulingWithResourceClaimTemplate/half_500nodes"]
    measured = half.measured
    assert half.threshold == 60.0 and measured is not None and measured.steady_state == 10.0


def test_s_bench_dra_11_thresholds_lists_every_thresholded_dra_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """S-BENCH-DRA-11: `bench thresholds --list` names each thresholded workload of dra/ and
    dra/extendedresource/ with its threshold, and the version it runs at or why none."""
    _upstream("dra/performance-config.yaml")
    _upstream("dra/extendedresource/performance-config.yaml")
    code = thresholds.main(
        ["--k8s", str(UPSTREAM.parents[2]), "--files", "dra,dra/extendedresource", "--list"]
    )
    assert code == 0
    out = capsys.readouterr().out
    expected = {
        **_thresholds_in("dra/performance-config.yaml", "dra"),
        **_thresholds_in("dra/extendedresource/performance-config.yaml", "extendedresource"),
    }
    # (the 1.37 files' half_500nodes, whatever their version: the rows the bench reports on)
    assert expected["SchedulingWithResourceClaimTemplate/half_500nodes"] == 60
    for name, bound in expected.items():
        (line,) = [x for x in out.splitlines() if x.startswith(name + " ")]
        assert f"threshold {bound:g} pods/s" in line, line
        assert "at emulated version" in line or "runs at none: [" in line


def _thresholds_in(area: str, topic: str) -> dict[str, float]:
    """Each thresholded workload of an upstream file, read from its YAML: `threshold` a number
    or one per benchmark topic (dra/'s `{dra: 56}`)."""
    out: dict[str, float] = {}
    for case in yaml.safe_load((UPSTREAM / area).read_text()):
        for workload in case.get("workloads", []):
            bound = workload.get("threshold")
            if isinstance(bound, dict):
                bound = bound.get(topic)
            if bound:
                out[f"{case['name']}/{workload['name']}"] = float(bound)
    return out


def test_s_bench_dra_12_kemus_own_dra_workloads_parse() -> None:
    """S-BENCH-DRA-12: bench/workloads/ops.yaml's DRAClaimTemplates: the DRA ops in order, a
    claim template (the claim controller runs), steady state from the params."""
    from bench.scheduler_perf_workloads import WORKLOADS_DIR, load_workloads

    names = {w.full_name: w for w in load_workloads(WORKLOADS_DIR / "ops.yaml")}
    burst = names["DRAClaimTemplates/2Nodes"]
    kinds = [op.kind.kind if isinstance(op, CreateAny) else type(op).__name__ for op in burst.ops]
    assert kinds == ["CreateNodes", "CreateNodes", "CreateResourceDriver", "DeviceClass",
                     "ResourceClaim", "AllocResourceClaims", "ResourceClaimTemplate",
                     "CreatePods"]  # fmt: skip
    assert burst.ops[2] == CreateResourceDriver("bench-driver.kemu.io", "dra-*", 4)
    template = burst.ops[6]
    assert isinstance(template, CreateAny)
    (rct,) = template.text.objects(1, template.kind)
    assert isinstance(rct, types_pb2.ResourceClaimTemplate)
    assert [r.name for r in rct.spec.spec.devices.requests] == ["req-0"]
    assert needs_claim_controller(burst)
    measured = names["DRAClaimTemplates/2Nodes_SteadyState"].measured
    assert measured is not None and measured.steady_state == 3.0 and measured.count == 2


def test_s_bench_dra_8_extended_resource_classes_are_not_modelled(tmp_path: Path) -> None:
    """S-BENCH-DRA-8: a DeviceClass with extendedResourceName (dra/extendedresource/) is
    skipped while kemu's scheduler does not model DRAExtendedResource: its pods would wait
    for the op's timeout ("Insufficient example.com/gpu-0")."""
    (tmp_path / "dc.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: c-{{.Index}}\n"
        "spec:\n  extendedResourceName: example.com/gpu-{{.Index}}\n"
    )
    text = """
- name: E
  workloadTemplate:
  - {opcode: createAny, templatePath: dc.yaml, count: 2}
  workloads:
  - {name: a}
"""
    parsed = parse_file(yaml.safe_load(text), base_dir=tmp_path)
    if gate_modelled("DRAExtendedResource"):  # the gate's whole behaviour modelled: it runs
        assert [w.full_name for w in parsed.workloads] == ["E/a"]
        return
    (skipped,) = parsed.skipped
    assert not skipped.refused
    assert "spec.extendedResourceName: extended resources backed by DRA" in skipped.reason


@pytest.mark.parametrize(
    ("resource", "runs"),
    [
        ("example.com/gpu-1", True),
        ("deviceclass.resource.kubernetes.io/test-class-1", True),
        ("cpu", False),
    ],
)
def test_s_bench_dra_13_extended_resource_pods_get_the_claim_controller(
    tmp_path: Path, resource: str, runs: bool
) -> None:
    """S-BENCH-DRA-13: with DRAExtendedResource, pods requesting an extended resource (explicit
    or a class's implicit one) get the resourceclaim controller, as upstream's mustSetupCluster
    runs it whenever DRA is on: a special claim deleted after a failed binding keeps its
    allocation (and its devices) until the controller takes its finalizer off."""
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{{.Index}}\nspec:\n  containers:\n"
        f"  - name: c\n    image: pause\n    resources:\n      requests:\n        {resource}: 1\n"
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        "- name: Ext\n  featureGates:\n    DynamicResourceAllocation: true\n"
        "    DRAExtendedResource: true\n  workloadTemplate:\n  - opcode: createNodes\n"
        "    count: 1\n  - opcode: createPods\n    count: 1\n    podTemplatePath: pod.yaml\n"
        "  workloads:\n  - name: w\n"
    )
    (workload,) = load_workload_file(config).workloads
    assert needs_claim_controller(workload) is runs
