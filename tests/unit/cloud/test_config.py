"""The cloud's config file: what it accepts, and errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cloud.config import ConfigError, Failures, load_config, parse_config
from cloud.kubelets import KubeletLaunch, kubelet_argv, node_group_kubelet_argv
from kemu.client.endpoints import ServerOrder
from kemu.component.latency import CallLatency
from kemu.machinery.latency import Latency
from kubelet import options as kubelet_options

GOOD = """
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 5
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    labels: {disk: ssd}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
    kubeletArgs: ["--emulated-version", "1.36"]
  failures: {neverReady: 2, outOfCapacity: true}
- name: pool-b
  maxSize: 1
  template:
    capacity: {cpu: 1, memory: 1Gi}
"""


def test_the_issue_example_parses() -> None:
    config = parse_config(GOOD)
    a, b = config.node_groups
    assert (a.name, a.min_size, a.max_size) == ("pool-a", 0, 5)
    assert dict(a.template.capacity) == {"cpu": "2", "memory": "4Gi", "pods": "20"}
    assert dict(a.template.labels) == {"disk": "ssd"}
    assert [(t.key, t.value, t.effect) for t in a.template.taints] == [
        ("dedicated", "batch", "NoSchedule")
    ]
    assert a.template.kubelet_args == ("--emulated-version", "1.36")
    assert a.failures == Failures(never_ready=2, out_of_capacity=True)
    assert b.min_size == 0 and b.failures == Failures()
    assert not a.external_nodes and not b.external_nodes
    (ext,) = parse_config(_group(externalNodes="true")).node_groups
    assert ext.external_nodes
    assert dict(b.template.capacity) == {"cpu": "1", "memory": "1Gi", "pods": "110"}
    assert config.group("pool-b") is b and config.group("nope") is None


def _group(**overrides: str) -> str:
    fields = {
        "name": "g",
        "maxSize": "3",
        "template": "{capacity: {cpu: '1', memory: 1Gi}}",
        **overrides,
    }
    body = "\n".join(f"  {k}: {v}" for k, v in fields.items() if v != "<omit>")
    return "nodeGroups:\n- " + body.lstrip()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodeGroup: []", 'nodeGroup: unknown field "nodeGroup"'),
        ("nodeGroups: {}", "nodeGroups: expected a list"),
        (_group(extra="1"), 'nodeGroups[0].extra: unknown field "extra"'),
        (_group(maxSize="<omit>"), "nodeGroups[0].maxSize: required"),
        (_group(maxSize="'3'"), "nodeGroups[0].maxSize: expected an integer, got a string"),
        (_group(minSize="4"), "nodeGroups[0].maxSize: 3 is less than minSize 4"),
        (_group(minSize="-1"), "nodeGroups[0].minSize: -1 must not be negative"),
        (_group(name="Pool_A"), "nodeGroups[0].name: 'Pool_A' must be a DNS label"),
        (
            _group(template="{capacity: {cpu: lots, memory: 1Gi}}"),
            "nodeGroups[0].template.capacity.cpu",
        ),
        (_group(template="{capacity: {cpu: '1'}}"), "nodeGroups[0].template.capacity: cpu and"),
        (
            _group(template="{capacity: {cpu: '1', memory: 1Gi}, taint: []}"),
            'nodeGroups[0].template.taint: unknown field "taint"',
        ),
        (
            _group(
                template="{capacity: {cpu: '1', memory: 1Gi}, taints: [{key: a, effect: Never}]}"
            ),
            "nodeGroups[0].template.taints[0].effect: 'Never' must be one of",
        ),
        (
            _group(template="{capacity: {cpu: '1', memory: 1Gi}, taints: [{key: a, colour: x}]}"),
            'nodeGroups[0].template.taints[0].colour: unknown field "colour"',
        ),
        (
            _group(template="{capacity: {cpu: '1', memory: 1Gi}, labels: {'a b': x}}"),
            "nodeGroups[0].template.labels",
        ),
        (
            _group(template="{capacity: {cpu: '1', memory: 1Gi}, kubeletArgs: [--node-name=x]}"),
            "nodeGroups[0].template.kubeletArgs[0]: --node-name is set by the cloud",
        ),
        (
            _group(
                template="{capacity: {cpu: '1', memory: 1Gi}, kubeletArgs: [--node-control, stdin]}"
            ),
            "nodeGroups[0].template.kubeletArgs[0]: --node-control is set by the cloud",
        ),
        (
            _group(
                template="{capacity: {cpu: '1', memory: 1Gi}, kubeletArgs: [--node-ip=10.0.0.1]}"
            ),
            "nodeGroups[0].template.kubeletArgs[0]: --node-ip is set by the cloud",
        ),
        (_group(failures="{neverReady: x}"), "nodeGroups[0].failures.neverReady: expected an"),
        (_group(failures="{outOfCapacity: 1}"), "nodeGroups[0].failures.outOfCapacity: expected"),
        (_group(externalNodes="1"), "nodeGroups[0].externalNodes: expected true or false"),
        (_group(failures="{flaky: true}"), 'nodeGroups[0].failures.flaky: unknown field "flaky"'),
        ("nodeGroups: [", "not valid YAML"),
    ],
)
def test_bad_config_names_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as exc:
        parse_config(text)
    assert message in str(exc.value)


def test_duplicate_group_names_are_an_error() -> None:
    text = _group() + "\n" + "- " + _group().split("- ", 1)[1]
    with pytest.raises(ConfigError, match=r"nodeGroups\[1\].name: duplicate group name 'g'"):
        parse_config(text)


def test_load_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cloud.yaml"
    path.write_text(_group(maxSize="x"))
    with pytest.raises(ConfigError, match=rf"{path}: nodeGroups\[0\].maxSize"):
        load_config(path)
    with pytest.raises(ConfigError, match="missing.yaml"):
        load_config(tmp_path / "missing.yaml")


GPU_SLICES = (
    "[{apiVersion: resource.k8s.io/v1, kind: ResourceSlice, "
    "metadata: {annotations: {kubelet.kemu.io/prepare-delay: 1s}}, "
    "spec: {driver: gpu.example.com, devices: [{name: gpu-0}, {name: gpu-1}]}}]"
)


def test_resource_slices_become_the_template_nodes_pool() -> None:
    """S-CA-DRA-1: a group's resourceSlices, filled in as its template node's kubelet would
    (upstream TemplateNodeInfo's LocalResourceSlices)."""
    (g,) = parse_config(_group(resourceSlices=GPU_SLICES)).node_groups
    (s,) = g.template_resource_slices("template-g")
    assert s.spec.driver == "gpu.example.com"
    assert [d.name for d in s.spec.devices] == ["gpu-0", "gpu-1"]
    assert s.spec.node_name == "template-g"
    assert (s.spec.pool.name, s.spec.pool.generation, s.spec.pool.resource_slice_count) == (
        "template-g",
        1,
        1,
    )
    assert not s.metadata.annotations


@pytest.mark.parametrize(
    ("slices", "message"),
    [
        ("{}", "nodeGroups[0].resourceSlices: expected a list, got an object"),
        (
            "[{spec: {devices: [{name: a}]}}]",
            "nodeGroups[0].resourceSlices[0]: spec.driver: Required value",
        ),
        ("[{spec: {driver: d}}]", "nodeGroups[0].resourceSlices[0]: spec.devices: Required value"),
        (
            "[{spec: {driver: d, nodeName: n, devices: [{name: a}]}}]",
            "nodeGroups[0].resourceSlices[0]: spec.nodeName: must not be set",
        ),
        (
            "[{spec: {driver: d, devices: [{name: a}, {name: a}]}}]",
            "nodeGroups[0].resourceSlices[0]: spec.devices: Duplicate value: device 'a'",
        ),
        ("[{spec: {driver: d, devices: [{colour: a}]}}]", "nodeGroups[0].resourceSlices[0]"),
    ],
)
def test_bad_resource_slices_name_the_field(slices: str, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(_group(resourceSlices=slices))
    assert message in str(exc.value)


def test_a_group_with_resource_slices_passes_them_to_its_kubelets(tmp_path: Path) -> None:
    """S-CA-DRA-1: each instance's kubelet, and a group's hollow kubelet, publish the group's
    resourceSlices through --dra-slice-file (the manifests as the config gives them)."""
    (g,) = parse_config(_group(resourceSlices=GPU_SLICES)).node_groups
    launch = KubeletLaunch(
        server="127.0.0.1:1", instances_dir=tmp_path / "instances", log_dir=tmp_path / "logs"
    )
    for argv in (
        kubelet_argv(launch, g, "g-0", "kemu://g/g-0"),
        node_group_kubelet_argv(launch, g),
    ):
        path = Path(argv[argv.index("--dra-slice-file") + 1])
        assert yaml.safe_load(path.read_text()) == yaml.safe_load(GPU_SLICES)
    (plain,) = parse_config(_group()).node_groups
    assert "--dra-slice-file" not in kubelet_argv(launch, plain, "g-0", "kemu://g/g-0")
    with pytest.raises(ConfigError, match=r"kubeletArgs\[0\]: --dra-slice-file is set by"):
        parse_config(
            _group(
                template="{capacity: {cpu: '1', memory: 1Gi}, kubeletArgs: [--dra-slice-file=x]}"
            )
        )


def test_the_clouds_kubelets_order_their_servers_as_the_cloud_was_told(tmp_path: Path) -> None:
    """--server-order shuffled reaches the kubelets the cloud starts: each shuffles its list
    itself, so instances spread over the apiservers as the cloud's processes would."""
    (g,) = parse_config(_group()).node_groups
    two = "127.0.0.1:1,127.0.0.1:2"
    for order in ServerOrder:
        launch = KubeletLaunch(
            server=two,
            server_order=order,
            instances_dir=tmp_path / "instances",
            log_dir=tmp_path / "logs",
        )
        for argv in (
            kubelet_argv(launch, g, "g-0", "kemu://g/g-0"),
            node_group_kubelet_argv(launch, g),
        ):
            args = kubelet_options.build_parser().parse_args(argv[3:])
            assert (args.server, args.server_order) == (two, order)
    with pytest.raises(ConfigError, match=r"kubeletArgs\[0\]: --server-order is set by"):
        parse_config(
            _group(
                template="{capacity: {cpu: '1', memory: 1Gi}, kubeletArgs: [--server-order=listed]}"
            )
        )


def test_the_clouds_kubelets_call_with_the_clouds_apiserver_latency(tmp_path: Path) -> None:
    """Issue #58 item 4: the cloud's --apiserver-latency reaches the kubelets it starts (an
    instance's own and a group's hollow one), each with a seed of its own from the cloud's, and
    the kubelet's own flag table takes them."""
    (g,) = parse_config(_group()).node_groups
    plain = KubeletLaunch(
        server="127.0.0.1:1", instances_dir=tmp_path / "instances", log_dir=tmp_path / "logs"
    )
    assert "--apiserver-latency" not in kubelet_argv(plain, g, "g-0", "kemu://g/g-0")
    launch = KubeletLaunch(
        server="127.0.0.1:1",
        instances_dir=tmp_path / "instances",
        log_dir=tmp_path / "logs",
        apiserver_latency=CallLatency(Latency.parse("uniform:100ms-300ms"), 7),
    )
    parser = kubelet_options.build_parser()
    seeds = set()
    for argv in (
        kubelet_argv(launch, g, "g-0", "kemu://g/g-0"),
        kubelet_argv(launch, g, "g-1", "kemu://g/g-1"),
        node_group_kubelet_argv(launch, g),
    ):
        args = parser.parse_args(argv[3:])
        assert args.apiserver_latency == Latency.parse("uniform:100ms-300ms")
        seeds.add(args.apiserver_latency_seed)
    assert len(seeds) == 3
