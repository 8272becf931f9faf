"""TensorBoard event files -> runs: discovery, multi-file merge, restarts, Keras layout, hparams.

* All event files of one folder are one run (TensorBoard's notion of a run).
* Restarts: files are taken in the order they were created (the timestamp in
  the name). When a later file logs a metric from step s on, the earlier files'
  points of that metric at steps >= s belong to the abandoned timeline and are
  dropped, as TensorBoard purges orphaned data; `run.notes` says so.
* Keras writes `run/train/` and `run/validation/` (one event file each);
  torch's `add_scalars` / `add_hparams` write event-only subfolders next to the
  main file. Those subfolders join their parent as ONE run, each metric
  prefixed by its subfolder (`train/epoch_loss`, `validation/epoch_loss`).
  Beside a main file, only subfolders that show they are such parts join:
  a split name, an `add_hparams` session (a `time.time()` name or hparams
  tags) or an `add_scalars` child (`<main tag>_<key>` holding `<main tag>`);
  any other subfolder (`seed0/`) is a run of its own, as in TensorBoard.
* hparams (the hparams plugin: torch/tensorboardX `add_hparams`, Keras
  `hp.hparams`, Lightning) and a Lightning `hparams.yaml` beside the events go
  into `run.config`.

Decoding lives in `tfevents` (scalars out of Event records) and `tfrecord`
(framing and CRC checks); this module only decides what belongs together.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from ..model import Run, empty_scalars
from . import Claim, ReadError, Source
from .fs import is_dir, is_special
from .hparams import load_config_file
from .stepless import number_stepless

#: Subfolder names that mark a Keras / estimator style split of one run.
SPLIT_NAMES = {"train", "training", "validation", "valid", "val", "eval", "evaluation", "test"}
#: Subfolders an event-only folder may still hold (Keras profiler traces).
_IGNORED_SUBDIRS = {"plugins"}
_CONFIG_FILES = ("hparams.yaml",)
#: Tags `add_hparams` writes into its session subfolder.
_HPARAMS_TAGS = {"_hparams_/experiment", "_hparams_/session_start_info"}
#: `add_hparams`'s default session folder name: `str(time.time())`.
_TIMESTAMP = re.compile(r"\d{9,}(?:\.\d+)?")
_NUMBERS = re.compile(r"(\d+)")


def is_event_file(name: str) -> bool:
    """`events.out.tfevents.<time>.<host>...` (TensorBoard looks for "tfevents"; the dots keep
    a module named `tfevents.py` out)."""
    return ".tfevents." in name and not name.startswith(".")


def _event_only(folder: Path) -> list[str] | None:
    """Event file names of a folder that holds nothing else (else None)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    events = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if is_dir(entry):
            if entry.name not in _IGNORED_SUBDIRS:
                return None
        elif is_event_file(entry.name):
            if not is_special(entry):
                events.append(entry.name)
        else:
            return None
    return sorted(events) or None


def _part_of_parent(folder: Path, sub: str, events: list[str]) -> bool:
    """Whether event-only subfolder `sub` is part of the run whose own event files are in
    `folder` (a split, an add_hparams session, an add_scalars child) rather than a run nested
    inside it; only the first records of its first file are read to tell."""
    if sub.lower() in SPLIT_NAMES or _TIMESTAMP.fullmatch(sub):
        return True
    from .tfevents import leading_tags  # the event reader (CRC tables, crc32c) loads only where event files are

    try:
        tags = leading_tags(folder / sub / events[0])
    except OSError:
        return False
    return bool(tags & _HPARAMS_TAGS) or any(sub.startswith(tag.replace("/", "_") + "_") for tag in tags)


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    own = [f for f in filenames if is_event_file(f)]
    subs = {d: names for d in dirnames if (names := _event_only(folder / d))}
    if own:
        joined = {d for d, names in subs.items() if _part_of_parent(folder, d, names)}
    else:  # a Keras-style run folder holds only its splits (and whatever else sits beside them)
        joined = set(subs) if SPLIT_NAMES & {d.lower() for d in subs} else set()
    if not own and not joined:
        return None
    files = [folder / f for f in own] + [folder / d / f for d in sorted(joined) for f in subs[d]]
    configs = [f for f in _CONFIG_FILES if f in filenames]
    files += [folder / f for f in configs]
    return Claim(sources=[Source("tensorboard", folder, files)], files=set(own) | set(configs), prune=joined)


def _file_order(path: Path) -> list:
    """Creation order: writers name files `events.out.tfevents.<time>.<host>.<pid>.<counter>`;
    numbers compare as numbers (counter 10 comes after 9)."""
    return [int(part) if part.isdigit() else part for part in _NUMBERS.split(path.name)]


def _drop_orphans(frames: list[pl.DataFrame], names: list[str], notes: list[str]) -> list[pl.DataFrame]:
    """Restarted runs: a later file's first step of a metric cuts that metric in earlier files."""
    if len(frames) < 2:
        return frames
    firsts = [dict(f.group_by("metric").agg(pl.col("step").min()).iter_rows()) for f in frames]
    out = []
    for i, frame in enumerate(frames):
        cutoff: dict[str, int] = {}
        for later in firsts[i + 1 :]:
            for metric, first in later.items():
                if metric in firsts[i]:
                    cutoff[metric] = min(first, cutoff.get(metric, first))
        if cutoff:
            cut = pl.DataFrame({"metric": list(cutoff), "_cut": list(cutoff.values())}, schema={"metric": pl.Categorical, "_cut": pl.Int64})
            kept = frame.join(cut, on="metric", how="left", maintain_order="left")
            kept = kept.filter(pl.col("_cut").is_null() | (pl.col("step") < pl.col("_cut"))).drop("_cut")
            dropped = frame.height - kept.height
            if dropped:
                notes.append(
                    f"restart: {dropped:,} point(s) of {names[i]} at or after step {min(cutoff.values()):,} "
                    "were re-logged by a later event file; the newer values are kept, as TensorBoard does"
                )
            frame = kept
        out.append(frame)
    return out


def read(source: Source) -> list[Run]:
    from .tfevents import read_event_file  # lazy: discovery of other formats never loads the event reader

    warnings: list[str] = []
    notes: list[str] = []
    config: dict = {}
    problems: list[str] = []
    groups: dict[str, list[Path]] = {}
    for path in source.files:
        if path.name in _CONFIG_FILES:
            config.update(load_config_file(path, warnings))
            continue
        rel = path.parent.relative_to(source.path).as_posix() if path.parent != source.path else ""
        groups.setdefault(rel, []).append(path)
    frames: list[pl.DataFrame] = []
    readable = 0
    for prefix in sorted(groups):
        files = sorted(groups[prefix], key=_file_order)
        group_frames, group_names = [], []
        for path in files:
            label = path.relative_to(source.path).as_posix()
            try:
                got = read_event_file(path, prefix=f"{prefix}/" if prefix else "")
            except OSError as exc:
                problems.append(f"{path}: cannot read ({exc.strerror or type(exc).__name__})")
                continue
            damage = got.damage
            problem = damage.problem()
            if problem:
                problems.append(f"{path}: {problem}")
                continue
            readable += 1
            warnings.extend(damage.lines(str(path)))
            if got.undecodable:
                warnings.append(f"{path}: {got.undecodable} record(s) with a valid CRC are not TensorBoard events; skipped")
            config.update(got.config)
            if len(got):
                group_frames.append(got.frame)
                group_names.append(label)
        frames.extend(_drop_orphans(group_frames, group_names, notes))
    if not readable:
        first = problems[0] if problems else f"{source.path}: no TensorBoard event file"
        more = f" (and {len(problems) - 1} more unreadable event file(s))" if len(problems) > 1 else ""
        raise ReadError(first + more)
    warnings.extend(problems)
    subfolders = [g for g in sorted(groups) if g]
    if subfolders:
        notes.append(f"subfolders {', '.join(subfolders)} joined into this run; their metrics carry the folder name as prefix")
    if readable > 1:
        notes.append(f"{readable} event files merged into this run")
    scalars = number_stepless(pl.concat(frames, how="vertical"), notes) if frames else empty_scalars()
    if scalars.is_empty():
        warnings.append(f"{source.path}: event files hold no scalar summaries (only graphs, histograms, images or text)")
    return [Run(name="", path=str(source.path), format="tensorboard", scalars=scalars, config=config, warnings=warnings, notes=notes)]

