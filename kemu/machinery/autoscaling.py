"""autoscaling/v2 HorizontalPodAutoscaler: upstream's defaults
(pkg/apis/autoscaling/v2/defaults.go) and the behaviour's default scaling rules, which the
horizontal-pod-autoscaler controller also applies to an HPA that sets none."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.jsonvalue import JSON, JSONObject

DEFAULT_CPU_UTILIZATION: Final = 80
"""The metric of an HPA that lists none: average CPU utilization 80%."""
DEFAULT_SCALE_DOWN_STABILIZATION: Final = 300
"""Scale-down's stabilization window (--horizontal-pod-autoscaler-downscale-stabilization)."""
MAX_POLICY: Final = "Max"


def default_scale_up_rules() -> types_pb2.HPAScalingRules:
    """GenerateHPAScaleUpRules' defaults: no stabilization, 4 pods or 100% per 15 s, Max."""
    rules = types_pb2.HPAScalingRules(stabilization_window_seconds=0, select_policy=MAX_POLICY)
    rules.policies.add(type="Pods", value=4, period_seconds=15)
    rules.policies.add(type="Percent", value=100, period_seconds=15)
    return rules


def default_scale_down_rules() -> types_pb2.HPAScalingRules:
    """GenerateHPAScaleDownRules' defaults: 100% per 15 s, Max, and no stabilization window:
    upstream leaves it unset (defaultHPAScaleDownRules), for the controller to use its
    --horizontal-pod-autoscaler-downscale-stabilization (maybeInitScaleDownStabilizationWindow)."""
    rules = types_pb2.HPAScalingRules(select_policy=MAX_POLICY)
    rules.policies.add(type="Percent", value=100, period_seconds=15)
    return rules


def _fill(rules: types_pb2.HPAScalingRules, defaults: types_pb2.HPAScalingRules) -> None:
    if not rules.HasField("stabilization_window_seconds") and defaults.HasField(
        "stabilization_window_seconds"
    ):
        rules.stabilization_window_seconds = defaults.stabilization_window_seconds
    if not rules.HasField("select_policy"):
        rules.select_policy = defaults.select_policy
    if not rules.policies:
        rules.policies.extend(defaults.policies)


def set_defaults_horizontal_pod_autoscaler(hpa: types_pb2.HorizontalPodAutoscaler) -> None:
    """SetDefaults_HorizontalPodAutoscaler: minReplicas 1, CPU at 80% when no metric is
    given, and a given behavior's missing rules filled with the defaults."""
    spec = hpa.spec
    if not spec.HasField("min_replicas"):
        spec.min_replicas = 1
    if not spec.metrics:
        m = spec.metrics.add(type="Resource")
        m.resource.name = "cpu"
        m.resource.target.type = "Utilization"
        m.resource.target.average_utilization = DEFAULT_CPU_UTILIZATION
    if spec.HasField("behavior"):
        _fill(spec.behavior.scale_up, default_scale_up_rules())
        _fill(spec.behavior.scale_down, default_scale_down_rules())


# ---------------------------------------------------------------- autoscaling/v1
# The REST edge serves HorizontalPodAutoscalers as autoscaling/v1 too (kubectl 1.32's
# `autoscale` creates v1 objects): upstream's conversion (pkg/apis/autoscaling/v1/
# conversion.go) maps targetCPUUtilizationPercentage to a Resource cpu Utilization metric and
# back, and currentCPUUtilizationPercentage to the cpu current metric. (Upstream also keeps
# the other metrics and the conditions in annotations; kemu does not.)

AUTOSCALING_V1: Final = "autoscaling/v1"


def _v1_in(body: JSONObject) -> None:
    spec = body.get("spec")
    if isinstance(spec, dict):
        target = spec.pop("targetCPUUtilizationPercentage", None)
        if isinstance(target, int):
            spec["metrics"] = [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": target},
                    },
                }
            ]
    status = body.get("status")
    if isinstance(status, dict):
        current = status.pop("currentCPUUtilizationPercentage", None)
        if isinstance(current, int):
            status["currentMetrics"] = [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": current}},
                }
            ]


def _cpu_utilization(metrics: JSON, field: str) -> int | None:
    if not isinstance(metrics, list):
        return None
    for m in metrics:
        if not isinstance(m, dict) or m.get("type") != "Resource":
            continue
        resource = m.get("resource")
        if isinstance(resource, dict) and resource.get("name") == "cpu":
            inner = resource.get(field)
            if isinstance(inner, dict) and isinstance(inner.get("averageUtilization"), int):
                value = inner["averageUtilization"]
                assert isinstance(value, int)
                return value
    return None


def _v1_out(body: JSONObject) -> None:
    spec = body.get("spec")
    if isinstance(spec, dict):
        target = _cpu_utilization(spec.pop("metrics", None), "target")
        spec.pop("behavior", None)
        if target is not None:
            spec["targetCPUUtilizationPercentage"] = target
    status = body.get("status")
    if isinstance(status, dict):
        current = _cpu_utilization(status.pop("currentMetrics", None), "current")
        status.pop("conditions", None)
        if current is not None:
            status["currentCPUUtilizationPercentage"] = current


CONVERSIONS: Final = {(AUTOSCALING_V1, "HorizontalPodAutoscaler"): (_v1_in, _v1_out)}
"""(group version, kind) -> (in: v1's body to v2's, out: v2's to v1's)."""
