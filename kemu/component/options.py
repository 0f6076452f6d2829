"""The flags every component shares, with upstream's names, and their validation.

Contract:
- `add_component_flags(parser, default_metrics_port=N)` adds --emulated-version,
  --feature-gates (repeatable; entries merge), --metrics-port (0 disables the endpoint),
  --metrics-bind-address, --allow-insecure-bind, -v/--v and --shutdown-grace-period.
- `ComponentOptions.from_args(args, component)` turns them into one immutable value with the
  resolved `FeatureGates`, raising `OptionsError` (a ValueError) with a one-line message.
  The metrics endpoint serves plaintext, and so only on a loopback address unless
  --allow-insecure-bind (kemu.component.secure_serving, issue #60); a component whose own
  --tls-cert-file/--tls-private-key-file/--cert-dir serve it (`metrics_pair`: the kubelet,
  whose port 10250 upstream serves /metrics and /healthz over TLS) serves it over TLS on
  any address.
- Exit codes: a command line error is one line "<prog>: error: <message>" on stderr and exit
  code 1 (not argparse's 2, and without the usage text) when the parser is a
  `ComponentArgumentParser` (see `new_parser`); `parse_component_args` reports validation
  errors the same way. `--help` still exits 0. A driver that checks a process's flags before
  starting it parses them with `check_flags(build_parser(), args)`, which raises `FlagError`
  with the same one-line message instead of exiting. A configuration file whose plugins cannot run
  (a plugin no registry holds, or args its factory refuses: `refuse_config`, and the runner's
  `ConfigRefused`) is one such line too, exit code 2 (`CONFIG_REFUSED_EXIT`), as the
  out-of-tree plugin issue asks.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NoReturn

from kemu.component.featuregate import FeatureGates, parse_feature_gates
from kemu.component.logs import MAX_VERBOSITY
from kemu.component.secure_serving import (
    SecureServing,
    ServingError,
    add_allow_insecure_bind_flag,
    check_plaintext_bind,
    secure_serving_from_args,
)
from kemu.component.version import (
    DEFAULT_VERSION,
    MAX_VERSION,
    MIN_VERSION,
    Version,
    parse_emulated_version,
)
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.virtual_time import ClockMode

DEFAULT_METRICS_BIND_ADDRESS: Final = "127.0.0.1"
DEFAULT_SHUTDOWN_GRACE_PERIOD: Final = 10.0


class OptionsError(ValueError):
    """An invalid flag value; the message is one line that names the flag."""


class ComponentArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message}\n")


class FlagError(ValueError):
    """A command line a component's flag table refuses; the message is argparse's one line
    (`unrecognized arguments: --nope`, `argument --port: invalid int value: 'x'`)."""


class _FlagChecker(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise FlagError(message)


def check_flags(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    """Parses `args` with the flags of `parser` (a process's `build_parser()`), raising
    FlagError where the process would print the error and exit; the process's own parser is
    left as it is (a copy of its flags parses)."""
    checker = _FlagChecker(prog=parser.prog, parents=[parser], add_help=False)
    return checker.parse_args(args)


def duration_flag(text: str) -> float:
    """argparse `type=` for a duration flag: seconds of a Go duration (kemu.machinery.duration:
    a unit is required except for 0, negatives are refused). argparse names the flag in the
    error: `argument --lease-duration: time: missing unit in duration "5"`."""
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def new_parser(
    prog: str, description: str, *, default_metrics_port: int
) -> ComponentArgumentParser:
    """A parser for component `prog` with the common flags already added."""
    parser = ComponentArgumentParser(prog=prog, description=description)
    add_component_flags(parser, default_metrics_port=default_metrics_port)
    return parser


DECISIONS_DEBUG_HANDLER: Final = "decisions"
"""Where a component serves its decision record: GET /debug/decisions on the metrics port."""


def add_record_decisions_flag(parser: argparse.ArgumentParser, *, what: str) -> None:
    """--record-decisions (kemu only): keep a bounded record of `what` in memory, served as
    JSON at /debug/decisions on the metrics port (read by kemuctl why)."""
    parser.add_argument(
        "--record-decisions",
        action="store_true",
        help=f"kemu only: record {what} in memory (bounded), served as JSON at "
        f"/debug/{DECISIONS_DEBUG_HANDLER} on the metrics port",
    )


def add_component_flags(parser: argparse.ArgumentParser, *, default_metrics_port: int) -> None:
    group = parser.add_argument_group("component flags")
    group.add_argument(
        "--emulated-version",
        default=str(DEFAULT_VERSION),
        metavar="1.NN",
        help=f"the Kubernetes version to emulate, {MIN_VERSION} to {MAX_VERSION} "
        f"(default {DEFAULT_VERSION})",
    )
    group.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="NAME=BOOL[,...]",
        help="feature gates to set, e.g. InPlacePodVerticalScalingSchedulerPreemption=true; "
        "the gates that exist depend on --emulated-version",
    )
    group.add_argument(
        "--metrics-port",
        type=int,
        default=default_metrics_port,
        metavar="PORT",
        help=f"port of /metrics, /healthz, /livez, /readyz and /version; 0 disables "
        f"(default {default_metrics_port})",
    )
    group.add_argument(
        "--metrics-bind-address",
        default=DEFAULT_METRICS_BIND_ADDRESS,
        metavar="ADDRESS",
        help=f"address the metrics port listens on (default {DEFAULT_METRICS_BIND_ADDRESS}); "
        "plaintext off loopback only with --allow-insecure-bind",
    )
    add_allow_insecure_bind_flag(parser)
    group.add_argument(
        "-v",
        "--v",
        dest="v",
        type=int,
        default=0,
        metavar="LEVEL",
        help=f"log verbosity 0..{MAX_VERBOSITY}, as klog's -v (default 0)",
    )
    group.add_argument(
        "--shutdown-grace-period",
        type=float,
        default=DEFAULT_SHUTDOWN_GRACE_PERIOD,
        metavar="SECONDS",
        help="after SIGTERM, how long the component may drain before it is cancelled "
        f"(default {DEFAULT_SHUTDOWN_GRACE_PERIOD:g})",
    )
    group.add_argument(
        "--clock",
        choices=[m.value for m in ClockMode],
        default=ClockMode.REAL.value,
        help="kemu only: real (the host's time) or virtual (the cluster clock the apiserver "
        "keeps, whose rate `kemuctl clock rate` sets); every component of a cluster runs with "
        "the same (default real)",
    )


@dataclass(frozen=True)
class ComponentOptions:
    component: str
    version: Version
    gates: FeatureGates
    verbosity: int = 0
    metrics_bind_address: str = DEFAULT_METRICS_BIND_ADDRESS
    metrics_port: int | None = None
    """None: no health/metrics endpoint (the flag's 0); 0 here means any free port (tests)."""
    shutdown_grace_period: float = DEFAULT_SHUTDOWN_GRACE_PERIOD
    clock: ClockMode = ClockMode.REAL
    metrics_serving: SecureServing = SecureServing()
    """The metrics endpoint's TLS (none: plaintext)."""

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, component: str, *, metrics_pair: str | None = None
    ) -> ComponentOptions:
        """Validate the common flags of `args`; OptionsError names the bad flag.
        `metrics_pair`: the component's secure serving flags (add_secure_serving_flags, that
        pair name) serve its metrics endpoint (module docstring)."""
        try:
            version = parse_emulated_version(args.emulated_version)
        except ValueError as exc:
            raise OptionsError(f"--emulated-version: {exc}") from None
        try:
            overrides: dict[str, bool] = {}
            for text in args.feature_gates:
                overrides.update(parse_feature_gates(text))
            gates = FeatureGates.for_version(version, overrides)
        except ValueError as exc:
            raise OptionsError(f"--feature-gates: {exc}") from None
        if not 0 <= args.metrics_port <= 65535:
            raise OptionsError(f"--metrics-port: {args.metrics_port} is not a port (0 to 65535)")
        host = args.metrics_bind_address.strip()
        if not host:
            raise OptionsError("--metrics-bind-address: must not be empty")
        serving = SecureServing()
        try:
            if metrics_pair is not None:
                serving = secure_serving_from_args(args, pair_name=metrics_pair)
                serving = serving.maybe_default_with_self_signed_certs(host)
            if args.metrics_port and not serving.enabled:
                check_plaintext_bind(
                    host,
                    flag="--metrics-bind-address",
                    allowed=args.allow_insecure_bind,
                    tls=metrics_pair is not None,
                )
        except ServingError as exc:
            raise OptionsError(str(exc)) from None
        if args.v < 0:
            raise OptionsError(f"--v: verbosity {args.v} must not be negative")
        grace = args.shutdown_grace_period
        if not grace >= 0:  # also rejects NaN
            raise OptionsError(f"--shutdown-grace-period: {grace:g} must be >= 0")
        return cls(
            component=component,
            version=version,
            gates=gates,
            verbosity=args.v,
            metrics_bind_address=host,
            metrics_port=args.metrics_port or None,
            shutdown_grace_period=grace,
            clock=ClockMode(args.clock),
            metrics_serving=serving,
        )

    @classmethod
    def for_tests(
        cls,
        component: str = "test",
        *,
        gates: FeatureGates | None = None,
        metrics_port: int | None = None,
        shutdown_grace_period: float = DEFAULT_SHUTDOWN_GRACE_PERIOD,
    ) -> ComponentOptions:
        """Options for in-process tests: default gates unless given, no endpoint unless a port."""
        gates = gates or FeatureGates.default()
        return cls(
            component,
            gates.version,
            gates,
            metrics_port=metrics_port,
            shutdown_grace_period=shutdown_grace_period,
        )


def parse_component_args(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    component: str,
    *,
    metrics_pair: str | None = None,
) -> tuple[argparse.Namespace, ComponentOptions]:
    """Parse `argv` and validate the common flags (`metrics_pair`: ComponentOptions.from_args);
    on error, report and exit with code 1.

    Errors argparse itself detects (unknown flag, non-integer port) exit 1 only when `parser`
    is a ComponentArgumentParser; validation errors always exit 1.
    """
    args = parser.parse_args(argv)
    try:
        return args, ComponentOptions.from_args(args, component, metrics_pair=metrics_pair)
    except OptionsError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


CONFIG_REFUSED_EXIT: Final = 2
"""The exit status of a component whose configuration file names a plugin that does not exist
or gives a plugin args it refuses (the scheduler's --config, the autoscaler's
--scheduler-config-file); flag errors exit 1."""


def refuse_config(parser: argparse.ArgumentParser, flag: str, error: Exception) -> NoReturn:
    """Reports a configuration file the component cannot run in one line naming `flag`, and
    exits CONFIG_REFUSED_EXIT."""
    print(f"{parser.prog}: error: {flag}: {error}", file=sys.stderr)
    raise SystemExit(CONFIG_REFUSED_EXIT)
