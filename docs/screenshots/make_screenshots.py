"""Regenerate the README screenshots from sample_runs/ (needs Chromium on PATH).

    python docs/screenshots/make_screenshots.py

Both show a showcase of the sample runs (the worst run per distinct top
finding, plus a healthy one) so one screen holds the index and whole runs:

* html-report.png: the top of the HTML report as headless Chromium renders it;
* terminal-report.png: exactly what `logdoctor analyze` prints at 80 columns
  for the same runs (the CLI's own renderer, exported by rich as SVG and
  rasterised by Chromium).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from logdoctor import analyze
from logdoctor.report.html import render_html
from logdoctor.report.terminal import render_terminal
from logdoctor.report.text import by_severity

HERE = Path(__file__).parent
SAMPLES = HERE.parents[1] / "sample_runs"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
)


def shoot(page: Path, png: Path, size: tuple[int, int], tmp: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        sys.exit("make_screenshots: no chromium on PATH")
    subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size={size[0]},{size[1]}",
         f"--screenshot={png}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )


def showcase(runs: list, problems: int = 5) -> list:
    """The worst run for each distinct top finding (up to `problems`), then one healthy run."""
    picked, seen = [], set()
    for rd in by_severity(runs):
        key = rd.findings[0].code if rd.findings else "healthy"
        if key not in seen and (len(picked) < problems or key == "healthy"):
            picked.append(rd)
            seen.add(key)
    return picked


def main() -> None:
    diagnosis = analyze(SAMPLES)
    diagnosis.runs = showcase(diagnosis.runs)
    diagnosis.root = "sample_runs/"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        page = tmp / "report.html"
        page.write_text(render_html(diagnosis), encoding="utf-8")
        shoot(page, HERE / "html-report.png", (1100, 2300), tmp)

        console = Console(record=True, width=80, force_terminal=True, color_system="truecolor", file=open("/dev/null", "w"))
        console.print("$ logdoctor analyze sample_runs/", style="bold")
        render_terminal(diagnosis, console)
        lines = len(console.export_text(clear=False).splitlines())
        svg = tmp / "terminal.svg"
        svg.write_text(console.export_svg(title="logdoctor analyze sample_runs/"), encoding="utf-8")
        shoot(svg, HERE / "terminal-report.png", (940, 60 + 21 * lines), tmp)
    print("wrote", HERE / "html-report.png", "and", HERE / "terminal-report.png")


if __name__ == "__main__":
    main()
