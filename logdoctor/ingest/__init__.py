"""Discovery and reading of training logs: path -> sources -> runs.

Every format module in this package exposes two functions:

* ``claim(folder, dirnames, filenames) -> Claim | None``: look at one folder of
  the walk and claim the files (and subfolders) that form runs of its format;
* ``read(source) -> list[Run]``: turn a claimed source into runs (one file can
  hold several runs, e.g. a W&B UI export).

`discover` walks the tree once, offering each folder to the formats in
`FORMATS` order (most specific first). Claimed files are not offered to later
formats; pruned subfolders are not walked. `read_source` turns any exception a
reader raises into one clear line naming the file, so one damaged run never
costs the others.
"""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..model import Run, printable
from .fs import is_file, is_special, permission_denied, special_kind, walk

#: Files another user keeps from us named in one folder's line, at most.
_LOCKED_NAMED = 3

#: Format modules, in the order they are offered each folder. CSV layouts come
#: before TensorBoard because Lightning (CSVLogger + TensorBoardLogger) and
#: Ultralytics write the same scalars twice into one folder: csv_table claims
#: those event files with the CSV, which also carries the config. Plain-text
#: console logs come last: any structured log of a run says more than its prints.
FORMATS = (
    "wandb_run",
    "mlflow",
    "mlflow_sqlite",
    "trackio",
    "hf_trainer",
    "wandb_csv",
    "csv_table",
    "tensorboard",
    "text_log",
)


class ReadError(Exception):
    """A source that cannot be read at all; str() is the one line shown to the user."""


@dataclass
class Source:
    """Files that together make one run (or one file holding several runs)."""

    format: str
    #: The folder or file that *is* the run; run names are relative to the analysed root.
    path: Path
    files: list[Path] = field(default_factory=list)


@dataclass
class Claim:
    sources: list[Source] = field(default_factory=list)
    #: File names (in this folder) now owned and hidden from later formats.
    files: set[str] = field(default_factory=set)
    #: Subfolder names (of this folder) not to be walked further.
    prune: set[str] = field(default_factory=set)


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def _formats() -> list[tuple[str, Callable]]:
    out = []
    for name in FORMATS:
        try:
            out.append((name, _module(name).claim))
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return out


def discover(root: Path, errors: list[str] | None = None) -> Iterator[Source]:
    """Yield every run source under `root` (a folder or a single file); a folder that cannot be
    listed, and the files of a folder no format took that cannot be opened, add one line each to
    `errors` (a run hidden by permissions must not vanish silently)."""
    root = Path(root)
    formats = _formats()
    if is_file(root):
        for _, claim in formats:
            got = claim(root.parent, [], [root.name])
            if got and got.sources:
                yield from got.sources
                return
        return
    def unreadable(exc: OSError) -> None:
        if errors is not None:
            errors.append(f"{exc.filename}: cannot read folder ({exc.strerror or type(exc).__name__})")

    for folder, dirnames, filenames in walk(root, onerror=unreadable):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        here = Path(folder)
        remaining = sorted(f for f in filenames if not is_special(here / f))
        for _, claim in formats:
            try:
                got = claim(here, dirnames, remaining)
            except OSError as exc:  # an entry the claim could not look at costs that claim, not the walk
                if errors is not None:
                    errors.append(f"{exc.filename or here}: cannot read ({exc.strerror or type(exc).__name__})")
                continue
            if not got:
                continue
            yield from got.sources
            remaining = [f for f in remaining if f not in got.files]
            dirnames[:] = [d for d in dirnames if d not in got.prune]
        locked = [f for f in remaining if not f.startswith(".") and permission_denied(here / f)]
        if locked and errors is not None:
            errors.append(_locked_line(here, locked))


def _locked_line(folder: Path, names: list[str]) -> str:
    """One line for the files of a folder this user may not open (a claim that reads a file's
    head to know its format saw nothing there): each by name, or the first few and a count."""
    if len(names) == 1:
        return f"{folder / names[0]}: cannot read (Permission denied)"
    more = f" (+{len(names) - _LOCKED_NAMED} more)" if len(names) > _LOCKED_NAMED else ""
    return f"{folder}: cannot read {len(names)} files (Permission denied): {', '.join(names[:_LOCKED_NAMED])}{more}"


def run_name(path: Path, root: Path) -> str:
    """A run's display name: its path relative to the analysed root.

    '.' for the root itself, and for the run the root is one file of (PATH given as a run's
    trainer_state.json, event file, version_0/metrics.csv or .wandb file *is* that run, as the
    JSON contract says): a run is named by its folder, which is never relative to a file inside it.
    """
    where, top = Path(path).resolve(), Path(root).resolve()
    if where != top and top.is_relative_to(where):
        return "."
    try:
        rel = where.relative_to(top)
    except ValueError:
        return str(path)
    text = rel.as_posix()
    return text if text else "."


def read_source(source: Source, root: Path) -> tuple[list[Run], list[str]]:
    """Read one source; never raises. Returns (runs, error lines), every string in them printable."""
    runs, errors = _read_named(source, root)
    for run in runs:
        _make_printable(run)
    return runs, [printable(line) for line in errors]


def _read_named(source: Source, root: Path) -> tuple[list[Run], list[str]]:
    """The source's runs named relative to `root`, runs without data turned into error lines."""
    try:
        runs = _module(source.format).read(source)
    except ReadError as exc:
        return [], [str(exc)]
    except MemoryError:
        return [], [f"{source.path}: ran out of memory reading this {source.format} log"]
    except OSError as exc:  # a file of the run another user keeps, or gone since the walk: its reason, once
        return [], [f"{exc.filename or source.path}: cannot read ({exc.strerror or type(exc).__name__})"]
    except Exception as exc:  # noqa: BLE001 - a reader bug must not cost the other runs
        return [], [f"{source.path}: could not read {source.format} log ({type(exc).__name__}: {exc})"]
    runs, errors = _with_data(runs)
    base = run_name(source.path, root)
    for run in runs:
        run.name = base if not run.name else (run.name if base == "." else f"{base}/{run.name}")
        run.path = run.path or str(source.path)
    return runs, errors


def _make_printable(run: Run) -> None:
    """Control characters in the strings a log supplied become visible escapes (see `printable`);
    only the distinct metric names are escaped, and the column is rewritten by a name -> name
    mapping only when one of them changes (a per-row Python call would cost seconds on a
    million-point run)."""
    run.name = printable(run.name)
    run.path = printable(run.path)
    run.warnings = [printable(w) for w in run.warnings]
    run.notes = [printable(n) for n in run.notes]
    run.config = {printable(str(k)): printable(v) if isinstance(v, str) else v for k, v in run.config.items()}
    renamed = {m: printable(m) for m in run.metrics if printable(m) != m}
    if renamed:
        run.scalars = run.scalars.with_columns(pl.col("metric").replace(renamed))


def _with_data(runs: list[Run]) -> tuple[list[Run], list[str]]:
    """Runs holding scalar data, and one line for each that holds none: a run with nothing to
    diagnose is no healthy run, it is a source that could not be used (its reader's warnings
    say why)."""
    kept, lines = [], []
    for run in runs:
        if run.scalars.is_empty():
            lines.append("; ".join(run.warnings) or f"{run.path}: no scalar data")
        else:
            kept.append(run)
    return kept, lines


def check_root(root: Path) -> None:
    """ReadError, one line, when PATH is no file or folder this user can read: missing, behind a
    folder that cannot be entered, a file another user keeps, or a pipe or device (which never
    ends or blocks: a console log is piped to `-` instead)."""
    try:
        os.stat(root)
    except FileNotFoundError:
        raise ReadError(f"{root}: no such file or folder") from None
    except OSError as exc:
        raise ReadError(f"{root}: cannot read ({exc.strerror or type(exc).__name__})") from None
    kind = special_kind(root)
    if kind is not None:
        raise ReadError(f"{root}: {kind}, not a log file or folder (pipe a console log to `logdoctor analyze -`)")
    if is_file(root) and permission_denied(root):
        raise ReadError(f"{root}: cannot read (Permission denied)")


def load_runs(root: Path, progress: Callable[[int, int], None] | None = None) -> tuple[list[Run], list[str]]:
    """Discover and read every run under `root`; `-` reads a console log from standard input.
    `progress(done, total)` after each source read, sources found first (a bar counts from the start)."""
    if str(root) == "-":
        from .text_log import read_stream

        return [read_stream(sys.stdin.buffer)], []
    root = Path(root)
    check_root(root)
    runs: list[Run] = []
    errors: list[str] = []
    sources = list(discover(root, errors))
    for i, source in enumerate(sources):
        got, errs = read_source(source, root)
        runs.extend(got)
        errors.extend(errs)
        if progress:
            progress(i + 1, len(sources))
    errors = [printable(line) for line in errors]  # the walk's own lines name folders too
    if is_file(root) and not runs and not errors:
        # a folder walk skips files that are no log quietly; a file named explicitly deserves a reason
        errors.append(f"{root}: not a training log logdoctor recognises")
    return runs, errors
