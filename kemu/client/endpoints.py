"""Several apiserver addresses behind one client: `--server a:6443,b:6443`.

A client given several addresses talks to one at a time and fails over to the next when that
one goes away, as clients behind upstream's HA load balancer do. The channel is one gRPC
channel whose target lists every address (`ipv4:A,B`) under the `pick_first` policy: it
connects to the first address that answers, and when that connection breaks, calls waiting
for the channel (`wait_for_ready`) go to the next address that answers. A call in flight on
the broken connection fails with Unavailable: reads are retried by the client, writes are
reported (as when a single apiserver restarts), and watches end with Unavailable, which
informers resume from their last resourceVersion on whichever server answers (every
apiserver serves the same etcd, so resourceVersions are the same everywhere).

A single address is passed to gRPC unchanged, exactly as before. Every component declares
the flag with `add_server_flag`, so a malformed value is a one-line argument error at start.

Spreading (issue #59 item 4): upstream's clients of an HA control plane see one address, an L4
load balancer's, which spreads connections over the apiservers, each connection sticking to
one; client-go holds one HTTP/2 connection per process, so a process's calls all go to one
apiserver, and another process's may go to another. `--server-order shuffled` does so from the
client's side: the process shuffles its list once at start (gRPC's pick_first with
`shuffleAddressList`, gRFC A62), so processes given the same list spread over the apiservers,
each sticking to its first that answers and failing over as before; `listed` (the default)
keeps the list's order (every process on the first apiserver while it answers). Every
apiserver serves the same etcd with upstream's consistency (a consistent read waits for its
watch cache to reach etcd's current revision, apiserver/endpoints/lists.py), so a process may
read on one apiserver what another wrote on another.

`--kubeconfig` (each component's upstream flag of that name) beside it: the apiserver's
address and the TLS to reach it with (its CA, the component's client certificate;
kemu.machinery.kubeconfig), read at start (a bad file is the same one-line argument error).
`--server` given too wins for the address, as upstream's `--master` overrides the
kubeconfig's server. Without a kubeconfig the channel is plaintext, as before
(`apiserver_connection`).
"""

from __future__ import annotations

import argparse
import enum
import ipaddress
import random
import socket
from typing import Final

from kemu.component.latency import add_apiserver_latency_flags
from kemu.machinery.kubeconfig import ClientTLS, KubeConfig, KubeConfigError, load

SEPARATOR: Final = ","
DEFAULT_SERVER: Final = "127.0.0.1:6443"

# pick_first: one server at a time (a watch and the writes it reflects on the same server),
# the next one in the list when it goes away.
LB_POLICY: Final = ("grpc.lb_policy_name", "pick_first")


class ServerOrder(enum.Enum):
    """--server-order: how a process orders its --server list before dialing the first."""

    LISTED = "listed"
    SHUFFLED = "shuffled"


def ordered_servers(server: str, order: ServerOrder, rng: random.Random | None = None) -> str:
    """`server` (a --server value) in the order `order` says: as given, or shuffled by `rng`
    (default: seeded from the OS, as gRPC's shuffleAddressList: the order is the balancer's
    choice, not the cluster's behaviour)."""
    if order is ServerOrder.LISTED or SEPARATOR not in server:
        return server
    servers = list(parse_servers(server))
    (rng or random.Random()).shuffle(servers)
    return SEPARATOR.join(servers)


class ServerAddressError(ValueError):
    """A --server value that is not HOST:PORT[,HOST:PORT...]; the message names the flag."""


def parse_servers(text: str) -> tuple[str, ...]:
    """The HOST:PORT addresses of a comma-separated --server value, in order, without repeats."""
    out: list[str] = []
    for part in text.split(SEPARATOR):
        address = part.strip()
        if not address:
            raise ServerAddressError(f"--server: empty address in {text!r}")
        host, port = split_host_port(address)
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ServerAddressError(f"--server: {address!r} is not HOST:PORT")
        if address not in out:
            out.append(address)
    return tuple(out)


def split_host_port(address: str) -> tuple[str, str]:
    """("h", "p") of "h:p" or "[v6]:p"; ("", "") when there is no port."""
    if address.startswith("["):
        host, sep, rest = address[1:].partition("]:")
        return (host, rest) if sep else ("", "")
    host, sep, port = address.rpartition(":")
    return (host, port) if sep else ("", "")


def _ip_of(host: str, port: str, flag: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError as e:
        raise ServerAddressError(f"{flag}: cannot resolve {host!r}: {e}") from None
    # Prefer IPv4 (the loopback names resolve to both).
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return ipaddress.ip_address(infos[0][4][0])


def channel_target(servers: tuple[str, ...], flag: str = "--server") -> str:
    """The gRPC target for `servers`: the address itself when there is one, else an
    `ipv4:` (or `ipv6:`) list of every address, host names resolved now. Errors name `flag`
    (the apiserver's etcd client uses it too, for --etcd-servers)."""
    if not servers:
        raise ServerAddressError(f"{flag}: no address")
    if len(servers) == 1:
        return servers[0]
    resolved = []
    for address in servers:
        host, port = split_host_port(address)
        resolved.append((_ip_of(host, port, flag), port))
    versions = {ip.version for ip, _ in resolved}
    if versions == {4}:
        return "ipv4:" + SEPARATOR.join(f"{ip}:{port}" for ip, port in resolved)
    if versions == {6}:
        return "ipv6:" + SEPARATOR.join(f"[{ip}]:{port}" for ip, port in resolved)
    raise ServerAddressError(f"--server: {SEPARATOR.join(servers)!r} mixes IPv4 and IPv6 addresses")


def server_flag(text: str) -> str:
    """argparse `type=` of --server: the addresses checked as a client will use them (syntax,
    and for several, their resolution), joined again without repeats. A bad value is
    argparse's one-line error naming the flag (`argument --server: ...`)."""
    try:
        servers = parse_servers(text)
        if len(servers) > 1:
            channel_target(servers)
    except ServerAddressError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--server: ")) from None
    return SEPARATOR.join(servers)


def add_server_flag(parser: argparse.ArgumentParser) -> None:
    """--server of every component that talks to the apiserver, validated by `server_flag`,
    and the latency of its calls (kemu.component.latency)."""
    parser.add_argument(
        "--server",
        type=server_flag,
        default=None,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the apiserver, or several (a client fails over from one to the next) "
        f"(default: the --kubeconfig's, else {DEFAULT_SERVER})",
    )
    parser.add_argument(
        "--server-order",
        type=server_order_flag,
        default=ServerOrder.LISTED,
        metavar="{" + ",".join(o.value for o in ServerOrder) + "}",
        help="the order this process tries several --server addresses in: as listed, or "
        "shuffled once at start, spreading processes over the apiservers as an L4 load "
        "balancer spreads connections (default: listed)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=kubeconfig_flag,
        default=None,
        metavar="FILE",
        help="a kubeconfig: the apiserver's address, the CA that verifies it and this "
        "component's client certificate; the connection is TLS (default: none, plaintext)",
    )
    add_apiserver_latency_flags(parser)


def server_order_flag(text: str) -> ServerOrder:
    """argparse `type=` of --server-order: one of ServerOrder's values."""
    try:
        return ServerOrder(text)
    except ValueError:
        choices = ", ".join(o.value for o in ServerOrder)
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {choices}") from None


def kubeconfig_flag(path: str) -> KubeConfig:
    """argparse `type=` of --kubeconfig: the file read now; an error names the field."""
    try:
        config = load(path)
        server_flag(config.grpc_server)
    except (KubeConfigError, argparse.ArgumentTypeError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return config


def apiserver_connection(args: argparse.Namespace) -> tuple[str, ClientTLS | None]:
    """(server, TLS) of the flags `add_server_flag` added: --server, else the kubeconfig's
    gRPC address, else the default, in --server-order; the kubeconfig's TLS (None:
    plaintext)."""
    config: KubeConfig | None = args.kubeconfig
    server = args.server or (config.grpc_server if config is not None else DEFAULT_SERVER)
    return ordered_servers(server, args.server_order), config.tls if config is not None else None
