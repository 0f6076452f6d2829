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
CLUSTER_ROLE_AGGREGATION: Final = "clusterrole-aggregation"  # issue #60 item 3

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
    CLUSTER_ROLE_AGGREGATION,
)
"""Every controller, in the order they start (as CONTROLLERS)."""


SERVICE_ACCOUNTS: Final[dict[str, str]] = {
    DISRUPTION: "disruption-controller",
    GARBAGE_COLLECTOR: "generic-garbage-collector",
    NAMESPACE: "namespace-controller",
    NODE_LIFECYCLE: "node-controller",
    NODE_IPAM: "node-controller",
    POD_GC: "pod-garbage-collector",
    REPLICA_SET: "replicaset-controller",
    DEPLOYMENT: "deployment-controller",
    JOB: "job-controller",
    DAEMON_SET: "daemon-set-controller",
    STATEFUL_SET: "statefulset-controller",
    CRON_JOB: "cronjob-controller",
    # "taint-manager uses existing cluster role from node-controller" (core.go
    # startTaintEvictionController)
    TAINT_EVICTION: "node-controller",
    PV_BINDER: "persistent-volume-binder",
    SIMULATED_PROVISIONER: "simulated-csi-provisioner",
    PVC_PROTECTION: "pvc-protection-controller",
    PV_PROTECTION: "pv-protection-controller",
    POD_GROUP_PROTECTION: "podgroup-protection-controller",
    RESOURCE_CLAIM: "resource-claim-controller",
    RESOURCE_QUOTA: "resourcequota-controller",
    REPLICATION_CONTROLLER: "replication-controller",
    ENDPOINT: "endpoint-controller",
    ENDPOINT_SLICE: "endpointslice-controller",
    HORIZONTAL_POD_AUTOSCALING: "horizontal-pod-autoscaler",
    SERVICE_ACCOUNT: "service-account-controller",
    ROOT_CA_CERT_PUBLISHER: "root-ca-cert-publisher",
    CLUSTER_ROLE_AGGREGATION: "clusterrole-aggregation-controller",
}
"""Each controller's client name (upstream's `ClientBuilder.ClientOrDie(<name>)` in
cmd/kube-controller-manager/app): with --use-service-account-credentials, the kube-system
ServiceAccount it acts as, bound to system:controller:<name> by the bootstrap policy
(apiserver/authorization/bootstrap_policy.py controller_policy)."""
