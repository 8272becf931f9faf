"""Plain-text training logs: console output captured to a file.

Many runs leave nothing but what they printed: `python train.py > train.log`,
`nohup.out`, a notebook cell's output saved as `.txt`, W&B's `output.log`.
Two shapes cover most of them:

* Keras `model.fit(verbose=1|2)`: an ``Epoch 3/20`` line, then a progress line
  (``1875/1875 [====] - 5s 2ms/step - loss: 0.69 - val_loss: 0.70``; Keras 3
  draws ``━`` instead). On Linux Keras redraws the bar in place with ``\\b`` and
  ``\\r`` even when stdout is a file, so one physical line holds every redraw;
  only its last redraw is what a terminal would show, and the last progress
  line of an epoch is the epoch's value. A bar after the epoch's final one
  (no ``ETA``, count = target) belongs to ``evaluate()`` or ``predict()`` and
  is not the epoch's.
* lines a training loop prints or logs itself, each with a counter and values
  (``Epoch 3/35, Train Loss: 0.53, Val Acc: 81.2%``, ``epoch 3 | step 1200 |
  loss 2.31``, ``[epoch 3] train_loss=0.53``, ``Step 100: loss = 2.345``,
  HF Trainer's ``{'loss': 0.69, 'epoch': 0.01}``), behind any logging prefix;
  or a counter-only line whose values follow on lines of their own (OLMo's
  ``[step=1/15000,epoch=0]`` then ``    train/CrossEntropyLoss=2.998``).

Each counter line starts a record, one row of a wide table (counters and
values as columns); csv_steps then picks the step the way it does for a CSV
(global step, else the epoch, else the line order). Names are normalised to
lower case with spaces as `_` (``Train Loss`` -> ``train_loss``) so that roles
reads them as it reads any metric name. ``nan`` and ``inf`` are kept: they are
data. A name followed by a bare number without ``:`` or ``=`` (``loss 2.31``)
is taken only when roles knows the name: free text (``from inf to 0.69``) is
full of such pairs.

Which files are claimed: a folder walk meets READMEs, requirements.txt, stack
traces and data files, so a `.log` / `.txt` / `.out` file is a run only when
its first 64 KiB give a loss value to an epoch or step at least three times
(each Keras redraw counts: one long epoch can fill the whole head). Reading
streams the file line by line, so a log of any size costs one line of memory
plus its values.
"""
from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ..model import Run
from ..roles import classify
from . import Claim, ReadError, Source
from .csv_steps import grain, plan
from .csv_table import step_restarts, stepless_rows, wide_to_tidy

_SUFFIXES = (".log", ".txt", ".out")
_SNIFF_BYTES = 64 * 1024
#: Lines giving a loss value to an epoch or step a file's head must hold to be a training log.
_MIN_EVIDENCE = 3
_LOSS_ROLES = ("train_loss", "val_loss")
#: A log repeats the same few names on every line: classify each once.
_role = functools.lru_cache(maxsize=4096)(classify)
_grain = functools.lru_cache(maxsize=4096)(grain)

_NUMBER = r"[-+]?(?:nan|inf(?:inity)?|\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
#: What may not follow a value: more digits, a time of day or clock (`1:23`), a unit of time (`12s`, `3ms`).
_VALUE_END = r"(?!\d|[.:]\d|(?:s|ms|us|min|h)\b)"
#: One word of a metric name: dots only inside (`decode.acc_seg`), so a sentence's full stop is no part of it.
_WORD = r"[a-z_](?:[\w/@()\[\]-]|\.(?=\w))*"
#: `name: value` / `name = value` (up to four words: `Train Loss: 0.53`, quoted: `'loss': 0.69`).
_NAMED = re.compile(
    rf"(?<![\w.])['\"]?(?P<name>{_WORD}(?: {_WORD}){{0,3}})['\"]?(?P<sep>\s*[:=]\s*)(?P<value>{_NUMBER}){_VALUE_END}",
    re.IGNORECASE,
)
#: `name value` (`loss 2.31`): one space (a table aligns with many), kept only when the name has a role.
_BARE = re.compile(rf"(?<![\w.])(?P<name>{_WORD}) (?P<value>{_NUMBER}){_VALUE_END}", re.IGNORECASE)
#: Counters: `Epoch 3/20`, `Epoch [3/20]`, `epoch=3`, `[epoch 3]`, `step: 1200`, `'epoch': 0.01`, `Epoch #3`.
_COUNTER = re.compile(
    r"(?<![\w.])['\"]?(?P<name>global_step|iteration|epoch|step|iter|batch)(?![a-z])['\"]?(?:\s?[:=#]\s*|\s)?\[?\s?"
    r"(?P<value>\d+(?:\.\d+)?)(?:\s*/\s*\d+)?",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"(\d+)")
#: A line of words or numbers (not a separator like `----------`).
_TEXT = re.compile(r"[^\W_]")
#: Keras' epoch header, alone on its line.
_KERAS_EPOCH = re.compile(r"\s*Epoch (?P<epoch>\d+)/\d+\s*")
#: Terminal escapes (Keras 3 draws its bar bold and green, tqdm moves the cursor): no part of the text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: Keras 3's update at the last batch, before the epoch's final line: its ETA reads `0s` (Keras 2 says `ETA`).
_ZERO_ETA = re.compile(r"\s0s\s+\d+(?:s|ms|us)/step")
#: A Keras progress line: `  32/1875 [>...]`, `370/370 ━━━`, `  100/Unknown`, or the old verbose=2 ` - 5s - loss: …`.
_PROGRESS = re.compile(r"\s*(?:(?P<count>\d+)/(?P<target>\d+|Unknown)\s|-\s+\d+s\s+-\s)")


def _head(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    got = Claim()
    for name in filenames:
        if name.lower().endswith(_SUFFIXES) and is_text_log(folder / name):
            got.files.add(name)
            got.sources.append(Source("text_log", folder / name, [folder / name]))
    return got if got.sources else None


def is_text_log(path: Path) -> bool:
    """True when the file's first 64 KiB read as a training log (see the module doc); every redraw
    of a progress line counts, as one Keras epoch can fill the whole head with redraws."""
    head = _head(path)
    if not head or not _COUNTER.search(head):  # label files, requirements, prose: one scan says no
        return False
    parser = _Parser()
    for line in _ANSI.sub("", head).split("\n"):
        for part in line.split("\r"):
            parser.feed(part.replace("\b", ""))
            if parser.evidence >= _MIN_EVIDENCE:
                return True
    return False


def _display_lines(path: Path) -> Iterator[str]:
    """The file's lines as a terminal shows them: the last redraw of each (`\\r`, `\\b` undone)."""
    with open(path, "rb") as fh:
        for raw in fh:
            parts = _ANSI.sub("", raw.decode("utf-8", errors="replace")).rstrip("\n").split("\r")
            yield next((p for p in reversed(parts) if p.strip("\b \t")), "").replace("\b", "")


def _normalise(name: str) -> str:
    return "_".join(name.lower().split())


@dataclass
class _Record:
    """One row: the counters of the line that opened it and the values given for them."""

    row: int
    counters: dict[str, float]
    #: Opened by a counter-only line: the value lines right after it are its values, until a
    #: line of other text (a separator line or a blank one does not end them).
    gathers: bool
    #: Opened by Keras' `Epoch N/M`: progress lines are its values until the epoch's final one,
    #: whatever TensorFlow or a callback prints in between.
    keras: bool = False
    names: set[str] = field(default_factory=set)


class _Parser:
    """Display lines -> records, kept as long arrays (row, name id, value) so a huge log stays small."""

    def __init__(self) -> None:
        self.rows, self.ids, self.values = array("q"), array("q"), array("d")
        self.names: dict[str, int] = {}
        self.record: _Record | None = None
        self.next_row = 0
        #: Lines that gave a record a loss value: what tells a training log from prose.
        self.evidence = 0

    def feed(self, line: str) -> None:
        rec = self.record
        if (rec is None or not (rec.gathers or rec.keras)) and not _COUNTER.search(line):
            return  # no counter and no record to give values to: nothing this line can say
        counters, values = _extract(line)
        if _KERAS_EPOCH.fullmatch(line):
            self._open(counters, gathers=True, keras=True)
            return
        progress = _PROGRESS.match(line)
        if progress:
            # a bar outside an open Keras epoch is evaluate() / predict(), not the epoch's
            if rec is not None and rec.keras:
                self._add(rec, values)
                if _final(progress, line):
                    rec.keras = rec.gathers = False
        elif counters:
            if rec is None or counters != rec.counters or rec.names & values.keys():
                rec = self._open(counters, gathers=not values)
            self._add(rec, values)
        elif rec is not None and rec.gathers:
            if values:
                self._add(rec, values)
            elif _TEXT.search(line):
                rec.gathers = False

    def _open(self, counters: dict[str, float], gathers: bool, keras: bool = False) -> _Record:
        self.record = _Record(self.next_row, counters, gathers, keras)
        self.next_row += 1
        return self.record

    def _add(self, rec: _Record, values: dict[str, float]) -> None:
        if not values:
            return
        if not rec.names:
            for name, value in rec.counters.items():
                self._append(rec.row, name, value)
        for name, value in values.items():
            self._append(rec.row, name, value)
        rec.names |= values.keys()
        self.evidence += any(_role(name) in _LOSS_ROLES for name in values)

    def _append(self, row: int, name: str, value: float) -> None:
        self.rows.append(row)
        self.ids.append(self.names.setdefault(name, len(self.names)))
        self.values.append(value)

    def wide(self) -> pl.DataFrame:
        """One row per record holding values, one column per counter and name; a value given again
        in its record (a redraw) keeps the last. Built column by column with numpy: a pivot of a
        long table of millions of values costs gigabytes."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        ids = np.frombuffer(self.ids, dtype=np.int64)
        values = np.frombuffer(self.values, dtype=np.float64)
        kept = np.unique(rows)
        columns = []
        for name, i in self.names.items():
            mine = ids == i
            # the last value of each row: the first occurrence in reversed order
            where, last = np.unique(rows[mine][::-1], return_index=True)
            column = pl.Series(name, [], dtype=pl.Float64).extend_constant(None, len(kept))
            columns.append(column.scatter(np.searchsorted(kept, where), values[mine][::-1][last]))
        return pl.DataFrame(columns)


@dataclass(frozen=True)
class _Slot:
    """Where one value sits in a line shape: `prefix`, digit runs `first` to `last` with the text
    between them, `suffix` (a value without digits, `nan`, is `const`)."""

    counter: bool
    name: str
    first: int = -1
    last: int = -1
    prefix: str = ""
    suffix: str = ""
    const: float = 0.0


#: Line shapes read so far (the text between digit runs) -> their slots.
_SHAPES: dict[str, list[_Slot]] = {}
_MAX_SHAPES = 4096


def _extract(line: str) -> tuple[dict[str, float], dict[str, float]]:
    """The counters and the values of a line. A log repeats a few line shapes that differ only in
    their digits, so each shape is parsed once and its values are then cut out by digit run: the
    full patterns cost tens of microseconds a line, a 300 MB log has three million lines."""
    parts = _DIGITS.split(line)  # text, digits, text, digits, ..., text
    shape = "#".join(parts[0::2])
    slots = _SHAPES.get(shape)
    if slots is None:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        slots = _SHAPES[shape] = _slots(line, parts)
    counters: dict[str, float] = {}
    values: dict[str, float] = {}
    for slot in slots:
        if slot.first < 0:
            value = slot.const
        else:
            value = _number(slot.prefix + "".join(parts[2 * slot.first + 1 : 2 * slot.last + 2]) + slot.suffix)
        (counters if slot.counter else values)[slot.name] = value
    return counters, values


def _slots(line: str, parts: list[str]) -> list[_Slot]:
    """Parse one line with the full patterns: its counters, then its `name: value` pairs, then its
    `name value` pairs with a role, each as a slot of its shape (`parts`: the line split around
    its digit runs)."""
    found: dict[tuple[bool, str], tuple[int, int]] = {}
    for m in _COUNTER.finditer(line):
        found.setdefault((True, m["name"].lower()), m.span("value"))
    # counters blanked out (same length, so spans still fit the line) before names are looked for
    rest = _COUNTER.sub(lambda m: " " * len(m.group()), line)
    for m in _NAMED.finditer(rest):
        if m["sep"] == ":" and m["value"].isdigit():
            continue  # `train.py:417`, `host:0`: a logging prefix's file:line or a rank, no metric
        found[(False, _normalise(m["name"]))] = m.span("value")
    for m in _BARE.finditer(rest):
        key = (False, _normalise(m["name"]))
        if key not in found and _role(key[1]) is not None:
            found[key] = m.span("value")
    found = _carry_split(found)
    offsets = np.cumsum([0] + [len(p) for p in parts])  # parts[k] spans offsets[k]:offsets[k + 1]
    slots = []
    for (counter, name), (start, end) in found.items():
        if not counter and _grain(name) is not None:
            continue  # a counter in a form the counter pattern does not read (`total_steps: 100`) is no metric
        inside = [k // 2 for k in range(1, len(parts), 2) if offsets[k] >= start and offsets[k + 1] <= end]
        if not inside:
            slots.append(_Slot(counter, name, const=_number(line[start:end])))
        else:
            first, last = inside[0], inside[-1]
            prefix, suffix = line[start : offsets[2 * first + 1]], line[offsets[2 * last + 2] : end]
            slots.append(_Slot(counter, name, first, last, prefix, suffix))
    return slots


#: Words that open a line for one data split (`train Loss: 0.58 Acc: 0.68`, then `val Loss: …`).
_SPLITS = {"train", "training", "val", "valid", "validation", "eval", "evaluation", "test", "dev"}


def _carry_split(found: dict[tuple[bool, str], tuple[int, int]]) -> dict[tuple[bool, str], tuple[int, int]]:
    """A line whose first value is named for a split (`train Loss`, `val Loss`) gives that split to
    the names after it that have none: PyTorch's transfer-learning tutorial prints `train Loss: …
    Acc: …` then `val Loss: … Acc: …`, and the validation `acc` must not overwrite the training one."""
    named = sorted((span[0], name) for (counter, name), span in found.items() if not counter)
    split = named[0][1].split("_")[0] if named else ""
    if split not in _SPLITS:
        return found
    out = {}
    for (counter, name), span in found.items():
        if not counter and not _SPLITS & set(name.split("_")):
            name = f"{split}_{name}"
        out[(counter, name)] = span
    return out


def _final(progress: re.Match, line: str) -> bool:
    """True for an epoch's final progress line: verbose=2's only line, or the bar at its target
    with no ETA left (Keras 2 writes `ETA: 0s`, Keras 3 a bare `0s`, on the last batch's update,
    before the epoch's final line adds the validation values)."""
    if progress["count"] is None:
        return True
    keras3_last_batch = "━" in line and _ZERO_ETA.search(line)
    return progress["count"] == progress["target"] and "ETA" not in line and not keras3_last_batch


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def read(source: Source) -> list[Run]:
    path = source.files[0]
    scalars, notes, warnings = read_scalars(path)
    return [Run(name="", path=str(source.path), format="text_log", scalars=scalars, notes=notes, warnings=warnings)]


def read_scalars(path: Path) -> tuple[pl.DataFrame, list[str], list[str]]:
    """A text log's tidy scalars, the notes on how its steps were chosen and warnings on rows that
    could not be placed or a counter that goes back (two trainings in one file); ReadError if it
    holds no value."""
    parser = _Parser()
    try:
        for line in _display_lines(path):
            parser.feed(line)
    except OSError as exc:
        raise ReadError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if not parser.values:
        raise ReadError(f"{path}: no epoch or step line with a metric value in this text log")
    steps = plan(parser.wide())
    metrics = [c for c in steps.frame.columns if c not in steps.exclude]
    scalars = wide_to_tidy(steps.frame, steps.column, metrics)
    if scalars.is_empty():
        raise ReadError(f"{path}: no epoch or step line with a metric value in this text log")
    warnings = []
    if steps.column is not None:
        warnings = stepless_rows(steps.frame, steps.column, metrics) + step_restarts(steps.frame, steps.column)
    return scalars, steps.notes, warnings
