"""How long the HTML and Markdown reports take at scale (run: python benchmarks/report_scale.py [N]).

Builds N small synthetic runs (1,000 by default; a quarter with a finding)
plus one run of 200,000 points, renders the HTML report (plots included) and
prints wall and CPU times and sizes (CPU time, summed over the worker
processes, is what to compare on a shared machine: wall time there mostly
measures the neighbours). Synthetic on purpose: this measures the
renderers, not ingest or the rules.
"""
from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from logdoctor.model import Diagnosis, Finding, Run, RunDiagnosis, tidy
from logdoctor.report.html import render_html
from logdoctor.report.markdown import render_markdown


def run(name: str, points: int, seed: int) -> RunDiagnosis:
    rng = np.random.default_rng(seed)
    steps = np.arange(points)
    loss = 2.3 * np.exp(-steps / (points / 4)) + 0.2 + rng.normal(0, 0.01, points)
    frame = pl.DataFrame({"metric": ["train/loss"] * points, "step": steps, "value": loss})
    findings = []
    if seed % 4 == 0:
        findings.append(Finding("crawl", "warning", 0.8, "Loss falls too slowly", "train/loss", (0, points - 1), {"p": 0.01}))
    return RunDiagnosis(Run(name, f"/runs/{name}", "csv", tidy(frame)), {"train_loss": "train/loss"}, findings)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (worker processes), load-independent."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(label: str, fn):
    start, cpu = time.perf_counter(), _cpu()
    out = fn()
    print(f"{label}: {time.perf_counter() - start:.1f} s wall, {_cpu() - cpu:.1f} s CPU (all processes)")
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    many = Diagnosis("sweep/", [run(f"sweep/run-{i:04d}", 300, i) for i in range(n)])
    html = timed(f"HTML, {n} runs x 300 points", lambda: render_html(many))
    print(f"  {len(html) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        timed(f"Markdown + PNGs, {n} runs", lambda: render_markdown(many, plots_dir=Path(tmp) / "plots"))
    big = Diagnosis("big/", [run("big", 200_000, 1)])
    timed("HTML, one run of 200,000 points", lambda: render_html(big))


if __name__ == "__main__":
    main()
