"""Hosts of their own on this machine: network namespaces on a bridge (issue #60 item 4).

`HostNetwork(count)` makes `count` network namespaces, each a host with one address of its
own on a /24 of 10.213.0.0/16, joined by a Linux bridge in the root namespace that holds the
network's first address (`gateway`: where a test binds its apiserver, so that the hosts reach
it and the test's own process too). Each host has its loopback up and a veth pair whose end in
the host is `eth0`; a component runs in a host when its argv is prefixed by `Host.argv`
(`ip netns exec <netns> ...`, which execs the command: the harness's ManagedProcess still
owns the process and kills it). `close()` (also on leaving a `with` block, a failed test's
included) deletes the namespaces (their veth pairs go with them) and the bridge.

Names are unique per process and per network (`kemu-<pid>-<n>-<i>` for the namespaces,
`kb<pid>x<n>` for the bridge, `kv<pid>x<n>x<i>` for the veths' root ends), so pytest-xdist's
workers never clash; a /24 is chosen under a file lock among those no interface of the
machine holds. What a killed run left (names of a process that no longer exists) is deleted
when the next network is made.

It needs Linux, root, iproute2's `ip` and a kernel and container that allow namespaces,
bridges and veth pairs: `unavailable_reason()` says why not (a test skips with it).
"""

from __future__ import annotations

import fcntl
import functools
import ipaddress
import itertools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

logger = logging.getLogger(__name__)

ADDRESS_POOL: Final = ipaddress.IPv4Network("10.213.0.0/16")
"""Where each network takes a /24 (outside the test clusters' pod range 10.128.0.0/11, the
service range 10.96.0.0/12 and kemu's default node addresses)."""
_NETNS = re.compile(r"^kemu-(\d+)-\d+-\d+$")
_LINK = re.compile(r"^k[bv](\d+)x\d+(?:x\d+)?$")
_LOCK_FILE: Final = Path(tempfile.gettempdir()) / "kemu-netns.lock"
_networks = itertools.count()


class NetnsError(RuntimeError):
    """An `ip` command failed; the message names it and carries its error output."""


@dataclass(frozen=True)
class Host:
    """A network namespace `netns` with its address `address` on the network."""

    netns: str
    address: str

    def argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this host (`ip netns exec` execs it: the pid is the command's)."""
        return ["ip", "netns", "exec", self.netns, *argv]


@functools.cache
def unavailable_reason() -> str | None:
    """Why hosts cannot be made here (not Linux, not root, no `ip`, or a network namespace,
    bridge, veth pair or `ip netns exec` refused: a one-host network is made and removed to
    see), or None when they can. Asked once per process."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux's (this is {sys.platform})"
    if os.geteuid() != 0:
        return "making network namespaces needs root (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    try:
        with HostNetwork(1) as probe:
            _run([*probe.hosts[0].argv(["ip", "link", "show", "eth0"])])
    except NetnsError as e:
        return f"network namespaces refused here: {e}"
    return None


class HostNetwork:
    """`count` hosts on a bridge (module docstring)."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"count: must be >= 1, not {count}")
        self.count = count
        n = next(_networks)
        pid = os.getpid()
        self.bridge = f"kb{pid}x{n}"
        self._netns = [f"kemu-{pid}-{n}-{i}" for i in range(count)]
        self._veths = [f"kv{pid}x{n}x{i}" for i in range(count)]
        self.subnet: ipaddress.IPv4Network | None = None
        self.hosts: list[Host] = []

    def __enter__(self) -> HostNetwork:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<HostNetwork {self.bridge} {self.subnet} {[h.address for h in self.hosts]}>"

    @property
    def gateway(self) -> str:
        """The bridge's address, in the root namespace: the hosts reach this machine there."""
        if self.subnet is None:
            raise RuntimeError("the network is not started: call start() first")
        return str(self.subnet[1])

    def start(self) -> None:
        """Makes the bridge and the hosts; on a failure, removes what it made and raises
        NetnsError."""
        clean_leftovers()
        try:
            with _locked():
                self.subnet = _free_subnet()
                _ip("link", "add", self.bridge, "type", "bridge")
                _ip("addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, (netns, veth) in enumerate(zip(self._netns, self._veths, strict=True)):
                address = str(self.subnet[i + 2])
                _ip("netns", "add", netns)
                _ip("-n", netns, "link", "set", "lo", "up")
                _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
                _ip("link", "set", veth, "master", self.bridge, "up")
                _ip("-n", netns, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
                _ip("-n", netns, "link", "set", "eth0", "up")
                self.hosts.append(Host(netns, address))
        except BaseException:
            self.close()
            raise
        logger.info("host network %s: %s", self.bridge, self)

    def close(self) -> None:
        """Deletes the hosts and the bridge (what of them exists; a second call does nothing)."""
        for netns in self._netns:
            _ip_quiet("netns", "delete", netns)
        for veth in self._veths:
            _ip_quiet("link", "delete", veth)
        _ip_quiet("link", "delete", self.bridge)
        self.hosts = []


def clean_leftovers() -> list[str]:
    """Deletes the namespaces and links a process that no longer runs left (a killed test
    run's); their names."""
    removed: list[str] = []
    for netns in _netns_names():
        m = _NETNS.match(netns)
        if m and not _alive(int(m.group(1))):
            _ip_quiet("netns", "delete", netns)
            removed.append(netns)
    for link in _link_names():
        m = _LINK.match(link)
        if m and not _alive(int(m.group(1))):
            _ip_quiet("link", "delete", link)
            removed.append(link)
    if removed:
        logger.warning("deleted the network namespaces and links of a dead run: %s", removed)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netns_names() -> list[str]:
    out = _ip("netns", "list")
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _link_names() -> list[str]:
    """Every link of the root namespace (`ip -o link` names a veth `name@peer`)."""
    out = _ip("-o", "link", "show")
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


def _free_subnet() -> ipaddress.IPv4Network:
    """The first /24 of ADDRESS_POOL that no address of the root namespace is in."""
    taken: list[ipaddress.IPv4Network] = []
    for line in _ip("-o", "-4", "addr", "show").splitlines():
        words = line.split()
        if "inet" in words:
            taken.append(ipaddress.IPv4Interface(words[words.index("inet") + 1]).network)
    for subnet in ADDRESS_POOL.subnets(new_prefix=24):
        if not any(subnet.overlaps(t) for t in taken):
            return subnet
    raise NetnsError(f"every /24 of {ADDRESS_POOL} is in use on this machine")


@contextmanager
def _locked() -> Iterator[None]:
    """Other processes' networks wait while this one takes its /24."""
    with open(_LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _ip(*args: str) -> str:
    """`ip args...`'s output; NetnsError naming the command when it fails."""
    return _run(["ip", *args])


def _run(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NetnsError(f"{' '.join(argv)}: {e}") from None
    if done.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _ip_quiet(*args: str) -> None:
    """`ip args...` for a removal: a failure (already gone) is logged at debug level."""
    try:
        _ip(*args)
    except NetnsError as e:
        logger.debug("%s", e)
