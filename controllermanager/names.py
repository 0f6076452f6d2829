"""The controllers' names, which --controllers takes (upstream's
cmd/kube-controller-manager/names/controller_names.go). `CONTROLLERS` in controllermanager.app
maps each to its init function; tests/unit/controllermanager/test_options.py checks that the two
and each controller's own NAME agree."""

from __future__ import annotations

from typing import Final

DISRUPTION: Final = "disruption"
GARBAGE_COLLECTOR: Final = "garbagecollector"
NAMESPACE: Final = "namespace"
NODE_LIFECYCLE: Final = "nodelifecycle"
NODE_IPAM: Final = "nodeipam"
POD_GC: Final = "podgc"
REPLICA_SET: Final = "replicaset"
DEPLOYMENT: Final = "deployment"
JOB: Final = "job"
DAEMON_SET: Final = "daemonset"
STATEFUL_SET: Final = "statefulset"
CRON_JOB: Final = "cronjob"
TAINT_EVICTION: Final = "taint-eviction-controller"
PV_BINDER: Final = "persistentvolume-binder"
SIMULATED_PROVISIONER: Final = "simulated-csi-provisioner"
PVC_PROTECTION: Final = "pvc-protection"
PV_PROTECTION: Final = "pv-protection"
POD_GROUP_PROTECTION: Final = "podgroup-protection-controller"
RESOURCE_CLAIM: Final = "resourceclaim-controller"
RESOURCE_QUOTA: Final = "resourcequota-controller"  # issue #57 kinds-a
# ---- kinds-b (issue #57): upstream's aliases, as --controllers takes them
REPLICATION_CONTROLLER: Final = "replicationcontroller"
ENDPOINT: Final = "endpoint"
ENDPOINT_SLICE: Final = "endpointslice"
HORIZONTAL_POD_AUTOSCALING: Final = "horizontalpodautoscaling"
SERVICE_ACCOUNT: Final = "serviceaccount"
ROOT_CA_CERT_PUBLISHER: Final = "root-ca-cert-publisher"

CONTROLLER_NAMES: Final = (
    DISRUPTION,
    GARBAGE_COLLECTOR,
    NAMESPACE,
    NODE_LIFECYCLE,
    NODE_IPAM,
    POD_GC,
    REPLICA_SET,
    DEPLOYMENT,
    JOB,
    DAEMON_SET,
    STATEFUL_SET,
    CRON_JOB,
    TAINT_EVICTION,
    PV_BINDER,
    SIMULATED_PROVISIONER,
    PVC_PROTECTION,
    PV_PROTECTION,
    POD_GROUP_PROTECTION,
    RESOURCE_CLAIM,
    RESOURCE_QUOTA,
    # ---- kinds-b (issue #57)
    REPLICATION_CONTROLLER,
    ENDPOINT,
    ENDPOINT_SLICE,
    HORIZONTAL_POD_AUTOSCALING,
    SERVICE_ACCOUNT,
    ROOT_CA_CERT_PUBLISHER,
)
"""Every controller, in the order they start (as CONTROLLERS)."""
