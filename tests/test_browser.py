"""The HTML report as a person sees it: headless Chromium loads it offline, with no request leaving the page.

A probe script is put into a copy of the report (the report itself is not
changed): after load it records every resource the page fetched (Resource
Timing lists network fetches), any script error or alert, whether clicking
the "run" header sorts the index; then it works a chart as a person would
(opens a card, hovers, drags to zoom, double-clicks, toggles log scale,
moves the smoothing slider, opens "Compare runs") and writes what it saw
into the page, read back with --dump-dom. Chromium runs with DNS mapped to
nowhere, so a page needing the network would show it.

Chromium's window is at least 500 px wide, so the 400 px check loads the
page in a 400 px iframe and the probe posts the width back to the wrapper.
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

from _report_fixtures import EVIL, evil, many, mixed
from logdoctor.cli import app
from logdoctor.model import Diagnosis
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
window.alert = function () { window.__alerted = true; };
function mouse(target, type, x, y, extra) {
  var r = target.getBoundingClientRect();
  target.dispatchEvent(new MouseEvent(type, Object.assign({ bubbles: true, cancelable: true, view: window,
    clientX: r.left + x * r.width, clientY: r.top + y * r.height, movementX: 1, button: 0, buttons: type === "mouseup" ? 0 : 1 }, extra || {})));
}
function report(seen) {
  var text = JSON.stringify(seen);
  if (parent !== window) parent.postMessage(text, "*");
  var out = document.createElement("pre"); out.id = "probe"; out.textContent = text; document.body.appendChild(out);
}
window.addEventListener("load", function () {
  var th = Array.from(document.querySelectorAll("table.index th")).find(function (t) { return t.textContent.trim().startsWith("run"); });
  var first = function () { var a = document.querySelector("table.index tbody tr a"); return a ? a.textContent : ""; };
  var before = first(); if (th) th.click(); var afterAsc = first(); if (th) th.click(); var afterDesc = first();
  var seen = { resources: performance.getEntriesByType("resource").map(function (e) { return e.name; }),
               width: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth,
               sort: [before, afterAsc, afterDesc], cards: document.querySelectorAll("section.run").length,
               closedDrawn: document.querySelectorAll("section.run details:not([open]) canvas").length,
               closed: document.querySelectorAll("section.run details:not([open])").length };
  // open the worst run's card (closed first: drawing happens on opening)
  var card = document.querySelector("section.run[data-run]");
  if (!card) { seen.errors = window.__errors; return report(seen); }
  var det = card.querySelector("details"); det.open = false;
  setTimeout(function () {
    det.open = true;
    setTimeout(function () {
      var chart = window.logdoctorCharts.find(function (c) { return card.contains(c.el); });
      seen.canvases = card.querySelectorAll("canvas").length;
      if (!chart) { seen.errors = window.__errors; return report(seen); }
      var u = chart.u, xs = u.data[0];
      seen.full = [u.scales.x.min, u.scales.x.max, xs[0], xs[xs.length - 1]];
      // one step per task, as real input arrives (uPlot reads the drag on later events)
      var steps = [
        function () { mouse(u.over, "mousemove", 0.5, 0.5); },
        function () { seen.hover = Array.from(u.root.querySelectorAll(".u-legend .u-value")).map(function (v) { return v.textContent; });
                      mouse(u.over, "mousedown", 0.2, 0.5); },
        function () { mouse(u.over, "mousemove", 0.4, 0.5); },
        function () { mouse(u.over, "mouseup", 0.4, 0.5); },
        function () {
          seen.zoomed = [u.scales.x.min, u.scales.x.max];
          var others = window.logdoctorCharts.filter(function (c) { return c !== chart && card.contains(c.el); });
          seen.zoomedTogether = others.map(function (c) { return [c.u.scales.x.min, c.u.scales.x.max]; });
          u.over.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
        },
        function () {
          seen.reset = [u.scales.x.min, u.scales.x.max];
          var distr = u.scales.y.distr;
          chart.el.querySelector(".scale-toggle").click();
          seen.toggled = [distr, chart.u.scales.y.distr];
          var slider = document.getElementById("smoothing"); slider.value = "0.9"; slider.dispatchEvent(new Event("input"));
          seen.smoothed = chart.u.series.slice(1).map(function (s) { return s.show; });
          var cmp = document.querySelector("#compare details"); if (cmp) cmp.open = true;
        },
        function () {
          var ov = document.querySelector("#compare .overlay");
          seen.overlay = ov ? ov.querySelectorAll("canvas").length : -1;
          seen.picks = Array.from(document.querySelectorAll("#compare .runlist label")).map(function (l) { return l.textContent; });
          seen.errors = window.__errors; seen.alerted = !!window.__alerted;
          report(seen);
        },
      ];
      (function next(i) { if (i < steps.length) { steps[i](); setTimeout(function () { next(i + 1); }, 30); } })(0);
    }, 50);
  }, 50);
});
</script>"""

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
)


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


#: For a big report: the index's "show all", then the last row's link opens its (closed, unfolded on demand) card.
BIG_PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.alert = function () { window.__alerted = true; };
window.addEventListener("load", function () {
  var rows = function () { return Array.from(document.querySelectorAll("table.index tbody tr")).filter(function (r) { return !r.hidden; }).length; };
  var seen = { rowsAtLoad: rows(), bodiesAtLoad: document.querySelectorAll("section.run .body").length };
  document.querySelector("#index-tools button").click();
  seen.rowsShown = rows();
  var links = document.querySelectorAll("table.index tbody tr a"), last = links[links.length - 1];
  seen.names = Array.from(links).map(function (a) { return a.textContent; });
  last.click();
  setTimeout(function () {
    var card = document.getElementById(last.getAttribute("href").slice(1));
    seen.opened = card.querySelector("details").open;
    seen.body = !!card.querySelector(".body .findings, .body p");
    seen.canvases = card.querySelectorAll("canvas").length;
    seen.errors = window.__errors; seen.alerted = !!window.__alerted;
    var out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(seen); document.body.appendChild(out);
  }, 50);
});
</script>"""


def probe(html: str, tmp: Path, width: int | None = None, script: str = PROBE) -> dict:
    """Load the report (plus the probe) in Chromium, `width` px wide when given, and return what the probe saw."""
    page = tmp / "probed.html"
    # the probe goes first, so it sees errors and alerts raised by anything after it
    page.write_text(html.replace("<head>", "<head>" + script, 1), encoding="utf-8")
    target = page
    if width is not None:
        target = tmp / "frame.html"
        target.write_text(
            f'<!DOCTYPE html><body style="margin:0"><iframe src="{page.name}" width="{width}" height="900" style="border:0"></iframe>'
            '<script>addEventListener("message",function(e){var p=document.createElement("pre");p.id="probe";'
            "p.textContent=e.data;document.body.appendChild(p);});</script></body>",
            encoding="utf-8",
        )
    done = chromium(tmp, "--virtual-time-budget=5000", "--dump-dom", target.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the page did not finish loading: " + done.stdout[-500:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def test_report_loads_offline_and_its_charts_answer_the_mouse(tmp_path):
    d = mixed()
    d.runs.append(evil())
    seen = probe(render_html(d), tmp_path)
    assert seen["resources"] == []  # nothing fetched from anywhere
    assert seen["errors"] == [] and not seen["alerted"]  # the run named <script>alert(1)</script> stayed text
    assert any(EVIL in p for p in seen["picks"])  # ... and shows as its name in "Compare runs"
    assert seen["cards"] == 6
    before, asc, desc = seen["sort"]
    assert before == "sweep/lr=1.0/seed0"  # worst first by default
    assert asc == min(rd.run.name for rd in d.runs) == EVIL
    assert desc == max(rd.run.name for rd in d.runs)
    # the worst run (diverging: loss, grad-norm panels) is drawn once its card opens
    assert seen["canvases"] >= 2
    lo, hi, first, last = seen["full"]
    assert lo <= first and hi >= last
    assert any(re.fullmatch(r"[\d.e+-]+", v) for v in seen["hover"])  # hovering shows values in the legend
    z_lo, z_hi = seen["zoomed"]
    assert lo < z_lo < z_hi < hi and z_hi - z_lo < 0.5 * (hi - lo)  # a drag over 20% of the width zooms in
    assert seen["zoomedTogether"] and all(r == seen["zoomed"] for r in seen["zoomedTogether"])
    assert seen["reset"][0] <= first and seen["reset"][1] >= last  # double-click resets
    assert seen["toggled"][0] != seen["toggled"][1]  # log <-> linear
    n = len(seen["smoothed"]) // 2
    assert seen["smoothed"][n:] == [True] * n  # smoothed lines shown over the faint raw ones
    assert seen["overlay"] >= 1


def test_a_big_report_unfolds_index_rows_and_closed_cards_on_demand(tmp_path):
    d = many(40)
    quiet = evil()
    quiet.findings = []  # healthy: its card starts closed, its body kept as raw text until opened
    d.runs.append(quiet)
    seen = probe(render_html(d), tmp_path, script=BIG_PROBE)
    assert seen["rowsAtLoad"] == 20 and seen["rowsShown"] == 41
    assert seen["bodiesAtLoad"] < 41  # closed cards have no body yet
    assert EVIL in seen["names"] and seen["opened"] and seen["body"] and seen["canvases"] >= 1
    assert seen["errors"] == [] and not seen["alerted"]


def test_every_page_fits_a_400px_phone(tmp_path):
    d = mixed()
    d.runs.append(evil())
    for rd in d.runs[:2]:
        rd.run.name = "a_very_long_run_name_without_any_break/" * 4 + rd.run.name
    seen = probe(render_html(d, extra_sections=[("Sweep", "| lr | batch | loss |\n|---|---|---|\n" + "| 0.001 | 64 | 0.25 |\n" * 3)]), tmp_path, width=400)
    assert seen["viewport"] == 400
    assert seen["width"] <= 400, seen
    assert seen["errors"] == []


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
    assert len(np.unique(pixels, axis=0)) > 200  # charts and text, not a blank page


@pytest.mark.skipif(not any(SAMPLE_RUNS.glob("*")), reason="sample_runs/ is empty")
def test_sample_runs_report_in_the_browser(tmp_path):
    out = tmp_path / "sample.html"
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_RUNS), "-f", "html", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    seen = probe(out.read_text(encoding="utf-8"), tmp_path)
    assert seen["resources"] == [] and seen["errors"] == []
    assert seen["cards"] >= 1 and seen["canvases"] >= 1 and seen["overlay"] >= 1
    assert seen["closed"] >= 1 and seen["closedDrawn"] == 0  # a closed card's charts wait until it is opened


#: Opens every card (closed first: drawing happens on opening), then reports the script errors and the cards with no chart.
EVERY_CARD_PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.addEventListener("load", function () {
  var more = document.querySelector("#index-tools button"); if (more) more.click();
  var cards = Array.from(document.querySelectorAll("section.run[data-run]")), failed = {};
  (function next(i) {
    if (i === cards.length) {
      // every level line (clip threshold, best validation level, chance) inside its chart's y axis
      var offAxis = [];
      window.logdoctorCharts.forEach(function (c) {
        var y = c.u && c.u.scales.y;
        c.marks.forEach(function (m) { if (m.kind === "level" && m.y !== undefined && y && (m.y < y.min || m.y > y.max)) offAxis.push(m.label); });
      });
      var seen = { cards: cards.length, failed: failed, errors: window.__errors, offAxis: offAxis,
                   blank: cards.filter(function (c) { return !c.querySelector("canvas"); }).map(function (c) { return c.dataset.run; }) };
      var out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(seen); document.body.appendChild(out);
      return;
    }
    var card = cards[i], det = card.querySelector("details"), before = window.__errors.length;
    det.open = false;
    setTimeout(function () { det.open = true; }, 5);
    setTimeout(function () {
      if (window.__errors.length > before) failed[card.querySelector("summary").textContent] = window.__errors.slice(before);
      next(i + 1);
    }, 40);
  })(0);
});
</script>"""


@pytest.mark.skipif(not any(SAMPLE_RUNS.glob("*")), reason="sample_runs/ is empty")
def test_every_bundled_runs_card_draws_without_a_script_error(tmp_path):
    """pl_sched_steplr_per_batch's LR falls to 5e-51: uPlot's own log ticks looped until `RangeError:
    Invalid array length`, leaving its loss chart blank."""
    out = tmp_path / "all.html"
    result = CliRunner().invoke(app, ["analyze", str(SAMPLE_RUNS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    seen = probe(out.read_text(encoding="utf-8"), tmp_path, script=EVERY_CARD_PROBE)
    assert seen["cards"] == 52
    assert seen["failed"] == {} and seen["errors"] == []
    assert seen["blank"] == []
    assert seen["offAxis"] == []  # the clip threshold 0.01 under norms of ~1 was off the axis, in the legend only


def compare_probe(body: str) -> str:
    """A probe that opens "Compare runs" once the page has loaded, then runs `body` (JavaScript that
    ends by writing its findings into a <pre id="probe">), script errors collected in window.__errors."""
    return """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.addEventListener("load", function () {
  document.querySelector("#compare details").open = true;
  setTimeout(function () {
""" + body + """
  }, 50);
});
</script>"""


#: Compare runs: untick all but the last run, switch the metric away and back, report which runs stay ticked.
COMPARE_PROBE = compare_probe("""
    var picker = document.querySelector("#compare select"), run = JSON.parse(document.getElementById("runs-index").textContent)
      .find(function (r) { return r.keys.length >= 2; });
    var labels = function () { return Array.from(document.querySelectorAll("#compare .runlist label")); };
    var names = function () { return labels().filter(function (l) { return l.querySelector("input").checked; }).map(function (l) { return l.textContent.slice(2); }); };
    var pick = function (m) { picker.value = m; picker.dispatchEvent(new Event("change")); };
    pick(run.keys[0]);
    labels().forEach(function (l) { var b = l.querySelector("input"), want = l.textContent.slice(2) === run.name;
                                    if (b.checked !== want) { b.checked = want; b.dispatchEvent(new Event("change")); } });
    var seen = { run: run.name, before: names() };
    pick(run.keys[1]); seen.other = names();
    pick(run.keys[0]); seen.back = names();
    seen.errors = window.__errors;
    var out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(seen); document.body.appendChild(out);
""")


def test_compare_keeps_the_ticked_runs_when_the_metric_changes(tmp_path):
    """Choosing another metric in "Compare runs" forgot the runs the user had ticked."""
    d = mixed()
    seen = probe(render_html(d), tmp_path, script=COMPARE_PROBE)
    assert seen["errors"] == [] and seen["before"] == [seen["run"]]
    assert seen["other"] == seen["back"] == [seen["run"]]


#: Compare runs along the time since each run's start.
TIME_PROBE = compare_probe("""
    var along = document.querySelectorAll("#compare select")[1];
    along.value = "time"; along.dispatchEvent(new Event("change"));
    setTimeout(function () {
      var c = window.logdoctorCharts[window.logdoctorCharts.length - 1].u;
      var seen = { errors: window.__errors, x: [c.scales.x.min, c.scales.x.max], lines: c.series.length, axis: c.axes[0]._values };
      var out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(seen); document.body.appendChild(out);
    }, 50);
""")


def test_compare_runs_along_the_time_since_their_start(tmp_path):
    """"Compare runs" had a step x-axis only; TensorBoard and W&B also offer time. Two runs logged 1 and
    3 s apart a step: along time the axis spans 0 to 597 s and reads in minutes."""
    import polars as pl

    from logdoctor.model import Run, RunDiagnosis, tidy

    runs = []
    for name, every in (("fast", 1.0), ("slow", 3.0)):
        steps = np.arange(200)
        scalars = tidy(pl.DataFrame({"metric": "loss", "step": steps, "value": 2.0 * 0.99 ** steps, "wall_time": 1.7e9 + every * steps}))
        runs.append(RunDiagnosis(Run(name=name, path=name, format="csv", scalars=scalars), {"train_loss": "loss"}, []))
    seen = probe(render_html(Diagnosis("runs/", runs)), tmp_path, script=TIME_PROBE)
    assert seen["errors"] == [] and seen["lines"] >= 3
    assert seen["x"][0] <= 0 and 590 <= seen["x"][1] <= 600
    assert any(v.endswith("min") for v in seen["axis"])


#: For the audit page: the sweep table's columns and sorting, then its two charts worked with the mouse.
AUDIT_PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.alert = function () { window.__alerted = true; };
function mouse(target, type, x, y, extra) {
  target.dispatchEvent(new MouseEvent(type, Object.assign({ bubbles: true, cancelable: true, view: window,
    clientX: x, clientY: y, movementX: 1, button: 0, buttons: type === "mouseup" ? 0 : 1 }, extra || {})));
}
function report(seen) {
  var text = JSON.stringify(seen);
  if (parent !== window) parent.postMessage(text, "*");
  var out = document.createElement("pre"); out.id = "probe"; out.textContent = text; document.body.appendChild(out);
}
window.addEventListener("load", function () {
  var table = document.querySelector("table.sweep"), ths = Array.from(table.querySelectorAll("th"));
  var names = function () { return Array.from(table.tBodies[0].rows).map(function (r) { return r.cells[0].textContent; }); };
  var col = function (label) { var i = ths.findIndex(function (t) { return t.textContent.trim() === label; });
                               return Array.from(table.tBodies[0].rows).map(function (r) { return r.cells[i].textContent; }); };
  var seen = { resources: performance.getEntriesByType("resource").map(function (e) { return e.name; }),
               width: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth,
               images: document.querySelectorAll("img").length,
               headers: ths.map(function (t) { return t.textContent.trim(); }), atLoad: names() };
  ths[0].click(); seen.byName = names();
  ths.find(function (t) { return t.textContent.trim() === "lr"; }).click(); seen.byLr = col("lr");
  var data = JSON.parse(document.getElementById("sweep-data").textContent);
  var inside = function (id) { return window.logdoctorCharts.find(function (c) { return document.getElementById(id).contains(c.el); }); };
  var outcome = inside("sweep-outcome"), curves = inside("sweep-curves");
  seen.canvases = [document.querySelectorAll("#sweep-outcome canvas").length, document.querySelectorAll("#sweep-curves canvas").length];
  if (!outcome || !curves) { seen.errors = window.__errors; return report(seen); }
  var at = function (u, x, y) { var r = u.over.getBoundingClientRect(); return [r.left + u.valToPos(x, "x"), r.top + u.valToPos(y, "y")]; };
  // hover the lowest final loss in the outcome chart
  var run = data.runs.filter(function (r) { return r.x !== null && r.final !== null; })
                     .sort(function (a, b) { return a.final - b.final; })[0];
  var p = at(outcome.u, run.x, run.final); mouse(outcome.u.over, "mousemove", p[0], p[1]);
  seen.outcomeRun = run.name;
  setTimeout(function () {
    seen.outcomeReadout = outcome.readout.textContent;
    // hover a point of one run's curve, then click it: its card opens
    var u = curves.u, id = data.runs[data.runs.length - 1].id, line = null;
    JSON.parse(document.getElementById("chart-" + id.slice(4)).textContent).panels[0].lines.forEach(function (l) { if (!line && l.key === "train loss") line = l; });
    var xs = [], s = 0; line.dx.forEach(function (d) { xs.push(s += d); });
    var k = line.y.length >> 1; p = at(u, xs[k], line.y[k]);
    mouse(u.over, "mousemove", p[0], p[1]);
    setTimeout(function () {
      seen.curveReadout = curves.readout.textContent;
      // the curves of runs alike lie on one another: the readout names the nearest, whose card a click opens
      var named = data.runs.find(function (r) { return r.name === seen.curveReadout.split(" · ")[0]; });
      var det = named && document.getElementById(named.id).querySelector("details");
      if (det) {  // a click as a person makes one: press and release in place (uPlot swallows the click ending a drag)
        det.open = false;
        ["mousedown", "mouseup", "click"].forEach(function (type) { mouse(u.over, type, p[0], p[1]); });
        seen.opened = det.open;
      }
      var r = u.over.getBoundingClientRect(), full = [u.scales.x.min, u.scales.x.max];
      var steps = [
        function () { mouse(u.over, "mousedown", r.left + 0.2 * r.width, r.top + r.height / 2); },
        function () { mouse(u.over, "mousemove", r.left + 0.4 * r.width, r.top + r.height / 2); },
        function () { mouse(u.over, "mouseup", r.left + 0.4 * r.width, r.top + r.height / 2); },
        function () { seen.full = full; seen.zoomed = [curves.u.scales.x.min, curves.u.scales.x.max];
                      u.over.dispatchEvent(new MouseEvent("dblclick", { bubbles: true })); },
        function () { seen.reset = [curves.u.scales.x.min, curves.u.scales.x.max];
                      var distr = curves.u.scales.y.distr; curves.el.querySelector(".scale-toggle").click();
                      seen.toggled = [distr, curves.u.scales.y.distr];
                      // parallel coordinates: hover a run's line halfway between the first two axes
                      var par = window.logdoctorParallel, line = par.lines().find(function (l) { return l.pts[0] && l.pts[1]; });
                      var box = par.canvas.getBoundingClientRect(), a = line.pts[0], b = line.pts[1];
                      mouse(par.canvas, "mousemove", box.left + (a[0] + b[0]) / 2, box.top + (a[1] + b[1]) / 2);
                      seen.parallelRun = line.run.name; seen.parallelReadout = par.readout.textContent;
                      // the x-axis picker: the second setting redraws both charts along it
                      var sel = document.getElementById("sweep-axis");  // none when one setting was swept
                      seen.picker = sel ? Array.from(sel.options).map(function (o) { return o.textContent; }) : [];
                      if (sel) { sel.value = "1"; sel.dispatchEvent(new Event("change")); }
                      seen.picked = Array.from(document.querySelectorAll(".sweep-key")).map(function (k) { return k.textContent; });
                      seen.redrawn = [document.querySelectorAll("#sweep-outcome canvas").length, document.querySelectorAll("#sweep-curves canvas").length];
                      seen.errors = window.__errors; seen.alerted = !!window.__alerted; report(seen); },
      ];
      (function next(i) { if (i < steps.length) { steps[i](); setTimeout(function () { next(i + 1); }, 30); } })(0);
    }, 30);
  }, 30);
});
</script>"""

IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture
def audit_page(tmp_path, monkeypatch) -> tuple[str, list[str]]:
    """`logdoctor audit -f html` of a small lr sweep: trial_1 ... trial_11 and a run folder named like an <img> tag."""
    from test_audit import write_run

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "sweep"
    names = [f"trial_{i}" for i in range(1, 12)] + [IMG]
    for i, name in enumerate(names):
        write_run(root / name, lr=(1e-3, 3e-3, 1e-2, 3e-2)[i % 4], seed=i, steps=300)
    out = tmp_path / "audit.html"
    result = CliRunner().invoke(app, ["audit", str(root), "-f", "html", "-o", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), names


def test_audit_page_loads_offline_with_its_table_and_charts(audit_page, tmp_path):
    from logdoctor.naming import natural_key

    html, names = audit_page
    seen = probe(html, tmp_path, script=AUDIT_PROBE)
    assert seen["resources"] == [] and seen["errors"] == []  # nothing fetched, no script error
    assert not seen["alerted"] and seen["images"] == 0  # the <img> run name stayed text
    assert seen["headers"][:4] == ["run", "lr", "status", "top finding"]  # the key setting beside the run's name
    assert {"lr", "seed"} <= set(seen["headers"])  # the swept settings are columns
    assert "optimizer.name" not in seen["headers"]  # the same in every run: not swept
    assert set(seen["atLoad"]) == set(names)
    assert seen["byName"] == sorted(names, key=natural_key)  # natural order: trial_2 before trial_10
    assert seen["byName"].index("trial_2") < seen["byName"].index("trial_10")
    assert [float(v) for v in seen["byLr"]] == sorted(float(v) for v in seen["byLr"])
    assert seen["canvases"][0] >= 1 and seen["canvases"][1] >= 1  # both charts drawn
    assert seen["outcomeRun"] in seen["outcomeReadout"]  # hovering a point names its run
    assert seen["curveReadout"].split(" · ")[0] in names  # ... and hovering a curve
    assert seen["opened"]  # a click on the curve opens that run's card
    lo, hi = seen["full"]
    z_lo, z_hi = seen["zoomed"]
    assert lo < z_lo < z_hi < hi and z_hi - z_lo < 0.5 * (hi - lo)  # a drag zooms the overlay in
    assert seen["reset"] == [lo, hi]  # double-click resets
    assert seen["toggled"][0] != seen["toggled"][1]  # log <-> linear
    assert seen["picker"][0].startswith("lr") and any(p.startswith("seed") for p in seen["picker"][1:])  # lr first
    assert seen["picked"] == [seen["picker"][1].split(" ")[0]] * 2 and seen["redrawn"] == [1, 1]  # both charts redrawn
    assert seen["parallelReadout"].startswith(seen["parallelRun"] + " · lr = ")  # hovering a line names its run


def test_audit_page_fits_a_400px_phone(audit_page, tmp_path):
    html, names = audit_page
    seen = probe(html, tmp_path, width=400, script=AUDIT_PROBE)
    assert seen["viewport"] == 400
    assert seen["width"] <= 400, seen  # the wide table scrolls in its own frame, the page does not
    assert seen["errors"] == [] and seen["canvases"][0] >= 1 and seen["canvases"][1] >= 1


def test_audit_page_of_a_big_sweep_draws_every_curve(tmp_path):
    """1,000 runs x 200 points of train loss: the page's script must not choke on 200,000 values (no spread of
    them into one call's arguments, which overflows the stack: it did, and this page drew no chart)."""
    from logdoctor.audit.page import render_page
    from logdoctor.audit.result import RunResult, thin_curve
    from logdoctor.audit.summary import AuditReport

    steps = np.arange(2000)
    runs = []
    for i in range(1000):
        lr = (1e-4, 1e-3, 1e-2, 1e-1)[i % 4]
        loss = 2.3 * np.exp(-steps * lr) + 0.1 + 0.01 * np.sin(steps * (i + 1))
        stats = {"train_loss_final": float(loss[-1]), "train_loss_best": float(loss.min()), "val_loss_final": float(loss[-1]),
                 "val_loss_best": float(loss.min()), "steps": 1999}
        curves = {"train_loss": thin_curve(steps, loss), "val_loss": thin_curve(steps[::10], loss[::10] * 1.1)}
        runs.append(RunResult(run=f"run{i}", path=f"/sweep/run{i}", format="csv", roles={"train_loss": "loss", "val_loss": "val_loss"},
                              status="healthy", findings=[], params={"lr": lr}, stats=stats, curves=curves))
    seen = probe(render_page(AuditReport(root="sweep", results=runs, errors=[], links=[])), tmp_path, script=AUDIT_PROBE)
    assert seen["errors"] == [] and seen["canvases"] == [1, 1]
    assert re.match(r"run\d+ · lr = ", seen["outcomeReadout"])  # runs alike overlap: the readout names one of them
    assert re.match(r"run\d+ · lr = ", seen["curveReadout"])
