"""`python -m kemu.makerun.addons --kubeconfig FILE DIR`: make run's add-ons, as kubeadm's
post-start phases and the addon manager write them (cluster/addons/addon-manager): the
manifests of DIR (hack/addons: the kubeadm:cluster-admins binding of the admin's group, the
autoscaler's and the cloud's RBAC) applied with FILE's credentials (the super-admin's, in
system:masters) once the apiserver answers, then nothing until SIGTERM or SIGINT (honcho
stops every process when one exits), which ends it with status 0.

An apply that fails is tried again every second (the apiserver starting, or its RBAC policy
not written yet) and its error printed once; a manifest the apiserver refuses for what it is
(kemuctl's exit status 1 with an error other than the connection's) stops it with that status.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Final

RETRY: Final = 1.0
UNREACHABLE: Final = ("Unavailable", "connection refused", "failed to connect", "UNAVAILABLE")


def apply(kubeconfig: str, directory: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kemu.ctl", "--kubeconfig", kubeconfig, "apply", "-f", directory],
        capture_output=True,
        text=True,
        check=False,
    )


def _stop(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kemu.makerun.addons", description=__doc__)
    parser.add_argument("--kubeconfig", required=True, metavar="FILE")
    parser.add_argument("directory", metavar="DIR")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    said = ""
    while True:
        done = apply(args.kubeconfig, args.directory)
        if done.returncode == 0:
            break
        error = (done.stderr or done.stdout).strip()
        if not any(word in error for word in UNREACHABLE) and "forbidden" not in error:
            print(f"addons: {error}", file=sys.stderr, flush=True)
            return done.returncode or 1
        if error != said:
            print(f"addons: waiting for the apiserver ({error})", flush=True)
            said = error
        time.sleep(RETRY)
    print(done.stdout.strip(), flush=True)
    print(f"addons: {args.directory} applied", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
