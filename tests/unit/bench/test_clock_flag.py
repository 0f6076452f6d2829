"""Every benchmark that starts a cluster takes `--clock real|virtual` (issue #30): the mode of
the cluster it starts, in its options and its JSON."""

from __future__ import annotations

import importlib

import pytest

from bench.common import jsonable
from kemu.machinery.virtual_time import ClockMode

CLUSTER_BENCHMARKS = [
    "apiserver",
    "autoscaler",
    "flood",
    "kubelet",
    "resize_preemption",
    "scale",
    "scheduler_perf",
]
WITH_OPTIONS_FROM_ARGS = ["autoscaler", "flood", "kubelet", "resize_preemption", "scale"]


@pytest.mark.parametrize("name", CLUSTER_BENCHMARKS)
def test_the_clock_defaults_to_real_and_takes_virtual(name: str) -> None:
    parser = importlib.import_module(f"bench.{name}").build_parser()
    assert parser.parse_args([]).clock == "real"
    assert parser.parse_args(["--clock", "virtual"]).clock == "virtual"


@pytest.mark.parametrize("name", CLUSTER_BENCHMARKS)
def test_an_unknown_clock_is_refused_naming_the_flag(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = importlib.import_module(f"bench.{name}").build_parser()
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["--clock", "sundial"])
    assert e.value.code == 2
    assert "--clock: invalid choice: 'sundial'" in capsys.readouterr().err


@pytest.mark.parametrize("name", WITH_OPTIONS_FROM_ARGS)
def test_the_clock_reaches_the_options_and_their_json(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    opts = module.options_from_args(module.build_parser().parse_args(["--clock", "virtual"]))
    assert opts.clock is ClockMode.VIRTUAL
    assert jsonable(opts)["clock"] == "virtual"
