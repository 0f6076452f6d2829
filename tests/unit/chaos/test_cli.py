from __future__ import annotations

from pathlib import Path

import pytest

from kemu.chaos.__main__ import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profile", "huge"], "--profile: invalid choice: 'huge'"),
        (["--seed", "x"], "--seed: invalid int value: 'x'"),
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--workload", "/nonexistent/w.yaml"], "--workload: No such file or directory"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--clock", "sundial"], "--clock: invalid choice: 'sundial'"),
        (["--latency", "5"], "--latency: '5': time: missing unit in duration \"5\""),
        (["--latency", "gauss:1s"], "--latency: 'gauss:1s': unknown distribution 'gauss'"),
        (
            ["--latency", "0"],
            "--latency: latency: latency apiserver has weight, the latency is none",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_workload_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("pods: {rate: -1}\n")
    with pytest.raises(SystemExit) as e:
        main(["--workload", str(path)])
    assert e.value.code == 2
    assert "pods.rate: must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/t.html", "missing: no such directory"),
        (".", "is a directory"),
    ],
)
def test_a_bad_html_path_is_one_line_before_any_cluster_starts(
    tmp_path: Path, where: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / where
    assert main(["--html", str(path), "--root", str(tmp_path / "root")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m kemu.chaos: error: --html: ") and message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "root").exists()
