"""The apiserver's flags and the settings they make: its flag table (`build_parser`) and
`parse_settings`, which `app.main` calls once (upstream's cmd/kube-apiserver/app/options). It
loads no server: a driver reads the table (kemu.trace checks CLUSTER.yaml's args with it)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from apiserver.admission.default_toleration_seconds import (
    DEFAULT_TOLERATION_SECONDS,
    DefaultTolerationSeconds,
)
from apiserver.admission.plugins import (
    DEFAULT_VERSION_RULES,
    AdmissionPlugins,
    UnknownPlugins,
    plugin_list,
    registered,
)
from apiserver.authentication.service_accounts import (
    DEFAULT_ISSUER,
    AuthenticationSettings,
    load_public_keys,
    load_signing_key,
)
from apiserver.authorization.modes import (
    DEFAULT_MODES,
    MODE_CHOICES,
    ModeError,
    parse_modes,
    validate,
)
from apiserver.settings import (
    DEFAULT_BOOKMARK_FREQUENCY,
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
    DEFAULT_MAX_REQUESTS_INFLIGHT,
    ApiserverSettings,
    EtcdSettings,
    InflightSettings,
    ServingSettings,
)
from kemu.component.latency import CallLatency, latency_flag
from kemu.component.options import (
    ComponentOptions,
    duration_flag,
    new_parser,
    parse_component_args,
)
from kemu.component.secure_serving import (
    ServingError,
    add_secure_serving_flags,
    check_plaintext_bind,
    secure_serving_from_args,
)
from kemu.component.version_rules import VersionRules
from kemu.machinery.convert import parse_time
from kemu.machinery.errors import Invalid
from kemu.machinery.kinds import resource_config
from kemu.machinery.latency import NO_LATENCY, SYNTAX
from kemu.machinery.runtime_config import RuntimeConfig, RuntimeConfigError
from kemu.machinery.virtual_time import ClockMode

COMPONENT: Final = "kube-apiserver"


PAIR_NAME: Final = "apiserver"
"""--cert-dir's pair (upstream's kube-apiserver: apiserver.crt, apiserver.key)."""


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("apiserver", "kemu kube-apiserver", default_metrics_port=6444)
    parser.add_argument(
        "--etcd-servers",
        default="http://127.0.0.1:2379",
        help="comma-separated etcd client URLs (default http://127.0.0.1:2379)",
    )
    parser.add_argument("--bind-address", default="127.0.0.1", help="address to serve gRPC on")
    parser.add_argument("--port", type=int, default=6443, help="gRPC port (default 6443)")
    add_secure_serving_flags(parser, pair_name=PAIR_NAME)
    parser.add_argument(
        "--rest-port",
        type=int,
        default=0,
        help="serve the Kubernetes REST API (JSON over HTTP, HTTPS with TLS) on this port of "
        "--bind-address; 0 disables (default 0)",
    )
    parser.add_argument(
        "--etcd-latency",
        type=latency_flag,
        default=NO_LATENCY,
        metavar="LATENCY",
        help="kemu only: every round trip to etcd of the API's reads and writes waits this long "
        f"on the apiserver's clock (virtual in virtual time) before it is sent: {SYNTAX} "
        "(default 0: none)",
    )
    parser.add_argument(
        "--etcd-latency-seed",
        type=int,
        default=0,
        metavar="N",
        help="kemu only: the seed of --etcd-latency's draws (default 0)",
    )
    parser.add_argument(
        "--etcd-compaction-interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="compact etcd history older than this every interval; 0 disables (default 300)",
    )
    parser.add_argument(
        "--watch-bookmark-frequency",
        type=float,
        default=DEFAULT_BOOKMARK_FREQUENCY,
        metavar="SECONDS",
        help="kemu only (upstream fixes it at 1 minute): how often a watch that allows "
        "bookmarks gets one while idle (default 60)",
    )
    parser.add_argument(
        "--max-requests-inflight",
        type=int,
        default=DEFAULT_MAX_REQUESTS_INFLIGHT,
        metavar="N",
        help="the most read-only requests served at once; past it a request is refused with "
        "429 and Retry-After (watches, health checks and Lease renewals are not counted); "
        "0: no limit (default 400)",
    )
    parser.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        default=DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
        metavar="N",
        help="the most mutating requests served at once, as --max-requests-inflight; 0: no "
        "limit (default 200)",
    )
    parser.add_argument(
        "--enable-priority-and-fairness",
        type=_parse_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="API Priority and Fairness: requests classified by the FlowSchemas and queued "
        "fairly at their priority levels, the levels sharing --max-requests-inflight + "
        "--max-mutating-requests-inflight; false: the max-in-flight filter (default true)",
    )
    for which in ("not-ready", "unreachable"):
        parser.add_argument(
            f"--default-{which}-toleration-seconds",
            type=int,
            default=DEFAULT_TOLERATION_SECONDS,
            metavar="SECONDS",
            help=f"the tolerationSeconds of the {which} NoExecute toleration that "
            "DefaultTolerationSeconds adds to every pod without one (default 300)",
        )
    for which, text in (
        ("enable", "admission plugins that should be enabled in addition to default enabled ones"),
        (
            "disable",
            "admission plugins that should be disabled although they are in the default "
            "enabled plugins list",
        ),
    ):
        parser.add_argument(
            f"--{which}-admission-plugins",
            action="append",
            default=[],
            metavar="NAME,...",
            help=f"{text}. Comma-delimited list of admission plugins (at 1.37): "
            f"{', '.join(sorted(registered(DEFAULT_VERSION_RULES)))}. The order of plugins in "
            "this flag does not matter. The names and the default set are the emulated "
            "version's: from 1.21 to 1.37 upstream added and removed plugins (PodSecurityPolicy "
            "until 1.24, PodSecurity on by default from 1.23, ...). (kemu models NamespaceLifecycle, LimitRanger, ServiceAccount, Priority, "
            "DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection, "
            "PodGroupProtection, PodTopologyLabels, PodGroupWorkloadExists and ResourceQuota; "
            "the others are accepted and do nothing)",
        )
    parser.add_argument(
        "--runtime-config",
        action="append",
        default=[],
        metavar="KEY=VALUE,...",
        help="A set of key=value pairs that enable or disable built-in APIs: <group>/<version> "
        "(or <version> for the core group), <group>/<version>/<resource>, and api/all, api/ga, "
        "api/beta, api/alpha for every version of that level. Alpha versions are off by "
        "default, and from 1.24 beta versions too (e.g. scheduling.k8s.io/v1beta1=true serves "
        "1.37's Workload and PodGroup, with GenericWorkload on)",
    )
    parser.add_argument(
        "--shutdown-delay-duration",
        type=duration_flag,
        default=0.0,
        metavar="DURATION",
        help="Time to delay the termination. During that time the server keeps serving "
        "requests normally. The endpoints /healthz and /livez will return success, but /readyz "
        "immediately returns failure. Graceful termination starts after this delay has "
        "elapsed (upstream's flag; default 0s; make run's Procfile: 1s, so that the leaders "
        "stopping beside it release their leases). It counts against --shutdown-grace-period.",
    )
    parser.add_argument(
        "--authorization-mode",
        default=",".join(DEFAULT_MODES),
        metavar="MODE,...",
        help="Ordered list of plug-ins to do authorization on secure port. Comma-delimited "
        f"list of: {','.join(MODE_CHOICES)} (default {','.join(DEFAULT_MODES)}, as "
        "upstream's; system:masters is always allowed first). kemu builds AlwaysAllow, "
        "AlwaysDeny and RBAC; ABAC and Webhook are refused as not modelled",
    )
    parser.add_argument(
        "--clock-start",
        default="",
        metavar="RFC3339",
        help="kemu only, with --clock virtual: the virtual time a fresh cluster's clock starts "
        "at (default: the apiserver's start); a cluster whose clock exists keeps it",
    )
    _add_authentication_flags(parser)
    return parser


def _add_authentication_flags(parser: argparse.ArgumentParser) -> None:
    """upstream's pkg/kubeapiserver/options/authentication.go: ServiceAccount tokens and
    anonymous requests (x509 client certificates are --client-ca-file's)."""
    parser.add_argument(
        "--anonymous-auth",
        type=_parse_bool,
        default=True,
        metavar="BOOL",
        help="Enables anonymous requests to the secure port of the API server. Requests that "
        "are not rejected by another authentication method are treated as anonymous requests "
        "(system:anonymous in system:unauthenticated). With false they are refused with 401 "
        "(default true)",
    )
    parser.add_argument(
        "--service-account-issuer",
        action="append",
        default=[],
        metavar="URL",
        help="Identifier of the service account token issuer: the `iss` claim of the tokens "
        "issued; repeated, the first one issues and tokens of every one are accepted (default "
        f"{DEFAULT_ISSUER})",
    )
    parser.add_argument(
        "--service-account-signing-key-file",
        default="",
        metavar="FILE",
        help="Path to the file that contains the current private key of the service account "
        "token issuer (RSA, PEM). kemu only: without it a key is drawn for the first token, "
        "and tokens issued before a restart no longer verify",
    )
    parser.add_argument(
        "--service-account-key-file",
        action="append",
        default=[],
        metavar="FILE",
        help="File containing PEM-encoded RSA public (or private) keys, used to verify "
        "ServiceAccount tokens besides the signing key's; repeatable",
    )
    parser.add_argument(
        "--api-audiences",
        default="",
        metavar="AUDIENCES",
        help="Identifiers of the API (comma-separated): a token must name one of them; the "
        "audience of TokenRequests that name none (default: the issuers)",
    )
    parser.add_argument(
        "--service-account-max-token-expiration",
        type=duration_flag,
        default=0.0,
        metavar="DURATION",
        help="The maximum validity duration of a token created by the service account token "
        "issuer; a TokenRequest asking for longer gets this (default 0: no cap)",
    )
    parser.add_argument(
        "--service-account-extend-token-expiration",
        type=_parse_bool,
        default=True,
        metavar="BOOL",
        help="Turns on projected service account expiration extension during token "
        "generation: the kubelet's pod-bound tokens of 3607 s are issued for a year, with "
        "warnafter (default true)",
    )


def _authentication(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> AuthenticationSettings:
    """The flags' keys read and checked (an unreadable or wrong key file is the flag's error)."""
    signing = None
    if args.service_account_signing_key_file:
        path = args.service_account_signing_key_file
        try:
            signing = load_signing_key(Path(path).read_bytes(), path)
        except (OSError, ValueError) as e:
            parser.error(f"--service-account-signing-key-file: {e}")
    public = []
    for path in args.service_account_key_file:
        try:
            public.extend(load_public_keys(Path(path).read_bytes(), path))
        except (OSError, ValueError) as e:
            parser.error(f"--service-account-key-file: {e}")
    if args.service_account_max_token_expiration and (
        args.service_account_max_token_expiration < 3600
    ):
        parser.error(
            "--service-account-max-token-expiration: "
            f"{args.service_account_max_token_expiration:g}s is shorter than 1 hour"
        )
    return AuthenticationSettings(
        anonymous=args.anonymous_auth,
        issuers=tuple(args.service_account_issuer) or (DEFAULT_ISSUER,),
        signing_key=signing,
        public_keys=tuple(public),
        api_audiences=tuple(a.strip() for a in args.api_audiences.split(",") if a.strip()),
        max_expiration=int(args.service_account_max_token_expiration),
        extend_expiration=args.service_account_extend_token_expiration,
    )


def parse_settings(argv: Sequence[str] | None) -> tuple[ApiserverSettings, ComponentOptions]:
    """The apiserver's settings and the component options every process has, from the flags;
    a flag in error exits as the parser does (naming it)."""
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    return _settings(parser, args, options), options


def _settings(
    parser: argparse.ArgumentParser, args: argparse.Namespace, options: ComponentOptions
) -> ApiserverSettings:
    """The settings the flags say, or the parser's error (exit 2) naming the flag at fault."""
    if not 0 < args.port < 65536:
        parser.error(f"--port: {args.port} is not a port (1 to 65535)")
    if not 0 <= args.rest_port < 65536:
        parser.error(f"--rest-port: {args.rest_port} is not a port (1 to 65535, or 0)")
    if not args.watch_bookmark_frequency > 0:
        parser.error(f"--watch-bookmark-frequency: {args.watch_bookmark_frequency} must be > 0")
    for flag in (
        "default_not_ready_toleration_seconds",
        "default_unreachable_toleration_seconds",
        "max_requests_inflight",
        "max_mutating_requests_inflight",
    ):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')}: {getattr(args, flag)} must be >= 0")
    if args.shutdown_delay_duration >= options.shutdown_grace_period:
        parser.error(
            f"--shutdown-delay-duration: {args.shutdown_delay_duration:g}s must be shorter than "
            f"--shutdown-grace-period ({options.shutdown_grace_period:g}s)"
        )
    clock_start = None
    if args.clock_start:
        if options.clock is not ClockMode.VIRTUAL:
            parser.error("--clock-start: needs --clock virtual")
        try:
            clock_start = parse_time(args.clock_start, "--clock-start").ToNanoseconds() / 1e9
        except Invalid as e:
            parser.error(f"--clock-start: {e.causes[0].message if e.causes else e.message}")
    runtime = RuntimeConfig.parse(args.runtime_config)
    try:
        resource_config(runtime, options.version.minor)
    except RuntimeConfigError as e:
        parser.error(f"--runtime-config: {e}")
    try:
        admission = AdmissionPlugins.from_flags(
            [n for text in args.enable_admission_plugins for n in plugin_list(text)],
            [n for text in args.disable_admission_plugins for n in plugin_list(text)],
            VersionRules.at(options.version),
        )
    except UnknownPlugins as e:
        parser.error(str(e))
    try:
        secure = secure_serving_from_args(args, pair_name=PAIR_NAME)
        if not secure.enabled:
            check_plaintext_bind(
                args.bind_address, flag="--bind-address", allowed=args.allow_insecure_bind
            )
    except ServingError as e:
        parser.error(str(e))
    try:
        authorization_modes = validate(parse_modes(args.authorization_mode))
    except ModeError as e:
        parser.error(f"--authorization-mode: {e}")
    servers = tuple(s.strip() for s in args.etcd_servers.split(",") if s.strip())
    if not servers:
        parser.error("--etcd-servers: at least one URL is required")
    return ApiserverSettings(
        serving=ServingSettings(args.bind_address, args.port, args.rest_port, secure),
        etcd=EtcdSettings(
            servers,
            args.etcd_compaction_interval,
            CallLatency(args.etcd_latency, args.etcd_latency_seed),
        ),
        inflight=InflightSettings(
            args.max_requests_inflight,
            args.max_mutating_requests_inflight,
            args.enable_priority_and_fairness,
        ),
        toleration_seconds=DefaultTolerationSeconds(
            not_ready=args.default_not_ready_toleration_seconds,
            unreachable=args.default_unreachable_toleration_seconds,
        ),
        watch_bookmark_frequency=args.watch_bookmark_frequency,
        shutdown_delay=args.shutdown_delay_duration,
        clock_start=clock_start,
        runtime_config=runtime,
        admission=admission,
        authentication=_authentication(parser, args),
        authorization_modes=authorization_modes,
    )


def _parse_bool(text: str) -> bool:
    """A Go boolean flag's value (strconv.ParseBool)."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: expected true or false")
