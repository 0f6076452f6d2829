"""The fuzz with security on (issue #60 item 5): the catalog's malformed requests, and
well-formed writes, thrown at apiservers with authentication and `--authorization-mode
Node,RBAC` as callers of every kind, each answer judged as upstream's would be.

The cluster (`secured_cluster`): etcd and three apiservers on it with the same ServiceAccount
keys and authorization, as upstream's secure port runs them:

- "secure": TLS with the cluster's client CA (pki.py), --anonymous-auth=true (upstream's
  default). Its gRPC port requires a client certificate (kemu/component/secure_serving.py),
  so callers without one reach gRPC through the plaintext two;
- "open": plaintext, --anonymous-auth=true;
- "closed": plaintext, --anonymous-auth=false.

The callers (`CALLERS`), by kind:

- anonymous: no credential. With --anonymous-auth=false 401 `Unauthorized` (gRPC
  UNAUTHENTICATED); with it true, system:anonymous, which nothing grants: 403;
- bad-credential: a garbage bearer token, an expired ServiceAccount token, one for another
  audience (all 401, UNAUTHENTICATED on gRPC), and on REST a client certificate from another
  CA: upstream's TLS asks for a certificate without verifying it (tls.RequestClientCert) and
  its x509 authenticator refuses it with 401; Python's ssl verifies a certificate it asked
  for during the handshake and cannot be told not to, so kemu's REST edge ends the handshake
  (alert "unknown ca") instead: a deviation (docs/security.md), judged as such here;
- unprivileged: a ServiceAccount without a RoleBinding (its token) and a user whose
  certificate names no grants: 403 with upstream's message (responsewriters.Forbidden)
  whatever the body holds, as upstream authorizes before it decodes a body
  (DefaultBuildHandlerChain: WithAuthentication, WithImpersonation, priority and fairness,
  WithAuthorization, then the handler). On gRPC a request is its attributes, so one that
  does not decode is INVALID_ARGUMENT (after authentication: apiserver/endpoints/calls.py);
- privileged: a system:masters certificate: the plain fuzz's rule (a 4xx naming the problem).

No answer may be a 5xx, INTERNAL, UNKNOWN, a dropped connection (but the deviation above) or a
hang, and nothing stored may change (`driver.changed` over `Snapshot`).
"""

from __future__ import annotations

import base64
import json
import random
import ssl
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiohttp
import grpc

from apiserver.authentication.service_accounts import load_signing_key, sign
from bench.fuzz import cases, send
from bench.fuzz.cases import Case, Grpc, Http, Raw, Request
from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kubeconfig
from kemu.machinery.certs import issue, new_ca
from kemu.machinery.keys import object_meta
from kemu.machinery.pki import ClusterPki, write_cluster_pki
from kemu.machinery.user import UserInfo
from kemu.testing import Cluster, make_pod
from kemu.testing.eventually import eventually_sync
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.ports import LOOPBACK, free_port

ANONYMOUS: Final = "anonymous"
BAD_CREDENTIAL: Final = "bad-credential"
UNPRIVILEGED: Final = "unprivileged"
PRIVILEGED: Final = "privileged"
KINDS: Final = (ANONYMOUS, BAD_CREDENTIAL, UNPRIVILEGED, PRIVILEGED)

REST: Final = "rest"
GRPC: Final = "grpc"

UNAUTHORIZED: Final = "401"
FORBIDDEN: Final = "403"
HANDSHAKE: Final = "handshake"
"""What a caller must get: 401, 403, a refused TLS handshake, or (privileged) a 4xx naming
the problem (PROBLEM)."""
PROBLEM: Final = "4xx"

ACCOUNT: Final = "fuzz-nobody"
"""The ServiceAccount (in cases.NS) that no RoleBinding names."""
NOBODY: Final = UserInfo("fuzz-nobody-user")
ADMIN: Final = UserInfo("fuzz-admin", ("system:masters",))
AUTHORIZATION_MODE: Final = "Node,RBAC"
ELSEWHERE: Final = "https://elsewhere.example"
"""The audience of the wrong-audience token."""


# ------------------------------------------------------------------ the cluster


@dataclass(frozen=True)
class Apiserver:
    name: str
    grpc_server: str
    rest_url: str


@dataclass(frozen=True)
class Secured:
    cluster: Cluster
    pki: ClusterPki
    secure: Apiserver
    open: Apiserver
    closed: Apiserver

    def tls(self, name: str) -> kubeconfig.ClientTLS:
        config = kubeconfig.load(self.pki.kubeconfig(name))
        assert config.tls is not None
        return config.tls


def _listening(rest_url: str, context: ssl.SSLContext | None) -> None:
    def answers() -> bool:
        try:
            urllib.request.urlopen(f"{rest_url}/readyz", timeout=2, context=context)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    eventually_sync(answers, message=f"the REST edge at {rest_url}")


@contextmanager
def secured_cluster(root: Path) -> Iterator[Secured]:
    """etcd and the three apiservers of the module docstring."""
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        ports = {name: (free_port(), free_port()) for name in ("secure", "open", "closed")}
        port, rest_port = ports["secure"]
        pki = write_cluster_pki(
            root / "pki",
            rest_url=f"https://{LOOPBACK}:{rest_port}",
            grpc_server=f"{LOOPBACK}:{port}",
            users={"admin": ADMIN, "nobody": NOBODY},
        )
        keys = ["--service-account-signing-key-file", str(pki.service_account_key)]
        keys += ["--service-account-key-file", str(pki.service_account_public_key)]
        started = {}
        for name, (port, rest_port) in ports.items():
            args = ["--etcd-servers", c.etcd_servers, "--port", str(port)]
            args += ["--rest-port", str(rest_port), "--authorization-mode", AUTHORIZATION_MODE]
            args += ["--disable-admission-plugins", "ServiceAccount"]
            args += ["--anonymous-auth", "false" if name == "closed" else "true"]
            args += pki.apiserver_args() if name == "secure" else keys
            c.start_component("apiserver", name, args, port=port)
            scheme = "https" if name == "secure" else "http"
            started[name] = Apiserver(
                name, f"{LOOPBACK}:{port}", f"{scheme}://{LOOPBACK}:{rest_port}"
            )
        context = ssl.create_default_context(cafile=str(pki.ca_file))
        for a in started.values():
            _listening(a.rest_url, context if a.rest_url.startswith("https") else None)
        yield Secured(c, pki, started["secure"], started["open"], started["closed"])


# ------------------------------------------------------------------ the callers


@dataclass(frozen=True)
class Caller:
    """One kind of caller on one edge: how it reaches the apiserver and what it must get."""

    name: str
    kind: str
    edge: str
    expect: str
    user: str
    """The user a 403 names ("" for a caller that is not authenticated)."""
    rest_url: str = ""
    session: aiohttp.ClientSession | None = None
    channel: grpc.aio.Channel | None = None
    metadata: tuple[tuple[str, str], ...] = ()

    def accepts(self, case: Case) -> bool:
        if isinstance(case.request, Raw):
            return False
        return (self.edge == GRPC) == isinstance(case.request, Grpc)

    async def throw(self, case: Case) -> send.Outcome:
        if self.edge == GRPC:
            assert self.channel is not None
            return await send.call(self.channel, case, self.metadata)
        assert self.session is not None
        return await send.http(self.session, self.rest_url, case)

    def judge(self, case: Case, outcome: send.Outcome) -> str:
        """What is wrong with `outcome` as this caller's answer to `case` ("": nothing)."""
        s, message = outcome.status, outcome.message
        if self.expect == HANDSHAKE:
            return "" if s == send.DROPPED else "not refused in the handshake"
        if self.expect == PROBLEM:
            if outcome.bad or s == "OK" or (s.isdigit() and not 400 <= int(s) < 500):
                return "not a client error naming the problem"
            return ""
        if self.edge == GRPC:
            if s == "UNIMPLEMENTED":  # (gRPC's own: an unknown method reaches no handler)
                return ""
            if self.expect == UNAUTHORIZED:
                return "" if (s, message) == ("UNAUTHENTICATED", "Unauthorized") else "not 401"
            if s == "INVALID_ARGUMENT" and "is not a valid kemu.api.v1." in message:
                return ""  # (a request that does not decode has no attributes to authorize)
            # (a message echoing a large input is cut to gRPC's metadata limit: wire.bounded)
            cut = message.endswith(" bytes)")
            return "" if s == "PERMISSION_DENIED" and (cut or self.forbids(message)) else "not 403"
        if self.expect == UNAUTHORIZED:
            return "" if (s, message) == ("401", "Unauthorized") else "not 401"
        return "" if s == "403" and self.forbids(message) else "not 403"

    def forbids(self, message: str) -> bool:
        """Whether `message` is upstream's Forbidden for this caller's user."""
        return "forbidden: " in message and f'User "{self.user}" cannot ' in message


def _context(
    pki: ClusterPki, name: str = "", tls: kubeconfig.ClientTLS | None = None
) -> ssl.SSLContext:
    """The CA's context, presenting `tls`'s certificate (written under the PKI as `name`)."""
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    if tls is not None and tls.cert is not None:
        pair = pki.dir / f"client-{name}"
        pair.mkdir(exist_ok=True)
        (pair / "c.crt").write_bytes(tls.cert)
        (pair / "c.key").write_bytes(tls.key or b"")
        context.load_cert_chain(pair / "c.crt", pair / "c.key")
    return context


def _credentials(pki: ClusterPki, tls: kubeconfig.ClientTLS) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=pki.ca_file.read_bytes(), private_key=tls.key, certificate_chain=tls.cert
    )


_OPTIONS: Final = [
    ("grpc.max_receive_message_length", 16 * cases.MiB),
    ("grpc.max_send_message_length", 16 * cases.MiB),
]


def _claims(token: str) -> dict[str, object]:
    part = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert isinstance(claims, dict)
    return claims


async def _token(admin: aiohttp.ClientSession, url: str, audiences: list[str]) -> str:
    """A TokenRequest for ACCOUNT (as the admin)."""
    spec = {"audiences": audiences} if audiences else {}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    path = f"/api/v1/namespaces/{cases.NS}/serviceaccounts/{ACCOUNT}/token"
    async with admin.post(url + path, json=body) as answer:
        assert answer.status == 201, await answer.text()
        token = (await answer.json())["status"]["token"]
        assert isinstance(token, str)
        return token


def expired(pki: ClusterPki, token: str) -> str:
    """`token` signed anew with the cluster's key, expired an hour ago."""
    claims = _claims(token)
    now = int(time.time())
    claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    key = load_signing_key(pki.service_account_key.read_bytes(), str(pki.service_account_key))
    return sign(claims, key)


@dataclass(frozen=True)
class Callers:
    all: list[Caller]
    admin: Client
    """The admin's kemu Client (over TLS), for `snapshot`."""


@asynccontextmanager
async def callers(s: Secured) -> AsyncIterator[Callers]:
    """Every caller of the module docstring, with ACCOUNT and the seed objects created."""
    async with AsyncExitStack() as stack:

        async def session(
            context: ssl.SSLContext | None = None, token: str = ""
        ) -> aiohttp.ClientSession:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            connector = aiohttp.TCPConnector(ssl=context or False, limit=64, force_close=True)
            return await stack.enter_async_context(
                aiohttp.ClientSession(connector=connector, headers=headers)
            )

        async def channel(
            a: Apiserver, tls: kubeconfig.ClientTLS | None = None
        ) -> grpc.aio.Channel:
            if tls is None:
                ch = grpc.aio.insecure_channel(a.grpc_server, options=_OPTIONS)
            else:
                ch = grpc.aio.secure_channel(a.grpc_server, _credentials(s.pki, tls), _OPTIONS)
            return await stack.enter_async_context(ch)

        admin_tls, nobody_tls = s.tls("admin"), s.tls("nobody")
        admin = await session(_context(s.pki, "admin", admin_tls))
        client = await stack.enter_async_context(
            Client(s.secure.grpc_server, tls=admin_tls, timeout=10.0)
        )
        await seed(client)
        good = await _token(admin, s.secure.rest_url, [])
        tokens = {
            "garbage token": "garbage." + "x" * 40,
            "expired token": expired(s.pki, good),
            "wrong-audience token": await _token(admin, s.secure.rest_url, [ELSEWHERE]),
        }
        other_ca = new_ca("another-ca")
        stranger = issue(other_ca, ADMIN.name, organizations=ADMIN.groups)
        stranger_tls = kubeconfig.ClientTLS(None, stranger.cert, stranger.key)
        sa_user = f"system:serviceaccount:{cases.NS}:{ACCOUNT}"
        sec, plain = s.secure, s.open
        out = [
            Caller("admin certificate", PRIVILEGED, REST, PROBLEM, ADMIN.name, sec.rest_url, admin),
            Caller(
                "admin certificate",
                PRIVILEGED,
                GRPC,
                PROBLEM,
                ADMIN.name,
                channel=await channel(sec, admin_tls),
            ),
            Caller(
                "certificate without grants",
                UNPRIVILEGED,
                REST,
                FORBIDDEN,
                NOBODY.name,
                sec.rest_url,
                await session(_context(s.pki, "nobody", nobody_tls)),
            ),
            Caller(
                "certificate without grants",
                UNPRIVILEGED,
                GRPC,
                FORBIDDEN,
                NOBODY.name,
                channel=await channel(sec, nobody_tls),
            ),
            Caller(
                "account without a binding",
                UNPRIVILEGED,
                REST,
                FORBIDDEN,
                sa_user,
                sec.rest_url,
                await session(_context(s.pki), good),
            ),
            Caller(
                "account without a binding",
                UNPRIVILEGED,
                GRPC,
                FORBIDDEN,
                sa_user,
                channel=await channel(plain),
                metadata=(("authorization", f"Bearer {good}"),),
            ),
            Caller(
                "anonymous-auth=true",
                ANONYMOUS,
                REST,
                FORBIDDEN,
                "system:anonymous",
                sec.rest_url,
                await session(_context(s.pki)),
            ),
            Caller(
                "anonymous-auth=true",
                ANONYMOUS,
                GRPC,
                FORBIDDEN,
                "system:anonymous",
                channel=await channel(plain),
            ),
            Caller(
                "anonymous-auth=false",
                ANONYMOUS,
                REST,
                UNAUTHORIZED,
                "",
                s.closed.rest_url,
                await session(),
            ),
            Caller(
                "anonymous-auth=false",
                ANONYMOUS,
                GRPC,
                UNAUTHORIZED,
                "",
                channel=await channel(s.closed),
            ),
            Caller(
                "certificate of another CA",
                BAD_CREDENTIAL,
                REST,
                HANDSHAKE,
                "",
                sec.rest_url,
                await session(_context(s.pki, "stranger", stranger_tls)),
            ),
        ]
        for name, token in tokens.items():
            out.append(
                Caller(
                    name,
                    BAD_CREDENTIAL,
                    REST,
                    UNAUTHORIZED,
                    "",
                    sec.rest_url,
                    await session(_context(s.pki), token),
                )
            )
            out.append(
                Caller(
                    name,
                    BAD_CREDENTIAL,
                    GRPC,
                    UNAUTHORIZED,
                    "",
                    channel=await channel(plain),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
            )
        yield Callers(out, client)


async def seed(client: Client) -> None:
    """cases.NS, its seed objects and ACCOUNT (as the admin)."""
    await ensure_namespace(client, cases.NS)
    account = types_pb2.ServiceAccount(
        metadata=types_pb2.ObjectMeta(name=ACCOUNT, namespace=cases.NS)
    )
    for obj in [*cases.seed_objects(), account]:
        kind, meta = type(obj), object_meta(obj)
        try:
            await client.get(kind, meta.name, meta.namespace)
        except Exception:
            await client.create(obj)


async def snapshot(client: Client) -> dict[str, str]:
    """What nobody may change: every pod, service account and role binding of cases.NS, the
    node, the namespace and the cluster role bindings (name -> resourceVersion)."""
    out: dict[str, str] = {}
    for kind, namespace in (
        (types_pb2.Pod, cases.NS),
        (types_pb2.ServiceAccount, cases.NS),
        (types_pb2.RoleBinding, cases.NS),
        (types_pb2.ClusterRoleBinding, ""),
    ):
        for obj in (await client.list(kind, namespace)).items:
            meta = object_meta(obj)
            out[f"{kind.DESCRIPTOR.name}/{meta.name}"] = meta.resource_version
    node = await client.get(types_pb2.Node, cases.NODE)
    out[f"Node/{cases.NODE}"] = node.metadata.resource_version
    ns = await client.get(types_pb2.Namespace, cases.NS)
    out[f"Namespace/{cases.NS}"] = ns.metadata.resource_version
    return out


# ------------------------------------------------------------------ well-formed writes


def _pod_json(name: str) -> bytes:
    pod = make_pod(name).namespace(cases.NS).req(cpu="100m", memory="64Mi").obj()
    return json.dumps(convert.to_dict(pod, wire=True)).encode()


def well_formed(rng: random.Random) -> Request:
    """A write (or a read) every privileged caller may make: only the others get these."""
    name = rng.choice(cases.PODS)
    path = f"/api/v1/namespaces/{cases.NS}/pods"
    choice = rng.randrange(10)
    if choice == 0:
        return Http("POST", path, _pod_json(cases.NEW), cases.JSON_TYPE)
    if choice == 1:
        return Http("PATCH", f"{path}/{name}", b'{"metadata":{"labels":{"x":"y"}}}', cases.MERGE)
    if choice == 2:
        return Http("DELETE", f"{path}/{name}")
    if choice == 3:
        return Http("DELETE", f"{path}?labelSelector=app%3Dfuzz")
    if choice == 4:
        body = {"target": {"kind": "Node", "name": cases.NODE}, "metadata": {"name": name}}
        return Http("POST", f"{path}/{name}/binding", json.dumps(body).encode(), cases.JSON_TYPE)
    if choice == 5:
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "fuzz-escalation"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:authenticated",
                          "apiGroup": "rbac.authorization.k8s.io"}],
        }  # fmt: skip
        return Http(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json.dumps(binding).encode(),
            cases.JSON_TYPE,
        )
    pod = make_pod(cases.NEW).namespace(cases.NS).obj()
    if choice == 6:
        return Grpc(
            cases.API + "Create",
            api_pb2.CreateRequest(object=api_pb2.Object(pod=pod)).SerializeToString(),
        )
    if choice == 7:
        return Grpc(
            cases.API + "Delete",
            api_pb2.DeleteRequest(
                resource="pods", namespace=cases.NS, name=name
            ).SerializeToString(),
        )
    if choice == 8:
        return Grpc(
            cases.API + "Patch",
            api_pb2.PatchRequest(
                resource="pods",
                namespace=cases.NS,
                name=name,
                patch='{"metadata":{"labels":{"x":"y"}}}',
            ).SerializeToString(),
        )
    return Grpc(
        cases.API + "Get",
        api_pb2.GetRequest(resource="pods", namespace=cases.NS, name=name).SerializeToString(),
    )


WELL_FORMED: Final = "well_formed"
FAMILIES: Final = sorted(
    [
        name
        for name, (edge, build) in cases.FAMILIES.items()
        if edge in (cases.REST_JSON, cases.REST_PROTOBUF, cases.GRPC_API)
        and build is not cases.rest_framing
    ]
    + [WELL_FORMED]
)
"""The catalog's families on the apiserver's authenticated edges (the health port and the
cloud authenticate nobody; Raw framing is refused by the HTTP parser before authentication,
upstream's as kemu's) and the well-formed writes."""


def make(family: str, rng: random.Random) -> Case:
    if family == WELL_FORMED:
        request = well_formed(rng)
        edge = cases.GRPC_API if isinstance(request, Grpc) else cases.REST_JSON
        return Case(edge, family, request)
    return cases.make(family, rng)


def pair(
    all_callers: Sequence[Caller], family: str, rng: random.Random
) -> tuple[Caller, Case] | None:
    """A case of `family` and a caller of it, drawn with `rng` (None: a Raw case, which
    no caller sends)."""
    case = make(family, rng)
    fitting = [
        c
        for c in all_callers
        if c.accepts(case) and not (family == WELL_FORMED and c.kind == PRIVILEGED)
    ]
    return (rng.choice(fitting), case) if fitting else None


# ------------------------------------------------------------------ the report


@dataclass(frozen=True)
class Judged:
    caller: Caller
    outcome: send.Outcome
    problem: str

    def line(self) -> str:
        return f"{self.caller.name} ({self.caller.edge}): {self.problem}: {self.outcome.line()}"


def report(judged: Sequence[Judged], changes: list[str], seconds: float) -> str:
    lines = [f"{'caller':<44} {'requests':>8} {'wrong':>5}  answers by status"]
    keys = sorted({(j.caller.kind, j.caller.name, j.caller.edge) for j in judged})
    for kind, name, edge in keys:
        mine = [
            j for j in judged if (j.caller.kind, j.caller.name, j.caller.edge) == (kind, name, edge)
        ]
        by_status = Counter(j.outcome.status for j in mine)
        shown = ", ".join(f"{s} {n}" for s, n in sorted(by_status.items()))
        label = f"{kind}: {name} ({edge})"
        lines.append(f"{label:<44} {len(mine):>8} {sum(bool(j.problem) for j in mine):>5}  {shown}")
    for kind in KINDS:
        mine = [j for j in judged if j.caller.kind == kind]
        lines.append(f"{kind}: {len(mine)} requests, {sum(bool(j.problem) for j in mine)} wrong")
    statuses = Counter(j.outcome.status for j in judged)
    server_errors = sum(
        n
        for s, n in statuses.items()
        if (s.isdigit() and int(s) >= 500) or s in ("INTERNAL", "UNKNOWN")
    )
    lines.append(
        f"requests: {len(judged)}  duration: {seconds:.1f} s ({len(judged) / seconds:.0f}/s)  "
        f"5xx/INTERNAL/UNKNOWN: {server_errors}  wrong answers: {sum(bool(j.problem) for j in judged)}  "
        f"objects changed: {len(changes)}"
    )
    return "\n".join(lines)
