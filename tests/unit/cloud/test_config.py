"""The cloud's config file: what it accepts, and errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloud.config import ConfigError, Failures, load_config, parse_config

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
