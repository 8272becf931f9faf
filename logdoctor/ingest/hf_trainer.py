"""Hugging Face Trainer `trainer_state.json` (its `log_history`).

Each `log_history` entry is one logging event at global step `step`: training
entries carry `loss`, `learning_rate`, `grad_norm`, `epoch`; evaluation
entries `eval_*`. Every numeric key becomes a metric at that step. The last
entry of a finished run is a summary (`train_runtime`, `train_loss` = the mean
over the whole run); it is not a point on any curve, so it goes to the notes.

`output_dir/checkpoint-N/trainer_state.json` files are snapshots of the same
history cut at step N: a folder with checkpoints is one run, read from its
most advanced state file (its own `trainer_state.json` or the latest checkpoint).
With `report_to="tensorboard"` the Trainer also writes the same log events to
`output_dir/runs/<date>_<host>/`: those are not read again as a second run.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..model import Run, no_wall_times, tidy
from . import Claim, ReadError, Source
from .fs import is_file
from .hparams import flatten
from .limits import MAX_WIDTH, TooDeep, limits_line, loads

STATE = "trainer_state.json"
_TB_DIR = "runs"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
#: Keys of `log_history` entries that are not metrics.
_NOT_METRICS = {"step", "total_flos"}
_NUMBER = (int, float)
#: Top-level keys of the state that describe the training setup.
_SETUP_KEYS = ("train_batch_size", "num_train_epochs", "max_steps", "logging_steps", "eval_steps", "save_steps")


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    checkpoints = [d for d in dirnames if _CHECKPOINT.match(d) and is_file(folder / d / STATE)]
    if STATE not in filenames and not checkpoints:
        return None
    files = ([folder / STATE] if STATE in filenames else []) + [folder / d / STATE for d in checkpoints]
    owned = {STATE} if STATE in filenames else set()
    prune = set(checkpoints)
    if _TB_DIR in dirnames and _tensorboard_twin(folder / _TB_DIR):
        prune.add(_TB_DIR)
    return Claim(sources=[Source("hf_trainer", folder, files)], files=owned, prune=prune)


def _tensorboard_twin(runs: Path) -> bool:
    """`runs/<name>/events.out.tfevents.*`: the Trainer's TensorBoard copy of log_history."""
    return next(runs.glob("*/events.out.tfevents.*"), None) is not None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"{path}: cannot read ({exc.strerror})") from None
    if not data.strip():
        raise ReadError(f"{path}: empty file")
    try:
        state = loads(data)
    except TooDeep as exc:
        raise ReadError(f"{path}: {exc}, no trainer state") from None
    except ValueError:  # includes undecodable bytes
        raise ReadError(f"{path}: not valid JSON (truncated or damaged?)") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise ReadError(f"{path}: not a Hugging Face trainer state (no 'log_history' list)")
    return state


def _step(value: Any) -> int | None:
    """A step as an int: states rewritten by other tools (or pandas) carry `10.0` for 10; None for
    anything that is no whole number a step column can hold."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if float(value).is_integer() and abs(value) < 2**63 else None


def _progress(state: dict[str, Any]) -> tuple[int, int]:
    """How far a state got: its global step, then its number of log entries."""
    step = _step(state.get("global_step"))
    return (-1 if step is None else step, len(state["log_history"]))


def read(source: Source) -> list[Run]:
    states: list[tuple[Path, dict[str, Any]]] = []
    problems: list[str] = []
    for path in source.files:
        try:
            states.append((path, _load(path)))
        except ReadError as exc:
            problems.append(str(exc))
    if not states:
        raise ReadError(problems[0] if len(problems) == 1 else f"{source.path}: no readable {STATE} ({problems[0]})")
    path, state = max(states, key=lambda ps: _progress(ps[1]))
    notes = []
    if (source.path / _TB_DIR).is_dir() and _tensorboard_twin(source.path / _TB_DIR):
        notes.append(f"TensorBoard logs in {_TB_DIR}/ repeat this log_history; not read twice")
    if len(source.files) > 1:
        notes.append(f"{len(source.files)} trainer states (checkpoints); read the most advanced: {path.relative_to(source.path)}")
    scalars, summary, refused = _history(state["log_history"])
    if summary:
        notes.append("final summary (not a curve point): " + ", ".join(f"{k}={v:.4g}" for k, v in summary.items()))
    config = flatten({k: state[k] for k in _SETUP_KEYS if k in state})
    if isinstance(state.get("trial_params"), dict):
        config.update(flatten(state["trial_params"]))
    warnings = list(problems) + ([limits_line(str(path), refused, "log_history entry")] if refused else [])
    if scalars.is_empty():
        warnings.append(f"{path}: log_history has no numeric entries")
    return [Run(name="", path=str(source.path), format="hf_trainer", scalars=scalars, config=config, warnings=warnings, notes=notes)]


def _history(log_history: list[Any]) -> tuple[pl.DataFrame, dict[str, float], int]:
    """(tidy scalars, the closing summary, entries left out for holding more than MAX_WIDTH keys).

    One pass over each entry's items, the values made floats by numpy in one go (as `float` makes
    them, overflow included): a sweep audit reads thousands of these histories."""
    refused = 0
    metric: list[str] = []
    step: list[int] = []
    value: list[int | float] = []
    summary: dict[str, float] = {}
    for entry in log_history:  # parsed JSON: a number is exactly an int or a float (a bool is neither)
        if type(entry) is not dict:
            continue
        at = entry.get("step")
        if type(at) is not int or not -(2**63) <= at < 2**63:
            at = _step(at)
            if at is None:
                continue
        if len(entry) > MAX_WIDTH:
            refused += 1
            continue
        if "train_runtime" in entry:  # the closing summary
            summary.update({k: float(v) for k, v in entry.items() if type(v) in _NUMBER and k.startswith("train_")})
            continue
        before = len(metric)
        for k, v in entry.items():
            if type(v) in _NUMBER and k not in _NOT_METRICS:
                metric.append(k)
                value.append(v)
        step.extend([at] * (len(metric) - before))
    frame = pl.DataFrame([
        pl.Series("metric", metric, dtype=pl.Categorical),
        pl.Series("step", step, dtype=pl.Int64),
        pl.Series("value", np.array(value, dtype=np.float64)),
        no_wall_times(len(metric)),
    ])
    return tidy(frame), summary, refused
