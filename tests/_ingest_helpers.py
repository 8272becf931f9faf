"""What the ingest tests ask of a folder: exactly one run read cleanly, and one metric of it."""
from __future__ import annotations

from pathlib import Path

from logdoctor.ingest import load_runs
from logdoctor.model import Run, Series
from logdoctor.view import RunView


def only_run(path: Path) -> Run:
    """The single run under `path`; fails when anything was skipped or more than one run was found."""
    runs, errors = load_runs(path)
    assert errors == [] and len(runs) == 1, (errors, [r.name for r in runs])
    return runs[0]


def series(run: Run, metric: str) -> Series:
    """One metric of a run, by its logged name."""
    s = RunView(run).metric(metric)
    assert s is not None, f"{metric} not in {run.metrics}"
    return s
