"""The chaos CI profile as a user runs it, and its picture in a real browser (issue #32 item 5):
`python -m kemu.chaos --profile ci --json FILE --html FILE` breaks no invariant (the checks of
test_chaos.py, whose runs are the fenced and the virtual-clock ones: this is the run with
upstream's election on the real clock), then the page opened in headless Chromium (Debian's;
`make test-long` installs it when missing; without it the picture's part skips once the run's
checks have passed): its DOM after the page's script ran (`--dump-dom`) has a lane per node
the run had and a bar per pod it bound, a marker per fault it injected and the autoscaler's
scale-ups and downs, all against the run's own report (`--json`); and its screenshot is a
picture, not a blank page: the priorities' colours and the pending pods' are in it.

KEMU_TIMELINE_PNG=PATH keeps the screenshot there (README's docs/timeline.png is one);
KEMU_TEST_SEED=N replays a run. About two minutes: the chaos CI profile's run."""

from __future__ import annotations

import html as html_module
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path
from typing import Final

import pytest

from kemu.chaos.profiles import CI
from kemu.testing.processes import REPO_ROOT, run_python_module
from kemu.testing.rand import SeededRandom
from kemu.timeline.page import read_page
from kemu.timeline.render import PALETTE, priority_colours
from tests.integration.drivers.chaos_checks import assert_the_run_held

pytestmark = [pytest.mark.integration, pytest.mark.long]

PNG_ENV: Final = "KEMU_TIMELINE_PNG"
WINDOW: Final = (1440, 1100)
PENDING_FILL: Final = (0x9E, 0xCA, 0xE1)


def chromium() -> str:
    """Debian's Chromium, or the test skips saying why."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "no chromium on PATH: `make test-long` installs Debian's (apt-get install "
            "chromium) when it runs as root; install it so to run this test"
        )
    return found


def run_chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        browser,
        "--headless",
        "--no-sandbox",  # as root (CI) Chromium refuses to start with its sandbox
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _scale_down_events_dropped(root: Path) -> bool:
    """Whether the run's autoscaler dropped a ScaleDown Event from its full queue (logged), as
    upstream's recorder does (client-go's broadcaster: DropIfChannelFull): the chaos profile's
    0.5 s scans report each unschedulable pod twice a second, through an events client held to
    client-go's 5 requests a second, and a node so removed has no Event to draw."""
    return any(
        "dropping event ScaleDown" in log.read_text(errors="replace")
        for log in root.rglob("autoscaler*.log")
    )


@pytest.mark.timeout(600)
def test_chaos_ci_profile_from_the_command_line_breaks_no_invariant_and_draws_what_it_did(
    tmp_path: Path, rng: SeededRandom
) -> None:
    seed = rng.randrange(1 << 31)
    html, report_path = tmp_path / "chaos.html", tmp_path / "chaos.json"
    args = ["--profile", "ci", "--seed", str(seed), "--root", str(tmp_path / "run")]
    done = run_python_module(
        "kemu.chaos", [*args, "--html", str(html), "--json", str(report_path)], timeout=540
    )
    # (its progress on stderr, its summary on stdout: both shown with a failure)
    assert report_path.exists(), done.stdout + done.stderr[-5000:]
    report = json.loads(report_path.read_text())
    assert (report["fencing"], report["clock"]) == (False, "real")
    assert_the_run_held(report, done.stdout + done.stderr[-5000:])
    assert done.returncode == 0, done.stderr[-3000:]

    browser = chromium()
    url = html.resolve().as_uri()
    dom = run_chromium(browser, tmp_path / "profile", "--dump-dom", url).stdout
    page = read_page(dom)
    assert page.script_ran, "the page's script did not run to its end in Chromium"
    (run,) = page.runs
    assert (page.script_lanes, page.script_bars) == (len(run.lanes), len(run.bars))
    static = [f"chaos-n{i}" for i in range(CI.workload.nodes.count)]
    scaling = report["scaling"]
    assert run.lanes[: len(static)] == static
    assert len(run.lanes) == len(set(run.lanes)) == len(static) + scaling["nodes_seen"]
    churn = [key for key in run.bars if key.startswith("chaos/")]
    assert len(churn) == len(set(churn)) == report["pods_ever_bound"] > 0
    assert run.markers["fault"] == report["faults"] >= 15
    assert run.markers["scale-up"] >= (scaling["scale_ups"] > 0)
    if not _scale_down_events_dropped(tmp_path / "run"):
        assert run.markers["scale-down"] >= (scaling["nodes_deleted"] > 0)
    assert set(run.victims) <= set(run.bars)
    told = [str(st[0]) for st in run.stories if st[0] in run.victims and st[4] != -1]
    if told:  # a victim whose Preempted event named its preemptor: almost every run has one
        check_a_click_tells_a_victims_story(browser, tmp_path, html, told[0])

    png = tmp_path / "chaos.png"
    width, height = WINDOW
    run_chromium(
        browser,
        tmp_path / "profile",
        f"--window-size={width},{height}",
        f"--screenshot={png}",
        url,
    )
    size, colours = png_colours(png.read_bytes())
    assert size == WINDOW
    assert len(colours) > 20, f"a blank page: {len(colours)} colours"
    pixels = width * height
    priorities = {int(str(s[1])) for s in run.stories if s[0] in set(run.bars)}
    shown = {p: colours[_rgb(PALETTE[c])] for p, c in priority_colours(priorities).items()}
    assert sum(shown.values()) > pixels // 100, f"the bars hardly show: {shown}"
    assert all(n > 0 for n in shown.values()), f"a priority's bars do not show: {shown}"
    assert colours[PENDING_FILL] > 0, "the pending pods' chart does not show"
    keep = os.environ.get(PNG_ENV)
    if keep:
        target = Path(keep) if Path(keep).is_absolute() else REPO_ROOT / keep
        shutil.copyfile(png, target)


# Appended to a copy of the page: a click on a victim's bar, then on its preemptor's link in the
# story panel, as a user would; the DOM after them says what the panel showed each time.
CLICKS: Final = """<script>
(function () {
  var victim = document.querySelector("[data-victim='" + VICTIM + "']");
  var bar = document.querySelector("rect[data-pod][data-i='" + victim.getAttribute("data-i") + "']");
  bar.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  var panel = document.getElementById("story");
  panel.setAttribute("data-first", panel.hidden ? "" : panel.querySelector("h3").textContent);
  var link = panel.querySelector("a[data-goto]");
  link.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  panel.setAttribute("data-second", panel.querySelector("h3").textContent);
  panel.setAttribute("data-selected", document.querySelectorAll(".sel").length);
})();
</script>"""


def check_a_click_tells_a_victims_story(
    browser: str, tmp_path: Path, html: Path, victim: str
) -> None:
    """A click on `victim`'s bar opens the panel with its story, which names its preemptor;
    the link to it shows the preemptor's story, its marks selected."""
    clicked = tmp_path / "clicked.html"
    script = CLICKS.replace("VICTIM", json.dumps(victim))
    clicked.write_text(html.read_text().replace("</body>", script + "</body>"))
    dom = run_chromium(browser, tmp_path / "profile", "--dump-dom", clicked.as_uri()).stdout
    panel = re.search(r'<aside id="story"([^>]*)>(.*?)</aside>', dom, re.S)
    assert panel is not None, "no story panel"
    attrs, body = panel.groups()
    assert "hidden" not in attrs, "the story panel stayed hidden"
    first = re.search(r'data-first="([^"]*)"', attrs)
    second = re.search(r'data-second="([^"]*)"', attrs)
    assert first is not None and second is not None
    assert html_module.unescape(first.group(1)) == victim
    preemptor = html_module.unescape(second.group(1))
    assert preemptor.startswith("chaos/") and preemptor != victim
    assert f">{victim}</a>" in body, f"the preemptor's story does not name {victim}: {body}"
    assert re.search(r'data-selected="[1-9]', attrs), "the preemptor's marks are not selected"


def _rgb(colour: str) -> tuple[int, int, int]:
    value = int(colour.removeprefix("#"), 16)
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def png_colours(data: bytes) -> tuple[tuple[int, int], Counter[tuple[int, int, int]]]:
    """(width, height) and how many pixels of each RGB colour an 8-bit, non-interlaced RGB or
    RGBA PNG has (what Chromium's screenshots are): no imaging library needed."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, bytearray()
    width = height = bpp = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, interlace) == (8, 0) and colour_type in (2, 6), (depth, colour_type)
            bpp = 3 if colour_type == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prev = bytearray(stride)
    counts: Counter[tuple[int, int, int]] = Counter()
    pos = 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        counts.update(zip(line[0::bpp], line[1::bpp], line[2::bpp], strict=True))
        prev = line
    return (width, height), counts
