"""batch/v1 Job and apps/v1 DaemonSet defaulting and validation; the generated selector."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery import apps, batch
from kemu.machinery.defaults import set_defaults
from kemu.machinery.update_strategy import bumps_generation
from kemu.machinery.validation.objects import validate_object
from kemu.testing.builders import make_daemon_set, make_job


def _fields(obj, old=None) -> list[str]:
    return [c.field for c in validate_object(obj, old=old)]


def _generated(job: types_pb2.Job, uid: str = "u-1") -> types_pb2.Job:
    job.metadata.uid = uid
    batch.generate_selector(job)
    return job


def test_job_defaults_are_upstreams() -> None:
    job = types_pb2.Job()
    job.spec.template.metadata.labels["app"] = "x"
    set_defaults(job)
    s = job.spec
    assert (s.completions, s.parallelism, s.backoff_limit) == (1, 1, 6)
    assert (s.completion_mode, s.suspend, s.pod_replacement_policy) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )
    assert dict(job.metadata.labels) == {"app": "x"}
    assert s.template.spec.restart_policy == "Always"  # the pod default: refused below
    work_queue = types_pb2.Job()
    work_queue.spec.parallelism = 3
    set_defaults(work_queue)
    assert not work_queue.spec.HasField("completions")  # a work queue stays one


def test_generated_selector_holds_the_uid_and_the_template_its_labels() -> None:
    job = _generated(make_job("pi").obj())
    labels = job.spec.template.metadata.labels
    assert labels["batch.kubernetes.io/controller-uid"] == "u-1"
    assert labels["controller-uid"] == "u-1"
    assert labels["batch.kubernetes.io/job-name"] == "pi"
    assert labels["job-name"] == "pi"
    assert dict(job.spec.selector.match_labels) == {"batch.kubernetes.io/controller-uid": "u-1"}
    assert _fields(job) == []


def test_job_validation_names_the_fields() -> None:
    job = _generated(make_job("pi").obj())
    job.spec.template.spec.restart_policy = "Always"
    job.spec.parallelism = -1
    assert _fields(job) == ["spec.parallelism", "spec.template.spec.restartPolicy"]
    forged = make_job("pi").obj()
    forged.metadata.uid = "u-1"
    forged.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] = "other"
    batch.generate_selector(forged)
    assert "spec.selector" in _fields(forged)
    indexed = _generated(make_job("pi").obj())
    indexed.spec.completion_mode = "Indexed"
    assert _fields(indexed) == []  # completions defaulted to 1
    indexed.spec.ClearField("completions")
    assert _fields(indexed) == ["spec.completions"]
    indexed.spec.completions = 100_001
    assert _fields(indexed) == ["spec.completions"]
    unknown = _generated(make_job("pi").obj())
    unknown.spec.completion_mode = "Sharded"
    assert _fields(unknown) == ["spec.completionMode"]
    manual = make_job("pi").manual_selector().obj()
    assert _fields(manual) == []
    manual.spec.ClearField("selector")
    assert _fields(manual) == ["spec.selector"]


def test_job_template_is_immutable_unless_suspended_and_never_started() -> None:
    old = _generated(make_job("pi").obj())
    new = types_pb2.Job()
    new.CopyFrom(old)
    new.spec.template.spec.node_selector["zone"] = "a"
    assert _fields(new, old) == ["spec.template"]
    new.spec.completions = 3
    assert _fields(new, old) == ["spec.completions", "spec.template"]
    old.spec.suspend = True
    suspended = types_pb2.Job()
    suspended.CopyFrom(old)
    suspended.spec.template.spec.node_selector["zone"] = "a"
    assert _fields(suspended, old) == []
    suspended.spec.template.spec.containers[0].image = "other"
    assert _fields(suspended, old) == ["spec.template"]
    new = types_pb2.Job()
    new.CopyFrom(old)
    new.spec.suspend = False
    assert _fields(new, old) == []
    assert bumps_generation(old, new)


def test_daemon_set_defaults_and_validation() -> None:
    ds = types_pb2.DaemonSet()
    apps.set_defaults_daemon_set(ds)
    ru = ds.spec.update_strategy.rolling_update
    assert ds.spec.update_strategy.type == "RollingUpdate"
    assert (ru.max_unavailable.int_val, ru.max_surge.int_val) == (1, 0)
    assert ds.spec.revision_history_limit == 10
    assert _fields(make_daemon_set("agent").obj()) == []
    assert _fields(make_daemon_set("agent").on_delete().obj()) == []
    zero = make_daemon_set("agent").rolling_update(0, 0).obj()
    assert _fields(zero) == ["spec.updateStrategy.rollingUpdate.maxUnavailable"]
    big = make_daemon_set("agent").rolling_update("150%").obj()
    assert _fields(big) == ["spec.updateStrategy.rollingUpdate.maxUnavailable"]
    bad = make_daemon_set("agent").obj()
    bad.spec.template.spec.restart_policy = "Never"
    bad.spec.update_strategy.type = "Sometimes"
    assert _fields(bad) == ["spec.template.spec.restartPolicy", "spec.updateStrategy.type"]
    empty = make_daemon_set("agent").obj()
    empty.spec.selector.ClearField("match_labels")
    causes = validate_object(empty)
    assert any("empty selector is invalid for daemonset" in c.message for c in causes)


def test_daemon_set_template_generation_bumps_only_with_the_template() -> None:
    ds = make_daemon_set("agent").obj()
    apps.prepare_daemon_set_for_create(ds)
    assert apps.template_generation(ds) == 1
    same = types_pb2.DaemonSet()
    same.CopyFrom(ds)
    same.spec.min_ready_seconds = 5
    same.metadata.annotations[apps.TEMPLATE_GENERATION_ANNOTATION] = "7"  # not the user's
    apps.prepare_daemon_set_for_update(same, ds)
    assert apps.template_generation(same) == 1
    changed = types_pb2.DaemonSet()
    changed.CopyFrom(same)
    changed.spec.template.spec.containers[0].image = "new"
    apps.prepare_daemon_set_for_update(changed, same)
    assert apps.template_generation(changed) == 2
    selector = types_pb2.DaemonSet()
    selector.CopyFrom(ds)
    selector.spec.selector.match_labels["tier"] = "x"
    selector.spec.template.metadata.labels["tier"] = "x"
    assert _fields(selector, ds) == ["spec.selector"]
