"""Regenerate the screenshots of the README, docs/reports.md and docs/audit.md (needs Chromium on PATH).

    python docs/screenshots/make_screenshots.py

* terminal-quiet.png (README) and terminal-report.png (docs/reports.md): exactly
  what the commands in `TERMINAL` print, run as a user runs them (colour forced,
  100 columns), exported by rich as SVG and rasterised by Chromium;
* html-report.png: the top of the HTML report of a showcase of the sample runs
  (the worst run per distinct top finding, plus a healthy one) as headless
  Chromium renders it;
* html-card-1400.png / html-card-400.png: the report of the overfit run alone, its
  card open (charts with the finding's marks) at 1400 and 400 px;
* html-compare-1400.png / html-compare-400.png: the showcase report's index and
  "Compare runs" (train loss of its runs overlaid) at 1400 and 400 px;
* audit-1400.png / audit-400.png: the page of `logdoctor audit lr-sweep/ -f html`
  on a 24-run sweep made by `benchmarks/gen_sweep.py --seeds 1` (real SGD
  trainings: the outcome against lr, the loss curves coloured by lr, the table).
Shots start at the top of the page (a scrolled headless shot can come out half
painted). Chromium's window is at least 500 px wide, so the 400 px shots load
the page in a 400 px iframe and keep its width.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.text import Text

from logdoctor import analyze
from logdoctor.cli import name_runs
from logdoctor.model import Diagnosis
from logdoctor.report.html import render_html
from logdoctor.report.text import by_severity

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SAMPLES = ROOT / "sample_runs"
#: Screenshot -> the command it shows (the same commands as the README and docs/reports.md).
TERMINAL = {
    "terminal-quiet.png": ["analyze", "sample_runs/", "-q"],
    "terminal-report.png": ["analyze", "sample_runs/tb_overfit_charlm_tiny_subset"],
}
WIDTH = 100
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
)


def shoot(page: Path, png: Path, size: tuple[int, int], tmp: Path) -> None:
    """Photograph `page` in a window of `size` px; below Chromium's 500 px minimum the page goes in
    an iframe of that width and the shot is cropped to it."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        sys.exit("make_screenshots: no chromium on PATH")
    width, height = size
    target = page.as_uri()
    if width < 500:
        frame = tmp / "frame.html"
        frame.write_text(
            f'<!DOCTYPE html><body style="margin:0"><iframe src="{target}" width="{width}" height="{height}" style="border:0;display:block"></iframe></body>',
            encoding="utf-8",
        )
        target = frame.as_uri()
    subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size={max(width, 500)},{height}",
         "--virtual-time-budget=5000", f"--screenshot={png}", target],
        check=True, capture_output=True, timeout=120,
    )
    if width < 500:
        from PIL import Image

        Image.open(png).crop((0, 0, width, height)).save(png)


def showcase(runs: list, problems: int = 5) -> list:
    """The worst run for each distinct top finding (up to `problems`), then one healthy run."""
    picked, seen = [], set()
    for rd in by_severity(runs):
        key = rd.findings[0].code if rd.findings else "healthy"
        if key not in seen and (len(picked) < problems or key == "healthy"):
            picked.append(rd)
            seen.add(key)
    return picked


def terminal(args: list[str], png: Path, tmp: Path) -> None:
    """Run `logdoctor ARGS` in a colour terminal of WIDTH columns and photograph what it printed."""
    env = {**os.environ, "COLUMNS": str(WIDTH), "FORCE_COLOR": "1", "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    out = subprocess.run([sys.executable, "-m", "logdoctor", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False).stdout
    console = Console(record=True, width=WIDTH, force_terminal=True, color_system="truecolor", file=io.StringIO())
    console.print(f"$ logdoctor {' '.join(args)}", style="bold", highlight=False)
    console.print(Text.from_ansi(out.rstrip("\n")), soft_wrap=True)
    lines = len(console.export_text(clear=False).splitlines())
    svg = tmp / f"{png.stem}.svg"
    svg.write_text(console.export_svg(title=f"logdoctor {' '.join(args)}"), encoding="utf-8")
    shoot(svg, png, (1180, 60 + 21 * lines), tmp)


def audit_page(tmp: Path) -> None:
    """Generate a small real sweep, audit it as a user does (`logdoctor audit lr-sweep/ -f html`) and photograph the page."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp / "cache")}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_lr_sweep.py"), str(tmp / "lr-sweep")],
                   check=True, capture_output=True, env=env)
    page = tmp / "audit.html"
    subprocess.run([sys.executable, "-m", "logdoctor", "audit", "lr-sweep/", "-f", "html", "-o", str(page), "-j", "1"],
                   cwd=tmp, check=True, capture_output=True, env=env)
    for width, height in ((1400, 1700), (400, 2000)):
        shoot(page, HERE / f"audit-{width}.png", (width, height), tmp)


def main() -> None:
    diagnosis = analyze(SAMPLES)
    name_runs([rd.run for rd in diagnosis.runs], SAMPLES)  # the names `logdoctor analyze sample_runs/` shows
    diagnosis.runs = showcase(diagnosis.runs)
    diagnosis.root = "sample_runs/"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        page = tmp / "report.html"
        page.write_text(render_html(diagnosis), encoding="utf-8")
        shoot(page, HERE / "html-report.png", (1100, 2300), tmp)
        overfit = [rd for rd in diagnosis.runs if any(f.code == "overfit" for f in rd.findings)][:1]
        one = tmp / "one.html"
        one.write_text(render_html(Diagnosis(diagnosis.root, overfit or diagnosis.runs[:1])), encoding="utf-8")
        for width, height in ((1400, 1250), (400, 1700)):
            shoot(one, HERE / f"html-card-{width}.png", (width, height), tmp)
            shoot(page, HERE / f"html-compare-{width}.png", (width, height), tmp)

        audit_page(tmp)
        for name, args in TERMINAL.items():
            terminal(args, HERE / name, tmp)
    print("wrote", *sorted(HERE.glob("html-*.png")), *sorted(HERE.glob("audit-*.png")), *(HERE / name for name in TERMINAL))


if __name__ == "__main__":
    main()
