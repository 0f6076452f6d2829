"""The README's preemption stories told by kemuctl, a separate process per command, each on a
cluster of its own (node-c of the Procfile): apart from test_kemuctl.py so that pytest-xdist's
loadfile gives them to a worker of their own (each waits out a victim's 20 s shutdown)."""

from __future__ import annotations

import functools
from typing import Any, Final

import pytest

from kemu.component.featuregate import IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
from kemu.testing import Cluster
from kemu.testing.eventually import eventually_sync
from tests.integration.cli.test_kemuctl import (
    EXAMPLES,
    PROCESS_POLL,
    kemuctl,
    kemuctl_create_namespace,
)

pytestmark = pytest.mark.integration


def slow_shutdown(c: Cluster, ns: str, *pods: str) -> None:
    """The README's batch pods shut down in 5 s; a describe under load can take 2 s, so the
    stories' tests give the victims 20 s to be seen Terminating (the kubelet reads the
    annotation when it stops the pod)."""
    for name in pods:
        done = kemuctl(
            c, "patch", "pod", name, "-n", ns,
            "-p", '{"metadata":{"annotations":{"kubelet.kemu.io/shutdown-duration":"20s"}}}',
        )  # fmt: skip
        assert done.returncode == 0, done.stderr


def wait_running(c: Cluster, ns: str, *pods: str) -> None:
    """One `kemuctl wait` for every pod to run (a process per pod costs ~0.6 s of CPU each)."""
    targets = [f"pod/{name}" for name in pods]
    running = kemuctl(
        c, "wait", *targets, "-n", ns, "--for=jsonpath={.status.phase}=Running",
        "--timeout", "30s",
    )  # fmt: skip
    assert running.returncode == 0, running.stderr


def victim_story(c: Cluster, ns: str) -> str:
    """The describe of the batch pod being preempted: Terminating, DisruptionTarget,
    Preempted."""
    for name in ("batch-1", "batch-2"):
        text = kemuctl(c, "describe", "pod", name, "-n", ns).stdout
        if "Terminating" in text:
            assert "DisruptionTarget" in text and "PreemptionByScheduler" in text, text
            assert "Preempted by pod" in text and "on node node-c" in text, text
            return text
    raise AssertionError("no batch pod is terminating")


# node-c of the Procfile: cpu 2, labelled disk=ssd.
NODE_C: Final[dict[str, Any]] = {
    "nodes": ["node-c"],
    "capacity": {"cpu": "2", "memory": "4Gi", "pods": "20"},
    "labels": {"disk": "ssd"},
}


@pytest.mark.kemu(**NODE_C)
def test_describe_tells_the_preemption_story_of_the_readme_example(kemu_cluster: Cluster) -> None:
    """The README's preemption example with kemuctl: the preemptor's nominated node and its
    FailedScheduling then Scheduled events; the victim's DisruptionTarget condition,
    Terminating status and Preempted event."""
    c = kemu_cluster
    ns = kemuctl_create_namespace(c, "story")
    assert kemuctl(c, "apply", "-f", str(EXAMPLES / "priorityclasses.yaml")).returncode == 0
    done = kemuctl(c, "apply", "-n", ns, "-f", str(EXAMPLES / "preemption.yaml"))
    assert done.returncode == 0, done.stderr
    wait_running(c, ns, "batch-1", "batch-2")
    slow_shutdown(c, ns, "batch-1", "batch-2")
    done = kemuctl(c, "apply", "-n", ns, "-f", str(EXAMPLES / "preemptor.yaml"))
    assert done.returncode == 0, done.stderr

    eventually_sync(functools.partial(victim_story, c, ns), timeout=30, interval=PROCESS_POLL)

    def nominated() -> str:
        text = kemuctl(c, "describe", "pod", "preemptor", "-n", ns).stdout
        assert "FailedScheduling" in text and "Insufficient cpu" in text, text
        if "Successfully assigned" not in text:
            assert "Nominated Node Name:" in text and "node-c" in text, text
        return text

    eventually_sync(nominated, timeout=30, interval=PROCESS_POLL)

    # The binding waits for the victim's 20 s shutdown: one watching `kemuctl wait` rather than
    # a describe process every PROCESS_POLL (then the Scheduled event, recorded after binding).
    bound = kemuctl(
        c, "wait", "pod/preemptor", "-n", ns, "--for=jsonpath={.spec.nodeName}=node-c",
        "--timeout", "60s",
    )  # fmt: skip
    assert bound.returncode == 0, bound.stderr

    def scheduled() -> str:
        text = kemuctl(c, "describe", "pod", "preemptor", "-n", ns).stdout
        assert f"Successfully assigned {ns}/preemptor to node-c" in text, text
        return text

    eventually_sync(scheduled, timeout=30, interval=PROCESS_POLL)
    table = kemuctl(c, "get", "pods", "-n", ns, "-o", "wide").stdout
    assert len([line for line in table.splitlines() if line.startswith("batch-")]) == 1, table


@pytest.mark.kemu(**NODE_C, gates={IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: True})
def test_describe_tells_the_resize_preemption_story_of_the_readme_example(
    kemu_cluster: Cluster,
) -> None:
    """The README's KEP-5836 example with kemuctl, as the Procfile runs it (the alpha gate on):
    the resized pod's describe shows the Deferred resize, then the resize started and the new
    allocation; a batch pod's describe shows DisruptionTarget, Terminating and Preempted; no
    pod gets a nominated node."""
    c = kemu_cluster
    ns = kemuctl_create_namespace(c, "resize-story")
    assert kemuctl(c, "apply", "-f", str(EXAMPLES / "priorityclasses.yaml")).returncode == 0
    done = kemuctl(c, "apply", "-n", ns, "-f", str(EXAMPLES / "resize-preemption.yaml"))
    assert done.returncode == 0, done.stderr
    wait_running(c, ns, "batch-1", "batch-2", "serving")
    slow_shutdown(c, ns, "batch-1", "batch-2")
    done = kemuctl(c, "resize", "pod", "serving", "-n", ns, "--requests", "cpu=1")
    assert done.returncode == 0, done.stderr

    eventually_sync(functools.partial(victim_story, c, ns), timeout=30, interval=PROCESS_POLL)
    # The allocation waits for the victim's 20 s shutdown: one watching `kemuctl wait`, then
    # the describe (its events are recorded by then or soon after).
    allocated = kemuctl(
        c, "wait", "pod/serving", "-n", ns,
        "--for=jsonpath={.status.containerStatuses[0].allocatedResources.cpu}=1",
        "--timeout", "60s",
    )  # fmt: skip
    assert allocated.returncode == 0, allocated.stderr

    def resized() -> str:
        text = kemuctl(c, "describe", "pod", "serving", "-n", ns).stdout
        assert "ResizeDeferred" in text and "ResizeStarted" in text, text
        allocated = text.split("Allocated Resources:", 1)[1].split("\n")[1]
        assert allocated.split() == ["cpu:", "1"], text
        return text

    text = eventually_sync(resized, timeout=30, interval=PROCESS_POLL)
    assert "Nominated Node Name:  <none>" in text, text
    table = kemuctl(c, "get", "pods", "-n", ns, "-o", "wide").stdout
    assert len([line for line in table.splitlines() if line.startswith("batch-")]) == 1, table
