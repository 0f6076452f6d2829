"""The pytest glue, exercised by running pytest on a small failing suite in a subprocess (the
plugin comes from kemu's pytest11 entry point: the suite has no conftest)."""

import textwrap

from kemu.testing.processes import python_env, run_pytest

SUITE = textwrap.dedent(
    """
    import pytest

    from kemu.testing.cluster import Cluster

    STANDIN = "tests.unit.testing.standin_component"


    @pytest.fixture(scope="module")
    def shared(tmp_path_factory):
        with Cluster(tmp_path_factory.mktemp("shared")) as c:
            c.start_component(STANDIN, "shared-standin", [])
            yield c


    def test_factory_cluster_fails(kemu_cluster_factory, rng):
        cluster = kemu_cluster_factory()
        cluster.start_component(STANDIN, "standin", ["--marker-one"])
        assert rng.random() < 0


    def test_shared_cluster_fails(shared):
        assert not shared.processes


    def test_unclean_exit_fails_the_teardown(kemu_cluster_factory):
        kemu_cluster_factory().start_component(STANDIN, "unclean", ["--exit-code-on-term", "4"])
    """
)


def test_failed_tests_report_process_logs_seed_and_unclean_exits(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = python_env({"KEMU_TEST_SEED": "77"})
    done = run_pytest(["test_suite.py"], cwd=tmp_path, env=env, timeout=60)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "2 failed, 1 passed, 1 error" in out, out
    assert "kemu log of standin (pid" in out
    assert "--marker-one" in out  # the process's own log lines
    assert "replay with KEMU_TEST_SEED=77" in out
    assert "kemu log of shared-standin" in out
    assert "unclean exits {'unclean': 4}" in out
