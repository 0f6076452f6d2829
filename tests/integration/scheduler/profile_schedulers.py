"""One scheduler process per profile on a pod-group cluster: the pod-group modules run several
emulated versions (or gate sets) side by side, each scheduler owning its schedulerName."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kemu.testing.cluster import Cluster


def start_profile_scheduler(
    c: Cluster, root: Path, process: str, profile: str, version: str, gates: Mapping[str, bool]
) -> None:
    """A scheduler named `process` at `version` with `gates`, whose one profile is `profile`
    (a seeded run: the tests read its decisions)."""
    path = root / f"{profile}.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        f"- schedulerName: {profile}\n"
    )
    c.start_scheduler(
        name=process,
        config=str(path),
        emulated_version=version,
        feature_gates=dict(gates),
        extra_args=["--seed", "1"],
    )
