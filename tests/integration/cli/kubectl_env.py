"""What the integration modules that run the real kubectl share (test_rest_kubectl.py,
test_rest_kubectl_observe.py): kubectl on PATH (the modules skip without it) and a runner
with the cluster's kubeconfig."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

from kemu.testing.cluster import Cluster
from kemu.testing.names import unique_name

KUBECTL = shutil.which("kubectl")


class Kubectl:
    def __init__(self, cluster: Cluster) -> None:
        # The discovery and OpenAPI caches are the cluster's own: kubectl's default
        # (~/.kube/cache/<host_port>) outlives the cluster, and an apiserver of other code
        # later on the same port would be answered from it (`get all` expands the category
        # from the cache without asking again).
        self.env = {
            **os.environ,
            "KUBECONFIG": str(cluster.root / "kubeconfig"),
            "KUBECACHEDIR": str(cluster.root / "kube-cache"),
        }
        self.dir = cluster.root
        self.cluster = cluster

    def run(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        proc = subprocess.run(
            [KUBECTL, *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: rc {proc.returncode}\n{proc.stderr}")
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def namespace(self, prefix: str) -> str:
        ns = unique_name(prefix)
        self.run("create", "namespace", ns)  # a protobuf body (kubectl's typed client)
        return ns
