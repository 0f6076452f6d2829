"""KubeSchedulerConfiguration parsing: defaults, multiPoint expansion, weights, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kemu.component.client_connection import ClientConnection
from kemu.scheduling.config import (
    API_VERSION,
    KIND,
    LeaderElection,
    config_from_dict,
    default_config,
    load_config,
    parse_config,
)
from kemu.scheduling.plugins.node_resources_fit import Fit
from kemu.scheduling.plugins.registry import Registry, in_tree_registry
from kemu.scheduling.profile import ConfigError
from kemu.scheduling.runtime import Framework
from tests.unit.scheduling.fakes import (
    FakeBinder,
    FakeFilter,
    FakeFilterScore,
    FakePermit,
    FakePostFilter,
    FakePreBind,
    FakePreEnqueue,
    FakePreFilter,
    FakeQueueSort,
    FakeScore,
    fake,
)


def in_tree_like(*, preemption: bool = False) -> Registry:
    """Fakes under the in-tree names, implementing the same points as the real plugins."""
    classes: dict[str, Any] = {
        "SchedulingGates": FakePreEnqueue,
        "PrioritySort": FakeQueueSort,
        "NodeUnschedulable": FakeFilter,
        "NodeName": FakeFilter,
        "TaintToleration": FakeFilterScore,
        "NodeAffinity": FakeFilterScore,
        "NodePorts": FakeFilter,
        "NodeResourcesFit": FakeFilterScore,
        "NodeResourcesBalancedAllocation": FakeScore,
        "PodTopologySpread": FakeFilterScore,
        "InterPodAffinity": FakeFilterScore,
        "DefaultBinder": FakeBinder,
        "SlowPreBind": FakePreBind,
        "WaitingPermit": FakePermit,
        "OtherSort": FakeQueueSort,
        "PreFilterOnly": FakePreFilter,
    }
    if preemption:
        classes["DefaultPreemption"] = FakePostFilter
    return {name: fake(cls, name) for name, cls in classes.items()}


REG = in_tree_like()


def cfg(**top: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **top}


def one_profile(plugins: dict[str, Any] | None = None, **profile: Any) -> dict[str, Any]:
    p: dict[str, Any] = dict(profile)
    if plugins is not None:
        p["plugins"] = plugins
    return cfg(profiles=[p])


def test_default_profile_is_upstreams_without_what_kemu_lacks() -> None:
    c = default_config(REG)
    (p,) = c.profiles
    assert p.scheduler_name == "default-scheduler"
    assert p.enabled["preEnqueue"] == ("SchedulingGates",)
    assert p.enabled["queueSort"] == ("PrioritySort",)
    assert p.enabled["preFilter"] == (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    assert p.enabled["filter"] == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    assert p.enabled["score"] == (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    )
    assert p.score_weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
    }
    assert p.enabled["postFilter"] == ()  # DefaultPreemption is not registered
    assert p.enabled["bind"] == ("DefaultBinder",)
    assert p.enabled["permit"] == p.enabled["preBind"] == ()
    assert p.percentage_of_nodes_to_score == 0
    assert c.pod_initial_backoff_seconds == 1 and c.pod_max_backoff_seconds == 10
    assert c.leader_election == LeaderElection()
    assert c.profile("default-scheduler") is p and c.profile("other") is None


def test_default_preemption_is_listed_once_registered() -> None:
    (p,) = default_config(in_tree_like(preemption=True)).profiles
    assert p.enabled["postFilter"] == ("DefaultPreemption",)


def test_multi_point_plugin_is_expanded_to_the_points_its_class_implements() -> None:
    c = config_from_dict(
        one_profile(
            {"multiPoint": {"enabled": [{"name": "SlowPreBind"}, {"name": "WaitingPermit"}]}}
        ),
        REG,
    )
    p = c.profiles[0]
    assert p.enabled["preBind"] == ("SlowPreBind",)
    assert p.enabled["permit"] == ("WaitingPermit",)
    assert "SlowPreBind" not in p.enabled["filter"]


def test_disabled_star_at_a_point_keeps_multi_point_plugins_out() -> None:
    c = config_from_dict(
        one_profile(
            {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                }
            }
        ),
        REG,
    )
    p = c.profiles[0]
    assert p.enabled["score"] == ("NodeResourcesFit",)
    assert p.score_weights == {"NodeResourcesFit": 5}
    assert "TaintToleration" in p.enabled["filter"]  # other points keep their defaults


def test_disabling_a_default_at_one_point_only() -> None:
    c = config_from_dict(
        one_profile({"filter": {"disabled": [{"name": "NodeName"}]}}),
        REG,
    )
    p = c.profiles[0]
    assert "NodeName" not in p.enabled["filter"]
    assert p.enabled["queueSort"] == ("PrioritySort",)


def test_score_weight_at_the_point_overrides_multi_point_and_comes_first() -> None:
    c = config_from_dict(
        one_profile(
            {
                "score": {
                    "enabled": [
                        {"name": "NodeResourcesBalancedAllocation", "weight": 7},
                        {"name": "NodeAffinity"},
                    ]
                }
            }
        ),
        REG,
    )
    p = c.profiles[0]
    # Point entries that override multiPoint ones first (in the point's order), then the rest.
    assert p.enabled["score"] == (
        "NodeResourcesBalancedAllocation",
        "NodeAffinity",
        "TaintToleration",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    # An explicit entry without weight means 1, even if multiPoint said 2.
    assert p.score_weights["NodeResourcesBalancedAllocation"] == 7
    assert p.score_weights["NodeAffinity"] == 1
    assert p.score_weights["TaintToleration"] == 3


def test_multi_point_default_replaced_in_place_with_new_weight() -> None:
    c = config_from_dict(
        one_profile({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}}),
        REG,
    )
    p = c.profiles[0]
    assert p.score_weights["TaintToleration"] == 9
    assert p.enabled["score"][0] == "TaintToleration"


def test_multi_point_disabled_star_then_own_plugins() -> None:
    c = config_from_dict(
        one_profile(
            {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [
                        {"name": "PrioritySort"},
                        {"name": "NodeResourcesFit", "weight": 4},
                        {"name": "DefaultBinder"},
                    ],
                }
            }
        ),
        REG,
    )
    p = c.profiles[0]
    assert p.enabled["filter"] == ("NodeResourcesFit",)
    assert p.enabled["preEnqueue"] == ()
    assert p.score_weights == {"NodeResourcesFit": 4}
    assert p.plugin_names() == ["PrioritySort", "NodeResourcesFit", "DefaultBinder"]


def test_plugin_config_args_and_percentages() -> None:
    c = config_from_dict(
        cfg(
            percentageOfNodesToScore=40,
            profiles=[
                {
                    "schedulerName": "a",
                    "percentageOfNodesToScore": 10,
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "apiVersion": API_VERSION,
                                "kind": "NodeResourcesFitArgs",
                                "scoringStrategy": {"type": "MostAllocated"},
                            },
                        }
                    ],
                },
                {"schedulerName": "b"},
            ],
        ),
        REG,
    )
    a, b = c.profiles
    assert a.args("NodeResourcesFit") == {"scoringStrategy": {"type": "MostAllocated"}}
    assert a.args("NodeAffinity") == {}
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (10, 40)
    assert c.percentage_of_nodes_to_score == 40


def test_parse_yaml_and_load_file(tmp_path: Path) -> None:
    text = f"""
apiVersion: {API_VERSION}
kind: {KIND}
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
parallelism: 4
leaderElection:
  leaderElect: false
  leaseDuration: 1m
  renewDeadline: 30s
  retryPeriod: 500ms
  resourceName: my-scheduler
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: SlowPreBind
- schedulerName: batch
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 3
"""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    for c in (parse_config(text, REG), load_config(path, REG)):
        assert c.pod_initial_backoff_seconds == 2 and c.pod_max_backoff_seconds == 20
        assert c.parallelism == 4
        assert c.leader_election == LeaderElection(
            leader_elect=False,
            lease_duration=60.0,
            renew_deadline=30.0,
            retry_period=0.5,
            resource_name="my-scheduler",
        )
        assert [p.scheduler_name for p in c.profiles] == ["default-scheduler", "batch"]
        assert c.profiles[0].enabled["preBind"] == ("SlowPreBind",)
        assert c.profiles[1].score_weights["NodeResourcesFit"] == 3


def score_entries(*entries: dict[str, Any]) -> dict[str, Any]:
    return one_profile({"score": {"enabled": list(entries)}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            score_entries({"name": "NodeAffinity"}, {"name": "NodeResourcesFit", "weight": 0}),
            "profiles[0].plugins.score.enabled[1].weight: must be positive",
        ),
        (
            score_entries({"name": "NodeResourcesFit", "weight": "high"}),
            "profiles[0].plugins.score.enabled[0].weight: must be an integer",
        ),
        (
            score_entries({"name": "Nope"}),
            "profiles[0].plugins.score.enabled[0].name: unknown plugin 'Nope'",
        ),
        (
            score_entries({"name": "DefaultBinder"}),
            "profiles[0].plugins.score.enabled[0].name: plugin 'DefaultBinder' does not "
            "extend score plugin",
        ),
        (
            score_entries({"name": "NodeAffinity"}, {"name": "NodeAffinity"}),
            "profiles[0].plugins.score.enabled[1].name: plugin 'NodeAffinity' already "
            "registered as score",
        ),
        (
            one_profile({"filter": {"disabled": [{"name": "Nope"}]}}),
            "profiles[0].plugins.filter.disabled[0].name: unknown plugin 'Nope'",
        ),
        (
            one_profile({"filtr": {}}),
            "profiles[0].plugins.filtr: unknown field",
        ),
        (
            one_profile({"queueSort": {"enabled": [{"name": "OtherSort"}]}}),
            "profiles[0].plugins.queueSort: only one queue sort plugin required for profile "
            "with scheduler name 'default-scheduler', but got 2",
        ),
        (
            one_profile({"bind": {"disabled": [{"name": "*"}]}}),
            "profiles[0].plugins.bind: at least one bind plugin is needed",
        ),
        (
            cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
            "profiles[1].schedulerName: duplicate value 'a'",
        ),
        (
            cfg(profiles=[{"schedulerName": "a"}, {}]),
            "profiles[1].schedulerName: required value",
        ),
        (
            cfg(
                profiles=[
                    {"schedulerName": "a"},
                    {
                        "schedulerName": "b",
                        "plugins": {
                            "queueSort": {
                                "enabled": [{"name": "OtherSort"}],
                                "disabled": [{"name": "*"}],
                            }
                        },
                    },
                ]
            ),
            "profiles[1].plugins.queueSort: queueSort must be the same for all profiles",
        ),
        (
            cfg(
                profiles=[
                    {"schedulerName": "a"},
                    {
                        "schedulerName": "b",
                        "pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}],
                    },
                ]
            ),
            "profiles[1].pluginConfig: args of queueSort plugin 'PrioritySort' must be the same",
        ),
        (
            one_profile(percentageOfNodesToScore=101),
            "profiles[0].percentageOfNodesToScore: not in valid range [0-100], got 101",
        ),
        (
            cfg(percentageOfNodesToScore=-1),
            "percentageOfNodesToScore: not in valid range [0-100], got -1",
        ),
        (
            one_profile(
                pluginConfig=[{"name": "NodeAffinity"}, {"name": "NodeAffinity", "args": {}}]
            ),
            "profiles[0].pluginConfig[1].name: repeated config for plugin 'NodeAffinity'",
        ),
        (
            one_profile(pluginConfig=[{"name": "NodeAffinity", "args": [1]}]),
            "profiles[0].pluginConfig[0].args: must be a mapping",
        ),
        ({"kind": KIND}, "apiVersion: must be 'kubescheduler.config.k8s.io/v1'"),
        (cfg(kind="Other"), "kind: must be 'KubeSchedulerConfiguration'"),
        (cfg(podInitialBackoffSeconds=0), "podInitialBackoffSeconds: must be greater than 0"),
        (
            cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
            "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds",
        ),
        (
            cfg(leaderElection={"leaseDuration": "10s", "renewDeadline": "10s"}),
            "leaderElection.leaseDuration: must be greater than renewDeadline",
        ),
        (
            cfg(leaderElection={"retryPeriod": "9s"}),
            "leaderElection.renewDeadline: must be greater than retryPeriod*1.2",
        ),
        (
            cfg(leaderElection={"leaseDuration": "soon"}),
            'leaderElection.leaseDuration: time: invalid duration "soon"',
        ),
        (
            cfg(leaderElection={"renewDeadline": "10"}),
            'leaderElection.renewDeadline: time: missing unit in duration "10"',
        ),
        (
            cfg(leaderElection={"retryPeriod": 2}),
            'leaderElection.retryPeriod: must be a duration string such as "15s", got 2',
        ),
        (cfg(extenders=[{"urlPrefix": "http://x"}]), "extenders: scheduler extenders are not"),
        (cfg(bogus=1), "bogus: unknown field"),
    ],
)
def test_invalid_configurations_name_the_yaml_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, REG)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_a_default_plugin_missing_from_the_registry_is_an_error() -> None:
    reg = dict(REG)
    del reg["NodeName"]
    with pytest.raises(
        ConfigError,
        match=r"profiles\[0\].plugins.multiPoint: default plugin 'NodeName' is not registered",
    ):
        default_config(reg)


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_config("profiles: [", REG)
    with pytest.raises(ConfigError, match="must be a mapping"):
        parse_config("- 1", REG)
    with pytest.raises(ConfigError, match="reading"):
        load_config(tmp_path / "missing.yaml", REG)


KUBELET_LIKE_YAML = f"""
apiVersion: {API_VERSION}
kind: {KIND}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {{kemuKubeletLikeResizeAccounting: VALUE}}
"""


@pytest.mark.parametrize(("value", "on"), [("true", True), ("false", False)])
def test_kemu_kubelet_like_resize_accounting_from_a_configuration_file(
    value: str, on: bool
) -> None:
    # Not upstream (NodeResourcesFit's docstring): the arg reaches the real plugin.
    c = parse_config(KUBELET_LIKE_YAML.replace("VALUE", value), in_tree_registry())
    fwk = Framework(c.profiles[0], in_tree_registry())
    plugin = fwk.plugin("NodeResourcesFit")
    assert isinstance(plugin, Fit) and plugin.kubelet_like_resize_accounting is on


def test_kemu_kubelet_like_resize_accounting_must_be_a_boolean() -> None:
    c = parse_config(KUBELET_LIKE_YAML.replace("VALUE", '"yes"'), in_tree_registry())
    with pytest.raises(ValueError, match="kemuKubeletLikeResizeAccounting: must be a boolean"):
        Framework(c.profiles[0], in_tree_registry())


def test_client_connection_defaults_to_50_and_100_and_refuses_a_negative_burst() -> None:
    base = {"apiVersion": API_VERSION, "kind": KIND}
    assert default_config().client_connection == ClientConnection(50.0, 100)
    zero = config_from_dict({**base, "clientConnection": {"qps": 0, "burst": 0}})
    assert zero.client_connection == ClientConnection(50.0, 100)
    given = config_from_dict(
        {**base, "clientConnection": {"qps": 2, "burst": 2, "kubeconfig": "/etc/k"}}
    )
    assert given.client_connection == ClientConnection(2.0, 2)
    off = config_from_dict({**base, "clientConnection": {"qps": -1}})
    assert off.client_connection.limits() is None
    with pytest.raises(ConfigError, match=r"^clientConnection.burst: Invalid value: -1: must be"):
        config_from_dict({**base, "clientConnection": {"burst": -1}})
    with pytest.raises(ConfigError, match=r"^clientConnection.qps: must be a number"):
        config_from_dict({**base, "clientConnection": {"qps": "fast"}})
    with pytest.raises(ConfigError, match=r"^clientConnection.qpz: unknown field"):
        config_from_dict({**base, "clientConnection": {"qpz": 1}})
