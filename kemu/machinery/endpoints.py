"""Endpoints (core/v1) and EndpointSlices (discovery.k8s.io/v1): upstream's defaults
(pkg/apis/core/v1/defaults.go SetDefaults_EndpointPort, pkg/apis/discovery/v1/defaults.go)
and the names the endpoint controllers and their consumers share
(staging/src/k8s.io/api/discovery/v1/well_known_labels.go)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2

SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
"""LabelServiceName: the Service an EndpointSlice belongs to."""
MANAGED_BY_LABEL: Final = "endpointslice.kubernetes.io/managed-by"
"""LabelManagedBy: the controller that manages an EndpointSlice."""
ENDPOINTSLICE_CONTROLLER_NAME: Final = "endpointslice-controller.k8s.io"
"""The managed-by value of the endpointslice controller's slices (ControllerName)."""
HEADLESS_LABEL: Final = "service.kubernetes.io/headless"
"""IsHeadlessService: set on the Endpoints and slices of a Service without a cluster IP."""
SKIP_MIRROR_LABEL: Final = "endpointslice.kubernetes.io/skip-mirror"
"""Set on the Endpoints the endpoint controller writes (the mirroring controller skips
them)."""
LAST_CHANGE_TRIGGER_TIME: Final = "endpoints.kubernetes.io/last-change-trigger-time"
TCP: Final = "TCP"


def set_defaults_endpoints(ep: types_pb2.Endpoints) -> None:
    for ss in ep.subsets:
        for p in ss.ports:
            if not p.protocol:
                p.protocol = TCP


def set_defaults_endpoint_slice(eps: types_pb2.EndpointSlice) -> None:
    for p in eps.ports:
        if not p.HasField("name"):
            p.name = ""
        if not p.HasField("protocol"):
            p.protocol = TCP
