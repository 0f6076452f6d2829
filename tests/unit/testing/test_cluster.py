"""The harness driving a stand-in component exactly as it drives kemu's own processes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kemu.testing.cluster import Cluster, format_feature_gates, format_resources
from kemu.testing.eventually import eventually_sync
from kemu.testing.processes import ProcessStartError, http_get, python_env

STANDIN = "tests.unit.testing.standin_component"


def gone(pid: int) -> bool:
    """True when `pid` no longer runs (absent, or a zombie its new parent has not reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_component_is_ready_when_its_readyz_answers_200(tmp_path):
    with Cluster(tmp_path) as cluster:
        began = time.monotonic()
        proc = cluster.start_component(
            STANDIN,
            "standin",
            ["--ready-after", "0.3", "--server", "127.0.0.1:1"],
            emulated_version="1.33",
            feature_gates={"A": True, "B": False},
        )
        assert time.monotonic() - began >= 0.3
        assert http_get(proc.readyz_url)[0] == 200
        assert "standin_up 1" in proc.scrape()
        assert proc.argv[:3] == [sys.executable, "-m", STANDIN]
        assert proc.argv[-6:] == [
            "--emulated-version", "1.33",
            "--feature-gates", "A=true,B=false",
            "--metrics-port", str(proc.metrics_port),
        ]  # fmt: skip
        assert cluster.processes == {"standin": proc}
    assert proc.returncode == 0


def test_a_component_that_dies_before_ready_fails_the_start_with_its_log(tmp_path):
    with Cluster(tmp_path) as cluster:
        with pytest.raises(ProcessStartError) as caught:
            cluster.start_component(
                STANDIN, "crasher", ["--ready-after", "60", "--die-after", "0.1"]
            )
        assert cluster.stop() == {}  # reported once, by the start error
    message = str(caught.value)
    assert "crasher: exited with code 3 before becoming ready" in message
    assert "standin: fatal: simulated crash before ready" in message


def test_a_component_that_never_gets_ready_times_out_with_its_log(tmp_path):
    # Long enough for the stand-in to start and log under a loaded CI machine (at 0.4 s it
    # sometimes had not printed its first line yet); it never becomes ready within it.
    with Cluster(tmp_path, startup_timeout=3.0) as cluster:
        with pytest.raises(ProcessStartError) as caught:
            cluster.start_component(STANDIN, "slow", ["--ready-after", "60"])
        assert not cluster.processes["slow"].running  # a failed start leaves nothing behind
    message = str(caught.value)
    assert "slow: not ready within 3s" in message
    assert "standin: starting" in message


def test_terminate_escalates_to_sigkill_and_kill_restart_reuses_the_argv(tmp_path):
    with Cluster(tmp_path) as cluster:
        stubborn = cluster.start_component(STANDIN, "stubborn", ["--ignore-sigterm"])
        assert cluster.terminate("stubborn", timeout=0.3) == -signal.SIGKILL
        assert "standin: ignoring SIGTERM" in stubborn.logs()

        proc = cluster.start_component(STANDIN, "standin", [])
        first_pid, argv = proc.pid, list(proc.argv)
        assert cluster.kill("standin") == -signal.SIGKILL
        cluster.restart("standin")
        assert proc.pid != first_pid and proc.argv == argv
        assert http_get(proc.readyz_url)[0] == 200
        assert proc.logs().count("===== kemu harness: start #") == 2
        assert cluster.stop() == {}  # deliberate kills are not unclean exits


def test_stop_leaves_no_process_and_reports_unclean_exits(tmp_path):
    cluster = Cluster(tmp_path)
    etcd = cluster.start_etcd()
    parent = cluster.start_component(STANDIN, "parent", ["--spawn-child"])
    unclean = cluster.start_component(STANDIN, "unclean", ["--exit-code-on-term", "2"])
    child_pid = int(
        eventually_sync(
            lambda: [line for line in parent.logs().splitlines() if "child pid" in line]
        )[0].split()[-1]
    )
    pids = [etcd.pid, parent.pid, unclean.pid, child_pid]
    assert all(pid is not None and not gone(pid) for pid in pids)

    assert cluster.stop() == {"unclean": 2}

    assert [p.running for p in cluster.processes.values()] == [False, False, False]
    eventually_sync(lambda: all(gone(pid) for pid in pids if pid is not None), timeout=5)
    logs = cluster.dump_logs()
    assert "===== etcd" in logs and "===== parent" in logs and "standin: SIGTERM" in logs


def test_stop_reports_a_component_that_died_on_its_own(tmp_path):
    with Cluster(tmp_path) as cluster:
        proc = cluster.start_component(STANDIN, "victim", [])
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)  # not through the harness: a crash
        eventually_sync(lambda: not proc.running, timeout=5)
        assert cluster.stop() == {"victim": -signal.SIGKILL}


def test_flag_formatting():
    assert format_feature_gates({"X": True, "Y": False}) == "X=true,Y=false"
    assert format_resources({"cpu": "4", "memory": "8Gi"}) == "cpu=4,memory=8Gi"
    assert format_resources("cpu=1") == "cpu=1"


def test_convenience_starters_need_an_apiserver(tmp_path):
    cluster = Cluster(tmp_path)
    with pytest.raises(RuntimeError, match="start_apiserver"):
        cluster.start_scheduler()
    with pytest.raises(RuntimeError, match="start_etcd"):
        cluster.start_apiserver()
    assert cluster.stop() == {}


ORPHAN_SCRIPT = """
import os, sys
from pathlib import Path
from kemu.testing.processes import ManagedProcess, python_env, python_module_argv
proc = ManagedProcess(
    "orphan",
    python_module_argv("tests.unit.testing.standin_component", ["--metrics-port", "0"]),
    log_path=Path(sys.argv[2]),
    env=python_env(),
)
proc.start()
print(proc.pid, flush=True)
if sys.argv[1] == "hard":
    os._exit(1)  # no atexit handlers: only PDEATHSIG can help
raise SystemExit("test session crashed")
"""


@pytest.mark.parametrize("how", ["hard", "soft"])
def test_children_do_not_outlive_a_crashed_session(tmp_path, how):
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN_SCRIPT, how, str(tmp_path / "orphan.log")],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    pid = int(done.stdout.split()[0])
    eventually_sync(lambda: gone(pid), timeout=5, message=f"orphan {pid} still running")


def test_an_etcd_cluster_has_named_members_and_every_url_goes_to_the_apiserver(tmp_path):
    with Cluster(tmp_path) as cluster:
        with pytest.raises(ValueError, match="members: must be >= 1"):
            cluster.start_etcd(members=0)
        first = cluster.start_etcd(members=3, wait=False)
        members = cluster.etcd_members
        assert [m.name for m in members] == ["etcd-0", "etcd-1", "etcd-2"]
        assert first is members[0] is cluster.etcd
        assert cluster.etcd_servers == ",".join(m.url for m in members)
        assert len({m.data_dir for m in members}) == len({m.peer_port for m in members}) == 3
        initial = {m.argv[m.argv.index("--initial-cluster") + 1] for m in members}
        assert len(initial) == 1 and initial.pop().count("=http://127.0.0.1:") == 3
        with pytest.raises(ValueError, match="already started"):
            cluster.start_etcd()
        for m in members:
            m.wait_ready(timeout=20)


def test_every_component_is_given_a_wall_clock_skew_file_the_cluster_writes(tmp_path):
    from kemu.component.clock import SKEW_FILE_ENV, WallClockSkew

    with Cluster(tmp_path) as cluster:
        proc = cluster.start_component(STANDIN, "standin", ["--server", "127.0.0.1:1"])
        assert proc.env is not None
        skew = WallClockSkew(proc.env[SKEW_FILE_ENV], reread=0.0)
        assert skew.seconds() == 0.0
        cluster.skew_clock("standin", -90.5)
        assert skew.seconds() == -90.5
        cluster.skew_clock("standin", 0.0)
        assert skew.seconds() == 0.0
        with pytest.raises(ValueError, match="'nothing' is not a kemu component"):
            cluster.skew_clock("nothing", 1.0)


def _thread_states(pid: int) -> dict[int, str]:
    """The state letter of each thread of `pid` (/proc/<pid>/task/<tid>/stat)."""
    states = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        states[int(task.name)] = stat.rsplit(")", 1)[1].split()[0]
    return states


def test_pause_returns_once_every_thread_of_the_group_has_stopped(tmp_path):
    """SIGSTOP is delivered asynchronously: pause() returns only when no thread of the group
    (etcd's many Go threads; a component and the child in its group) can run any more, and
    resume() lets them run again."""
    with Cluster(tmp_path) as cluster:
        etcd = cluster.start_etcd()
        parent = cluster.start_component(STANDIN, "parent", ["--spawn-child"])
        child_pid = int(
            eventually_sync(
                lambda: [line for line in parent.logs().splitlines() if "child pid" in line]
            )[0].split()[-1]
        )
        assert etcd.pid is not None and parent.pid is not None
        assert len(_thread_states(etcd.pid)) > 1
        for name, pids in (("etcd", [etcd.pid]), ("parent", [parent.pid, child_pid])):
            cluster.pause(name)
            states = {pid: _thread_states(pid) for pid in pids}
            assert all(set(s.values()) <= {"T"} for s in states.values()), states
            cluster.resume(name)

            def running(pids: list[int] = pids) -> bool:
                return all("T" not in _thread_states(p).values() for p in pids)

            eventually_sync(running, timeout=5)
        assert http_get(parent.readyz_url)[0] == 200
