"""Upstream's well-known node labels (k8s.io/api/core/v1 well_known_labels.go): one place for
the names every component reads."""

from __future__ import annotations

from typing import Final

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION: Final = "topology.kubernetes.io/region"
