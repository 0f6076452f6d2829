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
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
from typing import Final

from kemu.component.latency import add_apiserver_latency_flags

SEPARATOR: Final = ","
DEFAULT_SERVER: Final = "127.0.0.1:6443"

# pick_first: one server at a time (a watch and the writes it reflects on the same server),
# the next one in the list when it goes away.
LB_POLICY: Final = ("grpc.lb_policy_name", "pick_first")


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
        default=DEFAULT_SERVER,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the apiserver, or several (a client fails over from one to the next) "
        f"(default {DEFAULT_SERVER})",
    )
    add_apiserver_latency_flags(parser)
