"""A kubeconfig for kubectl and the official clients to reach an apiserver's REST port.

JSON is YAML, so the file needs no YAML writer. Used by `make run` (.kemu/kubeconfig) and by
kemu.testing's Cluster.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kemu.machinery.jsonvalue import JSONObject

CONTEXT = "kemu"


def kubeconfig(server: str, namespace: str = "default") -> JSONObject:
    """`server` is the REST endpoint's URL (http://127.0.0.1:6445)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write(path: str | Path, server: str) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(kubeconfig(server), indent=2) + "\n")
    return out


if __name__ == "__main__":  # python -m kemu.machinery.kubeconfig PATH URL
    if len(sys.argv) != 3:
        sys.exit("usage: python -m kemu.machinery.kubeconfig PATH SERVER_URL")
    write(sys.argv[1], sys.argv[2])
