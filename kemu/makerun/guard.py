"""`python -m kemu.makerun.guard --until-closed HOST:PORT [--within 4s] -- COMMAND...`: runs
COMMAND (the Procfile's etcd) and holds its stop until the apiserver is gone.

Why: Ctrl-C of `make run` makes honcho send SIGTERM to every process at once. etcd stopping at
that instant leaves the apiserver without storage while the leaders (scheduler,
controller-manager, autoscaler) release their leases on the way out, so the releases fail and
the next `make run` waits out the leases (15 s) before anything is scheduled. Upstream's control
plane stops in layers (the static pods' etcd outlives the apiserver); so here: the first
SIGTERM or SIGINT is held until HOST:PORT (the apiserver's metrics port, the last it closes, once
it is done with etcd) refuses connections, or for `--within` at most, and only then passed to
COMMAND. A second signal is passed on at once.

COMMAND runs in its own process group (honcho signals the guard's group, which would reach it
at once) and is killed when the guard dies (PR_SET_PDEATHSIG): honcho's SIGKILL, 5 s after the
first process stopped, leaves nothing behind. The guard exits with COMMAND's exit code.
"""

from __future__ import annotations

import argparse
import ctypes
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Final

from kemu.machinery.duration import DurationError, parse_duration

POLL: Final = 0.05
_PR_SET_PDEATHSIG: Final = 1


def listening(address: str) -> bool:
    """Whether something accepts connections on HOST:PORT."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=POLL):
            return True
    except OSError:
        return False


def _die_with_parent() -> None:  # (in the child, between fork and exec)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _Signals:
    def __init__(self) -> None:
        self.received: list[int] = []

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kemu.makerun.guard", description=__doc__)
    parser.add_argument("--until-closed", required=True, metavar="HOST:PORT")
    parser.add_argument("--within", type=_duration, default=4.0, metavar="DURATION")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    signals = _Signals()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signals.handle)
    child = subprocess.Popen(args.command, process_group=0, preexec_fn=_die_with_parent)
    held_since: float | None = None
    passed = False
    while child.poll() is None:
        if signals.received and held_since is None:
            held_since = time.monotonic()
        if held_since is not None and not passed:
            done = (
                len(signals.received) > 1
                or time.monotonic() - held_since >= args.within
                or not listening(args.until_closed)
            )
            if done:
                child.send_signal(signal.SIGTERM)
                passed = True
        time.sleep(POLL)
    code = child.returncode
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
