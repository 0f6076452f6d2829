"""README's walk, run as written: every ```sh block of its section "A ten-minute walk", one ###
section at a time, as one bash script (`set -euo pipefail`) in a directory laid out as the
repository's root next to `make run` (make_run_env.py: the real Procfile under honcho, on its
worker's port base, and the user's shell after `source .kemu/env`; `examples/`). Each section must exit 0, and a command followed
by the comment `# => TEXT` must print TEXT. The sections run in the reverse of the README's
order on one cluster, so that each shows what it says after the others ran (the README
promises they stand alone). A section whose program is not installed (kubectl) is skipped.

The cluster is `make run CLOCK=virtual` at `kemuctl clock rate max`: the same commands, with the
timers they wait on (the kubelets' simulated shutdowns, the provisioner's delay, the
autoscaler's unneeded time) passed as soon as the cluster is idle, which keeps the walk within
test-long's budget; the README's own clock (real time) is the autoscaler demo's first run
(test_make_run_autoscaler.py)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import pytest

from kemu.testing import eventually_sync
from kemu.testing.processes import REPO_ROOT
from tests.integration.make_run.make_run_env import MakeRun, make_run_group, procfile_running

pytestmark = [pytest.mark.integration, make_run_group("walk")]

README: Final = REPO_ROOT / "README.md"
WALK_HEADING: Final = "## A ten-minute walk"
EXPECT: Final = re.compile(r"\s+# => (?P<text>.+?)\s*$")
SECTION_TIMEOUT: Final = 240.0  # wall seconds; a section takes 5 to 60 here


@dataclass(frozen=True)
class Section:
    title: str
    commands: tuple[str, ...]  # one shell command each, continuation lines joined

    def programs(self) -> set[str]:
        """The programs the commands start (the first word of each that is not an assignment
        or a shell builtin)."""
        firsts = (shlex.split(c, comments=True)[:1] for c in self.commands)
        return {w[0] for w in firsts if w and "=" not in w[0] and w[0] not in ("export",)}

    def script(self) -> str:
        """The section as a bash script: each command echoed, then run; one with `# => TEXT`
        has its output captured, printed and searched for TEXT."""
        lines = ["set -euo pipefail"]
        for command in self.commands:
            lines.append(f"printf '%s\\n' {shlex.quote('$ ' + command)}")
            expected = EXPECT.search(command)
            if expected is None:
                lines.append(command)
                continue
            run = command[: expected.start()]
            text = shlex.quote(expected["text"])
            lines.append(f"out=$({run})")
            lines.append("printf '%s\\n' \"$out\"")
            lines.append(
                f'grep -qF -- {text} <<<"$out" '
                f"|| {{ echo 'expected in the output:' {text} >&2; exit 1; }}"
            )
        return "\n".join(lines) + "\n"


def walk_sections(text: str) -> list[Section]:
    """The ### sections of README's walk and the commands of their ```sh blocks."""
    start = text.index(f"\n{WALK_HEADING}\n")
    end = text.find("\n## ", start + 1)
    walk = text[start : end if end >= 0 else len(text)]
    sections: list[Section] = []
    for part in walk.split("\n### ")[1:]:
        title, _, body = part.partition("\n")
        commands: list[str] = []
        for block in re.findall(r"^```sh\n(.*?)^```$", body, flags=re.M | re.S):
            joined = re.sub(r"\\\n\s*", " ", block)
            commands.extend(line for line in joined.splitlines() if line.strip())
        if commands:
            sections.append(Section(title.strip(), tuple(commands)))
    return sections


SECTIONS: Final = walk_sections(README.read_text())


def test_the_walk_has_its_sections() -> None:
    """The parse found the walk (a README edit that breaks it fails here, not silently)."""
    titles = [s.title for s in SECTIONS]
    assert len(titles) >= 8, titles
    assert all(s.commands for s in SECTIONS)


@pytest.fixture(scope="module")
def walk_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    """A fresh `make run CLOCK=virtual` at rate max, in a directory that has what the walk's
    commands name: `.kemu/kubeconfig` (`make run` writes it) and `examples/`."""
    root = tmp_path_factory.mktemp("walk")
    with procfile_running(root, "virtual") as run:
        (root / "examples").symlink_to(REPO_ROOT / "examples")
        yield run


@pytest.mark.long
@pytest.mark.timeout(SECTION_TIMEOUT + 120)
@pytest.mark.parametrize("section", SECTIONS[::-1], ids=[s.title for s in SECTIONS[::-1]])
def test_walk_section_runs_as_written(walk_run: MakeRun, section: Section) -> None:
    eventually_sync(walk_run.static_nodes_ready, timeout=90, interval=1)
    env = walk_run.env()
    missing = sorted(p for p in section.programs() if shutil.which(p, path=env["PATH"]) is None)
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    rate = walk_run.kemuctl("clock", "rate", "max")
    assert rate.returncode == 0, rate.stderr
    done = subprocess.run(
        ["bash", "-c", section.script()],
        cwd=walk_run.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECTION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{section.title}:\n{done.stdout}\n{done.stderr}"
