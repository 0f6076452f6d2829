"""bench scheduler_perf with what upstream's podgroup/tas/ file needs (KEP-5732): a PodGroup
template with schedulingConstraints.topology, nodes from a nodeTemplatePath with a rack label,
and the two scheduler configs of its other test cases (a second PlacementGenerate plugin,
NodePoolPlacement; percentageOfPlacementsToScore). The fixtures are kemu's, in the file's
shape; upstream's own file is parsed by test_scheduler_perf_podgroups when a checkout is at
hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.scheduler_perf_workloads import CreateNodes, parse_file
from kemu.scheduling.config import config_from_dict
from kemu.scheduling.profile import ConfigError

CASES = """
- name: Tas
  featureGates: {GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
  workloadTemplate: &ops
  - {opcode: createNodes, countParam: $nodes, nodeTemplatePath: t/node.yaml}
  - {opcode: createNamespaces, prefix: tas, count: 1}
  - opcode: createPodGroups
    countParam: $groups
    namespace: tas-0
    templatePath: t/podgroup.yaml
    templateParams: {podsPerGroup: $podsPerGroup}
  - opcode: createPods
    countParam: $groups
    countMultiplierParam: $podsPerGroup
    namespace: tas-0
    podTemplatePath: t/pod.yaml
    collectMetrics: true
    templateParams: {podsPerGroup: $podsPerGroup}
  workloads:
  - {name: small, params: {nodes: 4, groups: 2, podsPerGroup: 2}}
- name: TasPools
  featureGates: {GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
  schedulerConfigPath: pools.yaml
  workloadTemplate: *ops
  workloads:
  - {name: small, params: {nodes: 4, groups: 2, podsPerGroup: 2}}
- name: TasAll
  featureGates: {GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
  schedulerConfigPath: all.yaml
  workloadTemplate: *ops
  workloads:
  - {name: small, params: {nodes: 4, groups: 2, podsPerGroup: 2}}
"""
FILES = {
    "t/node.yaml": """\
apiVersion: v1
kind: Node
metadata:
  name: node-{{.Index}}
  labels: {example.com/rack: "rack-{{DivideInt .Index 2}}", pool: a}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
""",
    "t/podgroup.yaml": """\
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: "g-{{.Index}}"}
spec:
  schedulingPolicy: {gang: {minCount: {{.podsPerGroup}}}}
  schedulingConstraints:
    topology:
    - key: example.com/rack
""",
    "t/pod.yaml": """\
apiVersion: v1
kind: Pod
metadata: {name: "p-{{.Index}}"}
spec:
  schedulingGroup: {podGroupName: "g-{{DivideInt .Index .podsPerGroup}}"}
  containers:
  - {name: pause, image: pause, resources: {requests: {cpu: 100m}}}
""",
    "pools.yaml": """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    placementGenerate:
      enabled:
      - name: NodePoolPlacement
""",
    "all.yaml": """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfPlacementsToScore: 100
""",
}


def test_the_tas_test_cases_parse_and_run_with_their_scheduler_configs(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    parsed = parse_file(yaml.safe_load(CASES), base_dir=tmp_path)
    assert not parsed.skipped, parsed.skipped
    by_case = {w.test_case: w for w in parsed.workloads}
    assert set(by_case) == {"Tas", "TasPools", "TasAll"}
    nodes = by_case["Tas"].ops[0]
    assert isinstance(nodes, CreateNodes)
    pools = by_case["TasPools"].scheduler_config
    assert pools is not None
    config = config_from_dict(pools)
    # TopologyPlacementGenerator stays (multiPoint), NodePoolPlacement is added.
    assert config.profiles[0].enabled["placementGenerate"] == (
        "TopologyPlacementGenerator",
        "NodePoolPlacement",
    )
    everything = by_case["TasAll"].scheduler_config
    assert everything is not None
    assert config_from_dict(everything).percentage_of_placements_to_score == 100


def test_percentage_of_placements_to_score_is_a_percentage() -> None:
    base = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    assert config_from_dict(base).percentage_of_placements_to_score is None
    with pytest.raises(ConfigError, match=r"percentageOfPlacementsToScore: not in valid range"):
        config_from_dict({**base, "percentageOfPlacementsToScore": 101})
