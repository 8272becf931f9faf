"""The HTML report at scale: 20 copies of sample_runs/ (1,040 runs), its size, build time and open time.

    flock /tmp/logdoctor-suite.lock nice -n 5 python benchmarks/bench_html.py [--copies 20] [--opens 3]

Targets (issue 15): the file <= 20 MB, built in <= 30 s on 2 cores, open in
Chromium in <= 2 s. Measured:

* build: `logdoctor analyze DIR -f html -o FILE -q` end to end (read +
  diagnose + report), wall and CPU seconds (CPU summed over worker
  processes; on a shared machine wall time mostly measures the neighbours),
  and the report alone (`render_html` on the finished diagnosis);
* open: headless Chromium loads the file and a probe appended to a copy
  reads the Navigation Timing entry (DOMContentLoaded and load, from the
  start of navigation); also the `--dump-dom` wall time minus a blank page's
  (browser start-up excluded), median of `--opens` loads.

The copies go to the git-ignored benchmarks/data/html_scale/ (made once).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "html_scale"
PROBE = """<script>
addEventListener("load", function () { setTimeout(function () {
  var nav = performance.getEntriesByType("navigation")[0], p = document.createElement("pre"); p.id = "timing";
  p.textContent = JSON.stringify({dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, charts: (window.logdoctorCharts || []).length});
  document.body.appendChild(p); }, 0); });
</script>"""


def corpus(copies: int) -> Path:
    """`copies` copies of sample_runs/ side by side (made once; a partial earlier attempt is redone)."""
    done = DATA / f".complete-{copies}"
    if not done.exists():
        shutil.rmtree(DATA, ignore_errors=True)
        for i in range(copies):
            shutil.copytree(ROOT / "sample_runs", DATA / f"copy-{i:02d}")
        done.touch()
    return DATA


def _cpu_children() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def build(folder: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the CLI writing the HTML report of `folder`."""
    start, cpu = time.perf_counter(), _cpu_children()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "logdoctor", "analyze", str(folder), "-f", "html", "-o", str(out), "-q"], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu_children() - cpu


def render_only(folder: Path) -> float:
    sys.path.insert(0, str(ROOT))
    from logdoctor import analyze
    from logdoctor.report.html import render_html

    diagnosis = analyze(folder)
    start = time.perf_counter()
    render_html(diagnosis)
    return time.perf_counter() - start


def chromium() -> str:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if found is None:
        sys.exit("bench_html: no chromium on PATH (apt-get install chromium)")
    return found


def load(browser: str, page: Path, profile: Path) -> tuple[float, str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}", "--window-size=1400,900"]
    start = time.perf_counter()
    done = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    return time.perf_counter() - start, done.stdout


def opens(browser: str, report: Path, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        probed = tmp / "probed.html"
        probed.write_text(report.read_text(encoding="utf-8").replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
        blank = tmp / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title>" + PROBE, encoding="utf-8")
        load(browser, blank, tmp / "profile")  # a first start warms the profile
        timings, walls, blanks = [], [], []
        for _ in range(n):
            blanks.append(load(browser, blank, tmp / "profile")[0])
            wall, dom = load(browser, probed, tmp / "profile")
            walls.append(wall)
            found = re.search(r'<pre id="timing">(.*?)</pre>', dom)
            timings.append(json.loads(found.group(1).replace("&quot;", '"')) if found else {})
    return {
        "dcl_ms": statistics.median(t.get("dcl", float("nan")) for t in timings),
        "load_ms": statistics.median(t.get("load", float("nan")) for t in timings),
        "charts_drawn_at_load": timings[-1].get("charts"),
        "dump_dom_minus_blank_s": statistics.median(walls) - statistics.median(blanks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--opens", type=int, default=3)
    args = parser.parse_args()
    browser = chromium()
    folder = corpus(args.copies)
    out = DATA.parent / "html_scale_report.html"
    wall, cpu = build(folder, out)
    size = out.stat().st_size
    runs = out.read_text(encoding="utf-8").count('<section class="run ')
    render = render_only(folder)
    opened = opens(browser, out, args.opens)
    load_avg = os.getloadavg()[0]
    print(f"| {args.copies} copies of sample_runs ({runs} runs) | |")
    print("| --- | ---: |")
    print(f"| file size | {size / 1e6:.1f} MB |")
    print(f"| build, CLI end to end (read + diagnose + report) | {wall:.1f} s wall, {cpu:.1f} s CPU |")
    print(f"| build, the report alone (`render_html`) | {render:.1f} s |")
    print(f"| open: DOMContentLoaded | {opened['dcl_ms'] / 1000:.2f} s |")
    print(f"| open: load event | {opened['load_ms'] / 1000:.2f} s |")
    print(f"| open: `--dump-dom` wall minus a blank page's | {opened['dump_dom_minus_blank_s']:.2f} s |")
    print(f"| charts drawn at load | {opened['charts_drawn_at_load']} |")
    print(f"\nload average at the end: {load_avg:.2f}; {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
