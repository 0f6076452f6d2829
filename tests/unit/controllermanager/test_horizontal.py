"""The horizontal-pod-autoscaler controller and its replica calculator (S-HPA-*)."""

from __future__ import annotations

import anyio
import pytest

from controllermanager.podautoscaler.horizontal import (
    HorizontalController,
    _History,
    convert_desired_with_rules,
    normalize_with_behaviors,
)
from controllermanager.podautoscaler.replica_calculator import (
    MetricsError,
    resource_replicas,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.autoscaling import CONVERSIONS, set_defaults_horizontal_pod_autoscaler
from kemu.machinery.printers import format_hpa_metrics
from kemu.machinery.usage import CPU_USAGE_ANNOTATION
from kemu.testing.builders import make_deployment, make_pod
from kemu.testing.eventually import eventually
from kemu.testing.fake_time import advance

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000.0


def running_pod(name: str, usage: str, *, cpu: str = "100m", ready: bool = True) -> types_pb2.Pod:
    p = (
        make_pod(name)
        .labels(app="web")
        .req(cpu=cpu)
        .node("n1")
        .phase("Running")
        .condition("Ready", "True" if ready else "False")
        .annotation(CPU_USAGE_ANNOTATION, usage)
        .obj()
    )
    p.status.start_time.seconds = int(NOW) - 3600
    p.status.conditions[0].last_transition_time.seconds = int(NOW) - 3500
    return p


def test_s_hpa_1_ratio_within_tolerance_keeps_the_count() -> None:
    pods = [running_pod("a", "52m"), running_pod("b", "52m")]  # 52% of a 50% target
    assert resource_replicas(2, 50, "cpu", pods, NOW).replicas == 2
    pods = [running_pod("a", "90m"), running_pod("b", "90m")]  # 90%: ratio 1.8
    result = resource_replicas(2, 50, "cpu", pods, NOW)
    assert (result.replicas, result.utilization, result.raw_average) == (4, 90, 90)


def test_s_hpa_2_missing_metrics_count_as_their_request_when_scaling_down() -> None:
    pending = make_pod("c").labels(app="web").req(cpu="100m").node("n1").phase("Running").obj()
    pending.status.conditions.add(type="Ready", status="True").last_transition_time.seconds = 0
    pending.status.start_time.seconds = 0
    pending.spec.node_name = ""  # no metrics: not bound to a kubelet
    pending.status.phase = "Running"
    pods = [running_pod("a", "10m"), running_pod("b", "10m"), pending]
    # 10% on two pods, the third counted at 100%: ratio (10+10+100)/300/0.5 = 0.8 -> 3*0.8
    assert resource_replicas(3, 50, "cpu", pods, NOW).replicas == 3


def test_s_hpa_3_unready_pods_count_as_zero_when_scaling_up() -> None:
    pods = [running_pod("a", "100m"), running_pod("b", "100m", ready=False)]
    pods[1].status.start_time.seconds = int(NOW) - 10  # within the cpu initialization period
    pods[1].status.conditions[0].last_transition_time.seconds = int(NOW) - 5
    # ready pod at 100% of a 50% target (ratio 2); the unready one at 0: (100+0)/200/0.5 = 1
    assert resource_replicas(2, 50, "cpu", pods, NOW).replicas == 2


def test_s_hpa_4_missing_request_and_no_pods_are_errors() -> None:
    # upstream asks metrics-server first: no pod of the selector runs, so it has none
    with pytest.raises(MetricsError, match="no metrics returned from resource metrics API"):
        resource_replicas(1, 50, "cpu", [], NOW)
    p = running_pod("a", "10m")
    p.spec.containers[0].resources.requests.clear()
    with pytest.raises(MetricsError, match="missing request for cpu in container"):
        resource_replicas(1, 50, "cpu", [p], NOW)


def test_s_hpa_5_rules_limit_scale_up_and_bound_by_min_max() -> None:
    assert convert_desired_with_rules(1, 10, 1, 20) == (
        4,
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )
    assert convert_desired_with_rules(5, 10, 1, 6)[:2] == (6, "TooManyReplicas")
    assert convert_desired_with_rules(5, 0, 2, 6)[:2] == (2, "TooFewReplicas")


def test_s_hpa_6_behavior_stabilization_and_policies() -> None:
    behavior = types_pb2.HorizontalPodAutoscalerBehavior()
    behavior.scale_down.stabilization_window_seconds = 60
    behavior.scale_down.policies.add(type="Pods", value=1, period_seconds=60)
    h = _History()
    # down from 5 to 1: one pod per minute
    assert normalize_with_behaviors(h, behavior, 5, 1, 1, 10, NOW)[0] == 4
    # up to 20 from 4: the default scale-up policy allows max(4 + 4, 2 x 4) = 8
    assert normalize_with_behaviors(_History(), behavior, 4, 20, 1, 30, NOW)[0] == 8


def test_s_hpa_7_defaults_and_v1_conversion_and_printing() -> None:
    hpa = types_pb2.HorizontalPodAutoscaler()
    set_defaults_horizontal_pod_autoscaler(hpa)
    assert hpa.spec.min_replicas == 1
    assert hpa.spec.metrics[0].resource.target.average_utilization == 80
    to_v2, to_v1 = CONVERSIONS[("autoscaling/v1", "HorizontalPodAutoscaler")]
    body = {"spec": {"targetCPUUtilizationPercentage": 50, "maxReplicas": 3}}
    to_v2(body)  # type: ignore[arg-type]
    assert body["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50  # type: ignore[index]
    to_v1(body)  # type: ignore[arg-type]
    assert body["spec"] == {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50}
    status = types_pb2.MetricStatus(type="Resource")
    status.resource.name = "cpu"
    status.resource.current.average_utilization = 90
    assert format_hpa_metrics(list(hpa.spec.metrics), [status]) == "cpu: 90%/80%"
    assert format_hpa_metrics(list(hpa.spec.metrics), []) == "cpu: <unknown>/80%"


async def test_s_hpa_8_controller_scales_a_deployment_up_then_down_after_the_window() -> None:
    clock = FakeClock(now=NOW)
    deploy = make_deployment("web").replicas(2).selector(app="web").obj()
    hpa = types_pb2.HorizontalPodAutoscaler()
    hpa.metadata.name, hpa.metadata.namespace = "web", "default"
    hpa.spec.scale_target_ref.kind, hpa.spec.scale_target_ref.name = "Deployment", "web"
    hpa.spec.scale_target_ref.api_version = "apps/v1"
    hpa.spec.max_replicas = 5
    set_defaults_horizontal_pod_autoscaler(hpa)
    hpa.spec.metrics[0].resource.target.average_utilization = 50
    fake = FakeClient(deploy, hpa, running_pod("a", "90m"), running_pod("b", "90m"), clock=clock)
    informers = InformerFactory(fake, clock=clock)
    ctrl = HorizontalController(fake, informers, clock)

    async def replicas() -> int:
        return (await fake.get(types_pb2.Deployment, "web", "default")).spec.replicas

    async def until(n: int) -> None:
        async def reached() -> bool:
            return await replicas() == n

        await eventually(reached, timeout=2, interval=0.01)

    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ctrl.run)
        await until(4)  # 90% of a 50% target on 2 pods: ceil(1.8 x 2)
        got = await fake.get(types_pb2.HorizontalPodAutoscaler, "web", "default")
        assert got.status.desired_replicas == 4
        assert got.status.current_metrics[0].resource.current.average_utilization == 90
        assert got.status.HasField("last_scale_time")
        reasons = {c.type: c.reason for c in got.status.conditions}
        assert reasons["ScalingActive"] == "ValidMetricFound"
        # load drops: the recommendation is 1, held for the 300 s stabilization window
        for name in ("a", "b"):
            p = await fake.get(types_pb2.Pod, name, "default")
            p.metadata.annotations[CPU_USAGE_ANNOTATION] = "5m"
            await fake.update(p)
        await advance(clock, 60, step=15)
        assert await replicas() == 4
        await advance(clock, 270, step=15)
        await until(1)
        tg.cancel_scope.cancel()


def test_s_hpa_10_the_controller_managers_hpa_flags_reach_the_controller() -> None:
    """upstream's --horizontal-pod-autoscaler-* flags (hpacontroller.go): parsed, validated
    and bound to the controller by configure_controllers."""
    from controllermanager import app, options
    from controllermanager.config import HPAControllerOptions
    from controllermanager.controller import ControllerContext
    from controllermanager.podautoscaler import horizontal
    from kemu.component.featuregate import FeatureGates

    args = options.build_parser().parse_args(
        ["--horizontal-pod-autoscaler-sync-period", "1s",
         "--horizontal-pod-autoscaler-downscale-stabilization", "3s",
         "--horizontal-pod-autoscaler-tolerance", "0.2",
         "--horizontal-pod-autoscaler-cpu-initialization-period", "0s",
         "--horizontal-pod-autoscaler-initial-readiness-delay", "1s",
         "--concurrent-horizontal-pod-autoscaler-syncs", "2"]
    )  # fmt: skip
    configurations = options.configurations_from_args(args)
    assert configurations.hpa_controller == HPAControllerOptions(1.0, 3.0, 0.2, 0.0, 1.0, 2)
    assert options.configurations_from_args(
        options.build_parser().parse_args([])
    ).hpa_controller == HPAControllerOptions(15.0, 300.0, 0.1, 300.0, 30.0, 5)
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    ctx = ControllerContext(
        client=fake,
        informers=InformerFactory(fake, clock=clock),
        clock=clock,
        gates=FeatureGates.default(),
    )
    ctrl = app.configure_controllers(app.CONTROLLERS, configurations)[horizontal.NAME](ctx)
    assert isinstance(ctrl, HorizontalController)
    assert (ctrl._sync_period, ctrl._downscale_window, ctrl._workers) == (1.0, 3.0, 2)
    assert ctrl._calculator.tolerance == 0.2
    with pytest.raises(ValueError, match="--horizontal-pod-autoscaler-sync-period must be"):
        HPAControllerOptions(sync_period=0)


def test_s_hpa_11_the_cpu_initialization_period_and_tolerance_are_options() -> None:
    """A pod that became ready 5 s ago is not yet counted for a scale-up within the default
    5 min cpu initialization period; with the period at 0 it is (the samples of a ready pod
    count at once). A wider tolerance keeps the count."""
    from controllermanager.podautoscaler.replica_calculator import CalculatorOptions

    young = running_pod("b", "100m")
    young.status.start_time.seconds = int(NOW) - 10
    young.status.conditions[0].last_transition_time.seconds = int(NOW) - 5
    pods = [running_pod("a", "100m"), young]  # both at 100% of a 50% target
    # default: b unready (counted at 0 for the scale-up): (100+0)/200/0.5 = 1 -> keeps 2
    assert resource_replicas(2, 50, "cpu", pods, NOW).replicas == 2
    now_counted = CalculatorOptions(cpu_initialization_period=0.0)
    assert resource_replicas(2, 50, "cpu", pods, NOW, options=now_counted).replicas == 4
    at_54 = [running_pod("a", "54m"), running_pod("b", "54m")]  # ratio 1.08
    assert resource_replicas(2, 50, "cpu", at_54, NOW).replicas == 2
    assert (
        resource_replicas(2, 50, "cpu", at_54, NOW, options=CalculatorOptions(0.05)).replicas == 3
    )


async def test_s_hpa_12_a_target_read_is_able_to_scale_even_without_metrics() -> None:
    """reconcileAutoscaler sets AbleToScale True SucceededGetScale once it read the target's
    scale, before the metrics: an HPA whose pods have no metrics yet (not Running) shows it
    beside ScalingActive False FailedGetResourceMetric (`kubectl describe hpa`)."""
    clock = FakeClock(now=NOW)
    deploy = make_deployment("web").replicas(1).selector(app="web").obj()
    hpa = types_pb2.HorizontalPodAutoscaler()
    hpa.metadata.name, hpa.metadata.namespace = "web", "default"
    hpa.spec.scale_target_ref.kind, hpa.spec.scale_target_ref.name = "Deployment", "web"
    hpa.spec.scale_target_ref.api_version = "apps/v1"
    hpa.spec.max_replicas = 5
    set_defaults_horizontal_pod_autoscaler(hpa)
    pending = make_pod("a").labels(app="web").req(cpu="100m").obj()
    fake = FakeClient(deploy, hpa, pending, clock=clock)
    informers = InformerFactory(fake, clock=clock)
    ctrl = HorizontalController(fake, informers, clock)
    inner = (
        "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics "
        "returned from resource metrics API"
    )

    async def events() -> dict[str, str]:
        return {e.reason: e.message for e in (await fake.list(types_pb2.Event, "default")).items}

    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ctrl._recorder.run)
        await ctrl.reconcile(await fake.get(types_pb2.HorizontalPodAutoscaler, "web", "default"))

        async def recorded() -> bool:
            return len(await events()) == 2

        await eventually(recorded, timeout=2, interval=0.01)
        tg.cancel_scope.cancel()
    got = await fake.get(types_pb2.HorizontalPodAutoscaler, "web", "default")
    conditions = {c.type: (c.status, c.reason, c.message) for c in got.status.conditions}
    assert conditions["AbleToScale"] == (
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    )
    # S-HPA-14: upstream's events and messages (getUnableComputeReplicaCountCondition, then
    # computeReplicasForMetrics' "invalid metrics" error)
    assert conditions["ScalingActive"] == (
        "False",
        "FailedGetResourceMetric",
        f"the HPA was unable to compute the replica count: {inner}",
    )
    assert await events() == {
        "FailedGetResourceMetric": inner,
        "FailedComputeMetricsReplicas": "invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get cpu resource metric value: {inner}",
    }


def test_s_hpa_13_a_behaviors_scale_down_window_defaults_to_the_controllers_flag() -> None:
    """Upstream's API defaults fill a behavior's rules but leave scaleDown's
    stabilizationWindowSeconds unset (GenerateHPAScaleDownRules); the controller uses its
    --horizontal-pod-autoscaler-downscale-stabilization there
    (maybeInitScaleDownStabilizationWindow). A window the HPA sets wins."""
    hpa = types_pb2.HorizontalPodAutoscaler()
    hpa.spec.behavior.scale_down.select_policy = "Max"
    set_defaults_horizontal_pod_autoscaler(hpa)
    down = hpa.spec.behavior.scale_down
    assert not down.HasField("stabilization_window_seconds")
    assert [(p.type, p.value, p.period_seconds) for p in down.policies] == [("Percent", 100, 15)]
    assert hpa.spec.behavior.scale_up.stabilization_window_seconds == 0
    h = _History()
    # a recommendation of 5 ten seconds ago, now 1: a 5 s window has forgotten it
    normalize_with_behaviors(h, hpa.spec.behavior, 5, 5, 1, 10, NOW - 10, 5.0)
    assert normalize_with_behaviors(h, hpa.spec.behavior, 5, 1, 1, 10, NOW, 5.0)[0] == 1
    h = _History()
    normalize_with_behaviors(h, hpa.spec.behavior, 5, 5, 1, 10, NOW - 10)
    assert normalize_with_behaviors(h, hpa.spec.behavior, 5, 1, 1, 10, NOW)[0] == 5  # 300 s
    down.stabilization_window_seconds = 0
    h = _History()
    normalize_with_behaviors(h, hpa.spec.behavior, 5, 5, 1, 10, NOW - 10)
    assert normalize_with_behaviors(h, hpa.spec.behavior, 5, 1, 1, 10, NOW)[0] == 1
