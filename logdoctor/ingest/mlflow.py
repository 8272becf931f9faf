"""MLflow file store: `mlruns/<experiment id>/<run id>/{meta.yaml, metrics/, params/, tags/}`.

Each file under `metrics/` is one metric (keys containing `/` become nested
folders); each line is `timestamp value step` (timestamp in ms; very old
stores write no step, then the line number is the step). `params/<key>` hold
one hyperparameter as text each; `tags/mlflow.runName` the run's display name.

An experiment folder is one source whose runs are named by `mlflow.runName`
(the run id's prefix is added when two runs share a name). A run folder given
directly is read on its own. Runs MLflow marks deleted are still read, with a
note. Run folders are not walked further (their artifacts are model files).

`log_metric` without a step writes step 0: a value logged at step 0 after the
metric had already reached later steps is a closing summary (the best model's
score, the final loss), not the curve's first point, and is left out (with a note).
"""
from __future__ import annotations

from pathlib import Path

import polars as pl

from ..model import Run, printable, tidy
from . import Claim, ReadError, Source
from .fs import files_under, is_dir, is_file, polars_source, read_regular
from .hparams import parse_scalar, read_yaml
from .stepless import number_stepless


def _is_run(folder: Path) -> bool:
    return is_file(folder / "meta.yaml") and is_dir(folder / "metrics")


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    if "meta.yaml" not in filenames:
        return None
    if "metrics" in dirnames:
        return Claim(sources=[Source("mlflow", folder, [folder])], files={"meta.yaml"}, prune=set(dirnames))
    runs = [d for d in dirnames if _is_run(folder / d)]
    if not runs:
        return None
    return Claim(sources=[Source("mlflow", folder, [folder / d for d in runs])], files={"meta.yaml"}, prune=set(runs))


def read(source: Source) -> list[Run]:
    single = source.files == [source.path]
    experiment, _ = ({}, None) if single else read_yaml(source.path / "meta.yaml")
    runs = []
    seen: set[str] = set()
    for folder in source.files:
        try:
            run = _read_run(folder)
        except OSError as exc:  # one run another user owns must not cost its experiment's others
            run = _unread(folder, f"cannot read ({exc.strerror or type(exc).__name__})")
        except Exception as exc:  # noqa: BLE001 - nor one run whose files hold what no reader foresaw
            run = _unread(folder, f"could not read MLflow run ({type(exc).__name__})")
        if single:
            run.name = ""
        elif run.name in seen:
            run.name = f"{run.name}-{folder.name[:8]}"
        seen.add(run.name)
        if experiment.get("name"):
            run.notes.append(f"MLflow experiment '{experiment['name']}'")
        runs.append(run)
    return runs


def _unread(folder: Path, why: str) -> Run:
    """A run of the experiment that could not be read: no data, one line saying why."""
    return Run(name=folder.name, path=str(folder), format="mlflow", scalars=tidy(pl.DataFrame({"metric": [], "step": [], "value": []})), warnings=[f"{folder}: {why}"])


def _text(path: Path) -> str | None:
    """A tag or param file's text (its first 64 kB), None when it is no readable file."""
    try:
        return read_regular(path, 1 << 16).decode("utf-8", errors="replace").strip()
    except OSError:
        return None


def _read_run(folder: Path) -> Run:
    meta, problem = read_yaml(folder / "meta.yaml")
    warnings = [problem] if problem else []
    notes = []
    name = _text(folder / "tags" / "mlflow.runName") or meta.get("run_name") or folder.name
    if meta.get("lifecycle_stage") == "deleted":
        notes.append("run is marked deleted in MLflow")
    frames = []
    metrics_dir = folder / "metrics"
    for path in files_under(metrics_dir):
        key = printable(path.relative_to(metrics_dir).as_posix())  # a Latin-1 file name: polars refuses its surrogates
        try:
            frames.append(_metric_file(path, key))
        except ReadError as exc:
            warnings.append(str(exc))
    params_dir = folder / "params"
    config = {}
    if params_dir.is_dir():
        for path in files_under(params_dir):
            text = _text(path)
            if text is not None:
                config[path.relative_to(params_dir).as_posix()] = parse_scalar(text)
    scalars = number_stepless(tidy(drop_closing_summaries(pl.concat(frames), notes)), notes) if frames else tidy(pl.DataFrame({"metric": [], "step": [], "value": []}))
    if scalars.is_empty() and not warnings:
        warnings.append(f"{folder}: MLflow run has no metric values")
    return Run(name=str(name), path=str(folder), format="mlflow", scalars=scalars, config=config, warnings=warnings, notes=notes)


def drop_closing_summaries(frame: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """`frame` without each metric's step-0 rows written after its last row at a later step (see
    the module doc), with a note naming the metrics that had them.

    A restart that logs from step 0 again goes on to later steps after it, so its rows stay.
    """
    last_advance = pl.col("wall_time").filter(pl.col("step") > 0).max().over("metric")
    summary = ((pl.col("step") == 0) & (pl.col("wall_time") > last_advance)).fill_null(False)
    metrics = frame.filter(summary).get_column("metric").unique(maintain_order=True).to_list()
    if not metrics:
        return frame
    more = f" (+{len(metrics) - 5} more)" if len(metrics) > 5 else ""
    notes.append(f"step-0 values logged after the curve (closing summaries) left out: {', '.join(metrics[:5])}{more}")
    return frame.filter(~summary)


def _metric_file(path: Path, key: str) -> pl.DataFrame:
    """`timestamp value [step]` lines -> tidy rows for one metric."""
    if path.stat().st_size == 0:
        return tidy(pl.DataFrame({"metric": [], "step": [], "value": []}))
    try:
        read_regular(path, 0)  # opened first: polars' own PermissionError carries no reason
        raw = pl.read_csv(polars_source(path), separator=" ", has_header=False, infer_schema=False, truncate_ragged_lines=True, glob=False)
    except OSError as exc:  # another user's file: its reason, not "not an MLflow metric file"
        raise ReadError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 - polars raises many kinds for garbage input
        raise ReadError(f"{path}: not an MLflow metric file ({type(exc).__name__})") from None
    number = lambda i: pl.col(raw.columns[i]).str.strip_chars().cast(pl.Float64, strict=False)  # noqa: E731
    if raw.width < 2:
        raise ReadError(f"{path}: not an MLflow metric file (expected 'timestamp value step' lines)")
    # a step no 64-bit integer holds (1e19, inf, nan) is no step: that line is left out, as garbage is
    step = number(2).round().cast(pl.Int64, strict=False) if raw.width >= 3 else pl.int_range(0, pl.len(), dtype=pl.Int64)
    frame = raw.select(
        pl.lit(key).alias("metric"), step.alias("step"), number(1).alias("value"), (number(0) / 1000.0).alias("wall_time")
    )
    frame = frame.drop_nulls(["step", "value"])
    if frame.is_empty() and raw.height:
        raise ReadError(f"{path}: not an MLflow metric file (no 'timestamp value step' line)")
    return tidy(frame)
