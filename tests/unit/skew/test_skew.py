"""kemu.skew without processes: the generator (policy -> cells), the skew policy's refusals,
the expectations computed from a cell, and the CLI's errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kemu.component.version import Version
from kemu.skew import expect
from kemu.skew.cli import main
from kemu.skew.matrix import MatrixError, cell_from_axes, generate, load, pairwise
from kemu.skew.policy import Cell, UnsupportedCellError, check, violations, warnings


def v(text: str) -> Version:
    return Version.parse(text)


def cell(
    api: str,
    *,
    api2: str = "",
    sched: str = "",
    cm: str = "",
    kubelet: str = "",
    gates=None,
    runtime_config=None,
) -> Cell:
    apis = (v(api), v(api2)) if api2 else (v(api),)
    return Cell(
        "c",
        apis,
        scheduler=v(sched or api),
        controllermanager=v(cm or api),
        kubelet=v(kubelet or api),
        gates=gates or {},
        runtime_config=runtime_config or {"api/all": "true"},
    )


# ------------------------------------------------------------------ policy


@pytest.mark.parametrize(
    ("c", "rule"),
    [
        (cell("1.36", sched="1.37"), "scheduler 1.37 is newer than the apiserver 1.36"),
        (cell("1.37", sched="1.35"), "scheduler 1.35 is 2 minors older"),
        (cell("1.37", cm="1.35"), "controllermanager 1.35 is 2 minors older"),
        (cell("1.36", kubelet="1.37"), "kubelet 1.37 is newer than the apiserver 1.36"),
        (cell("1.37", kubelet="1.33"), "kubelet 1.33 is 4 minors older"),
        (cell("1.25", kubelet="1.22"), "(at most 2 for kubelet 1.22)"),
        (cell("1.37", api2="1.35", sched="1.37", cm="1.37", kubelet="1.35"), "2 minors apart"),
        # kubelets are relative to the oldest apiserver of a pair.
        (
            cell("1.36", api2="1.37", kubelet="1.32"),
            "kubelet 1.32 is 4 minors older than the apiserver 1.36",
        ),
        (cell("1.37", gates={"scheduler": {"PreferNominatedNode": False}}), "PreferNominatedNode"),
        (cell("1.37", gates={"etcd": {}}), 'unknown component "etcd"'),
        (cell("1.38"), "outside kemu's versions"),
    ],
)
def test_the_policy_refuses_unsupported_cells_naming_the_rule(c: Cell, rule: str) -> None:
    assert any(rule in p for p in violations(c)), violations(c)
    with pytest.raises(UnsupportedCellError, match="cell c is not supported"):
        check(c)


@pytest.mark.parametrize(
    "c",
    [
        cell("1.37"),
        cell("1.37", sched="1.36", cm="1.36", kubelet="1.34"),
        cell("1.24", kubelet="1.22"),
        cell("1.25", kubelet="1.23"),
        cell("1.37", api2="1.36", kubelet="1.33"),
    ],
)
def test_supported_cells_pass(c: Cell) -> None:
    assert violations(c) == []


def test_a_control_plane_one_minor_older_is_a_warning() -> None:
    assert warnings(cell("1.37", sched="1.36")) == [
        "scheduler 1.36 is one minor older than the apiserver 1.37 (an upgrade)",
        # the autoscaler follows the scheduler unless the cell names its version
        "autoscaler 1.36 is one minor older than the apiserver 1.37 (an upgrade)",
    ]
    assert check(cell("1.37")) == []


# ------------------------------------------------------------------ generator


def test_pairwise_covers_every_pair_with_fewer_rows() -> None:
    rows = [(a, b, c) for a in range(3) for b in range(2) for c in range(2)]
    chosen = [rows[i] for i in pairwise(rows)]
    assert len(chosen) < len(rows)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert {(r[i], r[j]) for r in rows} == {(r[i], r[j]) for r in chosen}


def test_cells_from_axes_follow_the_policy() -> None:
    c = cell_from_axes(v("1.37"), True, 1, "max")
    # the older apiserver first; the 1.36 scheduler on it, the controller-manager on the other
    assert c.apiservers == (v("1.36"), v("1.37"))
    assert (c.scheduler, c.scheduler_apiserver, c.controllermanager_apiserver) == (v("1.36"), 0, 1)
    assert c.kubelet == v("1.33")  # 3 below the oldest apiserver
    assert cell_from_axes(v("1.24"), False, 0, "max").kubelet == v("1.22")  # 2 before 1.25
    # a 1.37 controller-manager may not talk to the 1.36 apiserver of the pair
    same = cell_from_axes(v("1.37"), True, 0, 0)
    assert (same.scheduler_apiserver, same.controllermanager_apiserver) == (1, 1)
    assert violations(c) == []


def test_generate_keeps_only_supported_cells_and_all_pairs() -> None:
    axes: dict[str, list[Any]] = {
        "apiserver": ["1.37", "1.22", "1.21"],
        "ha": [False, True],
        "control_plane_lag": [0, 1],
        "kubelet_lag": [0, "max"],
    }
    cells = generate(axes)
    assert cells and all(violations(c) == [] for c in cells)
    # 1.21 has no older minor in kemu: no pair, no lag; it still appears.
    assert any(c.apiservers == (v("1.21"),) for c in cells)
    assert {len(c.apiservers) for c in cells} == {1, 2}
    assert {(c.apiservers[-1], c.scheduler) for c in cells} >= {
        (v("1.37"), v("1.37")),
        (v("1.37"), v("1.36")),
    }


def test_the_declared_matrix_loads() -> None:
    m = load()
    assert m.cells and m.slice and m.unsupported
    assert all(violations(c) == [] for c in (*m.cells, *m.slice))
    assert all(violations(c) for c in m.unsupported)
    assert len(m.slice) < len(m.cells)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("axes: [1", "not YAML"),
        ("[]", "a mapping with axes"),
        ("axes: {apiserver: []}", "axes.apiserver: a non-empty list is required"),
        (
            "axes: {apiserver: [1.37], ha: [false], control_plane_lag: [0], kubelet_lag: [0]}",
            "axes.apiserver: 1.37 is not a version string",
        ),
        (
            'axes: {apiserver: ["1.37"], ha: [false], control_plane_lag: [-1], kubelet_lag: [0]}',
            "axes.control_plane_lag: -1",
        ),
        ("cells: [{name: x}]", "cells[0].apiserver: required"),
        (
            'cells: [{name: x, apiserver: "1.37", sheduler: "1.37"}]',
            "cells[0].sheduler: unknown field",
        ),
        (
            'cells: [{name: x, apiserver: "1.36", scheduler: "1.37"}]',
            "cells[0] (x) breaks the policy",
        ),
        ('unsupported: [{name: x, apiserver: "1.37"}]', "unsupported[0] (x) is supported"),
        (
            'cells: [{name: x, apiserver: "1.37", gates: {kubelet: {A: yes-ish}}}]',
            "cells[0].gates.kubelet",
        ),
        ("bogus: 1", "bogus: unknown section"),
    ],
)
def test_matrix_errors_name_the_field(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(MatrixError) as e:
        load(path)
    assert error in str(e.value) and str(path) in str(e.value)


# ------------------------------------------------------------------ expectations


def test_binding_expectations_are_the_kep_5278_halves() -> None:
    newest = expect.binding_nnn(cell("1.37"))
    assert newest == {
        "nnn_set_at_prebind": True,
        "prebind_pod_nnn_after_binding": False,
        "nominated_pod_nnn_after_binding": False,
    }
    # old apiserver (no clearing) + a scheduler with the binding-cycle NNN: kept after binding
    old_api = expect.binding_nnn(
        cell("1.34", gates={"scheduler": {"NominatedNodeNameForExpectation": True}})
    )
    assert old_api["prebind_pod_nnn_after_binding"] is True
    # new apiserver + old scheduler: no binding-cycle NNN, the apiserver clears
    new_api = expect.binding_nnn(cell("1.35", sched="1.34"))
    assert new_api == {
        "nnn_set_at_prebind": False,
        "prebind_pod_nnn_after_binding": False,
        "nominated_pod_nnn_after_binding": False,
    }
    # the clearing is the scheduler's apiserver's (an HA pair 1.34/1.35)
    pair = Cell("p", (v("1.34"), v("1.35")), v("1.35"), v("1.35"), v("1.34"), scheduler_apiserver=1)
    assert expect.binding_nnn(pair)["nominated_pod_nnn_after_binding"] is False
    pair_old = Cell(
        "p", (v("1.34"), v("1.35")), v("1.34"), v("1.34"), v("1.34"), scheduler_apiserver=0
    )
    assert expect.binding_nnn(pair_old)["nominated_pod_nnn_after_binding"] is True


def test_prefer_nominated_and_resize_expectations_follow_versions() -> None:
    assert expect.prefer_nominated(cell("1.21"))["bound_to_nominated_node"] is False
    assert expect.prefer_nominated(cell("1.22"))["bound_to_nominated_node"] is True
    assert (
        expect.prefer_nominated(cell("1.23", gates={"scheduler": {"PreferNominatedNode": False}}))[
            "bound_to_nominated_node"
        ]
        is False
    )
    assert expect.resize_old_kubelet(cell("1.37", kubelet="1.34"))["resize_accepted"] is True
    assert expect.resize_old_kubelet(cell("1.35", kubelet="1.32"))["resize_accepted"] is False
    assert expect.resize_old_kubelet(cell("1.32"))["resize_accepted"] is False


def test_results_compare_with_the_cell_and_the_newest_cell() -> None:
    old = cell("1.34")
    exp = expect.binding_nnn(old)
    assert expect.result("binding-nnn", old, exp) == "expected-difference"
    assert expect.result("binding-nnn", cell("1.37"), expect.binding_nnn(cell("1.37"))) == "pass"
    wrong = {**exp, "nnn_set_at_prebind": True}
    assert expect.result("binding-nnn", old, wrong) == "fail"
    assert expect.differences("binding-nnn", old, wrong) == [
        "nnn_set_at_prebind: expected False, observed True"
    ]


# ------------------------------------------------------------------ CLI


def test_cli_list_prints_one_name_a_line_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cells.json"
    assert main(["--list", "--slice", "--json", str(out)]) == 0
    names = capsys.readouterr().out.split()
    m = load()
    assert names == [c.name for c in (*m.slice, *m.unsupported)]
    assert json.loads(out.read_text()) == names


def test_cli_unknown_cell_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--cell", "no-such-cell"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and '"no-such-cell"' in err


def test_cli_bad_matrix_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.yaml"
    assert main(["--list", "--matrix", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(missing) in err


def test_cli_refuses_an_unsupported_cell_without_starting_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--cell", "kubelet-four-older"]) == 0
    out = capsys.readouterr().out
    assert "| kubelet-four-older |" in out and "kubelet 1.33 is 4 minors older" in out


def test_cli_clock_is_in_the_json_and_an_unknown_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "skew.json"
    assert main(["--cell", "kubelet-four-older", "--clock", "virtual", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["clock"] == "virtual"
    with pytest.raises(SystemExit) as e:
        main(["--clock", "sundial"])
    assert e.value.code == 2
    assert "--clock: invalid choice: 'sundial'" in capsys.readouterr().err


def test_an_upgrade_goes_one_minor_from_one_version() -> None:
    ok = Cell("u", (v("1.36"),), v("1.36"), v("1.36"), v("1.36"), upgrade_to=v("1.37"))
    assert violations(ok) == []
    two = Cell("u", (v("1.35"),), v("1.35"), v("1.35"), v("1.35"), upgrade_to=v("1.37"))
    assert any("one minor at a time" in p for p in violations(two))
    assert expect.rolling_upgrade(ok) == {"upgraded": True, "load_bound_and_invariants_held": True}


def test_resize_preemption_and_autoscaler_expectations() -> None:
    gate = {"InPlacePodVerticalScalingSchedulerPreemption": True}
    on = cell("1.37", kubelet="1.34", gates={"apiserver": gate, "scheduler": gate})
    assert expect.resize_preemption(on) == {
        "resize_deferred": True,
        "low_pod_preempted": True,
        "resized": True,
    }
    assert expect.resize_preemption(cell("1.37"))["low_pod_preempted"] is False
    assert expect.resize_preemption(cell("1.35", kubelet="1.32"))["resize_deferred"] is False
    assert expect.autoscaler_nnn(cell("1.37"))["pod_nominated_to_gone_node_scales_up"] is False
    assert expect.autoscaler_nnn(cell("1.36"))["pod_nominated_to_gone_node_scales_up"] is True
    assert cell("1.37", sched="1.36").components()["autoscaler"] == "1.36"


def test_pod_group_expectations_follow_the_apiserver_and_the_scheduler() -> None:
    # S-PG-1 across versions: held only when the apiserver keeps the reference and the
    # scheduler gangs the field that version spells (1.35 workloadRef, 1.36+ schedulingGroup).
    wl = {"GenericWorkload": True}
    held = {"pod_groups_served": True, "partial_gang_held": True, "gang_bound": True}
    assert expect.pod_groups(cell("1.37", gates={"apiserver": wl, "scheduler": wl})) == held
    gang_136 = {"apiserver": wl, "scheduler": {**wl, "GangScheduling": True}}
    assert expect.pod_groups(cell("1.36", gates=gang_136)) == held
    # A 1.36 scheduler without GangScheduling: the group cycle, no gang.
    assert not expect.pod_groups(cell("1.36", gates={"apiserver": wl, "scheduler": wl}))[
        "partial_gang_held"
    ]
    old = expect.pod_groups(cell("1.35", sched="1.34", gates={"apiserver": wl}))
    assert old == {"pod_groups_served": True, "partial_gang_held": False, "gang_bound": True}
    # S-API-RC: the gate alone does not serve 1.37's scheduling.k8s.io/v1beta1
    beta_off = cell(
        "1.37",
        gates={"apiserver": wl, "scheduler": wl},
        runtime_config={"scheduling.k8s.io/v1alpha3": "false"},
    )
    assert expect.pod_groups(beta_off)["pod_groups_served"] is False
    # The scheduler without the API at its apiserver: ordinary pods.
    assert expect.pod_groups(cell("1.37", gates={"scheduler": wl}))["partial_gang_held"] is False
    assert expect.pod_groups(expect.NEWEST)["pod_groups_served"] is False
    names = {c.name for c in load().cells}
    assert {"pod-groups-1.37", "pod-groups-1.36", "pod-groups-old-scheduler"} <= names


def test_a_runtime_config_the_apiserver_refuses_is_a_violation() -> None:
    bad = cell("1.36", runtime_config={"scheduling.k8s.io/v1beta1": "true"})
    assert violations(bad) == [
        "apiserver 1.36: --runtime-config: group version scheduling.k8s.io/v1beta1 that has not "
        "been registered"
    ]
