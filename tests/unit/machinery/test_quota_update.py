"""LimitRanger on PersistentVolumeClaims and ResourceQuota charging on update (issue #57,
gcquota): upstream plugin/pkg/admission/limitranger/admission.go
(PersistentVolumeClaimValidateLimitFunc) and the quota evaluators' Handles with
checkRequest's delta (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/
controller.go)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import limit_ranger, quota
from kemu.machinery.errors import Forbidden
from kemu.machinery.kinds import BY_KIND, Kind
from kemu.machinery.validation.objects import validate_object


def pvc_limits(**bounds: dict[str, str]) -> types_pb2.LimitRange:
    lr = types_pb2.LimitRange()
    lr.metadata.name = "storage"
    lr.metadata.namespace = "default"
    item = lr.spec.limits.add(type="PersistentVolumeClaim")
    item.min.update(bounds.get("min", {}))
    item.max.update(bounds.get("max", {}))
    return lr


def pvc(storage: str | None, name: str = "data") -> types_pb2.PersistentVolumeClaim:
    c = types_pb2.PersistentVolumeClaim()
    c.metadata.name = name
    c.metadata.namespace = "default"
    if storage is not None:
        c.spec.resources.requests["storage"] = storage
    return c


def refusal(fn: object, *args: object) -> str:
    with pytest.raises(Forbidden) as e:
        fn(*args)  # type: ignore[operator]
    return e.value.message


def test_s_api_limit_pvc_min_and_max_of_storage() -> None:
    """S-API-LIMIT-PVC-1: a claim under min or over max is Forbidden with upstream's
    messages; one without a request names it; within bounds it passes."""
    lr = pvc_limits(min={"storage": "1Gi"}, max={"storage": "2Gi"})
    limit_ranger.validate_pvc(pvc("1536Mi"), [lr])
    assert refusal(limit_ranger.validate_pvc, pvc("3Gi"), [lr]) == (
        'persistentvolumeclaims "data" is forbidden: '
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi"
    )
    assert refusal(limit_ranger.validate_pvc, pvc("500Mi"), [lr]) == (
        'persistentvolumeclaims "data" is forbidden: '
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
    )
    assert refusal(limit_ranger.validate_pvc, pvc(None), [lr]) == (
        'persistentvolumeclaims "data" is forbidden: ['
        "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, "
        "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified]"
    )


def test_s_api_limit_pvc_item_needs_min_or_max_storage() -> None:
    """S-API-LIMIT-PVC-2: ValidateLimitRange: a PersistentVolumeClaim item bounds storage."""
    lr = pvc_limits(max={"cpu": "1"})
    causes = {c.field: c.message for c in validate_object(lr)}
    assert causes["spec.limits[0].limits"] == (
        "Required value: either minimum or maximum storage value is required, "
        "but neither was provided"
    )
    assert not validate_object(pvc_limits(max={"storage": "1Gi"}))


def rq(hard: dict[str, str], used: dict[str, str]) -> types_pb2.ResourceQuota:
    q = types_pb2.ResourceQuota()
    q.metadata.name = "q"
    q.metadata.namespace = "default"
    q.spec.hard.update(hard)
    q.status.hard.update(hard)
    q.status.used.update(used)
    return q


def test_s_api_quota_update_handles() -> None:
    """S-API-QUOTA-UPD-1: the evaluators that charge an update: a pod's resize only, any
    Service or PersistentVolumeClaim update, no object count."""
    assert quota.handles_update(BY_KIND["Pod"], "resize")
    assert not quota.handles_update(BY_KIND["Pod"], "")
    assert not quota.handles_update(BY_KIND["Pod"], "status")
    assert quota.handles_update(BY_KIND["Service"], "")
    assert quota.handles_update(BY_KIND["PersistentVolumeClaim"], "")
    assert not quota.handles_update(BY_KIND["ConfigMap"], "")


def test_s_api_quota_pvc_expansion_charges_the_difference() -> None:
    """S-API-QUOTA-UPD-2: a claim grown from 1Gi to 3Gi is charged 2Gi (the delta is what
    the message calls requested); unchanged, nothing is charged."""
    old, new = pvc("1Gi"), pvc("3Gi")
    q = rq({"requests.storage": "5Gi"}, {"requests.storage": "2Gi"})
    assert quota.charge(new, "persistentvolumeclaims", "data", q, 0.0, old) == {
        "requests.storage": "4Gi"
    }
    assert quota.charge(old, "persistentvolumeclaims", "data", q, 0.0, old) is None
    full = rq({"requests.storage": "3Gi"}, {"requests.storage": "2Gi"})
    assert refusal(quota.charge, new, "persistentvolumeclaims", "data", full, 0.0, old) == (
        'persistentvolumeclaims "data" is forbidden: exceeded quota: q, '
        "requested: requests.storage=2Gi, used: requests.storage=2Gi, "
        "limited: requests.storage=3Gi"
    )


def test_s_api_quota_service_type_change_and_pod_resize() -> None:
    """S-API-QUOTA-UPD-3: a ClusterIP Service turned LoadBalancer is charged a load balancer
    and its node ports; a pod resized from 500m to 1500m is charged 1 cpu."""
    svc = types_pb2.Service()
    svc.metadata.name = "web"
    svc.metadata.namespace = "default"
    svc.spec.type = "ClusterIP"
    svc.spec.ports.add(port=80)
    lb = types_pb2.Service()
    lb.CopyFrom(svc)
    lb.spec.type = "LoadBalancer"
    q = rq({"services.loadbalancers": "0"}, {"services.loadbalancers": "0"})
    assert refusal(quota.charge, lb, "services", "web", q, 0.0, svc) == (
        'services "web" is forbidden: exceeded quota: q, requested: services.loadbalancers=1, '
        "used: services.loadbalancers=0, limited: services.loadbalancers=0"
    )
    assert quota.charge(svc, "services", "web", q, 0.0, svc) is None

    def pod(cpu: str) -> types_pb2.Pod:
        p = types_pb2.Pod()
        p.metadata.name = "p"
        p.metadata.namespace = "default"
        c = p.spec.containers.add(name="app", image="nginx")
        c.resources.requests["cpu"] = cpu
        c.resources.limits["cpu"] = cpu
        return p

    cpu = rq({"requests.cpu": "2", "pods": "5"}, {"requests.cpu": "500m", "pods": "1"})
    assert quota.charge(pod("1500m"), "pods", "p", cpu, 0.0, pod("500m")) == {
        "requests.cpu": "1500m",
        "pods": "1",
    }
    assert quota.charge(pod("250m"), "pods", "p", cpu, 0.0, pod("500m")) is None


def test_s_api_quota_count_of_a_custom_resource() -> None:
    """S-API-QUOTA-UPD-6: a custom resource's object count is count/<plural>.<group>
    (ObjectCountQuotaResourceNameFor), not its group twice."""
    widgets = Kind(
        "Widget",
        "widgets.example.com",
        "example.com/v1",
        True,
        types_pb2.CustomObject,
        "custom_object",
        plural="widgets",
    )
    assert quota.count_name(widgets) == "count/widgets.example.com"
    assert quota.count_name(BY_KIND["Deployment"]) == "count/deployments.apps"
    assert quota.count_name(BY_KIND["ConfigMap"]) == "count/configmaps"
