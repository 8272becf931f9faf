"""W&B local run folders (`wandb/run-<date>-<id>/`, `offline-run-...`, or a bare `wandb/`).

Two generations of layout:

* old (wandb < 0.10): `wandb-history.jsonl`, `wandb-summary.json`,
  `config.yaml` directly in the run folder;
* current: `run-<id>.wandb` (binary records: history, config, summary) with
  `files/config.yaml` and `files/wandb-summary.json` beside it (offline runs
  keep config and summary only in the .wandb file).

The .wandb file is decoded without the wandb package (`wandb_schema`); a
damaged one falls back to a `wandb-history.jsonl` beside it. A run folder holding only the final summary (the .wandb file
was not kept) is read from `files/output.log`, the console output W&B keeps,
when that is a training log text_log recognises (Keras' fit() output is the
common case); otherwise it is reported as having no history. `files/`, `logs/` and `tmp/`
are W&B's own and not walked (`files/` holds copies of user files that would
show up twice).

A resumed run gets a new folder with the same run id each time it restarts
(`run-20240101_120000-abc`, `run-20240102_080000-abc`): those folders are
joined into one run, in time order, as TensorBoard joins a restarted run: a
segment that re-logs steps replaces them (the last value wins). An offline
resume restarts W&B's `_step` counter at 0; a segment that starts at step 0
after one that got beyond it is a restarted counter, not a re-log, and is
shifted to follow its predecessor (with a note). The run's exit code is the
last segment's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..model import Run, empty_scalars
from . import Claim, ReadError, Source, text_log
from .fs import is_file
from .hparams import flatten, load_config_file, unwrap_wandb
from .limits import limits_line
from .wandb_history import frame_from_rows, read_history

HISTORY = "wandb-history.jsonl"
SUMMARY = "wandb-summary.json"
#: What the run printed, which W&B keeps in files/: the curves when no history was kept.
CONSOLE = "output.log"
_OWN_DIRS = {"files", "logs", "tmp"}
#: `run-<YYYYMMDD_HHMMSS>-<id>` (or `offline-run-...`): the timestamp orders resumed segments.
_RUN_DIR = re.compile(r"^(?:offline-)?run-(?P<time>\d{8}_\d{6})-(?P<id>[A-Za-z0-9]+)$")


def _is_record_file(name: str) -> bool:
    return name.startswith("run-") and name.endswith(".wandb")


def _is_wandb_file(name: str) -> bool:
    return name.startswith("wandb-") or name.endswith(".wandb") or name.endswith(".wandb.synced") or name == "config.yaml"


def _is_run_folder(folder: Path, dirnames: list[str], filenames: list[str]) -> bool:
    if any(_is_record_file(f) for f in filenames) or HISTORY in filenames or SUMMARY in filenames:
        return True
    return "files" in dirnames and is_file(folder / "files" / SUMMARY)


def _resumed_groups(folder: Path, dirnames: list[str]) -> list[list[str]]:
    """Sibling run folders sharing a run id (a resumed run), each group in time order."""
    by_id: dict[str, list[tuple[str, str]]] = {}
    for d in dirnames:
        match = _RUN_DIR.match(d)
        if match and not (folder / d).is_symlink():
            by_id.setdefault(match["id"], []).append((match["time"], d))
    return [[d for _, d in sorted(group)] for group in by_id.values() if len(group) > 1]


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    got = Claim()
    for group in _resumed_groups(folder, dirnames):
        got.sources.append(Source("wandb_run", folder / group[0], [folder / d for d in group]))
        got.prune.update(group)
    if _is_run_folder(folder, dirnames, filenames):
        got.sources.append(Source("wandb_run", folder, [folder]))
        got.files = {f for f in filenames if _is_wandb_file(f)}
        got.prune |= _OWN_DIRS & set(dirnames)
    return got if got.sources else None


def _beside(folder: Path, name: str) -> Path | None:
    """A W&B side file, in the run folder (old layout) or its files/ (current)."""
    for candidate in (folder / name, folder / "files" / name):
        if is_file(candidate):
            return candidate
    return None


@dataclass
class _Segment:
    """What one run folder holds (a resumed run has several)."""

    #: Tidy scalar frames, in the order they were logged.
    frames: list[pl.DataFrame] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: How the segment ended (exit code or a missing exit record); only the last segment's is the run's.
    exit_notes: list[str] = field(default_factory=list)


def _read_records(folder: Path, history: Path | None, seg: _Segment) -> bool:
    """Fill `seg` from the folder's .wandb file(s); False when they could not be used."""
    from .wandb_records import read_wandb_file  # lazy: its protobuf schema loads only for a .wandb file

    used = False
    record_files = sorted(p for p in folder.iterdir() if p.is_file() and _is_record_file(p.name))
    for path in record_files:
        try:
            log = read_wandb_file(path)
        except ReadError as exc:
            if len(record_files) > 1 or history is not None:
                seg.warnings.append(str(exc))
                continue
            raise
        used = True
        seg.frames.append(frame_from_rows(log.rows))
        seg.config.update(log.config)
        stats = log.stats
        if stats.bad_chunks:
            seg.warnings.append(f"{path.name}: skipped {stats.bad_chunks} damaged block(s) (bad checksum or length)")
        if stats.broken_records or log.undecodable:
            seg.warnings.append(f"{path.name}: skipped {stats.broken_records + log.undecodable} incomplete or undecodable record(s)")
        if log.refused:
            seg.warnings.append(limits_line(path.name, log.refused, "history record"))
        if stats.truncated:
            seg.warnings.append(f"{path.name}: file ends mid-record (run killed?); kept {stats.records} complete records")
        label = f"W&B run '{log.name}'" if log.name else "W&B run"
        seg.notes.append(label + (f" (id {log.run_id})" if log.run_id else ""))
        if log.exit_code is None:
            seg.exit_notes.append(f"{path.name}: no exit record (run killed, crashed or still running)")
        elif log.exit_code != 0:
            seg.exit_notes.append(f"run exited with code {log.exit_code}")
    return used


def _read_folder(folder: Path) -> _Segment:
    seg = _Segment()
    history = _beside(folder, HISTORY)
    if not _read_records(folder, history, seg):
        if history is None:
            console = _beside(folder, CONSOLE)
            if console is not None and text_log.is_text_log(console):
                scalars, notes, warnings = text_log.read_scalars(console)
                seg.frames.append(scalars)
                seg.notes += [f"no history file: curves read from the console output {console.name}"] + notes
                seg.warnings += warnings
                return _with_config(folder, seg)
            if _beside(folder, SUMMARY) is not None:
                raise ReadError(f"{folder}: W&B run folder with final summary values only, no history (its run-*.wandb file is missing)")
            raise ReadError(f"{folder}: W&B run folder without a readable history")
        seg.frames.append(_history_frame(history, seg))
    return _with_config(folder, seg)


def _with_config(folder: Path, seg: _Segment) -> _Segment:
    """`seg` with its config flattened, from config.yaml when the records carried none."""
    seg.config = flatten(unwrap_wandb(seg.config))
    if not seg.config:
        yaml_path = _beside(folder, "config.yaml")
        if yaml_path is not None:
            seg.config = load_config_file(yaml_path, seg.warnings)
    return seg


def _history_frame(history: Path, seg: _Segment) -> pl.DataFrame:
    """A `wandb-history.jsonl` as a tidy frame; ReadError naming the file when it is empty or
    no line of it is a history row (a 0-byte or garbage file is no run without metrics)."""
    frame, bad, refused = read_history(history)
    if frame.is_empty() and history.stat().st_size == 0:
        raise ReadError(f"{history}: empty file (0 bytes), no history")
    if frame.is_empty() and (bad or refused):
        past = f", {refused} past the limits" if refused else ""
        raise ReadError(f"{history}: no line is a W&B history row ({bad} unreadable line(s){past})")
    if bad:
        seg.warnings.append(f"{history.name}: skipped {bad} unreadable line(s)")
    if refused:
        seg.warnings.append(limits_line(history.name, refused))
    return frame


def read(source: Source) -> list[Run]:
    folders, segments, failed = [], [], []
    for folder in source.files:
        try:
            segments.append(_read_folder(folder))
            folders.append(folder)
        except ReadError as exc:
            failed.append(str(exc))
    if not segments:
        raise ReadError(failed[0])
    config: dict = {}
    for seg in segments:
        config.update(seg.config)  # a resumed run may have updated its config: latest wins
    warnings = failed + [w for seg in segments for w in seg.warnings]
    notes = list(dict.fromkeys(n for seg in segments for n in seg.notes))
    if len(folders) > 1:
        notes.insert(0, f"resumed run: joined {len(folders)} folders ({', '.join(f.name for f in folders)})")
    frames = _follow_restarted_counters(segments, folders, notes)
    notes.extend(segments[-1].exit_notes)
    scalars = pl.concat(frames) if frames else empty_scalars()
    if scalars.is_empty():
        warnings.append(f"{source.path}: W&B run has no numeric history (nothing logged with wandb.log?)")
    return [Run(name="", path=str(source.path), format="wandb", scalars=scalars, config=config, warnings=warnings, notes=notes)]


def _follow_restarted_counters(segments: list[_Segment], folders: list[Path], notes: list[str]) -> list[pl.DataFrame]:
    """The segments' frames, a segment whose steps restart at 0 shifted past its predecessors.

    Only a start at exactly 0 after a predecessor that got beyond 0 counts: that is W&B's
    `_step` counter starting over (an offline `resume="allow"`). A segment starting anywhere
    else re-logs from a checkpoint and keeps its steps, so its values replace the old ones.
    """
    out: list[pl.DataFrame] = []
    end: int | None = None
    for seg, folder in zip(segments, folders):
        if not seg.frames:
            continue
        frame = pl.concat(seg.frames)
        if frame.is_empty():
            continue
        first, last = frame.get_column("step").min(), frame.get_column("step").max()
        if end is not None and end > 0 and first == 0:
            frame = frame.with_columns(pl.col("step") + (end + 1))
            notes.append(
                f"resumed run: {folder.name} restarts the step counter at 0; its steps are shifted by "
                f"{end + 1:,} to follow the previous segment"
            )
            last += end + 1
        end = last if end is None else max(end, last)
        out.append(frame)
    return out
