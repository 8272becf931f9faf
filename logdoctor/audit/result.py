"""The compact, picklable per-run result an audit worker sends back.

A worker process (or a Dask worker on another machine) must not ship a run's
scalar table back: for a 1,000-run sweep that would be most of the data read.
`RunResult` keeps only what the audit report needs: the run's identity, its
roles, status and findings (already in their JSON shape), its flattened
hyperparameters for the link analysis, and a handful of loss statistics for
the per-run table, and its train and validation loss thinned to at most
`CURVE_POINTS` points each (`curves`), which the audit's HTML page overlays
and draws in each run's card. It is plain data (dicts, strings, numbers), so
it pickles cheaply and round-trips through the JSON cache unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import polars as pl

from ..model import Finding, Run, RunDiagnosis, tidy
from ..view import RunView

#: Statistics kept per run for the audit table (None when the run does not log the role).
STAT_KEYS = ("train_loss_final", "train_loss_best", "val_loss_final", "val_loss_best", "steps")
#: Points kept per loss curve (min and max of CURVE_POINTS / 2 buckets, so spikes survive): about 2 KB
#: of JSON per run (train + validation, on gen_sweep's runs), enough for an overlay of every run or a card's loss panel.
CURVE_POINTS = 200
#: Significant digits kept per curve value (as the HTML report's charts).
CURVE_DIGITS = 4
_DIGITS = f"%.{CURVE_DIGITS}g"


@dataclass
class RunResult:
    run: str
    path: str
    format: str
    roles: dict[str, str]
    status: str
    findings: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: role -> {"steps": [...], "values": [...]}: the thinned train_loss / val_loss (`thin_curve`).
    curves: dict[str, dict[str, list]] = field(default_factory=dict)

    @classmethod
    def from_diagnosis(cls, rd: RunDiagnosis, view: RunView) -> "RunResult":
        """The result of a diagnosis; `view` is the RunView it was made with (its loss arrays)."""
        losses = loss_arrays(view, rd.roles)
        return cls(
            run=rd.run.name,
            path=rd.run.path,
            format=rd.run.format,
            roles=dict(rd.roles),
            status=rd.status,
            findings=[f.to_json() for f in rd.findings],
            warnings=list(rd.run.warnings),
            params=flatten_params(rd.run.config),
            stats=loss_stats(rd.run, losses),
            curves=loss_curves(losses),
        )

    def to_json(self) -> dict[str, Any]:
        """The run's entry of the report contract (same keys as RunDiagnosis.to_json)."""
        return {
            "run": self.run,
            "path": self.path,
            "format": self.format,
            "roles": dict(self.roles),
            "status": self.status,
            "findings": [dict(f) for f in self.findings],
            "warnings": list(self.warnings),
        }

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict for JSON, sharing their values: `asdict` deep-copied every number of
        the curves and findings (8.4 M objects for 10,000 runs: 51 s of the audit's main process)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunResult":
        return cls(**data)

    @property
    def codes(self) -> set[str]:
        """Codes of the run's problems (warning or critical findings)."""
        return {f["code"] for f in self.findings if f["severity"] in ("critical", "warning")}

    @property
    def top(self) -> dict[str, Any] | None:
        return self.findings[0] if self.findings else None

    def to_run_diagnosis(self, curves: bool = True) -> RunDiagnosis:
        """A RunDiagnosis for the shared renderers; its scalars are the thinned loss curves (all a card
        draws), or none with `curves=False`, for a renderer that draws no curve (JSON: building 10,000
        runs' tables cost 5 s of a 10,000-run audit)."""
        run = Run(name=self.run, path=self.path, format=self.format, config=dict(self.params), warnings=list(self.warnings))
        parts = [] if not curves else [
            pl.DataFrame({"metric": [self.roles[role]] * len(c["steps"]), "step": c["steps"], "value": c["values"]},
                         schema={"metric": pl.Utf8, "step": pl.Int64, "value": pl.Float64})
            for role, c in self.curves.items()
            if self.roles.get(role)
        ]
        if parts:
            run.scalars = tidy(pl.concat(parts))
        findings = [
            Finding(
                code=f["code"],
                severity=f["severity"],
                confidence=f["confidence"],
                title=f["title"],
                metric=f["metric"],
                steps=None if f["steps"] is None else (f["steps"][0], f["steps"][1]),
                evidence=dict(f["evidence"]),
                causes=list(f["causes"]),
                fixes=list(f["fixes"]),
            )
            for f in self.findings
        ]
        return RunDiagnosis(run=run, roles=dict(self.roles), findings=findings)


def loss_stats(run: Run, losses: dict[str, tuple[np.ndarray | None, np.ndarray | None]]) -> dict[str, Any]:
    """Final and best train/validation loss (of `loss_arrays`) and the last step logged.

    "Final" is the value at the last step, the last one logged there.
    """
    out: dict[str, Any] = {}
    scalars = run.scalars
    for role, (steps, values) in losses.items():
        if steps is None:
            out[f"{role}_final"] = out[f"{role}_best"] = None
            continue
        last = len(steps) - 1 - int(np.argmax(steps[::-1]))  # last row logged at the largest step
        finite = values[np.isfinite(values)]
        out[f"{role}_final"] = float(values[last])
        out[f"{role}_best"] = float(finite.min()) if len(finite) else None
    out["steps"] = None if scalars.is_empty() else int(scalars.get_column("step").max())
    return out


def loss_arrays(view: RunView, roles: dict[str, str]) -> dict[str, tuple[np.ndarray | None, np.ndarray | None]]:
    """The train and validation loss as (steps, values) in logged order, (None, None) for a role the run
    does not log. Read through the diagnosis's own RunView with the roles it assigned (its index of
    the table is built already: filtering the table again cost two scans a run)."""
    out: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {}
    for role in ("train_loss", "val_loss"):
        name = roles.get(role)
        rows = view.logged(name) if name else None
        out[role] = (None, None) if rows is None or not len(rows[0]) else rows
    return out


def loss_curves(series: dict[str, tuple[np.ndarray | None, np.ndarray | None]]) -> dict[str, dict[str, list]]:
    """The train and validation loss of `loss_arrays`, each thinned by `thin_curve` (roles not logged left out)."""
    return {role: thin_curve(steps, values) for role, (steps, values) in series.items() if steps is not None}


def thin_curve(steps: np.ndarray, values: np.ndarray, points: int = CURVE_POINTS) -> dict[str, list]:
    """At most `points` finite points (each bucket's min and max: `plots.downsample`), values cut to
    `CURVE_DIGITS` significant digits, plus the first non-finite point when there is one (and the
    last, when it stays so to the end), so the page still shows where a diverged run turned NaN /
    inf and how long it ran."""
    from ..curves import first_nonfinite
    from ..report.plots import downsample

    order = np.argsort(steps, kind="stable")
    steps, values = np.asarray(steps)[order], np.asarray(values, dtype=np.float64)[order]
    x, y = downsample(steps, values, points)
    out_x, out_y = np.asarray(x, dtype=np.int64).tolist(), [float(_DIGITS % v) for v in y.tolist()]
    bad = first_nonfinite(values)
    if bad is not None:
        at = int(np.searchsorted(out_x, int(steps[bad])))
        out_x.insert(at, int(steps[bad]))
        out_y.insert(at, float(values[bad]))
        if not np.isfinite(values[-1]) and int(steps[-1]) > out_x[-1]:  # NaN / inf to the end: the run's last step too
            out_x.append(int(steps[-1]))
            out_y.append(float(values[-1]))
    return {"steps": out_x, "values": out_y}


_SCALARS = (bool, int, float, str)


def flatten_params(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config -> {"optimizer.lr": 0.003, ...}, scalars only.

    W&B stores each key as {"value": x, "desc": ...}; that wrapper is unwrapped.
    Keys starting with "_" (W&B internals) and non-scalar values are dropped:
    the link analysis compares settings, not blobs.
    """
    out: dict[str, Any] = {}
    for key, value in (config or {}).items():
        key = str(key)
        if key.startswith("_"):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and set(value) >= {"value"} and set(value) <= {"value", "desc"}:
            value = value["value"]
        if isinstance(value, dict):
            out.update(flatten_params(value, prefix=f"{name}."))
        elif isinstance(value, np.generic):
            out[name] = value.item()
        elif isinstance(value, _SCALARS) and not (isinstance(value, float) and not np.isfinite(value)):
            out[name] = value
    return out
