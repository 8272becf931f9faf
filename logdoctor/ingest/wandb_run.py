"""W&B local run folders (`wandb/run-<date>-<id>/`, `offline-run-...`, or a bare `wandb/`).

Two generations of layout:

* old (wandb < 0.10): `wandb-history.jsonl`, `wandb-summary.json`,
  `config.yaml` directly in the run folder;
* current: `run-<id>.wandb` (binary records: history, config, summary) with
  `files/config.yaml` and `files/wandb-summary.json` beside it (offline runs
  keep config and summary only in the .wandb file).

The .wandb file is read when the wandb package is installed; otherwise a
`wandb-history.jsonl` is used if present, else the run is reported with the
install hint. `files/`, `logs/` and `tmp/` are W&B's own and not walked (a
`files/` folder holds copies of user files that would show up twice).
"""
from __future__ import annotations

from pathlib import Path

from ..model import Run
from . import Claim, ReadError, Source
from .hparams import flatten, load_config_file, unwrap_wandb
from .wandb_history import frame_from_rows, read_jsonl
from .wandb_records import MISSING_WANDB, read_wandb_file

HISTORY = "wandb-history.jsonl"
_OWN_DIRS = {"files", "logs", "tmp"}


def _is_record_file(name: str) -> bool:
    return name.startswith("run-") and name.endswith(".wandb")


def _is_wandb_file(name: str) -> bool:
    return name.startswith("wandb-") or name.endswith(".wandb") or name.endswith(".wandb.synced") or name == "config.yaml"


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    if not any(_is_record_file(f) for f in filenames) and HISTORY not in filenames:
        return None
    owned = {f for f in filenames if _is_wandb_file(f)}
    files = [folder / f for f in sorted(owned)]
    return Claim(sources=[Source("wandb_run", folder, files)], files=owned, prune=_OWN_DIRS & set(dirnames))


def _beside(folder: Path, name: str) -> Path | None:
    """A W&B side file, in the run folder (old layout) or its files/ (current)."""
    for candidate in (folder / name, folder / "files" / name):
        if candidate.is_file():
            return candidate
    return None


def read(source: Source) -> list[Run]:
    folder = source.path
    warnings: list[str] = []
    notes: list[str] = []
    record_files = sorted(f for f in source.files if _is_record_file(f.name))
    history = _beside(folder, HISTORY)
    rows: list[dict] = []
    config: dict = {}
    used_records = False
    for path in record_files:
        try:
            log = read_wandb_file(path)
        except ReadError as exc:
            if MISSING_WANDB in str(exc) and history is not None:
                notes.append(f"wandb not installed: read {history.name} instead of {path.name}")
                break
            if len(record_files) > 1 or history is not None:
                warnings.append(str(exc))
                continue
            raise
        used_records = True
        rows.extend(log.rows)
        config.update(log.config)
        stats = log.stats
        if stats.bad_chunks:
            warnings.append(f"{path.name}: skipped {stats.bad_chunks} damaged block(s) (bad checksum or length)")
        if stats.broken_records or log.undecodable:
            warnings.append(f"{path.name}: skipped {stats.broken_records + log.undecodable} incomplete or undecodable record(s)")
        if stats.truncated:
            warnings.append(f"{path.name}: file ends mid-record (run killed?); kept {stats.records} complete records")
        label = f"W&B run '{log.name}'" if log.name else "W&B run"
        notes.append(f"{label}" + (f" (id {log.run_id})" if log.run_id else ""))
        if log.exit_code is None:
            notes.append(f"{path.name}: no exit record (run killed, crashed or still running)")
        elif log.exit_code != 0:
            notes.append(f"run exited with code {log.exit_code}")
    if not used_records:
        if history is None:
            raise ReadError(f"{folder}: W&B run folder without a readable history")
        rows, bad = read_jsonl(history)
        if bad:
            warnings.append(f"{history.name}: skipped {bad} unreadable line(s)")
    config = flatten(unwrap_wandb(config))
    if not config:
        yaml_path = _beside(folder, "config.yaml")
        if yaml_path is not None:
            config = load_config_file(yaml_path, warnings)
    scalars = frame_from_rows(rows)
    if scalars.is_empty():
        warnings.append(f"{folder}: W&B run has no numeric history (nothing logged with wandb.log?)")
    return [Run(name="", path=str(folder), format="wandb", scalars=scalars, config=config, warnings=warnings, notes=notes)]
