"""PodGroupWorkloadExists (1.36 only): a PodGroup created with a reference to a Workload's
template is refused when the Workload or the template does not exist (upstream's
plugin/pkg/admission/podgroup/admission.go, kubernetes#137464; removed in 1.37 by
kubernetes#139008). A no-op without GenericWorkload, and for a PodGroup without the
reference."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.podgroups import PodGroupRules

NAME: Final = "PodGroupWorkloadExists"
SERVED_AT: Final = 36
"""The one minor version that has the plugin."""


def admit_pod_group_workload_exists(
    pg: types_pb2.PodGroup, workloads: Iterable[types_pb2.Workload], rules: PodGroupRules
) -> None:
    """Validate on create: the referenced Workload (in the PodGroup's namespace, from
    `workloads`, what the apiserver holds) exists and has the referenced template."""
    if rules.minor != SERVED_AT or not rules.generic_workload:
        return
    if not pg.spec.HasField("workload_ref"):
        return
    ref = pg.spec.workload_ref
    what = f'podgroups.scheduling.k8s.io "{pg.metadata.name}" is forbidden: PodGroup rejected'
    for w in workloads:
        if (w.metadata.namespace, w.metadata.name) != (pg.metadata.namespace, ref.workload_name):
            continue
        if any(t.name == ref.template_name for t in w.spec.pod_group_templates):
            return
        raise Forbidden(
            f'{what}: PodGroupTemplate "{ref.template_name}" not found in Workload '
            f'"{ref.workload_name}"'
        )
    raise Forbidden(f'{what}: Workload "{ref.workload_name}" not found')
