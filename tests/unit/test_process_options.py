"""Each process's options module (its flag table and the flags-to-settings code, as upstream's
cmd/<component>/app/options) loads no server: a driver reads it (kemu.trace checks CLUSTER.yaml's
flags with it) without paying for the process. Checked in a fresh interpreter, since this test
process has everything loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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
