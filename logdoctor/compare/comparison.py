"""`logdoctor compare RUN BASELINE [BASELINE…]`: read both sides, diagnose each run, compare every shared
outcome metric, line up settings and findings.

The outcome metrics are those a change can make better or worse: the training and
validation loss, the accuracy or error rate, the reward (found by role, so `Loss/train`
in a TensorBoard run and `loss` in a CSV baseline are one metric). LR, gradient norm and
loss scale are settings or symptoms, not outcomes: they are not judged.

A regression is the primary loss (validation where both sides log it, else training)
or the task metric (validation accuracy or error rate) behind its baselines beyond
their band: what `--fail-on regression` exits 1 on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..diagnose import build_rules, diagnose_run
from ..ingest import ReadError, load_runs
from ..model import Finding, Run, RunDiagnosis, printable
from ..naming import display_names
from ..view import RunView
from .align import AXES, AlignError, counter, on_run_steps
from .differences import BaselineFinding, SettingDiff, baselines_only, run_only, settings_diff
from .verdict import BEHIND, MetricComparison, compare_metric

#: Roles compared, in report order.
OUTCOMES = ("val_loss", "train_loss", "val_acc", "val_err", "train_acc", "reward")
#: Task metrics, the first one compared counts for --fail-on regression beside the primary loss.
TASK_METRICS = ("val_acc", "val_err")


@dataclass
class Comparison:
    """The run against its baselines: per-metric verdicts, settings and findings that differ."""

    run: RunDiagnosis
    baselines: list[RunDiagnosis]
    axis: str
    metrics: list[MetricComparison]
    settings: list[SettingDiff]
    run_only: list[Finding]
    baselines_only: list[BaselineFinding]
    #: Outcome metrics only one side logs (one line each).
    unshared: list[str] = field(default_factory=list)
    #: Runs that logged no settings (their format carries none): left out of `settings`.
    no_settings: list[str] = field(default_factory=list)
    #: Sources that could not be read (one line each).
    skipped: list[str] = field(default_factory=list)

    @property
    def gates(self) -> list[MetricComparison]:
        """The metrics --fail-on regression looks at: the primary loss and the task metric."""
        by_role = {m.role: m for m in self.metrics}
        loss = by_role.get("val_loss") or by_role.get("train_loss")
        task = next((by_role[r] for r in TASK_METRICS if r in by_role), None)
        return [m for m in (loss, task) if m is not None]

    @property
    def regression(self) -> bool:
        return any(m.verdict == BEHIND for m in self.gates)


class CompareError(ValueError):
    """Nothing to compare (a side unreadable, RUN holding several runs, no shared metric); str() is the line."""


def read_side(path: Path) -> tuple[list[Run], list[str]]:
    """Every run under one path and the lines of what could not be read."""
    try:
        runs, errors = load_runs(path)
    except ReadError as exc:
        raise CompareError(str(exc)) from None
    if not runs:
        raise CompareError(f"{path}: {'no usable training log' if errors else 'no training log found'}")
    for run, name in zip(runs, display_names([r.name for r in runs], str(path))):
        run.name = name
    return runs, errors


def compare(run_path: Path, baseline_paths: list[Path], config: Config | None = None, axis: str = "step") -> Comparison:
    """Compare the one run under `run_path` with every run under the baseline paths (a folder of seeds
    is several baselines)."""
    if axis not in AXES:
        raise CompareError(f"unknown alignment '{axis}' (one of {', '.join(AXES)})")
    config = config or Config()
    runs, skipped = read_side(run_path)
    if len(runs) > 1:
        listed = ", ".join(r.name for r in runs[:4]) + (", …" if len(runs) > 4 else "")
        raise CompareError(f"{run_path}: holds {len(runs)} runs ({listed}); name the one to compare")
    baselines: list[Run] = []
    for path in baseline_paths:
        got, errors = read_side(path)
        if len(got) > 1:  # a folder of seeds that holds the run too (`compare seeds/s0 seeds/`): the others
            got = [b for b in got if Path(b.path).resolve() != Path(runs[0].path).resolve()]
        baselines.extend(got)
        skipped.extend(errors)
    _distinct_names(runs[0], baselines)
    rules = build_rules(config)
    diagnosed = [diagnose_run(r, config, rules) for r in (runs[0], *baselines)]
    run_rd, base_rds = diagnosed[0], diagnosed[1:]
    views = [RunView(rd.run, config.roles) for rd in diagnosed]
    metrics, unshared = _metrics(views[0], views[1:], axis)
    if not metrics:
        raise CompareError("the run and its baselines share no outcome metric over a common step range" + (f" ({'; '.join(unshared)})" if unshared else ""))
    return Comparison(
        run=run_rd,
        baselines=base_rds,
        axis=axis,
        metrics=metrics,
        settings=settings_diff(run_rd.run.config, [rd.run.config for rd in base_rds]),
        run_only=run_only(run_rd, base_rds),
        baselines_only=baselines_only(run_rd, base_rds),
        unshared=unshared,
        no_settings=[rd.run.name for rd in diagnosed if not rd.run.config],
        skipped=[printable(line) for line in skipped],
    )


def _metrics(run: RunView, baselines: list[RunView], axis: str) -> tuple[list[MetricComparison], list[str]]:
    run_counter = counter(run, axis)
    if axis != "step" and run_counter is None:
        raise AlignError(f"{run.run.name}: logs no {axis} counter to align on")
    base_counters = [counter(b, axis) for b in baselines]
    for b, c in zip(baselines, base_counters):
        if axis != "step" and c is None:
            raise AlignError(f"{b.run.name}: logs no {axis} counter to align on")
    out, unshared = [], []
    for role in OUTCOMES:
        mine = run.series(role)
        theirs = [s for s in (b.series(role) for b in baselines) if s is not None]
        if mine is None and not theirs:
            continue
        if mine is None or not theirs:
            unshared.append(f"{role.replace('_', ' ')}: only {'the baselines log' if mine is None else 'the run logs'} it")
            continue
        placed = [on_run_steps(b.series(role), c, run_counter) for b, c in zip(baselines, base_counters) if b.series(role) is not None]
        result = compare_metric(role, mine, [s for s in placed if s is not None])
        if result is None:
            unshared.append(f"{role.replace('_', ' ')}: too few points in a step range both sides logged")
        else:
            out.append(result)
    return out, unshared


def _distinct_names(run: Run, baselines: list[Run]) -> None:
    """Every run of the comparison under a name of its own: a baseline named like the run or like another
    baseline (`seed0/log.csv` in two folders) is told apart by its path."""
    seen = {run.name}
    for b in baselines:
        if b.name in seen:
            b.name = b.path
        seen.add(b.name)
