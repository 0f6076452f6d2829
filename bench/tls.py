"""TLS's and RBAC's cost per call (issue #60 items 1 and 3): three apiservers on one etcd, one
plaintext, one with `make run`'s TLS (a serving pair, --client-ca-file: every gRPC client
presents a certificate) and one with the same TLS and `--authorization-mode RBAC` (its caller
allowed by a RoleBinding, looked at after a bootstrap-sized policy of ClusterRoleBindings to
others: `POLICY_SIZE` of each), the same calls through each, alternated in rounds: creates and gets on the gRPC port (a
kemu.client Client each, over one channel, as a component's), and GETs of one pod on the REST
edge (one aiohttp session each, its connections kept alive, as kubectl's and client-go's).
Reports each apiserver's CPU per call (from /proc: its process's user + system time), this
process's (the client's) and calls/s, then the TLS/plaintext and RBAC/TLS ratios.

    python -m bench tls [--calls 2000] [--rounds 2] [--in-flight 16]

A handshake is paid once per connection (these clients keep theirs): what is left is the
record layer's encryption and the per-call framing around it.
"""

from __future__ import annotations

import argparse
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import anyio

from apiserver.authorization.rbac import RBACAuthorizer
from bench.common import cpu_seconds, ratio
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import kubeconfig
from kemu.machinery.pki import COMPONENTS, write_cluster_pki
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import UserInfo
from kemu.testing import Cluster, make_pod
from kemu.testing.launch import Launch
from kemu.testing.ports import LOOPBACK, free_port

KINDS = ("create", "get", "rest-get")
_EDGES = ("plain", "tls", "rbac")
POLICY_SIZE = 60
"""ClusterRoles and ClusterRoleBindings (to other users) beside the caller's own RoleBinding:
about upstream's bootstrap policy's count."""


async def _policy(client: Client, groups: tuple[str, ...]) -> None:
    """A bootstrap-sized policy, and a RoleBinding in "default" that lets `groups` create and
    get pods (the last binding RBAC looks at: the ClusterRoleBindings come first)."""
    for i in range(POLICY_SIZE):
        rules = [
            types_pb2.PolicyRule(verbs=["get", "list", "watch"], api_groups=[""], resources=[r])
            for r in ("configmaps", "secrets", "services", "endpoints", "events")
        ]
        meta = types_pb2.ObjectMeta(name=f"bench:role-{i}")
        await client.create(types_pb2.ClusterRole(metadata=meta, rules=rules))
        await client.create(
            types_pb2.ClusterRoleBinding(
                metadata=types_pb2.ObjectMeta(name=f"bench:binding-{i}"),
                role_ref=types_pb2.RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=meta.name
                ),
                subjects=[types_pb2.Subject(kind="User", name=f"someone-{i}")],
            )
        )
    pods = types_pb2.PolicyRule(verbs=["create", "get"], api_groups=[""], resources=["pods"])
    await client.create(
        types_pb2.Role(
            metadata=types_pb2.ObjectMeta(name="bench:pods", namespace="default"), rules=[pods]
        )
    )
    await client.create(
        types_pb2.RoleBinding(
            metadata=types_pb2.ObjectMeta(name="bench:pods", namespace="default"),
            role_ref=types_pb2.RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="bench:pods"
            ),
            subjects=[
                types_pb2.Subject(api_group="rbac.authorization.k8s.io", kind="Group", name=g)
                for g in groups
            ],
        )
    )


def _cpu_seconds(pid: int) -> float:
    seconds = cpu_seconds(pid)
    assert seconds is not None, f"process {pid} is gone"
    return seconds


@dataclass(frozen=True)
class Target:
    """One apiserver: its pid, gRPC address, REST URL and how to reach both."""

    pid: int
    server: str
    rest_url: str
    tls: kubeconfig.ClientTLS | None
    context: ssl.SSLContext | bool
    """aiohttp's `ssl`: False for plain http."""


@dataclass(frozen=True)
class Edge:
    """One apiserver and the clients of the run."""

    name: str
    pid: int
    client: Client
    http: aiohttp.ClientSession
    rest_url: str


@dataclass(frozen=True)
class Round:
    edge: str
    kind: str
    calls: int
    wall: float
    server_cpu: float
    client_cpu: float

    def line(self) -> str:
        return (
            f"{self.edge:5} {self.kind:8} {self.calls} calls in {self.wall:.2f}s "
            f"({self.calls / self.wall:.0f}/s): apiserver {self.server_cpu / self.calls * 1e6:.0f} "
            f"us/call, client {self.client_cpu / self.calls * 1e6:.0f} us/call"
        )


async def _round(edge: Edge, kind: str, prefix: str, calls: int, in_flight: int) -> Round:
    limit = anyio.Semaphore(in_flight)
    url = f"{edge.rest_url}/api/v1/namespaces/default/pods/{prefix}-0"

    async def create(i: int) -> None:
        await edge.client.create(make_pod(f"{prefix}-{i}").namespace("default").obj())

    async def get(i: int) -> None:
        await edge.client.get(types_pb2.Pod, f"{prefix}-{i}", "default")

    async def rest_get(i: int) -> None:
        async with edge.http.get(url) as answer:
            await answer.read()
            assert answer.status == 200, answer.status

    call: Callable[[int], Awaitable[None]] = {
        "create": create,
        "get": get,
        "rest-get": rest_get,
    }[kind]

    async def one(i: int) -> None:
        async with limit:
            await call(i)

    server0, client0, wall0 = _cpu_seconds(edge.pid), time.process_time(), time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    return Round(
        edge.name,
        kind,
        calls,
        time.monotonic() - wall0,
        _cpu_seconds(edge.pid) - server0,
        time.process_time() - client0,
    )


async def _run(targets: dict[str, Target], opts: argparse.Namespace) -> list[Round]:
    out: list[Round] = []
    opened: list[Edge] = []
    try:
        tls = targets["tls"]
        async with Client(tls.server, tls=tls.tls) as setup:
            await _policy(setup, opts.groups)
        await anyio.sleep(1.0)  # (the RBAC apiserver's watch caches have the policy)
        for name, t in targets.items():
            connector = aiohttp.TCPConnector(ssl=t.context, limit=opts.in_flight)
            opened.append(
                Edge(
                    name,
                    t.pid,
                    Client(t.server, tls=t.tls, user_agent=f"bench-tls-{name}"),
                    aiohttp.ClientSession(connector=connector),
                    t.rest_url,
                )
            )
        for edge in opened:  # warm both up (channels, connections, caches)
            for i in range(50):
                await edge.client.create(
                    make_pod(f"warm-{edge.name}-{i}").namespace("default").obj()
                )
        for r in range(opts.rounds):
            order = opened[r % len(opened) :] + opened[: r % len(opened)]
            for edge in order:
                prefix = f"{edge.name}-{r}"
                for kind in opts.kinds:
                    result = await _round(edge, kind, prefix, opts.calls, opts.in_flight)
                    print(result.line(), flush=True)
                    out.append(result)
    finally:
        for edge in opened:
            await edge.client.close()
            await edge.http.close()
    return out


class _ListPolicy:
    """The policy `_policy` writes, as lists (rbac_rules.Policy), for the in-process figure."""

    def __init__(self, groups: tuple[str, ...]) -> None:
        rules = [
            types_pb2.PolicyRule(verbs=["get", "list", "watch"], api_groups=[""], resources=[r])
            for r in ("configmaps", "secrets", "services", "endpoints", "events")
        ]
        self.roles = {
            f"bench:role-{i}": types_pb2.ClusterRole(rules=rules) for i in range(POLICY_SIZE)
        }
        self.crbs = [
            types_pb2.ClusterRoleBinding(
                metadata=types_pb2.ObjectMeta(name=f"bench:binding-{i}"),
                role_ref=types_pb2.RoleRef(kind="ClusterRole", name=f"bench:role-{i}"),
                subjects=[types_pb2.Subject(kind="User", name=f"someone-{i}")],
            )
            for i in range(POLICY_SIZE)
        ]
        pods = types_pb2.PolicyRule(verbs=["create", "get"], api_groups=[""], resources=["pods"])
        self.role_obj = types_pb2.Role(rules=[pods])
        self.rb = types_pb2.RoleBinding(
            metadata=types_pb2.ObjectMeta(name="bench:pods", namespace="default"),
            role_ref=types_pb2.RoleRef(kind="Role", name="bench:pods"),
            subjects=[types_pb2.Subject(kind="Group", name=g) for g in groups],
        )

    def cluster_role_bindings(self) -> list[types_pb2.ClusterRoleBinding]:
        return self.crbs

    def role_bindings(self, namespace: str) -> list[types_pb2.RoleBinding]:
        return [self.rb] if namespace == "default" else []

    def cluster_role(self, name: str) -> types_pb2.ClusterRole | None:
        return self.roles.get(name)

    def role(self, namespace: str, name: str) -> types_pb2.Role | None:
        return self.role_obj if (namespace, name) == ("default", "bench:pods") else None


class _VersionedPolicy(_ListPolicy):
    """The same, saying it does not change (the apiserver's CachePolicy says when it does):
    the user's rules are kept."""

    revision = (0,)


def _decision_us(groups: tuple[str, ...], n: int = 5000) -> dict[str, float]:
    """The RBAC decision alone, in this process, in microseconds: an allowed and a refused
    request (the refused one tries every rule), each with the user's rules kept (as the
    apiserver's: its policy says when it changed) and walked anew over every binding."""
    user = UserInfo("kubernetes-admin", (*groups, "system:authenticated"))
    allowed = Attributes(user, "get", "pods", namespace="default", name="p")
    refused = Attributes(user, "delete", "pods", namespace="default", name="p")
    out = {}
    for how, policy in (("kept", _VersionedPolicy(groups)), ("walked", _ListPolicy(groups))):
        authorizer = RBACAuthorizer(policy)
        for name, attrs in (("allowed", allowed), ("refused", refused)):
            start = time.perf_counter()
            for _ in range(n):
                authorizer.authorize(attrs)
            out[f"{name} {how}"] = (time.perf_counter() - start) / n * 1e6
    return out


def measure(opts: argparse.Namespace) -> list[Round]:
    """The three apiservers on one etcd, `opts.kinds` of calls through each in
    `opts.rounds` alternated rounds of `opts.calls` (`opts.in_flight` at a time): what
    `python -m bench tls` and `python -m bench apiserver --security` measure."""
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp), launch=Launch.EXEC) as c:
        c.start_etcd(unsafe_no_fsync=True)
        plain = c.start_apiserver(name="plain", rest=True)
        plain_rest = plain.argv[plain.argv.index("--rest-port") + 1]
        port, rest_port = free_port(), free_port()
        rest_url = f"https://{LOOPBACK}:{rest_port}"
        pki = write_cluster_pki(
            c.root / "pki",
            rest_url=rest_url,
            grpc_server=f"{LOOPBACK}:{port}",
            users=COMPONENTS,
        )
        args = ["--etcd-servers", c.etcd_servers, "--port", str(port)]
        args += ["--rest-port", str(rest_port), *pki.apiserver_args()]
        args += ["--disable-admission-plugins", "ServiceAccount"]
        c.start_component("apiserver", "tls", args, port=port)
        rbac_port, rbac_rest_port = free_port(), free_port()
        rbac_args = ["--etcd-servers", c.etcd_servers, "--port", str(rbac_port)]
        rbac_args += ["--rest-port", str(rbac_rest_port), *pki.apiserver_args()]
        rbac_args += ["--disable-admission-plugins", "ServiceAccount"]
        rbac_args += ["--authorization-mode", "RBAC"]
        c.start_component("apiserver", "rbac", rbac_args, port=rbac_port)
        admin = kubeconfig.load(pki.kubeconfig("admin"))
        opts.groups = COMPONENTS["admin"].groups
        assert admin.tls is not None and admin.tls.cert is not None
        context = ssl.create_default_context(cafile=str(pki.ca_file))
        pair = pki.dir / "bench"
        pair.mkdir()
        (pair / "c.crt").write_bytes(admin.tls.cert)
        (pair / "c.key").write_bytes(admin.tls.key or b"")
        context.load_cert_chain(pair / "c.crt", pair / "c.key")
        pids = {n: c.processes[n].pid or 0 for n in _EDGES}
        targets = {
            "plain": Target(
                pids["plain"], c.server, f"http://{LOOPBACK}:{plain_rest}", None, False
            ),
            "tls": Target(pids["tls"], f"{LOOPBACK}:{port}", rest_url, admin.tls, context),
            "rbac": Target(
                pids["rbac"],
                f"{LOOPBACK}:{rbac_port}",
                f"https://{LOOPBACK}:{rbac_rest_port}",
                admin.tls,
                context,
            ),
        }
        return anyio.run(_run, targets, opts)


def summary(rounds: Sequence[Round], kinds: Sequence[str]) -> list[str]:
    """Each edge's CPU per call (apiserver, client) and calls/s by kind, then the TLS/plain
    and RBAC/TLS ratios."""
    lines = []
    totals: dict[tuple[str, str], tuple[float, float, float]] = {}
    for edge in _EDGES:
        for kind in kinds:
            mine = [r for r in rounds if r.edge == edge and r.kind == kind]
            n = sum(r.calls for r in mine)
            server = sum(r.server_cpu for r in mine) / n * 1e6
            client = sum(r.client_cpu for r in mine) / n * 1e6
            rate = n / sum(r.wall for r in mine)
            totals[edge, kind] = (server, client, rate)
            lines.append(
                f"{edge:5} {kind:8} apiserver {server:.0f} us/call, client {client:.0f} "
                f"us/call, {rate:.0f} calls/s"
            )
    lines.append("")
    for over, under in (("tls", "plain"), ("rbac", "tls")):
        for kind in kinds:
            p, t = totals[under, kind], totals[over, kind]
            # (a ratio is nan when its base measured no CPU: a run too short for the
            # process's CPU clock, which counts in ticks of 10 ms)
            lines.append(
                f"{over}/{under} {kind:8} apiserver x{ratio(t[0], p[0]):.2f} "
                f"({t[0] - p[0]:+.0f} us), client x{ratio(t[1], p[1]):.2f} "
                f"({t[1] - p[1]:+.0f} us), calls/s x{ratio(t[2], p[2]):.2f}"
            )
    return lines


def add_arguments(parser: argparse.ArgumentParser, calls: int = 2000) -> None:
    parser.add_argument("--calls", type=int, default=calls, help="calls per kind and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=16)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tls", description=__doc__)
    add_arguments(parser)
    opts = parser.parse_args(argv)
    opts.kinds = KINDS
    print(f"load {os.getloadavg()[0]:.2f} at start", flush=True)
    rounds = measure(opts)
    print()
    print("\n".join(summary(rounds, KINDS)))
    print()
    shown = ", ".join(
        f"{k} {v:.1f} us" for k, v in _decision_us(COMPONENTS["admin"].groups).items()
    )
    print(
        f"RBAC decision in process ({POLICY_SIZE} ClusterRoleBindings to others, then the "
        f"RoleBinding): {shown}"
    )
    return 0
