"""Traces on real processes (issue #33): SimKube's example traces replay on a fresh cluster
in virtual time, a trace recorded from a running kemu cluster replays, and kemu.whatif of a
configuration against itself finds nothing while two scoring strategies differ. The commands
run as a user runs them (`python -m kemu.trace`, `python -m kemu.whatif`), each starting its
own cluster."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kinds
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.cluster_time import START_SECONDS
from kemu.testing.processes import REPO_ROOT, python_env, python_module_argv, run_python_module
from kemu.timeline.page import read_page
from kemu.trace import files, simkube
from kemu.trace.model import Trace, TraceEvent, TrackedObject, ns_name

pytestmark = [pytest.mark.integration]

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "simkube"
EXAMPLES = REPO_ROOT / "examples" / "traces"


def _replay(trace: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    done = run_python_module(
        "kemu.trace",
        ["replay", str(trace), "--json", str(out), "--root", str(tmp_path / "run"), "--quiet",
         *extra],
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_simkubes_bare_pods_example_replays_faster_than_it_happened(tmp_path: Path) -> None:
    report = _replay(FIXTURES / "bare-pods.sktrace", tmp_path, "--html", str(tmp_path / "r.html"))
    assert report["span_s"] == 162
    assert 0 < report["wall_s"] < report["span_s"]
    assert report["startup_s"] > 0
    assert (report["pods_created"], report["pods_bound"]) == (4, 4)
    assert report["unschedulable_at_end"] == []
    assert report["unsupported"] == {"kinds": {}, "fields": {}}
    assert report["refused"] == []
    pods = {p["name"]: p for p in report["pods"]}
    # each pod created at its event's time in the trace, bound at once (virtual time)
    assert sorted(p["created"] for p in pods.values()) == [0.0, 42.0, 102.0, 162.0]
    # the first three finished their recorded run (12, 30, 30 s); the last still runs
    assert [pods[k]["phase"] for k in sorted(pods)] == ["Succeeded"] * 3 + ["Running"]
    assert [o["kind"] for o in report["objects"]] == ["Pod"] * 4
    assert report["time_to_bind_s"]["count"] == 4
    assert report["nodes_over_time"][-1][1] == report["cluster"]["nodes"][0]["count"]
    # The picture: kemu.timeline's, on the cluster's (virtual) clock
    (run,) = read_page((tmp_path / "r.html").read_text()).runs
    assert len(run.lanes) == report["cluster"]["nodes"][0]["count"]
    assert sorted(run.bars) == sorted(pods)
    assert run.facts["pods created/bound"] == "4 / 4"
    assert run.span is not None
    start, end = run.span
    tail = 60.0
    assert abs(start) < 1 and abs(end - (report["span_s"] + tail)) < 1, run.span
    created: list[float] = []
    for story in run.stories:
        steps = story[3]
        assert isinstance(steps, list)
        created += [float(t) for t, what in steps if what == "created"]
    assert [round(t) for t in sorted(created)] == [0, 42, 102, 162]


def test_simkubes_cronjob_example_replays_with_a_job_at_each_scheduled_minute(
    tmp_path: Path,
) -> None:
    # "* * * * *" from 1743286823 until its deletion 205 s later: the Jobs of the minutes
    # 1743286860, ...920 and ...980, as in the recorded cluster (its pods started at 861,
    # 921, 981 and ran 30 s), each named <cronjob>-<minutes since the epoch>.
    report = _replay(FIXTURES / "cronjob.sktrace", tmp_path)
    assert report["unsupported"] == {"kinds": {}, "fields": {}}
    assert report["refused"] == []
    assert [o["kind"] for o in report["objects"]] == ["CronJob"]
    pods = sorted(report["pods"], key=lambda p: p["created"])
    minutes = [1743286860 // 60 + i for i in range(3)]
    assert [p["owner"] for p in pods] == [f"Job/default/hello-simkube-{m}" for m in minutes]
    origin = 1743286823
    for pod, minute in zip(pods, minutes, strict=True):
        assert minute * 60 - origin <= pod["created"] < minute * 60 - origin + 5, pod
        assert pod["phase"] == "Succeeded"


def test_a_bad_cluster_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text("nodes: [{name: a, count: 0}]\n")
    done = run_python_module(
        "kemu.trace", ["replay", str(FIXTURES / "bare-pods.sktrace"), "--cluster", str(bad)]
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"python -m kemu.trace: error: {bad}: nodes[0].count: must be an integer >= 1"
    ]


def _deployment(name: str, replicas: int, cpu: str) -> dict[str, Any]:
    labels = {"app": name}
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def _deployments_trace(path: Path, events: list[TraceEvent]) -> Path:
    """A SimKube trace of Deployments with these events, written to `path`."""
    trace = Trace(tracked={"apps/v1.Deployment": TrackedObject(("/spec/template",))}, events=events)
    path.write_bytes(simkube.write(trace))
    return path


def _scoring_trace(path: Path) -> Path:
    """Two Deployments and a scale-up: with two 4-cpu nodes, MostAllocated and
    LeastAllocated place some of their pods on different nodes."""
    return _deployments_trace(
        path,
        [
            TraceEvent(1_800_000_000),
            TraceEvent(1_800_000_000, applied=[_deployment("web", 3, "1")]),
            TraceEvent(1_800_000_030, applied=[_deployment("api", 2, "1500m")]),
            TraceEvent(1_800_000_090, applied=[_deployment("web", 4, "1")]),
        ],
    )


def _whatif(
    trace: Path, a: Path, b: Path | None, tmp_path: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "whatif.json"
    b_args = ["--b", str(b)] if b is not None else []
    done = run_python_module(
        "kemu.whatif",
        [str(trace), "--a", str(a), *b_args, "--json", str(out), "--fail-on-diff",
         "--quiet", "--root", str(tmp_path / "runs"), *extra],
        timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return done.returncode, result


@pytest.mark.long  # make test-long: the next test covers it in make test
def test_whatif_of_a_configuration_against_itself_finds_no_difference(tmp_path: Path) -> None:
    """Two replays of one configuration: no difference, exit 0 under --fail-on-diff. In `make
    test` the next test proves as much (its two replays of this trace and configuration,
    0 and 200 ms apart, place every pod alike, and differ only by the 200 ms in binding; the
    exit code is one line of kemu/whatif.py's main), so this one, ~10 CPU-s, runs in `make
    test-long`."""
    trace = _scoring_trace(tmp_path / "scoring.sktrace")
    config = EXAMPLES / "most-allocated.yaml"
    code, result = _whatif(trace, config, config, tmp_path)
    assert result["diff"] == []
    assert code == 0
    assert result["a"]["pods_bound"] == result["b"]["pods_bound"] == 6


def test_whatif_at_0_and_200ms_of_apiserver_latency_binds_every_pod_200ms_later(
    tmp_path: Path,
) -> None:
    """Issue #58 item 4's "done when": one trace at 0 and at 200 ms of apiserver latency, in
    virtual time. Every pod lands where it did, its binding 200 virtual ms later after its
    creation (the scheduler's Bind waits it); the pods themselves come later too (the
    controllers' creates wait it as well)."""
    trace = _scoring_trace(tmp_path / "scoring.sktrace")
    config = EXAMPLES / "most-allocated.yaml"
    code, result = _whatif(
        trace, config, None, tmp_path, "--apiserver-latency", "200ms", "--bind-threshold", "0.1"
    )
    assert code == 1
    assert result["names"]["b"] == f"{config} with latency apiserver 200ms, etcd 0s"
    assert result["a"]["pods_bound"] == result["b"]["pods_bound"] == 6
    assert {d["what"] for d in result["diff"]} == {"bound"}
    assert len(result["diff"]) == 6
    a, b = result["a"]["time_to_bind_s"], result["b"]["time_to_bind_s"]
    assert b["max"] - a["max"] == pytest.approx(0.2, abs=0.002)
    assert b["p50"] - a["p50"] == pytest.approx(0.2, abs=0.002)
    assert all(d["b"] > d["a"] for d in result["diff"])


@pytest.fixture(scope="module")
def scoring_whatif(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    """kemu.whatif of MostAllocated against LeastAllocated on the scoring trace, one run
    after the other (its exit code, its --json, its --html page), for the two tests that
    read it."""
    tmp_path = tmp_path_factory.mktemp("scoring-whatif")
    trace = _scoring_trace(tmp_path / "scoring.sktrace")
    html = tmp_path / "whatif.html"
    a, b = EXAMPLES / "most-allocated.yaml", EXAMPLES / "least-allocated.yaml"
    code, result = _whatif(trace, a, b, tmp_path, "--html", str(html))
    return code, result, html


def test_whatif_of_two_scoring_strategies_shows_pods_placed_elsewhere(
    scoring_whatif: tuple[int, dict[str, Any], Path],
) -> None:
    code, result, html = scoring_whatif
    assert code == 1  # --fail-on-diff, and the reports written all the same
    assert result["diff"], "MostAllocated and LeastAllocated placed every pod alike"
    assert {d["what"] for d in result["diff"]} == {"node"}
    assert all(d["pod"].startswith("Deployment/shop/") for d in result["diff"])
    drawn = read_page(html.read_text())
    a, b = drawn.runs
    assert a.title.startswith("A: ") and b.title.startswith("B: ")
    assert len(a.bars) == result["a"]["pods_bound"] and len(b.bars) == result["b"]["pods_bound"]
    (table,) = drawn.tables
    assert [row[:2] for row in table.rows] == [[d["pod"], d["what"]] for d in result["diff"]]


AUTOSCALED = """\
nodes:
- {name: static, count: 1, capacity: {cpu: "2", memory: 8Gi, pods: "110"}}
nodeGroups:
- name: pool
  minSize: 0
  maxSize: 3
  template: {capacity: {cpu: "2", memory: 8Gi, pods: "110"}}
autoscaler: {scale-down-unneeded-time: 1m, scale-down-delay-after-add: 1m}
"""


@pytest.mark.long  # a replay of the trace suite: make test-long
def test_an_autoscaled_replay_grows_and_shrinks_its_node_group(tmp_path: Path) -> None:
    """A replay's node groups run as one hollow kubelet per group (the cloud's
    --kubelet-processes node-group): the autoscaler adds the instances a scale-up needs, their
    nodes run the pods, and they are removed once the Deployment shrinks."""
    path = _deployments_trace(
        tmp_path / "autoscaled.sktrace",
        [
            TraceEvent(1_800_000_000),
            TraceEvent(1_800_000_000, applied=[_deployment("web", 4, "1500m")]),
            TraceEvent(1_800_000_300, applied=[_deployment("web", 0, "1500m")]),
            TraceEvent(1_800_000_600),
        ],
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(AUTOSCALED)
    report = _replay(path, tmp_path, "--cluster", str(cluster))
    assert (report["pods_created"], report["pods_bound"]) == (4, 4)
    assert report["unschedulable_at_end"] == []
    counts = [n for _, n in report["nodes_over_time"]]
    assert max(counts) == 4, counts  # the static node and three of the group's
    assert counts[-1] == 1, counts  # the group's empty nodes removed once web went to 0
    (logs,) = tmp_path.glob("run/**/cloud/logs")
    assert sorted(p.name for p in logs.glob("*.log")) == ["pool.log"]
    assert report["processes"]["kubelet-cloud-0"]["peak_rss_kib"] > 0  # the group's kubelet


def _unnamed(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in p.items() if k != "name"} for p in pods]


@pytest.mark.long  # a replay of the trace suite: make test-long
def test_whatif_in_parallel_replays_what_one_after_the_other_does(
    tmp_path: Path, scoring_whatif: tuple[int, dict[str, Any], Path]
) -> None:
    """--parallel: both clusters at once, each replay in a process of its own; in virtual
    time the runs are those of one after the other, pod by pod."""
    trace = _scoring_trace(tmp_path / "scoring.sktrace")
    a, b = EXAMPLES / "most-allocated.yaml", EXAMPLES / "least-allocated.yaml"
    _, one_after, _ = scoring_whatif
    html = tmp_path / "whatif.html"
    code, side = _whatif(trace, a, b, tmp_path, "--parallel", "--html", str(html))
    assert code == 1
    assert side["diff"] == one_after["diff"] != []
    for run in ("a", "b"):  # pod names are generated: the rest of each pod's record agrees
        assert _unnamed(side[run]["pods"]) == _unnamed(one_after[run]["pods"])
        assert side[run]["objects"] == one_after[run]["objects"]
    drawn = read_page(html.read_text())  # both timelines came back from their processes
    assert [len(r.bars) for r in drawn.runs] == [side["a"]["pods_bound"], side["b"]["pods_bound"]]


@pytest.mark.long  # a replay of the trace suite: make test-long
@pytest.mark.anyio
async def test_a_recorded_kemu_cluster_replays(tmp_path: Path) -> None:
    out = tmp_path / "recorded.sktrace"
    with Cluster(tmp_path / "cluster", clock=ClockMode.VIRTUAL) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)
            c.start_scheduler()
            # (its informers' first lists pass its rate limiter's burst: time to start)
            c.start_controllermanager(wait=False)
            c.start_kubelet("n1")
            await client.advance_clock(START_SECONDS)
            c.wait_ready("controllermanager")
            await client.advance_clock(0)
            await client.create(types_pb2.Namespace(metadata=types_pb2.ObjectMeta(name="shop")))
            argv = python_module_argv(
                "kemu.trace", ["record", "--server", c.server, "--out", str(out)]
            )
            async with await anyio.open_process(
                argv, cwd=REPO_ROOT, env=python_env(), stderr=subprocess.PIPE
            ) as recorder:
                assert recorder.stderr is not None
                seen = b""
                with anyio.fail_after(30):
                    while b"recording from" not in seen:
                        seen += await recorder.stderr.receive()
                web = _deployment("web", 2, "500m")
                await client.create(convert.from_dict(kinds.BY_KIND["Deployment"], web))
                await client.advance_clock(10)
                await client.patch(types_pb2.Deployment, "web", {"spec": {"replicas": 3}}, "shop")
                await client.advance_clock(10)
                bare = make_pod("batch-1").namespace("shop").req(cpu="100m")
                bare = bare.annotation("kubelet.kemu.io/run-duration", "5s")
                await client.create(bare.obj())
                await client.advance_clock(20)
                recorder.send_signal(signal.SIGINT)
                with anyio.fail_after(30):
                    code = await recorder.wait()
                    async for chunk in recorder.stderr:
                        seen += chunk
                assert code == 0, seen.decode(errors="replace")
    trace, fmt = files.load(out)
    assert fmt == "simkube"
    applied = [(o["kind"], ns_name(o).rpartition("/")[2]) for e in trace.events for o in e.applied]
    assert applied == [("Deployment", "web"), ("Deployment", "web"), ("Pod", "batch-1")]
    assert trace.events[0].applied == [] and trace.span >= 20
    lifecycles = trace.lifecycles_of("v1.Pod", "shop/batch-1")
    assert [lc.duration for lc in lifecycles] == [5]
    assert len(trace.lifecycles_of("apps/v1.Deployment", "shop/web")) == 3

    report = await anyio.to_thread.run_sync(_replay, out, tmp_path / "replay")
    pods = report["pods"]
    assert report["pods_bound"] == report["pods_created"] == 4
    assert sorted(p["owner"] for p in pods) == ["", *["Deployment/shop/web"] * 3]
    assert {o["name"]: o["desired_replicas"] for o in report["objects"]} == {
        "web": 3,
        "batch-1": 1,
    }
    batch = next(p for p in pods if p["owner"] == "")
    assert batch["phase"] == "Succeeded"  # its recorded 5 s run, replayed


OPENB = REPO_ROOT / "tests" / "fixtures" / "openb"


@pytest.mark.long  # a replay of the trace suite: make test-long
def test_an_openb_gpu_trace_converts_and_replays_with_gpus_respected(tmp_path: Path) -> None:
    """tests/fixtures/openb's synthetic pair (the columns of Alibaba's GPU trace of 2023):
    three nodes with 0, 1 and 2 GPUs; a 2-GPU pod lands on the 2-GPU node only, a 4-GPU pod
    never binds, pods wait for GPUs that deletions free, and no node ever holds more GPU
    pods than its GPUs."""
    out = tmp_path / "openb.sktrace"
    done = run_python_module(
        "kemu.trace",
        ["convert-openb", "--nodes", str(OPENB / "openb_node_list_test.csv"),
         "--pods", str(OPENB / "openb_pod_list_test.csv"), "--out", str(out)],
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cluster = tmp_path / "openb.cluster.yaml"
    report = _replay(out, tmp_path, "--cluster", str(cluster))
    assert report["refused"] == [] and report["unsupported"] == {"kinds": {}, "fields": {}}
    pods = {p["name"].removeprefix("openb/"): p for p in report["pods"]}
    assert len(pods) == 12
    gpus = {"cpu-8c-32g": 0, "t4x1-16c-64g": 1, "v100m32x2-32c-128g": 2}

    def pool(pod: str) -> str:
        node = pods[pod]["node"]
        return next(p for p in gpus if node.startswith(p + "-"))

    assert pool("openb-pod-0001") == "v100m32x2-32c-128g"  # 2 GPUs: the only node with 2
    assert pods["openb-pod-0006"]["bound"] is None  # 4 GPUs: no node has them
    assert pool("openb-pod-0002") == "t4x1-16c-64g"  # the only GPU left at 20 s
    # V100M32 asked for, the V100 node's GPUs held by openb-pod-0001 until 400 s
    assert pool("openb-pod-0003") == "v100m32x2-32c-128g"
    # (the pods' containers exit at once when deleted: the GPUs are free at the deletion)
    assert 400 <= pods["openb-pod-0003"]["bound"] < 430
    assert 400 <= pods["openb-pod-0004"]["bound"] < 430
    assert pool("openb-pod-0009") in ("t4x1-16c-64g", "v100m32x2-32c-128g")
    assert 650 <= pods["openb-pod-0011"]["bound"] < 680  # every GPU taken from 620 to 650 s
    assert report["unschedulable_at_end"] == []
    # at every binding, the pods on a node ask for no more GPUs than it has
    asks = {"0001": 2, "0002": 1, "0003": 1, "0004": 1, "0009": 1, "0011": 1}
    for name, pod in pods.items():
        if pod["bound"] is None:
            continue
        at, node = pod["bound"], pod["node"]
        held = sum(
            asks.get(other.removeprefix("openb-pod-"), 0)
            for other, o in pods.items()
            if o["node"] == node and o["bound"] is not None and o["bound"] <= at
            and (o["deleted"] is None or o["deleted"] > at)
        )  # fmt: skip
        assert held <= gpus[pool(name)], (name, node, at)
