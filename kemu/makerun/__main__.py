"""`python -m kemu.makerun [--port-base N] [--clock real|virtual] [PROCESS...]`: what `make run`
runs, in the
directory of the Procfile (the repository's root; a test's copy of it).

1. Every port of the table (kemu.makerun.ports) is checked before anything starts: a taken one
   is one line, `make run: port 6443 (apiserver gRPC) is in use; move all ports with
   PORT_BASE=20000` (a base whose ports are all free now), and exit code 1.
2. `.kemu/ports.env` (the ports, for honcho's `-e`), `.kemu/pki/` (the cluster's CA, the
   apiserver's serving pair and a kubeconfig per component with its client certificate:
   kemu.machinery.pki; the CA kept from an earlier run), `.kemu/kubeconfig` (the admin's, for
   kubectl, the Python client and kemuctl, over TLS) and `.kemu/env` (for a user's `source`:
   KEMU_SERVER, KUBECONFIG and the decision records' URLs kemuctl why reads) are written; with
   moved ports, one line says so. The Procfile starts the apiserver with the serving pair and
   the CA (--tls-cert-file, --tls-private-key-file, --client-ca-file) and every component with
   its --kubeconfig.
3. honcho replaces this process (`honcho start -e .kemu/ports.env`, so that Ctrl-C reaches it as
   before), with the virtualenv's scripts first on PATH and the clock's settings in the
   environment the Procfile reads ($KEMU_CLOCK_FLAGS; $KEMU_AUTOSCALER_TIMERS empty on the
   virtual clock: upstream's timers there, the Procfile's 30 s in real time).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from kemu.component.listen import bind_error
from kemu.machinery import pki
from kemu.makerun.ports import BASE_ENV, LOOPBACK, TABLE, PortBaseError, Ports

STATE_DIR: Final = Path(".kemu")
PORTS_ENV: Final = "ports.env"
USER_ENV: Final = "env"
KUBECONFIG: Final = "kubeconfig"
PKI_DIR: Final = "pki"
NODES: Final = ("node-a", "node-b", "node-c")
"""The Procfile's kubelets: each has its own certificate (`kubelet-<node>.kubeconfig`)."""
CLOCKS: Final = ("real", "virtual")
SUGGESTED_BASES: Final = range(20000, 30000, 1000)
"""Where a free base is looked for (below Linux's ephemeral ports, 32768 up)."""


def taken(ports: Ports) -> list[tuple[str, int]]:
    """(what, port) of every port of `ports` that cannot be listened on now."""
    return [(spec.what, port) for spec, port in ports.items() if bind_error(LOOPBACK, port)]


def free_base() -> int | None:
    """A base whose every port is free now (a suggestion: nothing holds them)."""
    for base in SUGGESTED_BASES:
        if not taken(Ports(base)):
            return base
    return None


def refusal(ports: Ports) -> str | None:
    """make run's one line when one of `ports` is taken; None when all are free."""
    busy = taken(ports)
    if not busy:
        return None
    what, port = busy[0]
    others = f" (and {len(busy) - 1} more)" if len(busy) > 1 else ""
    base = free_base()
    hint = f"PORT_BASE={base}" if base is not None else "PORT_BASE=<n>"
    return f"make run: port {port} ({what}) is in use{others}; move all ports with {hint}"


def write_files(ports: Ports, state: Path) -> None:
    """.kemu/ports.env, .kemu/kubeconfig and .kemu/env (see the module docstring)."""
    state.mkdir(parents=True, exist_ok=True)
    (state / PORTS_ENV).write_text("".join(f"{k}={v}\n" for k, v in ports.environment().items()))
    users = {**pki.COMPONENTS, **{f"kubelet-{n}": pki.kubelet_user(n) for n in NODES}}
    cluster = pki.write_cluster_pki(
        state / PKI_DIR, rest_url=ports.rest_url, grpc_server=ports.server, users=users
    )
    config = state / KUBECONFIG
    shutil.copy(cluster.kubeconfig("admin"), config)
    exports = {
        "KEMU_SERVER": ports.server,
        "KUBECONFIG": str(config.resolve()),
        "KEMU_SCHEDULER_URL": ports.scheduler_url,
        "KEMU_AUTOSCALER_URL": ports.autoscaler_url,
    }
    (state / USER_ENV).write_text(
        "# make run's cluster for kemuctl and kubectl: source this file\n"
        + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in exports.items())
    )


def honcho_environment(clock: str) -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["KEMU_CLOCK_FLAGS"] = f"--clock {clock}"
    if clock == "virtual":
        env["KEMU_AUTOSCALER_TIMERS"] = ""
    return env


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kemu.makerun", description=__doc__)
    parser.add_argument(
        "--port-base",
        default=os.environ.get(BASE_ENV, ""),
        metavar="N",
        help=f"move every port to N + its index in the table ({len(TABLE)} ports; default "
        f"${BASE_ENV}, else the default ports: 6443 for the apiserver, ...)",
    )
    parser.add_argument("--clock", choices=CLOCKS, default="real")
    parser.add_argument(
        "process", nargs="*", help="only these processes of the Procfile (default: all)"
    )
    args = parser.parse_args(argv)
    try:
        ports = Ports.parse(args.port_base)
    except PortBaseError as e:
        print(f"make run: {e}", file=sys.stderr)
        return 2
    line = refusal(ports)
    if line is not None:
        print(line, file=sys.stderr)
        return 1
    write_files(ports, STATE_DIR)
    if ports.moved:
        print(
            f"make run: ports moved to {ports.span} (PORT_BASE={ports.base}): "
            f"`source {STATE_DIR / USER_ENV}` for kemuctl and kubectl",
            flush=True,
        )
    env = honcho_environment(args.clock)
    honcho = str(Path(sys.executable).parent / "honcho")
    os.execve(honcho, [honcho, "start", "-e", str(STATE_DIR / PORTS_ENV), *args.process], env)


if __name__ == "__main__":
    sys.exit(main())
