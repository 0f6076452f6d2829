"""pytest glue for kemu's process-level tests: fixtures and failure reports.

- `cluster_factory` (function scope): `cluster_factory()` returns a new `Cluster` under the
  test's tmp_path; every cluster it made is stopped at teardown, and a process that exits
  uncleanly (non-zero on SIGTERM, or died on its own) fails the test's teardown unless the
  cluster was made with `cluster_factory(check_exits=False)`.
- `rng` (function scope): a `SeededRandom`; a failing test's report shows its seed.
- `pytest_runtest_makereport`: when a test fails, its report gets one section per process of
  every cluster it used — clusters made by `cluster_factory` and any `Cluster` that a fixture
  of any scope handed to the test — with the process's log (its last $KEMU_TEST_LOG_LINES
  lines, default 400; 0 means all).

A conftest enables all of it with `pytest_plugins = ["kemu.testing.pytest_plugin"]` (top-level
conftest only) or by importing the three names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.rand import SeededRandom

__all__ = ["cluster_factory", "pytest_runtest_makereport", "rng"]

_CLUSTERS: Final = pytest.StashKey[list[Cluster]]()
_SEED: Final = pytest.StashKey[SeededRandom]()
LOG_LINES_ENV: Final = "KEMU_TEST_LOG_LINES"


@pytest.fixture
def cluster_factory(
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
