"""Each process's options module (its flag table and the flags-to-settings code, as upstream's
cmd/<component>/app/options) loads no server: a driver reads it (kemu.trace checks CLUSTER.yaml's
flags with it) without paying for the process. Checked in a fresh interpreter, since this test
process has everything loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_PROGRAM = textwrap.dedent(
    """
    import importlib, json, sys

    process = sys.argv[1]
    importlib.import_module(f"{process}.options").build_parser().format_help()
    loaded = sorted(
        m for m in sys.modules
        if m.split(".")[0] in ("grpc", "aetcd")
        or m == f"{process}.app" or m.startswith(f"{process}.app.")
    )
    print(json.dumps(loaded))
    """
)


@pytest.mark.parametrize(
    "process", ["apiserver", "scheduler", "kubelet", "controllermanager", "cloud", "autoscaler"]
)
def test_a_process_options_load_no_grpc_and_not_its_app(process: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, process],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert json.loads(out) == []


def _procfile_commands() -> list[tuple[str, str, list[str]]]:
    """(entry, process, argv) of each `python -m <component>` line of the Procfile, with make
    run's environment expanded as the shell does for the default real-time clock and ports
    (KEMU_CLOCK_FLAGS `--clock real`, KEMU_AUTOSCALER_TIMERS unset: the default after `-`,
    $KEMU_PORT_* from kemu/makerun/ports.py). etcd's guard (kemu.makerun.guard) is no component."""
    import re
    import shlex
    from pathlib import Path

    from kemu.makerun.ports import Ports

    procfile = Path(__file__).resolve().parents[2] / "Procfile"
    ports = Ports().environment()
    commands = []
    for line in procfile.read_text().splitlines():
        entry, _, command = line.partition(": ")
        command = command.replace("$KEMU_CLOCK_FLAGS", "--clock real")
        command = re.sub(r"\$\{KEMU_AUTOSCALER_TIMERS-([^}]*)\}", r"\1", command)
        command = re.sub(r"\$(KEMU_PORT_[A-Z_]+)", lambda m: ports[m[1]], command)
        words = shlex.split(command)
        if words[:3] == ["exec", "python", "-m"] and "." not in words[3]:
            commands.append((entry, words[3], words[4:]))
    return commands


def test_every_procfile_line_parses_with_its_process_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make run starts each process with these flags: one its process does not know (as a
    --runtime-config given to the scheduler, which is the apiserver's alone) would stop that
    process at start-up, seen only by the make-run tests of the long suite. In a directory
    where make run has written `.kemu/` (each --kubeconfig is read as it is parsed)."""
    import contextlib
    import importlib
    import io

    from kemu.makerun.__main__ import STATE_DIR, write_files
    from kemu.makerun.ports import Ports

    commands = _procfile_commands()
    monkeypatch.chdir(tmp_path)
    write_files(Ports(), STATE_DIR)
    assert {process for _, process, _ in commands} == {
        "apiserver", "controllermanager", "scheduler", "kubelet", "cloud", "autoscaler"
    }  # fmt: skip
    for entry, process, argv in commands:
        parser = importlib.import_module(f"{process}.options").build_parser()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"Procfile {entry}: {err.getvalue().strip()}")


def test_the_procfile_kubelets_slice_files_load() -> None:
    """S-DRA-WALK-1: make run's kubelet-b and kubelet-c publish the GPUs the README's walk
    allocates (hack/dra/): each --dra-slice-file of the Procfile names a file the kubelet
    loads (a bad one would stop that kubelet at start-up)."""
    from pathlib import Path

    from kemu.machinery.dra_slice_file import load_slice_file

    root = Path(__file__).resolve().parents[2]
    files = {
        entry: argv[argv.index("--dra-slice-file") + 1]
        for entry, process, argv in _procfile_commands()
        if process == "kubelet" and "--dra-slice-file" in argv
    }
    assert files == {"kubelet-b": "hack/dra/node-b.yaml", "kubelet-c": "hack/dra/node-c.yaml"}
    devices = {
        entry: [d.name for driver in load_slice_file(root / path).drivers for s in driver.slices
                for d in s.spec.devices]
        for entry, path in files.items()
    }  # fmt: skip
    assert devices == {"kubelet-b": ["gpu-0", "gpu-1"], "kubelet-c": ["gpu-0"]}


@pytest.mark.parametrize(
    "process", ["scheduler", "controllermanager", "kubelet", "cloud", "autoscaler"]
)
def test_every_component_takes_the_apiserver_latency_and_names_the_flag_when_wrong(
    process: str,
) -> None:
    """Issue #58 item 4: `--apiserver-latency` beside --server on every client of the
    apiserver; the apiserver's own is --etcd-latency."""
    import importlib

    from kemu.component.latency import CallLatency, apiserver_latency
    from kemu.component.options import FlagError, check_flags
    from kemu.machinery.latency import Latency

    parser = importlib.import_module(f"{process}.options").build_parser()
    required = {
        "cloud": ["--config", "c.yaml", "--state-dir", "s"],
        "autoscaler": ["--cloud-provider-address", "127.0.0.1:1"],
    }.get(process, [])
    args = check_flags(
        parser,
        [*required, "--apiserver-latency", "uniform:100ms-300ms", "--apiserver-latency-seed", "3"],
    )
    assert apiserver_latency(args) == CallLatency(Latency.parse("uniform:100ms-300ms"), 3)
    with pytest.raises(FlagError, match=r"argument --apiserver-latency: '5': time: missing unit"):
        check_flags(parser, [*required, "--apiserver-latency", "5"])


def test_the_apiserver_takes_the_etcd_latency() -> None:
    from apiserver.options import build_parser
    from kemu.component.options import FlagError, check_flags
    from kemu.machinery.latency import Latency

    args = check_flags(
        build_parser(), ["--etcd-latency", "normal:2ms,1ms", "--etcd-latency-seed", "5"]
    )
    assert (args.etcd_latency, args.etcd_latency_seed) == (Latency.parse("normal:2ms,1ms"), 5)
    with pytest.raises(
        FlagError, match=r"argument --etcd-latency: 'gauss:1s': unknown distribution"
    ):
        check_flags(build_parser(), ["--etcd-latency", "gauss:1s"])
