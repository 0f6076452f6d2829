"""A kemu cluster made of real processes: etcd, an apiserver and any components.

The API is synchronous so that one cluster can live in a module- or session-scoped pytest
fixture without event-loop scope issues; async tests talk to it over the network like any
client. Every component is started as `python -m <module> ... --metrics-port M` with a free
port M, and is ready when `GET http://127.0.0.1:M/readyz` answers 200.

    with Cluster(tmp_path) as cluster:
        cluster.start_etcd()
        cluster.start_apiserver(feature_gates={"SchedulerAsyncPreemption": True})
        cluster.start_scheduler()
        cluster.start_kubelet("n1", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"})
        ...  # talk to cluster.server
"""

from __future__ import annotations

import argparse
import json
import logging
import ssl
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final
from urllib.error import URLError
from urllib.parse import urlencode
from urllib.request import urlopen

import grpc

from kemu.component.clock import SKEW_FILE_ENV
from kemu.machinery import kubeconfig
from kemu.machinery.latency import NO_PATH_LATENCY, PathLatency
from kemu.machinery.virtual_time import BOOT_TOKEN_ENV, ClockMode
from kemu.testing.cluster_time import announce_boot
from kemu.testing.etcd import DEFAULT_QUOTA_BACKEND_BYTES, Etcd, cluster_members
from kemu.testing.eventually import eventually_sync
from kemu.testing.faultproxy import FaultProxy
from kemu.testing.launch import ForkServer, Launch, shared_forkserver
from kemu.testing.netns import Host
from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_STOP_TIMEOUT,
    ManagedProcess,
    ProcessStartError,
    http_get,
    python_env,
    python_module_argv,
)

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY: Final = {"cpu": "4", "memory": "8Gi", "pods": "110"}
DEFAULT_CLUSTER_CIDR: Final = "10.128.0.0/11"
"""The pod network of a test cluster's controller-manager (--cluster-cidr): 8192 /24 node
ranges, for the benchmarks' thousands of hollow nodes (the Procfile's 10.244.0.0/16, kind's,
has 256); outside the apiserver's service range 10.96.0.0/12."""
NO_SERVICE_ACCOUNTS: Final = ("ServiceAccount",)
"""A test apiserver's --disable-admission-plugins by default (`Cluster.start_apiserver`)."""


def format_feature_gates(gates: Mapping[str, bool]) -> str:
    """{"A": True, "B": False} -> "A=true,B=false" (the --feature-gates syntax)."""
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in gates.items())


def format_runtime_config(config: Mapping[str, str]) -> str:
    """{"scheduling.k8s.io/v1beta1": "true"} -> "scheduling.k8s.io/v1beta1=true" (the
    --runtime-config syntax)."""
    return ",".join(f"{key}={value}" for key, value in config.items())


def format_resources(resources: Mapping[str, str] | str) -> str:
    """{"cpu": "4", "memory": "8Gi"} -> "cpu=4,memory=8Gi"; a string is passed through."""
    if isinstance(resources, str):
        return resources
    return ",".join(f"{name}={value}" for name, value in resources.items())


def add_clock_argument(parser: argparse.ArgumentParser) -> None:
    """A driver's `--clock real|virtual` (bench, kemu.chaos, kemu.skew): the mode of its
    cluster's clock, passed to every component it starts (`Cluster(clock=...)`); read it back
    with `ClockMode(args.clock)`."""
    parser.add_argument(
        "--clock",
        choices=[m.value for m in ClockMode],
        default=ClockMode.REAL.value,
        help="the cluster's clock: real (the host's time; default) or virtual (the cluster "
        "clock the apiserver keeps, at rate 1 until `kemuctl clock rate` changes it)",
    )


@dataclass(frozen=True)
class MetricsEndpoint:
    """Where a component's metrics/health endpoint is: its address (`--metrics-bind-address`;
    loopback by default) and, when it serves TLS (a kubelet's --tls-cert-file), the CA file
    that verifies it (its URLs are then https)."""

    address: str = LOOPBACK
    ca_file: Path | None = None

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        if self.ca_file is None:
            return None
        return ssl.create_default_context(cafile=str(self.ca_file))

    def url(self, port: int, path: str) -> str:
        scheme = "http" if self.ca_file is None else "https"
        return f"{scheme}://{self.address}:{port}{path}"


LOOPBACK_METRICS: Final = MetricsEndpoint()


class Component(ManagedProcess):
    """A kemu process started as `python -m module`, with its metrics/health endpoint."""

    def __init__(
        self,
        name: str,
        module: str,
        argv: Sequence[str],
        *,
        metrics_port: int,
        log_path: Path,
        env: Mapping[str, str],
        port: int | None = None,
        forkserver: ForkServer | None = None,
        metrics: MetricsEndpoint = LOOPBACK_METRICS,
    ) -> None:
        self.module = module
        self.metrics_port = metrics_port
        self.metrics = metrics
        self._ssl = metrics.ssl_context
        self.port = port  # the serving port, for the apiserver
        ready: str | Callable[[], bool] = self.readyz_url
        if self._ssl is not None:
            ready = self._ready
        super().__init__(name, argv, log_path=log_path, env=env, ready=ready, forkserver=forkserver)

    def _ready(self) -> bool:
        return self.get(self.readyz_url)[0] == 200

    def get(self, url: str) -> tuple[int, bytes]:
        """GET `url` of this component's endpoint, verified by its CA when it serves TLS."""
        return http_get(url, context=self._ssl)

    @property
    def metrics_url(self) -> str:
        return self.metrics.url(self.metrics_port, "/metrics")

    @property
    def readyz_url(self) -> str:
        return self.metrics.url(self.metrics_port, "/readyz")

    @property
    def healthz_url(self) -> str:
        return self.metrics.url(self.metrics_port, "/healthz")

    def debug_url(self, name: str, query: Mapping[str, str] | None = None) -> str:
        url = self.metrics.url(self.metrics_port, f"/debug/{name}")
        return f"{url}?{urlencode(query)}" if query else url

    def debug(self, name: str, query: Mapping[str, str] | None = None) -> Any:
        """The JSON document of GET /debug/<name>?<query>; RuntimeError unless it answers
        200 (blocking: call it from a thread in async code)."""
        url = self.debug_url(name, query)
        status, body = self.get(url)
        if status != 200:
            raise RuntimeError(f"GET {url} answered {status}: {body[:200]!r}")
        return json.loads(body)

    def scrape(self) -> str:
        """The Prometheus text from /metrics; RuntimeError unless it answers 200."""
        status, body = self.get(self.metrics_url)
        if status != 200:
            raise RuntimeError(f"{self.name}: GET {self.metrics_url} answered {status}")
        return body.decode()


class Cluster:
    """Processes of one test cluster under `root` (logs in root/logs, etcd data in root/etcd).

    Processes are kept by name in start order. `stop()` terminates them newest first and etcd
    (every member) last; it is also called on leaving a `with` block.
    """

    def __init__(
        self,
        root: Path,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
        env: Mapping[str, str] | None = None,
        proxy: FaultProxy | None = None,
        clock: ClockMode = ClockMode.REAL,
        launch: Launch | None = None,
        latency: PathLatency = NO_PATH_LATENCY,
    ) -> None:
        """`clock`: every component started runs with `--clock` so (and the cloud's kubelets).
        `latency`: every component started that dials the apiserver runs with its
        `--apiserver-latency`, every apiserver with its `--etcd-latency`, each process's draws
        seeded from the latency's seed and the process's name (kemu.machinery.latency; the
        cloud passes its own to its kubelets, cloud/kubelets.py).
        With `proxy` (started here, closed by `stop()`), every address a process of the
        cluster dials goes through a link of it, named by the dialer and the dialed
        process: a component's apiservers, an apiserver's etcd members, an autoscaler's
        cloud, and (members=N) each etcd member's peers; the proxy's rules cut or delay
        them (kemu/testing/faultproxy.py). Clients of the test dial the processes
        directly. `launch` (default `KEMU_TEST_LAUNCH`, else fork): how kemu's processes
        start (kemu/testing/launch.py)."""
        self.root = Path(root)
        self.clock = clock
        self.latency = latency
        launch = launch if launch is not None else Launch.from_env()
        self._forkserver = shared_forkserver() if launch is Launch.FORK else None
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.env = python_env(env)
        self.proxy = proxy
        if proxy is not None:
            proxy.start()
        self.processes: dict[str, ManagedProcess] = {}
        self._etcd: list[Etcd] = []
        self._apiservers: list[Component] = []
        self._boot_tokens: dict[str, str] = {}  # process name -> its last start's announcement
        self._apiserver: Component | None = None
        self._rest_url: str | None = None
        self._rest_grpc = ""  # the gRPC address of the apiserver of `_rest_url`
        self.component_server: str | None = None
        """--server of the components started from now on (HOST:PORT[,HOST:PORT...]);
        None: the first apiserver (`server`). `servers` makes them fail over between every
        apiserver started; `spread_components()` spreads them over the apiservers."""
        self._spread: int | None = None  # components started since spread_components()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Cluster {self.root} {list(self.processes)}>"

    # ------------------------------------------------------------------ etcd and apiserver

    @property
    def etcd(self) -> Etcd:
        """The etcd member (the first one of a cluster)."""
        return self.etcd_members[0]

    @property
    def etcd_members(self) -> list[Etcd]:
        """Every etcd member, in start order."""
        if not self._etcd:
            raise RuntimeError("etcd was not started: call start_etcd() first")
        return list(self._etcd)

    @property
    def etcd_servers(self) -> str:
        """Every member's client URL, comma-separated: the apiserver's --etcd-servers."""
        return ",".join(m.url for m in self.etcd_members)

    @property
    def servers(self) -> str:
        """HOST:PORT of every apiserver started, comma-separated: --server for a client that
        fails over between them."""
        if not self._apiservers:
            raise RuntimeError("no apiserver was started: call start_apiserver() first")
        return ",".join(f"{LOOPBACK}:{a.port}" for a in self._apiservers)

    def spread_components(self) -> None:
        """Every component started from now on dials every apiserver started, its list
        rotated one further than the previous component's: round-robin, as an L4 balancer
        in front of upstream's apiservers spreads connections, each process sticking to its
        first (and failing over to the next). Deterministic where `--server-order shuffled`
        (kemu.client.endpoints) is random. Overrides `component_server`."""
        self._spread = 0

    @property
    def server(self) -> str:
        """host:port of the apiserver, for --server and clients."""
        if self._apiserver is None or self._apiserver.port is None:
            raise RuntimeError("no apiserver was started: call start_apiserver() first")
        return f"{LOOPBACK}:{self._apiserver.port}"

    @property
    def rest_url(self) -> str:
        """http://host:port of the first apiserver started with `rest=True`."""
        if self._rest_url is None:
            raise RuntimeError("no apiserver serves REST: start_apiserver(rest=True) first")
        return self._rest_url

    def write_kubeconfig(self, path: Path | None = None) -> Path:
        """A kubeconfig for kubectl and the Python client (root/kubeconfig by default), naming
        the same apiserver's gRPC address too (kemuctl's)."""
        return kubeconfig.write(
            path or self.root / "kubeconfig", self.rest_url, grpc_server=self._rest_grpc
        )

    def start_etcd(
        self,
        *,
        name: str = "etcd",
        members: int = 1,
        quota_backend_bytes: int = DEFAULT_QUOTA_BACKEND_BYTES,
        unsafe_no_fsync: bool = False,
        extra_args: Sequence[str] = (),
        wait: bool = True,
    ) -> Etcd:
        """Start etcd with its data in root/<name>; it is what `start_apiserver` uses. With
        `members` > 1, a cluster of that many members named <name>-0, <name>-1, ... (data in
        root/<name>-i), every one of them given to the apiservers; the first is returned."""
        if self._etcd:
            raise ValueError("etcd was already started in this cluster")
        if members < 1:
            raise ValueError(f"members: must be >= 1, not {members}")
        if members == 1:
            self._check_new_name(name)
            procs = [
                Etcd(
                    self.root / name,
                    log_path=self._log_path(name),
                    name=name,
                    quota_backend_bytes=quota_backend_bytes,
                    unsafe_no_fsync=unsafe_no_fsync,
                    extra_args=list(extra_args),
                )
            ]
        else:
            names = [f"{name}-{i}" for i in range(members)]
            for n in names:
                self._check_new_name(n)
            procs = cluster_members(
                self.root,
                names,
                log_dir=self.root / "logs",
                quota_backend_bytes=quota_backend_bytes,
                unsafe_no_fsync=unsafe_no_fsync,
                extra_args=extra_args,
                proxy=self.proxy,
            )
        self._etcd = procs
        # Every member first: none is healthy before a quorum of them runs.
        for proc in procs:
            self._launch(proc, wait=False)
        if wait:
            for proc in procs:
                self.wait_ready(proc.name)
        return procs[0]

    def start_apiserver(
        self,
        *,
        name: str = "apiserver",
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        runtime_config: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
        rest: bool = False,
        disable_admission_plugins: Sequence[str] = NO_SERVICE_ACCOUNTS,
    ) -> Component:
        """Start `python -m apiserver` on etcd; the first one started is `self.server`.
        `disable_admission_plugins` is its --disable-admission-plugins: by default
        ServiceAccount, which refuses every pod of a namespace whose `default` ServiceAccount
        the controller-manager has not created, and most tests run none; a test that runs a
        controller-manager and wants upstream's pods (the token volume) passes ().
        With `rest`, it also serves the Kubernetes REST API (`self.rest_url`,
        `write_kubeconfig`). `runtime_config` is its --runtime-config: a gate's API group
        version that upstream leaves off by default (every alpha one, beta from 1.24, e.g.
        1.37's scheduling.k8s.io/v1beta1 for GenericWorkload) is served only when enabled there,
        as kube-apiserver's."""
        port = free_port()
        rest_args: list[str] = []
        if rest:
            rest_port = free_port()
            rest_args = ["--rest-port", str(rest_port)]
            if self._rest_url is None:
                self._rest_url = f"http://{LOOPBACK}:{rest_port}"
                self._rest_grpc = f"{LOOPBACK}:{port}"
        args = [
            "--etcd-servers", self._dialed(name, self.etcd_servers),
            "--bind-address", LOOPBACK,
            "--port", str(port),
            *rest_args,
            *(["--runtime-config", format_runtime_config(runtime_config)] if runtime_config else []),
            *(
                ["--disable-admission-plugins", ",".join(disable_admission_plugins)]
                if disable_admission_plugins
                else []
            ),
            *extra_args,
        ]  # fmt: skip
        proc = self.start_component(
            "apiserver",
            name,
            args,
            emulated_version=emulated_version,
            feature_gates=feature_gates,
            wait=wait,
            port=port,
        )
        if rest and wait:
            # the REST edge listens just after the gRPC server the readiness wait saw
            url = f"http://{LOOPBACK}:{rest_port}/readyz"
            eventually_sync(lambda: _answers(url), message=f"the REST edge at {url}")
        if self._apiserver is None:
            self._apiserver = proc
        self._apiservers.append(proc)
        return proc

    # ------------------------------------------------------------------ components

    def start_component(
        self,
        module: str,
        name: str,
        args: Sequence[str],
        *,
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        env: Mapping[str, str] | None = None,
        wait: bool = True,
        port: int | None = None,
        host: Host | None = None,
        metrics_ca: Path | None = None,
    ) -> Component:
        """Start `python -m module args... [--emulated-version V] [--feature-gates G]
        --metrics-port M` and, if `wait`, wait for its /readyz.

        `emulated_version` None leaves the component's default. `port` is recorded as the
        component's serving port (it is not added to the arguments). `host`: the process runs
        in that network namespace (kemu.testing.netns), its metrics endpoint on the host's
        address (--metrics-bind-address). `metrics_ca`: the endpoint serves TLS (the
        component's --tls-cert-file, given in `args`) that this CA file verifies.
        """
        self._check_new_name(name)
        metrics_port = free_port()
        metrics = MetricsEndpoint(host.address if host else LOOPBACK, metrics_ca)
        argv = list(args)
        if host is not None:
            argv += ["--metrics-bind-address", host.address]
        if emulated_version is not None:
            argv += ["--emulated-version", emulated_version]
        if feature_gates:
            argv += ["--feature-gates", format_feature_gates(feature_gates)]
        argv += ["--metrics-port", str(metrics_port)]
        if self.clock is not ClockMode.REAL:
            argv += ["--clock", self.clock.value]
        argv += self._latency_args(module, name)
        command = python_module_argv(module, argv)
        proc = Component(
            name,
            module,
            host.argv(command) if host is not None else command,
            metrics_port=metrics_port,
            log_path=self._log_path(name),
            env={**self.env, SKEW_FILE_ENV: str(self._skew_path(name)), **(env or {})},
            port=port,
            forkserver=self._forkserver,
            metrics=metrics,
        )
        self._launch(proc, wait)
        return proc

    def _latency_args(self, module: str, name: str) -> list[str]:
        """The flags of `self.latency` for process `name` (a python -m `module`)."""
        seed = str(zlib.crc32(f"{self.latency.seed}/{name}".encode()))
        if module == "apiserver":
            if self.latency.etcd.none:
                return []
            return ["--etcd-latency", str(self.latency.etcd), "--etcd-latency-seed", seed]
        if self.latency.apiserver.none:
            return []
        return [
            "--apiserver-latency",
            str(self.latency.apiserver),
            "--apiserver-latency-seed",
            seed,
        ]

    def start_scheduler(
        self,
        *,
        name: str = "scheduler",
        config: str | Path | None = None,
        leader_elect: bool = False,
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
        server: str | None = None,
    ) -> Component:
        """`server` (HOST:PORT[,HOST:PORT...]) is the apiserver it talks to; by default
        `component_server`, else the cluster's first."""
        args = ["--server", self._dialed(name, server or self._component_server())]
        if config is not None:
            args += ["--config", str(config)]
        if leader_elect:
            args.append("--leader-elect")
        return self.start_component(
            "scheduler",
            name,
            [*args, *extra_args],
            emulated_version=emulated_version,
            feature_gates=feature_gates,
            wait=wait,
        )

    def start_kubelet(
        self,
        node_name: str,
        *,
        capacity: Mapping[str, str] | str = DEFAULT_CAPACITY,
        name: str | None = None,
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
    ) -> Component:
        """Start a kubelet for `node_name`; its process name defaults to kubelet-<node_name>.
        Its checkpoints live under the cluster's directory (kept across restart())."""
        process = name if name is not None else f"kubelet-{node_name}"
        args = [
            "--server", self._dialed(process, self._component_server()),
            "--node-name", node_name,
            "--capacity", format_resources(capacity),
            "--root-dir", str(self.root / process),
        ]  # fmt: skip
        return self.start_component(
            "kubelet",
            process,
            [*args, *extra_args],
            emulated_version=emulated_version,
            feature_gates=feature_gates,
            wait=wait,
        )

    def start_controllermanager(
        self,
        *,
        name: str = "controllermanager",
        leader_elect: bool = False,
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
        cluster_cidr: str | None = DEFAULT_CLUSTER_CIDR,
    ) -> Component:
        """`cluster_cidr`: the nodes get pod CIDRs from it (--allocate-node-cidrs, as a
        kubeadm cluster given a pod network); None: no node IPAM (upstream's default)."""
        args = ["--server", self._dialed(name, self._component_server())]
        if leader_elect:
            args.append("--leader-elect")
        if cluster_cidr is not None:
            args += ["--allocate-node-cidrs", "--cluster-cidr", cluster_cidr]
        return self.start_component(
            "controllermanager",
            name,
            [*args, *extra_args],
            emulated_version=emulated_version,
            feature_gates=feature_gates,
            wait=wait,
        )

    def start_cloud(
        self,
        config: str | Path,
        *,
        name: str = "cloud",
        provision_delay: str = "0s",
        emulated_version: str | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
    ) -> Component:
        """Start `python -m cloud`: `config` is the YAML text of its node groups or a file.
        Its state lives in root/<name> (kept across restart()); its gRPC API is
        f"{LOOPBACK}:{proc.port}"."""
        if isinstance(config, str):
            path = self.root / f"{name}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(config)
        else:
            path = config
        port = free_port()
        args = [
            "--server", self._dialed(name, self._component_server()),
            "--config", str(path),
            "--state-dir", str(self.root / name),
            "--port", str(port),
            "--provision-delay", provision_delay,
        ]  # fmt: skip
        return self.start_component(
            "cloud",
            name,
            [*args, *extra_args],
            emulated_version=emulated_version,
            wait=wait,
            port=port,
        )

    def start_autoscaler(
        self,
        cloud: str | Component,
        *,
        name: str = "autoscaler",
        scan_interval: str = "1s",
        emulated_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
    ) -> Component:
        """Start `python -m autoscaler` against `cloud`: the cloud component (start_cloud's)
        or its gRPC address HOST:PORT. `scan_interval` defaults to 1s (upstream's 10s is
        too slow for tests)."""
        if isinstance(cloud, Component):
            if cloud.port is None:
                raise ValueError(f"{cloud.name} serves no gRPC port")
            address = f"{LOOPBACK}:{cloud.port}"
        else:
            address = cloud
        args = [
            "--server", self._dialed(name, self._component_server()),
            "--cloud-provider-address", self._dialed(name, address),
            "--scan-interval", scan_interval,
        ]  # fmt: skip
        return self.start_component(
            "autoscaler",
            name,
            [*args, *extra_args],
            emulated_version=emulated_version,
            feature_gates=feature_gates,
            wait=wait,
        )

    # ------------------------------------------------------------------ control

    def component(self, name: str) -> Component:
        """The component called `name` (KeyError if unknown, TypeError for etcd)."""
        proc = self.processes[name]
        if not isinstance(proc, Component):
            raise TypeError(f"{name} is not a kemu component")
        return proc

    def wait_ready(self, name: str, timeout: float | None = None) -> None:
        self.processes[name].wait_ready(
            timeout=timeout if timeout is not None else self.startup_timeout
        )

    def skew_clock(self, name: str, seconds: float) -> None:
        """Set component `name`'s wall clock `seconds` off (negative: behind; 0: right),
        from within a second on, without a restart (kemu.component.clock's skew file)."""
        if not isinstance(self.processes.get(name), Component):
            raise ValueError(f"{name!r} is not a kemu component of this cluster")
        path = self._skew_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{seconds!r}\n")
        tmp.replace(path)  # a reader never sees a half-written file

    def pause(self, name: str) -> None:
        """SIGSTOP `name` (a frozen process: its connections stay open, it answers nothing)
        until `resume(name)`."""
        self.processes[name].pause()

    def resume(self, name: str) -> None:
        """SIGCONT `name` after `pause(name)`."""
        self.processes[name].resume()

    def kill(self, name: str) -> int | None:
        """SIGKILL `name` (a crash); its exit code."""
        code = self.processes[name].kill()
        self._withdraw_boot(name)
        return code

    def terminate(self, name: str, timeout: float | None = None) -> int | None:
        """SIGTERM `name`, SIGKILL after the stop timeout; its exit code."""
        code = self.processes[name].terminate(timeout if timeout is not None else self.stop_timeout)
        self._withdraw_boot(name)
        return code

    def restart(self, name: str, *, wait: bool = True) -> ManagedProcess:
        """Start `name` again with the same argv and ports (terminating it first if running)."""
        proc = self.processes[name]
        if proc.running:
            proc.terminate(self.stop_timeout)
        self._launch(proc, wait)
        return proc

    def stop(self) -> dict[str, int]:
        """Terminate every process, newest first and etcd last.

        Returns the exit codes that were not clean: a process that did not exit cleanly on
        SIGTERM, or one that had died without the test killing it. Each is also logged.
        """
        unclean: dict[str, int] = {}
        order = [p for p in reversed(self.processes.values()) if p not in self._etcd]
        order.extend(self._etcd)
        try:
            for proc in order:
                was_running = proc.running
                if not was_running and (proc.stopped_deliberately or proc.pid is None):
                    continue
                code = proc.terminate(self.stop_timeout)
                if code is not None and code not in proc.clean_exit_codes:
                    unclean[proc.name] = code
                    how = "on SIGTERM" if was_running else "before the cluster was stopped"
                    logger.warning("%s exited with code %d %s", proc.name, code, how)
        finally:
            for proc in order:
                if proc.running:
                    proc.kill()
            if self.proxy is not None:
                self.proxy.close()
        return unclean

    def _announce_boot(self, proc: ManagedProcess) -> None:
        """In virtual time, tells the apiserver that a component is starting, so that the
        event-driven clock does not jump past its boot (issue #30: a booting component is
        pending work); the process reports the token in its clock session. Not for the
        apiservers, nor before one runs; an apiserver that does not answer is logged and the
        component starts unannounced."""
        if (
            self.clock is ClockMode.REAL
            or not isinstance(proc, Component)
            or proc in self._apiservers
            or self._apiserver is None
            or not self._apiserver.running
        ):
            return
        token = f"{proc.name}-{uuid.uuid4().hex[:12]}"
        proc.env = {**(proc.env or {}), BOOT_TOKEN_ENV: token}
        try:
            announce_boot(self.server, token, ttl=self.startup_timeout)
        except grpc.RpcError as e:
            logger.warning("could not announce %s to the cluster clock: %s", proc.name, e)
            return
        self._boot_tokens[proc.name] = token

    def _withdraw_boot(self, name: str) -> None:
        """Withdraws the announcement of `name`'s last start, if any (a no-op at the apiserver
        once the component has booted): a process stopped or failed while booting is no
        longer pending work."""
        token = self._boot_tokens.pop(name, None)
        if token is None or self._apiserver is None or not self._apiserver.running:
            return
        try:
            announce_boot(self.server, token, ttl=0)
        except grpc.RpcError as e:
            logger.warning("could not withdraw the announcement %s: %s", token, e)

    # ------------------------------------------------------------------ logs

    def logs(self) -> dict[str, str]:
        """Every process's whole log, by name."""
        return {name: proc.logs() for name, proc in self.processes.items()}

    def dump_logs(self, tail: int | None = None) -> str:
        """Every process's log (or its last `tail` lines) under a header naming it."""
        parts = []
        for name, proc in self.processes.items():
            text = proc.logs() if tail is None else proc.log_tail(tail)
            state = "running" if proc.running else f"exited {proc.returncode}"
            parts.append(f"===== {name} (pid {proc.pid}, {state}) {proc.log_path}\n{text}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ internals

    def _component_server(self) -> str:
        if self._spread is not None:
            servers = self.servers.split(",")
            turn = self._spread % len(servers)
            self._spread += 1
            return ",".join(servers[turn:] + servers[:turn])
        return self.component_server or self.server

    def _dialed(self, dialer: str, addresses: str) -> str:
        """`addresses` (HOST:PORT or URLs, comma-separated) as process `dialer` is given
        them: each one of a process of this cluster through the proxy's link dialer ->
        that process, when there is a proxy; any other address as it is."""
        if self.proxy is None:
            return addresses
        by_address = {f"{LOOPBACK}:{c.port}": c.name for c in self._components() if c.port}
        by_address.update({m.endpoint: m.name for m in self._etcd})
        out = []
        for address in addresses.split(","):
            scheme, sep, hostport = address.rpartition("://")
            dialed = by_address.get(hostport)
            if dialed is not None:
                address = scheme + sep + self.proxy.link(dialer, dialed, hostport)
            out.append(address)
        return ",".join(out)

    def _components(self) -> list[Component]:
        return [p for p in self.processes.values() if isinstance(p, Component)]

    def _skew_path(self, name: str) -> Path:
        return self.root / "clock" / f"{name}.skew"

    def _log_path(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def _check_new_name(self, name: str) -> None:
        if name in self.processes:
            raise ValueError(f"a process named {name!r} was already started in this cluster")

    def _launch(self, proc: ManagedProcess, wait: bool) -> None:
        self.processes[proc.name] = proc
        self._announce_boot(proc)
        proc.start()
        if wait:
            try:
                proc.wait_ready(timeout=self.startup_timeout)
            except ProcessStartError:
                proc.kill()  # the error already tells; stop() need not report it again
                self._withdraw_boot(proc.name)  # nothing will boot: the clock need not wait
                raise


def _answers(url: str) -> bool:
    """Whether an HTTP GET of `url` answers 200."""
    try:
        with urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (URLError, OSError):
        return False
