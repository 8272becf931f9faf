"""The HTML report as a person sees it: headless Chromium loads it offline, with no request leaving the page.

A probe script is appended to a copy of the report (the report itself is not
changed): after load it records every resource the page fetched (Resource
Timing lists network fetches, not data: URIs), how many plots decoded, any
script error, and whether clicking the "run" header sorts the index. Chromium
runs with DNS mapped to nowhere, so a page needing the network would show it.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from _report_fixtures import EVIL, evil, mixed
from logdoctor.cli import app
from logdoctor.report.html import render_html

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable") if shutil.which(n)),
    None,
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (.ci/run installs Debian's chromium with apt-get where it can)"
)
SAMPLE_RUNS = Path(__file__).parents[1] / "sample_runs"

PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.addEventListener("load", function () {
  var imgs = Array.from(document.images);
  var th = Array.from(document.querySelectorAll("table.index th")).find(function (t) { return t.textContent.trim().startsWith("run"); });
  var first = function () { var a = document.querySelector("table.index tbody tr a"); return a ? a.textContent : ""; };
  var before = first(); if (th) th.click(); var afterAsc = first(); if (th) th.click(); var afterDesc = first();
  var out = document.createElement("pre"); out.id = "probe";
  out.textContent = JSON.stringify({
    resources: performance.getEntriesByType("resource").map(function (e) { return e.name; }),
    images: imgs.length,
    decoded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
    sections: document.querySelectorAll("section.run").length,
    errors: window.__errors, alerted: !!window.__alerted,
    sort: [before, afterAsc, afterDesc],
  });
  document.body.appendChild(out);
});
window.alert = function () { window.__alerted = true; };
</script>"""

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
)


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def probe(html: str, tmp: Path) -> dict:
    """Load the report (plus the probe) in Chromium and return what the probe saw."""
    page = tmp / "probed.html"
    # the probe goes first, so it sees errors and alerts raised by anything after it
    page.write_text(html.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    done = chromium(tmp, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the page did not finish loading: " + done.stdout[-500:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def test_report_loads_offline_with_plots_and_working_sort(tmp_path):
    d = mixed()
    d.runs.append(evil())
    seen = probe(render_html(d), tmp_path)
    assert seen["resources"] == []  # nothing fetched from anywhere
    assert seen["errors"] == [] and not seen["alerted"]  # the run named <script>alert(1)</script> stayed text
    assert seen["sections"] == 6
    assert seen["images"] == 6 and seen["decoded"] == 6
    before, asc, desc = seen["sort"]
    assert before == "sweep/lr=1.0/seed0"  # worst first by default
    assert asc == min(rd.run.name for rd in d.runs) == EVIL
    assert desc == max(rd.run.name for rd in d.runs)


def test_screenshot_shows_the_report(tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(render_html(mixed()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    done = chromium(tmp_path, "--window-size=1100,1600", f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 1600)
    pixels = np.asarray(image.resize((220, 320))).reshape(-1, 3).astype(int)
    red = np.sum((pixels[:, 0] > 170) & (pixels[:, 1] < 80) & (pixels[:, 2] < 80))  # critical badges, status
    assert red > 20
    assert len(np.unique(pixels, axis=0)) > 200  # plots and text, not a blank page


@pytest.mark.skipif(not any(SAMPLE_RUNS.glob("*")), reason="sample_runs/ is empty")
def test_sample_runs_report_in_the_browser(tmp_path):
    out = tmp_path / "sample.html"
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_RUNS), "-f", "html", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    seen = probe(out.read_text(encoding="utf-8"), tmp_path)
    assert seen["resources"] == [] and seen["errors"] == []
    assert seen["sections"] >= 1 and seen["images"] == seen["decoded"] == seen["sections"]
