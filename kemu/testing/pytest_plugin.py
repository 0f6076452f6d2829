"""kemu's pytest plugin (entry point `pytest11`: installed with kemu, active in every pytest
run of its environment): real-process clusters as fixtures, and failure reports.

- `kemu_cluster` (function scope): a running cluster, a `Cluster` (kemu.testing.cluster):
  etcd, an apiserver, a scheduler, a controller-manager and the nodes' kubelets, shaped by the
  test's marker (each option may be left out; kemu.testing.spec.ClusterSpec):

      @pytest.mark.kemu(nodes=3, version="1.34", gates={"SchedulerAsyncPreemption": True},
                        scheduler_config=YAML_OR_PATH, clock="virtual",
                        capacity={"cpu": "4", "memory": "8Gi", "pods": "110"},
                        labels={"disk": "ssd"},
                        runtime_config={"scheduling.k8s.io/v1beta1": "true"},
                        apiserver_latency="200ms", etcd_latency="uniform:1ms-5ms",
                        latency_seed=7)

  `runtime_config` is the apiserver's --runtime-config, as kind's `runtimeConfig`: a feature
  gate does not enable its API (upstream serves an alpha group version, or a beta one from
  1.24, only when the runtime config enables it too), so 1.37's pod groups need
  `gates={"GenericWorkload": True}` and `runtime_config={"scheduling.k8s.io/v1beta1": "true"}`.

  `apiserver_latency` is every component's --apiserver-latency (each call waits it before it
  is sent), `etcd_latency` the apiserver's --etcd-latency, both drawn from `latency_seed`
  (kemu.machinery.latency's syntax: "200ms", "uniform:100ms-300ms", "normal:200ms,50ms",
  "lognormal:200ms,50ms"); with `clock="virtual"` the waits are virtual seconds, so "what if
  the apiserver answers in 200 ms" costs no wall time at rate max.

  `cluster.server` is the apiserver's address for `kemu.client.Client`; `cluster.kill(name)`,
  `restart(name)`, `pause(name)`, `resume(name)` act on a component ("scheduler",
  "controllermanager", "kubelet-node-0", "apiserver", "etcd"); `kemu.testing.eventually` waits
  for a condition with a deadline; `kemu.testing.record_pods` and `assert_invariants` record
  every version of a namespace's pods and check kemu's invariants over them (docs/testing.md).
- `kemu_cluster_factory` (function scope): `kemu_cluster_factory()` returns a new, empty
  `Cluster` under the test's tmp_path, for tests that start their own processes or several
  clusters; every cluster it made is stopped at teardown, and a process that exits uncleanly
  (non-zero on SIGTERM, or died on its own) fails the test's teardown unless the cluster was
  made with `kemu_cluster_factory(check_exits=False)`.
- `rng` (function scope): a `SeededRandom`; a failing test's report shows its seed.
- `pytest_runtest_makereport`: when a test fails, its report gets one section per process of
  every cluster it used (clusters made by these fixtures and any `Cluster` that a fixture of
  any scope handed to the test) with the process's log (its last $KEMU_TEST_LOG_LINES lines,
  default 400; 0 means all).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.rand import SeededRandom
from kemu.testing.spec import ClusterSpec, start_cluster

__all__ = [
    "kemu_cluster",
    "kemu_cluster_factory",
    "pytest_configure",
    "pytest_runtest_makereport",
    "rng",
]

_CLUSTERS: Final = pytest.StashKey[list[Cluster]]()
_SEED: Final = pytest.StashKey[SeededRandom]()
LOG_LINES_ENV: Final = "KEMU_TEST_LOG_LINES"
MARKER: Final = "kemu"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(nodes=1, version=None, gates={{}}, scheduler_config=None, clock='real', "
        "capacity=None, labels={}, runtime_config={}, apiserver_latency='0', etcd_latency='0', "
        "latency_seed=0): the shape of the kemu_cluster fixture's cluster",
    )


@pytest.fixture
def kemu_cluster_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., Cluster]]:
    made: list[tuple[Cluster, bool]] = []
    request.node.stash[_CLUSTERS] = []

    def make(*, check_exits: bool = True, **kwargs: Any) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster-{len(made)}", **kwargs)
        made.append((cluster, check_exits))
        request.node.stash[_CLUSTERS].append(cluster)
        return cluster

    yield make

    problems = []
    for cluster, check_exits in reversed(made):
        unclean = cluster.stop()
        if unclean and check_exits:
            # The logs follow in the report: the failure hook adds them to failed teardowns too.
            problems.append(f"{cluster.root}: unclean exits {unclean}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def kemu_cluster(
    request: pytest.FixtureRequest, kemu_cluster_factory: Callable[..., Cluster]
) -> Cluster:
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None and marker.args:
        pytest.fail(f"@pytest.mark.{MARKER} takes keyword arguments only", pytrace=False)
    try:
        spec = ClusterSpec.from_options(**(marker.kwargs if marker is not None else {}))
    except ValueError as e:
        pytest.fail(str(e), pytrace=False)
    cluster = kemu_cluster_factory(clock=spec.clock, latency=spec.latency)
    start_cluster(cluster, spec)
    return cluster


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> SeededRandom:
    r = SeededRandom()
    request.node.stash[_SEED] = r
    return r


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        seed = item.stash.get(_SEED, None)
        if seed is not None:
            report.sections.append(("kemu random seed", f"replay with {seed.replay_hint()}"))
        lines = _log_lines()
        for cluster in _clusters_of(item):
            for name, proc in cluster.processes.items():
                text = proc.logs() if lines == 0 else proc.log_tail(lines)
                state = "running" if proc.running else f"exited {proc.returncode}"
                title = f"kemu log of {name} (pid {proc.pid}, {state}, {proc.log_path})"
                report.sections.append((title, text))
    return report


def _clusters_of(item: pytest.Item) -> list[Cluster]:
    found = list(item.stash.get(_CLUSTERS, None) or ())
    funcargs = getattr(item, "funcargs", {})
    found += [v for v in funcargs.values() if isinstance(v, Cluster)]
    unique: dict[int, Cluster] = {id(c): c for c in found}
    return list(unique.values())


def _log_lines() -> int:
    try:
        return int(os.environ.get(LOG_LINES_ENV, "400"))
    except ValueError:
        return 400
