from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.ctl import printers
from kemu.ctl.tabwriter import align
from kemu.testing.builders import make_node, make_pod


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (10 * 3600, "10h"),
        (3 * 86400 + 3600, "3d1h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration_matches_kubectl(seconds: float, text: str) -> None:
    assert printers.human_duration(seconds) == text


def test_tabwriter_aligns_each_block_of_a_column() -> None:
    lines = [
        ["Name:", "p"],
        ["Namespace:", "default"],
        ["Containers:"],
        ["  c:"],
        ["    Image:", "x"],
    ]
    assert align(lines) == [
        "Name:       p",
        "Namespace:  default",
        "Containers:",
        "  c:",
        "    Image:  x",
    ]


def test_table_columns_never_shrink_while_rows_are_added() -> None:
    table = printers.Table()
    first = table.render([["NAME", "STATUS"], ["a-long-name", "Running"]])
    later = table.render([["b", "Pending"]])
    assert first == ["NAME          STATUS", "a-long-name   Running"]
    assert later == ["b             Pending"]


def test_pod_status_is_terminating_once_deletion_started() -> None:
    pod = make_pod("p").phase("Running").obj()
    pod.metadata.deletion_timestamp.seconds = 10
    assert printers.pod_status(pod) == "Terminating"


def test_pod_status_shows_a_waiting_reason_and_scheduling_gates() -> None:
    pod = make_pod("p").phase("Pending").obj()
    pod.status.container_statuses.add(
        name="c",
        state=types_pb2.ContainerState(
            waiting=types_pb2.ContainerStateWaiting(reason="ContainerCreating")
        ),
    )
    assert printers.pod_status(pod) == "ContainerCreating"
    gated = make_pod("g").gate("x").condition("PodScheduled", "False", "SchedulingGated").obj()
    assert printers.pod_status(gated) == "SchedulingGated"


def test_node_status_and_roles() -> None:
    node = (
        make_node("n")
        .ready(False)
        .unschedulable()
        .label("node-role.kubernetes.io/control-plane", "")
        .obj()
    )
    assert printers.node_status(node) == "NotReady,SchedulingDisabled"
    assert printers.node_roles(node) == "control-plane"


def test_job_and_daemon_set_rows_are_kubectls() -> None:
    from kemu.ctl.printers import TABLES
    from kemu.testing.builders import make_daemon_set, make_job

    job = make_job("pi").completions(5).parallelism(2).obj()
    job.metadata.creation_timestamp.seconds = 1000
    job.status.start_time.seconds = 1000
    job.status.succeeded = 2
    assert TABLES["Job"].row(job, 1030.0, False) == ["pi", "Running", "2/5", "30s", "30s"]
    job.status.completion_time.seconds = 1010
    job.status.conditions.add(type="Complete", status="True")
    assert TABLES["Job"].row(job, 1030.0, False)[1:4] == ["Complete", "2/5", "10s"]
    queue = make_job("q").completions(None).parallelism(3).obj()
    assert TABLES["Job"].row(queue, 0.0, False)[2] == "0/1 of 3"
    ds = make_daemon_set("agent").node_selector(role="worker").obj()
    ds.status.desired_number_scheduled = 3
    ds.status.current_number_scheduled = 3
    ds.status.number_ready = 2
    ds.status.updated_number_scheduled = 3
    ds.status.number_available = 2
    row = TABLES["DaemonSet"].row(ds, 0.0, True)
    assert row[:7] == ["agent", "3", "3", "2", "3", "2", "role=worker"]
    assert row[-3:] == ["c", "registry.k8s.io/pause:3.10", "app=agent"]
