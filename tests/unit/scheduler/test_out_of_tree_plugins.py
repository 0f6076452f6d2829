"""Out-of-tree plugins given in code (`main(argv, out_of_tree=...)`, upstream's app.WithPlugin)
to the scheduler and the autoscaler: enabled by name in a profile like in-tree ones; an unknown
plugin stops the start with one line naming it and exit status 2. (Args a factory refuses stop
it once the plugins are built, kemu.component.runner's ConfigRefused: tests/unit/component/
test_runner.py, and with a real process tests/integration/scheduler/test_example_plugin.py.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import autoscaler.app
import scheduler.app
from kemu.scheduling.config import parse_config, scheduler_registry
from kemu.scheduling.interface import Handle, PluginArgs
from kemu.scheduling.plugins.registry import Registry
from tests.unit.scheduling.fakes import FakeFilterScore


def picky(args: PluginArgs, handle: Handle) -> FakeFilterScore:
    return FakeFilterScore(args, handle)


PLUGINS: Registry = {"Picky": picky}


def config(tmp_path: Path, plugin: str, args: str = "{}") -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        f"  plugins: {{filter: {{enabled: [{{name: {plugin}}}]}}}}\n"
        f"  pluginConfig: [{{name: {plugin}, args: {args}}}]\n"
    )
    return path


MAINS: dict[str, tuple[Callable[[Sequence[str], Registry], int], list[str], str]] = {
    "scheduler": (scheduler.app.main, ["--server", "127.0.0.1:1"], "--config"),
    "autoscaler": (
        autoscaler.app.main,
        ["--server", "127.0.0.1:1", "--cloud-provider-address", "127.0.0.1:2"],
        "--scheduler-config-file",
    ),
}


def refusal(
    capsys: pytest.CaptureFixture[str], component: str, path: Path
) -> tuple[int | str | None, str]:
    main, argv, flag = MAINS[component]
    with pytest.raises(SystemExit) as exited:
        main([*argv, flag, str(path)], PLUGINS)
    lines = capsys.readouterr().err.strip().splitlines()
    return exited.value.code, lines[-1]


def test_an_out_of_tree_plugin_is_known_to_the_configuration() -> None:
    config = parse_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins: {filter: {enabled: [{name: Picky}]}}\n",
        scheduler_registry(PLUGINS),
    )
    assert "Picky" in config.profiles[0].enabled["filter"]


@pytest.mark.parametrize("component", sorted(MAINS))
def test_an_unknown_plugin_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], component: str
) -> None:
    code, line = refusal(capsys, component, config(tmp_path, "Nope"))
    assert code == 2
    flag = MAINS[component][2]
    assert line.startswith(f"{component}: error: {flag}: ") and "Nope" in line, line
