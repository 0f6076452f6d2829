"""The pure parts of `python -m bench resize_preemption`: the shape and its expected victims,
the pods, the variants' configurations, the watch's record, options and the report."""

from __future__ import annotations

import math

import anyio
import anyio.lowlevel
import pytest

from bench import resize_preemption as rp
from bench.__main__ import BENCHMARKS
from bench.kubelet import distribution
from kemu.api.v1 import types_pb2
from kemu.scheduling.config import config_from_dict


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_benchmark_is_listed() -> None:
    assert BENCHMARKS["resize_preemption"][0] == "bench.resize_preemption"


def test_the_default_shape_is_s_rpe_9_with_x_2_cpu() -> None:
    shape = rp.Shape(nodes=10)
    shape.validate()
    assert (shape.lows, shape.deferred) == (3, 3)
    assert shape.node_cpu_m == 4000  # 2X
    assert (shape.unit_m, shape.high_to_m) == (1000, 2000)  # X/2 -> X
    assert shape.low_to_m == 4000  # 2X: fits the node, so Deferred, not Infeasible
    assert (shape.resizes, shape.pods) == (10, 40)
    assert shape.describe() == (
        "10 nodes of 4 cpu, each: 1 high pod 1 -> 2 cpu (measured), 3 low pods 1 cpu, "
        "3 of them Deferred at 4 cpu"
    )


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (rp.Shape(nodes=0), "--nodes"),
        (rp.Shape(nodes=1, lows=0), "--lows"),
        (rp.Shape(nodes=1, lows=rp.MAX_LOWS + 1), "--lows"),
        (rp.Shape(nodes=1, lows=2, deferred=3), "--deferred"),
        (rp.Shape(nodes=1, deferred=-1), "--deferred"),
        (rp.Shape(nodes=1, high_to_m=1000), "high pod"),
        (rp.Shape(nodes=1, high_to_m=5000), "high pod"),
    ],
)
def test_bad_shapes_name_the_flag(shape: rp.Shape, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        shape.validate()


def test_reprieve_removes_all_then_adds_back_what_fits_in_every_order() -> None:
    # S-RPE-9 in units of X/2: node 4, preemptor 2, three lows counted at 4 (alpha): none
    # can come back.
    assert rp.reprieve_outcomes(4, 2, [4, 4, 4]) == {3}
    # Counted at what they hold (1 each): two come back, one goes.
    assert rp.reprieve_outcomes(4, 2, [1, 1, 1]) == {1}
    # Mixed sizes where the order matters: the 3 first leaves no room for either 2, the two
    # 2s first leave none for the 3.
    assert rp.reprieve_outcomes(5, 1, [3, 2, 2]) == {1, 2}
    assert rp.reprieve_outcomes(4, 5, [1]) == set()  # does not fit an empty node


@pytest.mark.parametrize(
    ("lows", "deferred", "alpha"),
    [(3, 3, 3), (3, 2, 2), (3, 1, 1), (3, 0, 1), (1, 1, 1), (5, 4, 4), (8, 8, 8)],
)
def test_expected_victims_kubelet_minimum_is_one_alpha_preempts_every_deferred_low(
    lows: int, deferred: int, alpha: int
) -> None:
    expected = rp.expected_victims(rp.Shape(nodes=1, lows=lows, deferred=deferred))
    assert expected.kubelet == (1, 1)
    assert expected.alpha == (alpha, alpha)


def test_span_text() -> None:
    assert rp.span_text((3, 3)) == "3"
    assert rp.span_text((1, 2)) == "1-2"


def test_pods_fill_every_node_bound_with_priority_classes() -> None:
    shape = rp.Shape(nodes=2, lows=2, deferred=1)
    pods = rp.pod_objects(shape)
    assert [(p.metadata.name, p.spec.node_name, p.spec.priority_class_name) for p in pods] == [
        ("high-0", "rpe-0", rp.HIGH_CLASS),
        ("low-0-0", "rpe-0", rp.LOW_CLASS),
        ("low-0-1", "rpe-0", rp.LOW_CLASS),
        ("high-1", "rpe-1", rp.HIGH_CLASS),
        ("low-1-0", "rpe-1", rp.LOW_CLASS),
        ("low-1-1", "rpe-1", rp.LOW_CLASS),
    ]
    for p in pods:
        assert p.metadata.namespace == rp.NAMESPACE
        (c,) = p.spec.containers
        assert dict(c.resources.requests) == {"cpu": "1", "memory": rp.POD_MEMORY}
        assert not c.resources.limits  # Burstable: the resize keeps the QoS class
    classes = {pc.metadata.name: pc.value for pc in rp.priority_classes()}
    assert classes == {rp.LOW_CLASS: rp.LOW_PRIORITY, rp.HIGH_CLASS: rp.HIGH_PRIORITY}
    assert rp.LOW_PRIORITY < rp.HIGH_PRIORITY


def test_with_cpu_copies_the_pod() -> None:
    pod = rp.pod_objects(rp.Shape(nodes=1))[0]
    resized = rp.with_cpu(pod, 2500)
    assert resized.spec.containers[0].resources.requests["cpu"] == "2500m"
    assert pod.spec.containers[0].resources.requests["cpu"] == "1"
    assert rp.cpu_text(4000) == "4"


def test_variant_a_runs_the_default_profile_b_sets_the_kubelet_like_arg() -> None:
    assert rp.scheduler_config(False) is None
    config = rp.scheduler_config(True)
    assert config is not None
    (profile,) = config["profiles"]
    assert profile["pluginConfig"] == [
        {"name": "NodeResourcesFit", "args": {"kemuKubeletLikeResizeAccounting": True}}
    ]
    config_from_dict(config)  # the configuration's form is valid (the arg is checked at start)
    assert rp.VARIANTS["A"].accounting == "upstream alpha (default)"
    assert rp.VARIANTS["B"].accounting == "kemuKubeletLikeResizeAccounting: true"


def _pod(
    name: str,
    *,
    desired: str = "1",
    allocated: str = "1",
    actual: str = "1",
    conditions: tuple[tuple[str, str, str], ...] = (),
    node: str = "rpe-0",
    phase: str = "Running",
) -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name = name
    pod.spec.node_name = node
    c = pod.spec.containers.add()
    c.name = rp.CONTAINER
    c.resources.requests["cpu"] = desired
    s = pod.status.container_statuses.add()
    s.name = rp.CONTAINER
    s.allocated_resources["cpu"] = allocated
    s.resources.requests["cpu"] = actual
    pod.status.phase = phase
    for kind, status, reason in conditions:
        pod.status.conditions.add(type=kind, status=status, reason=reason)
    return pod


DEFERRED = (("PodResizePending", "True", "Deferred"),)
IN_PROGRESS = (("PodResizeInProgress", "True", ""),)
PREEMPTED = (("DisruptionTarget", "True", "PreemptionByScheduler"),)


def test_pod_state_predicates() -> None:
    assert rp.is_deferred(_pod("p", desired="2", conditions=DEFERRED))
    assert not rp.is_deferred(_pod("p", conditions=(("PodResizePending", "True", "Infeasible"),)))
    assert rp.is_preempted(_pod("p", conditions=PREEMPTED))
    assert not rp.is_preempted(_pod("p", conditions=(("DisruptionTarget", "True", "Other"),)))
    allocated = _pod("p", desired="2", allocated="2", actual="1", conditions=IN_PROGRESS)
    assert rp.is_allocated(allocated, 2000) and not rp.is_actuated(allocated, 2000)
    done = _pod("p", desired="2000m", allocated="2", actual="2")
    assert rp.is_actuated(done, 2000)
    assert not rp.is_actuated(_pod("p"), 2000)  # nothing resized yet
    assert rp.desired_cpu(types_pb2.Pod(spec=types_pb2.PodSpec(containers=[{}]))) is None
    assert rp.allocated_cpu(types_pb2.Pod()) is None and rp.actual_cpu(types_pb2.Pod()) is None


def test_the_tracker_records_one_resize_from_request_to_actuation() -> None:
    clock = Clock()
    t = rp.Tracker(clock)
    t.observe(_pod("high-0"))
    t.observe(_pod("low-0-0"))
    assert t.running == {"high-0", "low-0-0"}
    clock.now = 1.0
    t.resizing("high-0", 2000)
    t.observe(_pod("high-0"))  # a late event from before the resize: nothing
    assert not (t.deferred or t.allocated or t.actuated)
    clock.now = 1.1
    t.observe(_pod("high-0", desired="2"))  # the resize's own event
    clock.now = 1.2
    t.observe(_pod("high-0", desired="2", conditions=DEFERRED))
    clock.now = 1.3
    t.observe(_pod("low-0-0", conditions=PREEMPTED))
    clock.now = 1.4
    t.observe(_pod("low-0-0", conditions=PREEMPTED), "DELETED")
    clock.now = 1.6
    t.observe(_pod("high-0", desired="2", allocated="2", conditions=IN_PROGRESS))
    clock.now = 2.1
    t.observe(_pod("high-0", desired="2", allocated="2", actual="2"))
    clock.now = 2.5
    t.observe(_pod("high-0", desired="2", allocated="2", actual="2"))  # first times stay
    assert t.requested == {"high-0": 1.0}
    assert t.deferred == {"high-0": 1.2}
    assert t.allocated == {"high-0": 1.6}
    assert t.actuated == {"high-0": 2.1}
    assert t.preempted == {"low-0-0": 1.3} and t.deleted == {"low-0-0": 1.4}
    assert t.first_victim("rpe-0", 1.0) == 1.3
    assert t.first_victim("rpe-0", 1.35) is None
    assert t.victims_per_node(["rpe-0", "rpe-1"], 0.0) == {"rpe-0": 1, "rpe-1": 0}
    assert rp.latencies(["high-0", "high-1"], t.deferred, t.actuated) == [pytest.approx(0.9)]


@pytest.mark.anyio
async def test_tracker_wait_wakes_on_observe_and_times_out() -> None:
    t = rp.Tracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(t.wait, lambda: "p" in t.running, 5.0, "p Running")
        await anyio.lowlevel.checkpoint()
        t.observe(_pod("p"))
    with pytest.raises(TimeoutError, match="never: not within 0.01 s"):
        await t.wait(lambda: False, 0.01, "never")


def _args(*argv: str) -> rp.Options:
    return rp.options_from_args(rp.build_parser().parse_args(list(argv)))


def test_options_defaults_quick_and_explicit_flags() -> None:
    opts = _args()
    assert opts.shape == rp.Shape(nodes=200, lows=3, deferred=3)
    assert (opts.variants, opts.rounds, opts.timeout) == (("A", "B"), 2, 60.0)
    assert (opts.actuation_delay, opts.shutdown, opts.settle) == (0.5, 0.0, 1.0)
    quick = _args("--quick")
    assert (quick.shape.nodes, quick.rounds, quick.timeout) == (4, 1, 30.0)
    opts = _args("--quick", "--nodes", "7", "--lows", "4", "--deferred", "0", "--variants", "b,a")
    assert opts.shape == rp.Shape(nodes=7, lows=4, deferred=0)
    assert opts.variants == ("B", "A")
    assert _args("--lows", "5").shape.deferred == 5  # M defaults to K


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--variants", "A,C"], "--variants"),
        (["--variants", ","], "--variants"),
        (["--rounds", "0"], "--rounds"),
        (["--timeout", "0"], "--timeout"),
        (["--shutdown", "-1"], "--shutdown"),
        (["--creators", "0"], "--creators"),
        (["--lows", "2", "--deferred", "3"], "--deferred"),
    ],
)
def test_bad_options_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _args(*argv)


def _result(variant: str, run: int, victims: int, *, error: str = "") -> rp.Result:
    shape = rp.Shape(nodes=4)
    r = rp.Result(variant, rp.VARIANTS[variant].accounting, run=run, shape=shape, error=error)
    if error:
        return r
    r.expected = rp.expected_victims(shape)
    r.resizes = r.completed = 4
    r.phase_seconds = 1.5
    r.deferred_to_actuated = distribution([0.6, 0.7, 0.8, 0.9])
    r.victims_by_condition = r.deleted_lows = r.preempted_events = 4 * victims
    r.victims_histogram = {victims: 4}
    r.metric_victims, r.metric_preemptions, r.preemption_attempts = 4.0 * victims, 4.0, 6.0
    r.cpu_cores = {"scheduler": 0.2, "kubelet": 0.1}
    r.rss_kib = {"scheduler": 50 * 1024}
    r.scheduler_settled = True
    return r


def test_render_has_a_column_per_run_and_an_a_vs_b_summary() -> None:
    results = [_result("A", 1, 3), _result("B", 1, 1), _result("A", 2, 3), _result("B", 2, 1)]
    text = rp.render(results)
    header = next(line for line in text.splitlines() if line.lstrip().startswith("A#1"))
    assert header.split() == ["A#1", "B#1", "A#2", "B#2"]
    victims = next(
        line for line in text.splitlines() if "victims / resize: DisruptionTarget" in line
    )
    assert victims.split()[-4:] == ["3.00", "1.00", "3.00", "1.00"]
    assert "3x4" in text and "1x4" in text
    expected = next(line for line in text.splitlines() if line.startswith("expected"))
    assert expected.split()[-3:] == ["1", "/", "3"]
    assert "A (alpha) vs B (kubelet-like), means (A: 2 runs, B: 2 runs)" in text
    summary = next(
        line for line in text.splitlines() if line.startswith("victims / resize (DisruptionTarget)")
    )
    assert summary.split()[-3:] == ["3.00", "1.00", "0.33"]
    assert "Deferred -> actuated p50 / p99 / max ms" in text and "700 / 900 / 900" in text


def test_render_reports_a_refused_b_and_resizes_that_never_completed() -> None:
    a = _result("A", 1, 3)
    a.completed, a.not_completed = 3, ["high-3"]
    error = (
        "ProcessStartError: scheduler: exited with code 1 before becoming ready; argv: ...\n"
        "--- last 40 lines ---\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in new\n'
        "ValueError: unknown NodeResourcesFit arg(s) ['kemuKubeletLikeResizeAccounting']\n"
    )
    b = _result("B", 1, 0, error=error)
    text = rp.render([a, b])
    assert "A#1: never completed: high-3" in text
    assert (
        "B#1 FAILED: ProcessStartError: scheduler: exited with code 1 before becoming ready; "
        "argv: ... ... ValueError: unknown NodeResourcesFit arg(s) "
        "['kemuKubeletLikeResizeAccounting']"
    ) in text
    assert "A (alpha) vs B" not in text  # no successful B run to compare with
    never = next(line for line in text.splitlines() if line.startswith("never completed"))
    assert never.split()[-2:] == ["1", "-"]  # a failed run shows no figures
    accounting = next(line for line in text.splitlines() if line.startswith("accounting"))
    assert accounting.split()[-2:] == ["alpha", "kubelet-like"]


def test_victims_per_resize_is_nan_without_resizes() -> None:
    r = rp.Result("A", "x")
    assert all(math.isnan(v) for v in r.victims_per_resize().values())
    assert rp.histogram_text({}) == "-" and rp.histogram_text({3: 2, 1: 5}) == "1x5 3x2"
