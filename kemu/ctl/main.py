"""kemuctl: the user's command line for a kemu cluster, with kubectl's conventions.

`main(argv)` parses the arguments, connects a kemu.client.Client and runs one command; `run`
is the same with the client and the streams injectable (tests pass a FakeClient). Every user
error, local or from the server, is one `error: ...` line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final, NoReturn, TextIO

import anyio

from kemu.client.interface import DEFAULT_NAMESPACE, ApiClient
from kemu.component.client_connection import ClientConnection
from kemu.component.clock import Clock, RealClock
from kemu.ctl import rollout
from kemu.ctl.common import Context, CtlError, format_api_error
from kemu.ctl.connect import (
    AUTOSCALER_ENV,
    DEFAULT_AUTOSCALER,
    DEFAULT_SCHEDULER,
    DEFAULT_SERVER,
    KUBECONFIG_ENV,
    SCHEDULER_ENV,
    SERVER_ENV,
    target,
)
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import ApiError, Timeout, Unavailable

DEFAULT_REQUEST_TIMEOUT: Final = "10s"
_NO_TIMEOUT: Final = 24 * 3600.0

Command = Callable[[Context, argparse.Namespace], Awaitable[int]]

# Each command's (module of kemu.ctl, function), its module imported when the command runs:
# kemuctl is a process per command, and the modules of the others (apply's manifests and
# defaulting, why's HTTP client) would be a third of its start.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "apply": ("apply", "cmd_apply"),
    "create": ("apply", "cmd_create"),
    "get": ("get", "cmd_get"),
    "describe": ("describe", "cmd_describe"),
    "delete": ("apply", "cmd_delete"),
    "patch": ("edit", "cmd_patch"),
    "resize": ("edit", "cmd_resize"),
    "scale": ("rollout", "cmd_scale"),
    "rollout": ("rollout", "cmd_rollout"),
    "wait": ("wait", "cmd_wait"),
    "cordon": ("drain", "cmd_cordon"),
    "uncordon": ("drain", "cmd_uncordon"),
    "drain": ("drain", "cmd_drain"),
    "version": ("version", "cmd_version"),
    "clock": ("clock", "cmd_clock"),
    "why": ("why", "cmd_why"),
}


def command_function(name: str) -> Command:
    """The function of the command `name` (its module imported now)."""
    module, function = COMMANDS[name]
    found: Command = getattr(importlib.import_module(f"kemu.ctl.{module}"), function)
    return found


class UsageError(Exception):
    """A command line argparse cannot read."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: expected true or false")


# ---------------------------------------------------------------- the command line


def _filename(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=required,
        default=[],
        help="a manifest file (YAML or JSON), a directory, or - for stdin; repeatable",
    )


def _selectors(p: argparse.ArgumentParser) -> None:
    p.add_argument("-l", "--selector", help="label selector, e.g. app=web,tier!=db")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across every namespace")


def _apply_flags(p: argparse.ArgumentParser) -> None:
    _filename(p, required=True)
    p.add_argument(
        "-l", "--selector", help="apply only the objects whose labels match, e.g. app=web"
    )


def _create_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="namespace NAME")
    _filename(p, required=False)


def _get_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND [NAME...] | KIND/NAME...")
    p.add_argument("-o", "--output", help="json, yaml, wide, name or jsonpath={.path}")
    p.add_argument("-w", "--watch", action="store_true", help="then print every change")
    p.add_argument("--field-selector", help="e.g. spec.nodeName=n1")
    p.add_argument(
        "--show-managed-fields",
        action="store_true",
        help="keep metadata.managedFields in -o json|yaml|jsonpath (hidden otherwise, as kubectl)",
    )
    _selectors(p)


def _describe_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND [NAME...] | KIND/NAME...")
    _selectors(p)


def _delete_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND [NAME...] | KIND/NAME...")
    _filename(p, required=False)
    p.add_argument(
        "--grace-period",
        type=int,
        default=-1,
        help="seconds to let a pod terminate (-1: its own; 0 needs --force)",
    )
    p.add_argument("--now", action="store_true", help="a grace period of 1 second")
    p.add_argument("--force", action="store_true", help="with --grace-period 0: immediately")
    p.add_argument("--ignore-not-found", action="store_true")
    p.add_argument(
        "--cascade",
        nargs="?",
        const="background",
        default="background",
        help="background (default), foreground or orphan: what happens to the dependents",
    )
    p.add_argument("--all", action="store_true", help="every object of the kind")
    p.add_argument(
        "--wait",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="wait until the objects are gone (default false)",
    )
    p.add_argument("--timeout", default="60s", help="how long --wait waits")
    _selectors(p)


def _patch_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND NAME | KIND/NAME")
    p.add_argument("-p", "--patch", help="the patch, JSON (or YAML)")
    p.add_argument("--patch-file", help="a file holding the patch")
    p.add_argument("--type", default="merge", help="merge (the only type kemu supports)")
    p.add_argument("--subresource", default="", help="status or resize")


def _resize_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="pod NAME | pod/NAME")
    p.add_argument("--requests", help="e.g. cpu=2,memory=1Gi")
    p.add_argument("--limits", help="e.g. cpu=2,memory=1Gi")
    p.add_argument("-c", "--container", help="the container (default: the first)")


def _scale_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND NAME | KIND/NAME")
    p.add_argument("--replicas", type=int, help="the new number of replicas")
    p.add_argument(
        "--current-replicas", type=int, help="precondition: the current number of replicas"
    )


def _rollout_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", metavar="ACTION", help=", ".join(rollout.ACTIONS))
    p.add_argument("targets", nargs="*", metavar="KIND NAME | KIND/NAME")
    p.add_argument(
        "--timeout", default="", help="rollout status: how long to wait (e.g. 5m; 0: forever)"
    )
    p.add_argument(
        "-w",
        "--watch",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        help="rollout status: watch until the rollout finishes (default true)",
    )
    p.add_argument("--revision", type=int, default=0, help="rollout history: one revision")
    p.add_argument(
        "--to-revision", type=int, default=0, help="rollout undo: the revision (0: previous)"
    )


def _wait_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="KIND/NAME... | KIND NAME...")
    p.add_argument(
        "--for",
        dest="for_",
        metavar="CONDITION",
        help="delete, create, condition=NAME[=VALUE] or jsonpath={.path}[=VALUE]",
    )
    p.add_argument("--timeout", default="30s", help="e.g. 30s, 2m (default 30s)")
    p.add_argument("--all", action="store_true", help="every object of the kind")
    _selectors(p)


def _node_flags(p: argparse.ArgumentParser) -> None:
    """cordon's and uncordon's, and the first of drain's."""
    p.add_argument("nodes", nargs="*", metavar="NODE")
    p.add_argument(
        "--dry-run",
        nargs="?",
        const="client",
        default="none",
        help="none, client or server",
    )


def _drain_flags(p: argparse.ArgumentParser) -> None:
    _node_flags(p)
    p.add_argument("--force", action="store_true", help="also pods without a controller")
    p.add_argument(
        "--ignore-daemonsets", action="store_true", help="leave DaemonSet-managed pods alone"
    )
    p.add_argument(
        "--delete-emptydir-data",
        action="store_true",
        help="also pods with emptyDir volumes (their data is lost)",
    )
    p.add_argument(
        "--grace-period",
        type=int,
        default=-1,
        help="seconds each pod gets to terminate; negative: the pod's own (default -1)",
    )
    p.add_argument("--timeout", default="0s", help="give up after this long; 0: never")
    p.add_argument(
        "--disable-eviction", action="store_true", help="delete pods instead of evicting them"
    )
    p.add_argument("--pod-selector", default="", help="only the pods with these labels")


def _clock_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "verb",
        nargs="?",
        choices=["rate", "advance"],
        help="rate N|max: set the rate; advance DURATION: run until DURATION has passed",
    )
    p.add_argument(
        "value",
        nargs="?",
        help="rate: virtual seconds per wall second, 0 (hold) or max; advance: a duration",
    )
    p.add_argument("-o", "--output", help="json or yaml")


def _why_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="pod/NAME | node/NAME")
    p.add_argument("-o", "--output", help="json")
    p.add_argument(
        "--scheduler",
        help=f"the scheduler's metrics endpoint (default ${SCHEDULER_ENV} or {DEFAULT_SCHEDULER})",
    )
    p.add_argument(
        "--autoscaler",
        help=f"the autoscaler's metrics endpoint (default ${AUTOSCALER_ENV} or "
        f"{DEFAULT_AUTOSCALER})",
    )


def _version_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--client", action="store_true", help="only the client's version")
    p.add_argument("-o", "--output", help="json or yaml")


Flags = Callable[[argparse.ArgumentParser], None]

# Each command's help line and flags, in the order `kemuctl --help` lists them (COMMANDS says
# what runs it).
PARSERS: Final[dict[str, tuple[str, Flags]]] = {
    "apply": ("create or update objects from manifests", _apply_flags),
    "create": ("create objects from manifests, or: create namespace NAME", _create_flags),
    "get": ("list objects or show some", _get_flags),
    "describe": ("show objects in detail, with their events", _describe_flags),
    "delete": ("delete objects", _delete_flags),
    "patch": ("apply a JSON merge patch to an object", _patch_flags),
    "resize": ("change a pod's container resources in place (pods/resize)", _resize_flags),
    "scale": ("set the replicas of a deployment or replicaset", _scale_flags),
    "rollout": ("manage the rollout of a deployment", _rollout_flags),
    "wait": ("wait for a condition on objects", _wait_flags),
    "cordon": ("mark a node unschedulable", _node_flags),
    "uncordon": ("mark a node schedulable", _node_flags),
    "drain": ("cordon a node and evict its pods", _drain_flags),
    "clock": (
        "show the cluster clock, or set its rate in virtual time (kemu only)",
        _clock_flags,
    ),
    "why": (
        "tell a pod's scheduling story or a node's autoscaling verdicts (kemu only; the "
        "components' --record-decisions)",
        _why_flags,
    ),
    "version": ("print the client, server and component versions", _version_flags),
}


def _common_flags() -> _Parser:
    """The global flags. They may come before or after the command, as with kubectl: they are
    declared on the top parser and on every subparser, with SUPPRESS so a later parser does
    not reset them."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--server",
        "-s",
        default=argparse.SUPPRESS,
        help=f"the apiserver, HOST:PORT (default: ${SERVER_ENV}, the kubeconfig's, or "
        f"{DEFAULT_SERVER})",
    )
    common.add_argument(
        "--kubeconfig",
        default=argparse.SUPPRESS,
        help="the kubeconfig: the server, its CA and the user's client certificate (default: "
        f"${KUBECONFIG_ENV}, else .kemu/kubeconfig when no server is named)",
    )
    common.add_argument(
        "-n", "--namespace", default=argparse.SUPPRESS, help='the namespace (default "default")'
    )
    common.add_argument(
        "--request-timeout",
        default=argparse.SUPPRESS,
        help=f"how long to wait for one answer of the server, e.g. 10s; 0: no limit "
        f"(default {DEFAULT_REQUEST_TIMEOUT})",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_flags()
    parser = _Parser(
        prog="kemuctl",
        description="Control a kemu cluster (a subset of kubectl).",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (help_, flags) in PARSERS.items():
        flags(sub.add_parser(name, help=help_, parents=[common]))
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """As kubectl, flags may come between the positionals: `get configmap -n NS NAME` (the
    arguments left after a flag are more targets of a command that takes targets)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(list(argv))
    if extra:
        targets = getattr(args, "targets", None)
        if not isinstance(targets, list) or any(e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        targets.extend(extra)
    return args


def request_timeout(args: argparse.Namespace) -> float:
    """--request-timeout as kubectl reads it (clientcmd.ParseTimeout): a bare non-negative
    integer counts as seconds (kubectl's one exception to "a duration needs a unit"), anything
    else is a Go duration; 0 or less: no limit."""
    text = getattr(args, "request_timeout", DEFAULT_REQUEST_TIMEOUT)
    if text.isascii() and text.isdigit():
        seconds = float(int(text))
    else:
        try:
            seconds = parse_duration(text, allow_negative=True)
        except DurationError:
            raise CtlError(
                f'invalid argument "{text}" for "--request-timeout" flag: Invalid timeout value. '
                "Timeout must be a single integer in seconds, or an integer followed by a "
                "corresponding time unit (e.g. 1s | 2m | 3h)"
            ) from None
    return seconds if seconds > 0 else _NO_TIMEOUT


def _api_error_line(e: ApiError, server: str, timeout: float) -> str:
    if isinstance(e, Unavailable):
        return f"cannot reach the kemu apiserver at {server}: {_unreachable_reason(e)}"
    if isinstance(e, Timeout) and e.message == "Deadline Exceeded":
        return f"the kemu apiserver at {server} did not answer within {timeout:g}s"
    return format_api_error(e)


def _unreachable_reason(e: Unavailable) -> str:
    """The short cause inside gRPC's connection failure text."""
    text = e.message
    for known in ("Connection refused", "No route to host", "Name or service not known"):
        if known in text:
            return known.lower()
    return format_api_error(e)


async def run(
    argv: Sequence[str],
    *,
    client: ApiClient | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """One kemuctl invocation; with `client` given no connection is made."""
    out = out or sys.stdout
    err = err or sys.stderr
    env = os.environ if environ is None else environ
    try:
        args = parse_args(argv)
    except UsageError as e:
        err.write(f"error: {e}\n")
        return 1
    if args.command is None:
        build_parser().print_help(out)
        return 0
    own_client = client is None
    try:
        to = target(getattr(args, "server", None), getattr(args, "kubeconfig", None), env)
    except ValueError as e:
        err.write(f"error: {e}\n")
        return 1
    server = to.server
    try:
        timeout = request_timeout(args)
        if client is None:
            # deferred start-up cost: gRPC is ~0.05 of kemuctl's ~0.13 s CPU to import, and
            # --help, usage errors and an injected client need none. gRPC's core logs a failed
            # TLS handshake at INFO on stderr; the error line below says it: errors only.
            os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
            from kemu.client.client import Client
            from kemu.client.flowcontrol import ClientLimits

            # kubectl's client is rest.Config's defaults (QPS 5, burst 10: kubectl sets only
            # its discovery client's, which kemuctl has none of); on the host's clock.
            limits = ClientLimits(ClientConnection(0, 0), RealClock(), host=server, registry=None)
            client = Client(
                server,
                timeout=timeout,
                user_agent="kemuctl",
                wait_for_server=False,
                limits=limits,
                tls=to.tls,
            )
        explicit = getattr(args, "namespace", None)
        ctx = Context(
            client=client,
            out=out,
            err=err,
            stdin=stdin or sys.stdin,
            clock=clock or RealClock(),
            namespace=explicit or DEFAULT_NAMESPACE,
            namespace_explicit=explicit is not None,
        )
        try:
            return await command_function(args.command)(ctx, args)
        finally:
            if own_client:
                with anyio.CancelScope(shield=True):
                    await client.close()
    except CtlError as e:
        err.write(f"error: {e}\n")
        return 1
    except ApiError as e:
        err.write(f"error: {_api_error_line(e, server, request_timeout(args))}\n")
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    watching = False
    try:
        parsed = parse_args(arguments)
        watching = bool(getattr(parsed, "watch", False))
    except UsageError:
        pass  # run() reports it
    try:
        return anyio.run(run, arguments)
    except KeyboardInterrupt:
        # Ctrl-C ends a watch (the normal way out); anything else was interrupted.
        return 0 if watching else 130
    except BrokenPipeError:
        # The reader went away (| head): no traceback, and none at interpreter exit either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
