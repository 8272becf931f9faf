"""The data every stage passes along: a run's scalars, a finding, a diagnosis.

Kept free of heavy imports (only polars/numpy) so readers, rules and renderers
can all share these types without pulling in each other's dependencies.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

#: Column layout of every run's tidy scalar table, whatever format it came from. The metric name is
#: categorical: a run has a handful of names over millions of rows, and text costs 16 bytes a row
#: (a 315 MB console log's 14 M scalars: 227 MB of names, 57 MB as categories).
SCALAR_SCHEMA = {
    "metric": pl.Categorical,
    "step": pl.Int64,
    "value": pl.Float64,
    "wall_time": pl.Float64,
}

_TIDY_COLUMNS = list(SCALAR_SCHEMA.items())

SEVERITIES = ("critical", "warning", "info")
#: C0/C1 control characters and DEL (an ESC in a metric name would drive the user's terminal), and
#: the lone surrogates that carry a non-UTF-8 file name's bytes (no encoder can write them).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\udc80-\udcff]")


def printable(text: str) -> str:
    """`text` with every control character shown as a visible escape (ESC -> `\\x1b`).

    Applied once, where runs leave the readers, to every string a log supplies (run and metric
    names, config keys and values, warnings, notes): every report format then only has to
    escape its own syntax (Markdown, HTML, rich markup).
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()) & 0xFF:02x}", text)  # a surrogate \udce9 shows its byte, \xe9
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def empty_scalars() -> pl.DataFrame:
    """An empty frame with the tidy scalar schema."""
    return pl.DataFrame(schema=SCALAR_SCHEMA)


def no_wall_times(n: int) -> pl.Series:
    """The wall_time column of a table of `n` rows whose format logs no clock: all null (built in a
    few us, so the table is tidy as made and `tidy` has nothing to add)."""
    return pl.Series("wall_time", [None], dtype=pl.Float64).new_from_index(0, n)


def metric_codes(codes: pl.Series, null: int) -> np.ndarray:
    """The metric column's category codes (its `to_physical()`) as an array, `null` where a row has
    no name; filled only where one has none (a fill is a polars call, ~40 us, on every small run)."""
    return (codes.fill_null(null) if codes.null_count() else codes).to_numpy()


def tidy(frame: pl.DataFrame) -> pl.DataFrame:
    """Coerce a reader's output to the tidy schema (adds a null wall_time if absent); a frame that
    has it already is returned as it is (the select cost 0.15 ms of every small run's read)."""
    if list(frame.schema.items()) == _TIDY_COLUMNS:
        return frame
    wall = pl.col("wall_time").cast(pl.Float64) if "wall_time" in frame.columns else pl.lit(None, dtype=pl.Float64).alias("wall_time")
    return frame.select(
        pl.col("metric").cast(pl.Categorical),
        pl.col("step").cast(pl.Int64),
        pl.col("value").cast(pl.Float64),
        wall,
    )


@dataclass
class Run:
    """One training run as read from disk, format-independent.

    `scalars` is the tidy table (metric, step, value, wall_time) in the order the
    writer produced it; `config` holds hyperparameters where the format carries
    them; `warnings` lists what could not be read (one line each).
    """

    name: str
    path: str
    format: str
    scalars: pl.DataFrame = field(default_factory=empty_scalars)
    config: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: Facts about how the data was normalised (restarts, duplicate steps...), for `inspect`.
    notes: list[str] = field(default_factory=list)
    #: The error a console log ends on, as (class, line quoted) (`ingest/text_ending.py`); None
    #: where it ends without one or the format cannot say.
    ending: tuple[str, str] | None = None

    @property
    def metrics(self) -> list[str]:
        if self.scalars.is_empty():
            return []
        return self.scalars.get_column("metric").unique(maintain_order=True).to_list()


@dataclass(frozen=True)
class Series:
    """One metric as arrays sorted by step, one value per step (what rules read)."""

    name: str
    steps: np.ndarray  # int64, strictly increasing
    values: np.ndarray  # float64, may contain NaN / inf
    #: How many raw points were merged because they shared a step.
    duplicates: int = 0

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.values)


@dataclass
class Finding:
    """One diagnosis statement with its evidence; serialises to the JSON contract."""

    code: str
    severity: str
    confidence: float
    title: str
    metric: str | None
    steps: tuple[int, int] | None
    evidence: dict[str, Any] = field(default_factory=dict)
    causes: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    #: Replay probe that would confirm the finding (rendered as part of the fixes).
    probe: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "confidence": round(float(self.confidence), 3),
            "title": self.title,
            "metric": self.metric,
            "steps": None if self.steps is None else [int(self.steps[0]), int(self.steps[1])],
            "evidence": {k: _jsonable(v) for k, v in self.evidence.items()},
            "causes": list(self.causes),
            "fixes": list(self.fixes),
        }


def _jsonable(value: Any) -> Any:
    """Numbers as plain JSON numbers (NaN/inf become strings: JSON has no NaN)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not np.isfinite(v):
            return str(v)
        return float(f"{v:.6g}")
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


@dataclass
class RunDiagnosis:
    """A run with its roles and ranked findings: what every renderer draws from."""

    run: Run
    roles: dict[str, str]
    findings: list[Finding]
    #: The did-it-learn judgement (`logdoctor.learning.Learning`), None where no judgement ran.
    learning: Any = None

    @property
    def status(self) -> str:
        severities = {f.severity for f in self.findings}
        if "critical" in severities:
            return "critical"
        if "warning" in severities:
            return "warning"
        return "healthy"

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run.name,
            "path": self.run.path,
            "format": self.run.format,
            "roles": dict(self.roles),
            "status": self.status,
            "learning": self.learning.to_json() if self.learning is not None else {"learned": None, "reason": "not judged"},
            "findings": [f.to_json() for f in self.findings],
            "warnings": list(self.run.warnings),
        }


@dataclass
class Diagnosis:
    """All runs found under one path, plus problems that belong to no run."""

    root: str
    runs: list[RunDiagnosis]
    #: Files that could not be turned into a run at all (one line each).
    errors: list[str] = field(default_factory=list)
