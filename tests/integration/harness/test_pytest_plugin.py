"""kemu's pytest plugin as a user meets it: a test file of their own, no conftest, run by
pytest in a subprocess; the `kemu_cluster` fixture starts the cluster its marker asks for (real
processes) and a bad marker fails the test with one line naming the option."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kemu.testing.processes import run_pytest

pytestmark = pytest.mark.integration

# The README's example, with a second node, a gate and a bad marker added.
USER_TESTS = textwrap.dedent(
    """
    import pytest

    from kemu.api.v1.types_pb2 import Node, Pod
    from kemu.client.client import Client
    from kemu.testing import assert_invariants, eventually, make_pod, record_pods
    from kemu.testing.builders import make_gang_pod_group


    @pytest.mark.anyio
    @pytest.mark.kemu(nodes=2, version="1.34", gates={"SchedulerAsyncPreemption": True})
    async def test_my_pod_is_bound(kemu_cluster):
        async with Client(kemu_cluster.server) as client, record_pods(client, "default") as pods:
            assert len((await client.list(Node)).items) == 2
            await client.create(make_pod("web").req(cpu="1").obj())

            async def bound() -> bool:
                pod = await client.get(Pod, "web", "default")
                assert pod.spec.node_name in ("node-0", "node-1"), pod.spec.node_name
                return True

            await eventually(bound, timeout=30)
            await assert_invariants(client, pods, "default")


    # Issue #55: a gang on a cluster with the Workload API on (every component's gates, and
    # the apiserver's runtime config: 1.37's scheduling.k8s.io/v1beta1 is off by default).
    @pytest.mark.anyio
    @pytest.mark.kemu(
        nodes=1,
        gates={"GenericWorkload": True},
        runtime_config={"scheduling.k8s.io/v1beta1": "true"},
    )
    async def test_my_gang_is_bound_together(kemu_cluster):
        async with Client(kemu_cluster.server) as client:
            await client.create(make_gang_pod_group("trainer", 2))
            await client.create(make_pod("a").req(cpu="100m").pod_group("trainer").obj())

            async def bound() -> list[str]:
                pods = (await client.list(Pod, "default")).items
                return sorted(p.metadata.name for p in pods if p.spec.node_name)

            assert await bound() == []  # (one member of two: held at PreEnqueue)
            await client.create(make_pod("b").req(cpu="100m").pod_group("trainer").obj())

            async def both() -> bool:
                assert await bound() == ["a", "b"]
                return True

            await eventually(both, timeout=30)


    @pytest.mark.kemu(nodes="three")
    def test_a_bad_marker(kemu_cluster):
        pass
    """
)


def test_a_users_test_runs_on_the_cluster_its_marker_asks_for(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TESTS)
    done = run_pytest(["-p", "no:randomly"], cwd=tmp_path, timeout=180)
    out = done.stdout
    assert "2 passed, 1 error" in out, out + done.stderr
    assert "kemu: nodes must be a count or a list of names, not 'three'" in out, out
