"""A simulated container's log lines (kemu.machinery.container_log)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.container_log import container_log
from kemu.machinery.errors import BadRequest
from kemu.testing.builders import make_pod

T0 = 1_700_000_000


def _pod() -> types_pb2.Pod:
    pod = make_pod("p").container("side").node("n1").obj()
    pod.spec.init_containers.add(name="init", image="busybox")
    running = pod.status.container_statuses.add(name="c", image="nginx", restart_count=2)
    running.state.running.started_at.seconds = T0
    done = pod.status.container_statuses.add(name="side", image="busybox")
    done.state.terminated.exit_code = 3
    done.state.terminated.reason = "Error"
    done.state.terminated.started_at.seconds = T0
    done.state.terminated.finished_at.seconds = T0 + 60
    waiting = pod.status.init_container_statuses.add(name="init")
    waiting.state.waiting.reason = "PodInitializing"
    return pod


def test_a_container_logs_its_start_and_its_exit() -> None:
    pod = _pod()
    [start] = container_log(pod, "c")
    assert start.at.seconds == T0
    assert "container c started (image nginx, restart count 2)" in start.text
    start, end = container_log(pod, "side")
    assert end.at.seconds == T0 + 60 and "container side exited with code 3 (Error)" in end.text


def test_a_container_not_started_has_the_kubelets_waiting_error() -> None:
    with pytest.raises(BadRequest, match='container "init" in pod "p" is waiting to start: Pod'):
        container_log(_pod(), "init")
    with pytest.raises(BadRequest, match="waiting to start: ContainerCreating"):
        container_log(make_pod("q").node("n1").obj(), "c")  # no status yet
