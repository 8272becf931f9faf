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

* lines with values and no counter (``train_loss.item()=2.29``, ``INFO: train
  loss:nan``, ``OVERFLOW! Skipping step. Attempted loss scale: 65536``): each is
  a record at its line's place (a line that adds new names to the record just
  before it, ``Validation perplexity: 11.5`` after an epoch's last batch, joins it);
* a header line of names over rows of numbers (a Markdown table pasted from a
  notebook, a loop's aligned table): each row a record;
* a row of Ultralytics' results.txt (`  5/299  7.9G  0.0967 0.0792 ...`, fifteen
  columns and no header; YOLOv3/v5/v7 wrote it before results.csv): its columns
  by the names results.csv gives them;
* a line holding several such records one after another (a paste that lost its
  newlines): each is read as a line of its own (`text_line.records`).

How a line is tokenised is `text_line`'s job. Each record is one row of a wide
table (counters and values as columns); csv_steps then picks the step the way it
does for a CSV (global step, else the epoch, else the line order). A perplexity
with no loss beside it gives the loss as its logarithm. Lines with numbers that
gave nothing are counted, with the first as an example, and each metric's
first line shape is a note, so `inspect` says what became what.

Which files are claimed: a folder walk meets READMEs, requirements.txt, stack
traces and data files, so a `.log` / `.txt` / `.out` file is a run only when
its first 64 KiB give a loss value to a record at least three times (each Keras
redraw counts: one long epoch can fill the whole head), and lines without a
counter count only when one line shape gives a loss three times: prose that
mentions a loss does not repeat itself. Reading
streams the file line by line, so a log of any size costs one line of memory
plus its values.
"""
from __future__ import annotations

import functools
import io
import itertools
import math
import re
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from ..model import Run
from ..roles import TOTAL_WORDS, tokens
from . import Claim, ReadError, Source, text_ending, text_templates
from .csv_steps import grain, plan
from .csv_table import step_restarts, stepless_rows, wide_to_tidy
from .text_line import Shape, extract, has_counter, normalise, number, records, role

_SUFFIXES = (".log", ".txt", ".out")
#: The name a log read from standard input goes by (`logdoctor analyze -`).
STDIN = "<stdin>"
_SNIFF_BYTES = 64 * 1024
#: Lines giving a loss value to a record a file's head must hold to be a training log.
_MIN_EVIDENCE = 3
_LOSS_ROLES = ("train_loss", "val_loss")
_EVIDENCE_ROLES = (*_LOSS_ROLES, "loss_scale")
#: A line shape with at least this many named values, seen this many times, marks a training log.
_TABLE_NAMES, _REPEATS = 3, 5
#: A line of words or numbers (not a separator like `----------`).
_TEXT = re.compile(r"[^\W_]")
_HAS_DIGIT = re.compile(r"\d")
#: Keras' epoch header, alone on its line.
_KERAS_EPOCH = re.compile(r"\s*Epoch (?P<epoch>\d+)/\d+\s*")
#: Terminal escapes (Keras 3 draws its bar bold and green, tqdm moves the cursor): no part of the text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: Keras 3's update at the last batch, before the epoch's final line: its ETA reads `0s` (Keras 2 says `ETA`).
_ZERO_ETA = re.compile(r"\s0s\s+\d+(?:s|ms|us)/step")
#: A Keras progress line: `  32/1875 [>...]`, `370/370 ━━━`, `  100/Unknown`, or the old verbose=2 ` - 5s - loss: …`;
#: a date before its time (mmengine's `10/30 22:18:02 - mmengine - INFO - ...`) is none.
_PROGRESS = re.compile(r"\s*(?:(?P<count>\d+)/(?P<target>\d+|Unknown)\s(?!\d{1,2}:\d\d)|-\s+\d+s\s+-\s)")
#: A table cell: a name (header) or a number, `%` allowed.
_CELL_NUMBER = re.compile(r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)%?", re.IGNORECASE)
_CELL_NAME = re.compile(r"[a-z_][\w./ -]*", re.IGNORECASE)
#: A cell counting up to a total (`70/1000`: the epoch) or a size with its unit (`6.73G`: memory).
_CELL_COUNT = re.compile(r"(?P<value>\d+)/\d+")
_CELL_SIZE = re.compile(r"(?P<value>\d+(?:\.\d*)?)[KMGT]i?B?", re.IGNORECASE)
#: A Markdown table's rule line (`| :---- | ---: |`).
_TABLE_RULE = re.compile(r"[\s|:-]+")
#: Perplexity names: a loss is their logarithm.
_PERPLEXITY = ("ppl", "perplexity")
_ROW_NUMBER = r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
#: A row of Ultralytics' results.txt (YOLOv3/v5/v7 before results.csv), written without a header:
#: `epoch/last  gpu_mem  box obj cls total  labels img_size  P R mAP@.5 mAP@.5:.95  val box obj cls`.
_YOLO_ROW = re.compile(
    rf"^[ \t]*(\d+)/\d+[ \t]+[\d.]+[KMG]?" + rf"[ \t]+({_ROW_NUMBER})" * 13 + r"[ \t]*$", re.IGNORECASE | re.MULTILINE
)
#: Its columns after the epoch and the memory, by the names results.csv gives them later.
_YOLO_NAMES = (
    "train/box_loss", "train/obj_loss", "train/cls_loss", "train/total_loss", "labels", "img_size",
    "metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95",
    "val/box_loss", "val/obj_loss", "val/cls_loss",
)


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
    """True when the file's first 64 KiB read as a training log (see the module doc), by the line
    families or else by their numeric templates (`text_templates`), or when a loss is printed at
    least once and the file ends on the error that stopped the run (a short paste of a crash)."""
    head = _head(path)
    if not head:
        return False
    evidence = _head_evidence(head)
    return (
        evidence >= _MIN_EVIDENCE
        or _templates_of(head.split("\n")) is not None
        or (evidence > 0 and _ending_of(_tail(path)) is not None)
    )


def _templates_of(lines: Iterable[str]) -> list[text_templates.Template] | None:
    """`text_templates.loss_templates` over lines as a terminal shows them."""
    return text_templates.loss_templates(display(_ANSI.sub("", ascii_forms(line))) for line in lines)


def is_text_log_head(head: str) -> bool:
    """The line-family test of `is_text_log` on text already read (stdin is read once)."""
    return _head_evidence(head) >= _MIN_EVIDENCE


def _head_evidence(head: str) -> int:
    """Lines of the text that give a loss value to a record, counted up to `_MIN_EVIDENCE`."""
    head = ascii_forms(head)
    if not _HAS_DIGIT.search(head) or not (has_counter(head) or _LOSS_WORD.search(head) or _YOLO_ROW.search(head)):
        return 0  # label files, requirements, prose: one scan says no
    parser = _Parser()
    for line in _ANSI.sub("", head).split("\n"):
        for part in line.split("\r"):
            parser.feed(part.replace("\b", ""))
            if parser.evidence >= _MIN_EVIDENCE:
                return parser.evidence
    return parser.evidence


#: A counter word without its number (`at step ?`, `epoch finished`): the line names a step it does not give.
#: A logging prefix's `file.py:line:function` is no such word (DeepSpeed's `[stage2.py:1628:step] ... OVERFLOW!`).
_COUNTER_WORD = re.compile(r"(?<!\d:)\b(?:epoch|step|iteration|iter)s?\s*[:=#]?\s*[^\d\s.,;!]", re.IGNORECASE)
_LOSS_WORD = re.compile(r"loss|xent|ppl|perplexity|mse|mae|scale", re.IGNORECASE)
#: A rank tag at a line's start (`[rank3]:`, `[Rank 0]`, `rank=3`, torchrun's `[default3]:`): every rank
#: of a distributed run may print the same steps.
RANK_TAG = re.compile(r"(?:^|[\s\[(])(?:rank\s*[:=#]?\s*|default)(\d+)\b", re.IGNORECASE)
#: Characters from a line's start a rank tag is looked for in (a logging prefix comes first).
_RANK_REACH = 80
#: A host name before a colon at a line's start (pdsh and the DeepSpeed launcher: `10.0.0.3: ...`,
#: `worker-2: ...`): an address, or a name holding a digit that is no counter word (`epoch1:`).
HOST_TAG = re.compile(r"^\s*((?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][\w-]*\d[\w-]*)\s*:\s")
_NO_HOST = {"epoch", "epochs", "step", "steps", "iter", "iters", "iteration", "batch", "train", "val", "valid", "test", "eval", "gpu", "cuda"}
#: More distinct host names than this are no hosts (a line-numbered listing is not a cluster).
_MAX_HOSTS = 64


def source_of(line: str) -> tuple[str, int | str] | None:
    """Which process printed a line, where it says: ("rank", N) for a rank tag, else ("host", name)
    for a host prefix, else None."""
    tag = RANK_TAG.search(line, 0, _RANK_REACH)
    if tag:
        return ("rank", int(tag[1]))
    host = HOST_TAG.match(line)
    if host and re.sub(r"[\d_-]", "", host[1]).lower() not in _NO_HOST:
        return ("host", host[1])
    return None
#: A NaN loss said in words (`Stopping epoch because loss is NaN`, `NaN loss detected`, `loss became
#: inf`): a NaN point of the log's total loss at the step the line gives, or, with no counter on it,
#: after the last record when no value follows it (see `_Parser.closing_nan`).
NAN_STATEMENT = re.compile(
    r"\bloss(?:es)?\s+(?:is|was|are|were|became|becomes|turned|turns|went|goes|got)\s+(?:to\s+)?(?:nan|inf(?:inite|inity)?)\b"
    r"|\b(?:nan|inf)\s+loss(?:es)?\b",
    re.IGNORECASE,
)


#: Full-width forms (U+FF01-FF5E) -> ASCII, the ideographic space -> a space: a loop that prints
#: Chinese labels writes `Loss：1.98` and `训练次数：100，` with the CJK colon and comma.
_FULL_WIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}


def ascii_forms(text: str) -> str:
    """The text with full-width punctuation, digits and letters as their ASCII forms."""
    return text if text.isascii() else text.translate(_FULL_WIDTH)


def _display_lines(lines: Iterator[bytes]) -> Iterator[str]:
    """Lines as a terminal shows them: the last redraw of each (`\\r`, `\\b` undone)."""
    for raw in lines:
        text = ascii_forms(raw.decode("utf-8", errors="replace"))
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        yield display(text.rstrip("\n"))


def display(text: str) -> str:
    """One line (escapes removed) as a terminal shows it: its last redraw, backspaces dropped."""
    if "\r" not in text and "\b" not in text:
        return text if text.strip(" \t") else ""
    parts = text.split("\r")
    return next((p for p in reversed(parts) if p.strip("\b \t")), "").replace("\b", "")


@dataclass
class Wide:
    """Records as columns (counters and values), in `columns` order: most in `frame`, one row per
    record; a value given on few records as its rows and values in `sparse` (the column-wise
    reading's, see `text_log_columns._SPARSE`), read into the tidy table as if it were a column."""

    frame: pl.DataFrame
    sparse: dict[str, tuple[np.ndarray, np.ndarray]]
    columns: list[str]


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


@dataclass
class _Table:
    """A header line's names, waiting for rows of as many numbers."""

    names: list[str]
    pipes: bool


class _Parser:
    """Display lines -> records, kept as long arrays (row, name id, value) so a huge log stays small."""

    def __init__(self) -> None:
        self.rows, self.ids, self.values = array("q"), array("q"), array("d")
        self.names: dict[str, int] = {}
        self.record: _Record | None = None
        self.table: _Table | None = None
        self.next_row = 0
        #: Lines that gave a record a loss value: what tells a training log from prose.
        self.evidence = 0
        #: Loss lines without a counter, by shape: evidence only once a shape repeats.
        self.stepless_shapes: Counter[str] = Counter()
        #: Lines of several named values, by shape: a shape printed _REPEATS times is a metrics line.
        self.value_shapes: Counter[str] = Counter()
        self.keras_seen = False
        self.counters_seen = False
        #: Non-blank lines since one gave a record values (the line being fed included).
        self.lines_since_record = 0
        #: Lines with a number that gave nothing, and the first of them.
        self.skipped = 0
        self.skipped_example = ""
        #: Each metric's first line shape: what `inspect` shows.
        self.patterns: dict[str, str] = {}
        #: A NaN loss said in words with no value after it yet: a point of the loss if nothing
        #: follows (`Stopping training because loss is NaN`); mid-log (`received a nan loss, setting
        #: loss value to 0`, then the trainer prints its stand-in) it is no point.
        self.closing_nan: str | None = None
        #: The process (rank or host, `source_of`) the line being fed names, and each record's (rows
        #: of several ranks or hosts: `wide` keeps one's).
        self.line_source: tuple[str, int | str] | None = None
        self.row_sources: dict[int, tuple[str, int | str]] = {}
        self.rank_note = ""

    def feed(self, line: str) -> None:
        if line.strip():
            self.lines_since_record += 1
        self.line_source = source_of(line)
        if not _HAS_DIGIT.search(line):
            stated = NAN_STATEMENT.search(line)
            if stated:
                self.closing_nan = "loss stated NaN: " + stated[0].lower()
            elif not self._maybe_header(line) and self.record is not None and self.record.gathers and _TEXT.search(line):
                self.record.gathers = False
            return
        if self._table_row(line):
            return
        yolo = _YOLO_ROW.fullmatch(line)
        if yolo:
            values = dict(zip(_YOLO_NAMES, map(number, yolo.groups()[1:])))
            self._add(self._open({"epoch": float(yolo[1])}, gathers=False), values, None, shape_text="YOLO results.txt row")
            return
        counters, values, shape = extract(line)
        if shape.glued:
            for piece in records(line):
                self.feed(piece)
            return
        stated = NAN_STATEMENT.search(line)
        if stated and not counters:  # `received a nan loss, setting loss value to 0`: a point only if nothing follows
            self.closing_nan = "loss stated NaN: " + stated[0].lower()
            return
        if stated:  # `FloatingPointError: Loss became infinite or NaN at iteration=27!`
            values = {name: value for name, value in values.items() if role(name) not in _LOSS_ROLES}
            values[self._stated_loss()] = math.nan
        self.counters_seen |= bool(counters)
        rec = self.record
        if _KERAS_EPOCH.fullmatch(line):
            self.keras_seen = True
            self._open(counters, gathers=True, keras=True)
            return
        progress = _PROGRESS.match(line)
        if progress:
            if rec is not None and rec.keras:
                self._add(rec, values, shape)
                if _final(progress, line):
                    rec.keras = rec.gathers = False
            elif not self.keras_seen and values and progress["count"] is not None and not _final(progress, line):
                # fit() bars with no `Epoch N/M` kept (a paste starts mid-epoch): each redraw a batch
                self._add(self._open({"batch": float(progress["count"])}, gathers=False), values, shape)
            # else: a bar outside an open Keras epoch is evaluate() / predict(), not the epoch's
        elif counters:
            if rec is None or counters != rec.counters or rec.names & values.keys():
                rec = self._open(counters, gathers=not values)
            self._add(rec, values, shape)
        elif rec is not None and rec.gathers:
            if values:
                self._add(rec, values, shape)
            elif _TEXT.search(line):
                rec.gathers = False
        elif values and self._takes_stepless(line):
            self._stepless(values, shape)
        elif _TEXT.search(line):
            self._skip(line)

    def _stated_loss(self) -> str:
        """The loss a NaN said in words is a point of: the log's own total training loss so far (a
        name of one word or with a total word, `loss`, `total_loss`, before a part, `loss_cls`),
        else `loss`."""
        seen = [name for name in self.names if role(name) == "train_loss"]
        return min(seen, key=lambda n: (len(tokens(n)) > 1 and not TOTAL_WORDS & set(tokens(n)), len(tokens(n))), default="loss")

    def _takes_stepless(self, line: str) -> bool:
        """A line of values without a counter is a point when the log has no counters at all, or
        when it comes right after a record's line (an epoch's summary, an overflow between steps);
        a summary after other text (`Best val Acc: 0.93` after `Training complete`) or a line that
        names a step it does not give (`at step ?`) is not."""
        if _COUNTER_WORD.search(line):
            return False
        return not self.counters_seen or self.lines_since_record == 1

    def _stepless(self, values: dict[str, float], shape: Shape) -> None:
        """A line of values without a counter: it joins the record before it when it only adds names
        to it, else it is a record of its own under the last counters seen (none: the line order is
        its step)."""
        rec = self.record
        if rec is None or rec.names & values.keys() or not rec.names:
            rec = self._open(dict(rec.counters) if rec is not None else {}, gathers=False)
        seen = 0
        if any(_is_evidence(name) for name in values):
            self.stepless_shapes[shape.text] += 1
            seen = self.stepless_shapes[shape.text]
        # a shape's lines count once it repeats: all of them at the third, then one by one
        self._add(rec, values, shape, evidence=_MIN_EVIDENCE if seen == _MIN_EVIDENCE else int(seen > _MIN_EVIDENCE))

    def _maybe_header(self, line: str) -> bool:
        """A line of names only (a table's header) starts a table; True when it did."""
        names = _header_names(line)
        if names is None:
            if self.table is not None and _TEXT.search(line) and not _TABLE_RULE.fullmatch(line):
                self.table = None
            return False
        if not is_table_header(names):
            return False
        self.table = _Table(names, line.count("|") >= 2)
        return True

    def _table_row(self, line: str) -> bool:
        """A row of numbers under a table's header: a record; True when the line was one."""
        table = self.table
        if table is None:
            return False
        cells = [c.strip() for c in (line.strip().strip("|").split("|") if table.pipes else text_templates.BAR_TAIL.sub("", line).split())]
        numbers = [_cell_number(c) for c in cells]
        if len(cells) != len(table.names) or None in numbers:
            if not _TABLE_RULE.fullmatch(line):
                self.table = None
            return False
        counters, values = {}, {}
        for name, value in zip(table.names, numbers):
            (counters if grain(name) is not None else values)[name] = value
        self._add(self._open(counters, gathers=False), values, None)
        return True

    def _skip(self, line: str) -> None:
        self.skipped += 1
        if not self.skipped_example:
            self.skipped_example = line.strip()[:120]

    def _open(self, counters: dict[str, float], gathers: bool, keras: bool = False) -> _Record:
        self.record = _Record(self.next_row, counters, gathers, keras)
        if self.line_source is not None:
            self.row_sources[self.next_row] = self.line_source
        self.next_row += 1
        return self.record

    def _add(
        self, rec: _Record, values: dict[str, float], shape: Shape | None, evidence: int | None = None, shape_text: str = "table row"
    ) -> None:
        if not values:
            return
        self.closing_nan = None
        pairs = values.items() if rec.names else [*rec.counters.items(), *values.items()]
        ids = self.names
        self.rows.extend(itertools.repeat(rec.row, len(pairs)))
        self.ids.extend([ids[name] if name in ids else ids.setdefault(name, len(ids)) for name, _ in pairs])
        self.values.extend([value for _, value in pairs])
        if not self.patterns.keys() >= values.keys():
            for name in values:
                self.patterns.setdefault(name, shape.text if shape is not None else shape_text)
        rec.names |= values.keys()
        self.lines_since_record = 0
        if evidence is None:
            evidence = any(_is_evidence(name) for name in values)
        if shape is not None and len(values) >= _TABLE_NAMES:
            # a line of several named values printed again and again is a metrics line even when
            # no name says loss (YOLACT's `B: 5.495 | C: 3.668 | M: 6.919 | T: 17.647`)
            self.value_shapes[shape.text] += 1
            if self.value_shapes[shape.text] == _REPEATS:
                evidence = _MIN_EVIDENCE
        self.evidence += evidence

    def _one_source(self) -> tuple[str, int | str] | None:
        """The process whose lines are read when several printed theirs: the lowest rank, else the
        first host name in order (from 2 to `_MAX_HOSTS` hosts); None when one process printed."""
        ranks = {value for kind, value in self.row_sources.values() if kind == "rank"}
        if len(ranks) > 1:
            return ("rank", min(ranks))
        hosts = {value for kind, value in self.row_sources.values() if kind == "host"}
        return ("host", min(hosts)) if 1 < len(hosts) <= _MAX_HOSTS else None

    def finish(self) -> None:
        """The end of the lines: a NaN said in words with nothing after it is the loss's last point."""
        if self.closing_nan is not None:
            self._stepless({self._stated_loss(): math.nan}, Shape(self.closing_nan, ()))

    @property
    def has_values(self) -> bool:
        return bool(self.values)

    def wide(self) -> Wide:
        """One row per record holding values, one column per counter and name; a value given again
        in its record (a redraw) keeps the last. Built column by column with numpy: a pivot of a
        long table of millions of values costs gigabytes."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        ids = np.frombuffer(self.ids, dtype=np.int64)
        values = np.frombuffer(self.values, dtype=np.float64)
        keep = self._one_source()
        if keep is not None:
            # every rank (or host) printed its lines: one's are the run's (the others repeat or shadow them)
            other = np.array([row for row, source in self.row_sources.items() if source[0] == keep[0] and source != keep], dtype=np.int64)
            mine = ~np.isin(rows, other)
            rows, ids, values = rows[mine], ids[mine], values[mine]
            count = len({source for source in self.row_sources.values() if source[0] == keep[0]})
            self.rank_note = f"lines of {count} {keep[0]}s: {keep[0]} {keep[1]}'s read, {len(other)} record(s) of the others left out"
        kept = np.unique(rows)
        # each name's values in feed order, grouped by one stable sort (a scan per name is
        # quadratic in a line of 20,000 names); columns built in numpy, nulls set once each
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(len(self.names) + 1))
        columns = []
        for name, i in self.names.items():
            mine = order[bounds[i] : bounds[i + 1]]
            # the last value of each row: the first occurrence in reversed order
            where, last = np.unique(rows[mine][::-1], return_index=True)
            at = np.searchsorted(kept, where)
            column, missing = np.full(len(kept), np.nan), np.ones(len(kept), dtype=bool)
            column[at], missing[at] = values[mine][::-1][last], False
            series = pl.Series(name, column)
            columns.append(series.set(pl.Series(missing), None) if missing.any() else series)
        return Wide(pl.DataFrame(columns), {}, list(self.names))


def _header_names(line: str) -> list[str] | None:
    """The names of a line of names only (`|`-separated or aligned), else None."""
    pipes = line.count("|") >= 2
    cells = [c.strip() for c in (line.strip().strip("|").split("|") if pipes else line.split())]
    if len(cells) < 2 or not all(cells) or not all(_CELL_NAME.fullmatch(c) for c in cells):
        return None
    return [normalise(c) for c in cells]


def _cell_number(cell: str) -> float | None:
    """A table cell's number: plain or a percentage, the count of `70/1000`, the size of `6.73G`;
    None for any other text."""
    if _CELL_NUMBER.fullmatch(cell):
        return number(cell.rstrip("%"))
    m = _CELL_COUNT.fullmatch(cell) or _CELL_SIZE.fullmatch(cell)
    return number(m["value"]) if m else None


def is_table_header(names: list[str] | None) -> bool:
    """Whether a line's names head a table of numbers: a loss among them, and a counter."""
    return names is not None and any(role(n) in _LOSS_ROLES for n in names) and any(grain(n) is not None for n in names)


@functools.lru_cache(maxsize=4096)
def _is_evidence(name: str) -> bool:
    """A value only a training log prints: a loss, a perplexity, a loss scale."""
    return role(name) in _EVIDENCE_ROLES or name.rsplit("_", 1)[-1] in _PERPLEXITY


def _final(progress: re.Match, line: str) -> bool:
    """True for an epoch's final progress line: verbose=2's only line, or the bar at its target
    with no ETA left (Keras 2 writes `ETA: 0s`, Keras 3 a bare `0s`, on the last batch's update,
    before the epoch's final line adds the validation values)."""
    if progress["count"] is None:
        return True
    keras3_last_batch = "━" in line and _ZERO_ETA.search(line)
    return progress["count"] == progress["target"] and "ETA" not in line and not keras3_last_batch


def _loss_from_perplexity(wide: Wide) -> tuple[Wide, list[str]]:
    """With no loss logged, a perplexity's logarithm is the loss (`ppl` -> `loss`,
    `validation_perplexity` -> `validation_loss`); the perplexity stays a metric of its own."""
    if any(role(c) in _LOSS_ROLES for c in wide.columns):
        return wide, []
    added, notes = [], []
    for column in list(wide.columns):
        words = column.split("_")
        if words[-1] not in _PERPLEXITY:
            continue
        name = "_".join(words[:-1] + ["loss"])
        if name in wide.columns or role(name) not in _LOSS_ROLES:
            continue
        if column in wide.sparse:
            rows, values = wide.sparse[column]
            wide.sparse[name] = (rows, pl.Series(values, dtype=pl.Float64).log().to_numpy())
        else:
            added.append(pl.col(column).log().alias(name))
        wide.columns.append(name)
        notes.append(f"{name} = ln({column}): no loss logged beside the perplexity")
    if added:
        wide.frame = wide.frame.with_columns(added)
    return wide, notes


def read(source: Source) -> list[Run]:
    path = source.files[0]
    scalars, notes, warnings = read_scalars(path)
    run = Run(name="", path=str(source.path), format="text_log", scalars=scalars, notes=notes, warnings=warnings)
    run.ending = _ending_of(_tail(path))
    return [run]


def _tail(path: Path) -> list[bytes]:
    """The last lines of a file (its last `text_ending.TAIL_BYTES`)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, io.SEEK_END)
            fh.seek(max(0, size - text_ending.TAIL_BYTES))
            return fh.read().split(b"\n")
    except OSError:
        return []


def _ending_of(raw: Iterable[bytes]) -> tuple[str, str] | None:
    """The error the lines end on (`text_ending`), judged on the lines as a terminal shows them."""
    return text_ending.ending(_display_lines(iter(raw)), _gives_loss)


def _gives_loss(line: str) -> bool:
    return any(role(name) in _LOSS_ROLES for name in extract(line)[1])


def read_stream(stream: BinaryIO, label: str = STDIN) -> Run:
    """A console log piped in (`python train.py | logdoctor analyze -`), read as it streams: only
    the first 64 KiB are held to tell a training log from other text, then line by line."""
    head = stream.read(_SNIFF_BYTES)
    text = head.decode("utf-8", errors="replace")
    tail: deque[bytes] = deque(maxlen=text_ending.TAIL_LINES * 4)  # blank lines and redraws too
    lines = (tail.append(raw) or raw for raw in itertools.chain(io.BytesIO(head + stream.readline()), stream))
    evidence = _head_evidence(text)
    if evidence >= _MIN_EVIDENCE or (evidence > 0 and len(head) < _SNIFF_BYTES and _ending_of(head.split(b"\n"))):
        scalars, notes, warnings = read_lines(lines, label)
    elif _templates_of(text.split("\n")) is not None:
        scalars, notes, warnings = _read_templates(lines, label)
    else:
        raise ReadError(
            f"{label}: no training-log lines in the first 64 KiB (stdin takes a console log; pass a path for other formats)"
        )
    run = Run(name=label, path=label, format="text_log", scalars=scalars, notes=notes, warnings=warnings)
    run.ending = _ending_of(tail)
    return run


def read_scalars(path: Path) -> tuple[pl.DataFrame, list[str], list[str]]:
    """A text log's tidy scalars, the notes on how it was read and warnings on rows that could not
    be placed or a counter that goes back (two trainings in one file); ReadError if it holds no value.
    A file is read column-wise (text_log_columns) unless a line's meaning there depends on the lines
    before it; then line by line."""
    from . import text_log_columns  # it builds on this module's line kinds

    try:
        with open(path, "rb") as fh:
            try:
                parsed = None if _LINE_BY_LINE_ONLY else text_log_columns.parse(fh)
                if parsed is None:
                    fh.seek(0)
                    read = read_lines(fh, str(path))
                else:
                    read = _scalars(parsed, str(path))
            except ReadError:
                read = None
            if read is None or not _has_loss(read[0]):
                return _templates_instead(fh, str(path), read)
    except OSError as exc:
        raise ReadError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    return read


#: A file the line families read no loss from is read by its templates up to this size (a paste
#: or a short log; a huge log of other numbers is left as the families read it).
_TEMPLATE_BYTES = 64 * 1024 * 1024


def _has_loss(scalars: pl.DataFrame) -> bool:
    """A loss was read, and it is no counter: a value that is a whole number rising on every line
    is the step the line printed after the loss's name (`Train loss 12001 0.166141`)."""
    losses = [m for m in scalars["metric"].unique().to_list() if role(m) in _LOSS_ROLES]
    if not losses:
        return False
    counters = scalars.filter(pl.col("metric").is_in(losses)).group_by("metric").agg(
        pl.col("value").is_finite().all()
        & (pl.col("value") == pl.col("value").round(0)).all()
        & (pl.col("value").diff().drop_nulls() > 0).all()
        & (pl.len() >= 3)
    )
    return not counters[:, 1].all()


def _templates_instead(fh: BinaryIO, label: str, read: tuple | None) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The file read by its numeric templates when that gives a loss, named so on the page where
    the families read other values (a loss guessed by its place does not replace them); else what
    the families read (ReadError when they read nothing)."""
    if fh.seek(0, io.SEEK_END) <= _TEMPLATE_BYTES:
        fh.seek(0)
        try:
            return _read_templates(fh, label, named=read is not None)
        except ReadError:
            pass
    if read is None:
        raise ReadError(f"{label}: no line with a metric value in this text log")
    return read


def _read_templates(lines: Iterator[bytes], label: str, named: bool = False) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Scalars from the numeric templates of the lines (`text_templates`); ReadError when no
    template gives a loss (or, with `named`, none the page names a loss)."""
    templates = _templates_of(raw.decode("utf-8", errors="replace").rstrip("\n") for raw in lines)
    if templates is None or (named and not text_templates.named_loss(templates)):
        raise ReadError(f"{label}: no line with a metric value in this text log")
    parser = _Parser()
    for _, text, counters, values in text_templates.records(templates):
        parser._add(parser._open(counters, gathers=False), values, None, shape_text=text)
    parser.patterns.clear()  # the template notes say what each slot became
    scalars, notes, warnings = _scalars(parser, label)
    return scalars, ["read by numeric templates: no known line family gave a loss", *text_templates.notes(templates), *notes], warnings


#: Tests set this to read every file line by line, the reference the column-wise reading must equal.
_LINE_BY_LINE_ONLY = False


def read_lines(lines: Iterator[bytes], label: str) -> tuple[pl.DataFrame, list[str], list[str]]:
    """`read_scalars` over raw lines from any source (a file, stdin), line by line."""
    parser = _Parser()
    for line in _display_lines(lines):
        parser.feed(line)
    parser.finish()
    return _scalars(parser, label)


def _scalars(parsed: _Parser, label: str) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Records (from either reading) -> tidy scalars, notes and warnings."""
    if not parsed.has_values:
        raise ReadError(f"{label}: no line with a metric value in this text log")
    wide, notes = _loss_from_perplexity(parsed.wide())
    steps = plan(wide.frame)
    wide.frame = pl.DataFrame()  # held by `steps` alone, to be handed over
    metrics = [c for c in wide.columns if c not in steps.exclude]
    warnings = []
    if steps.column is not None and metrics:
        warnings = stepless_rows(steps.frame, steps.column, metrics, wide.sparse) + step_restarts(steps.frame, steps.column)
    scalars = wide_to_tidy(steps.hand_over(), steps.column, metrics, sparse=wide.sparse)
    if scalars.is_empty():
        raise ReadError(f"{label}: no line with a metric value in this text log")
    notes = steps.notes + notes + _pattern_notes(parsed.patterns)
    if getattr(parsed, "rank_note", ""):
        notes.append(parsed.rank_note)
    if parsed.skipped:
        notes.append(f"{parsed.skipped} line(s) with numbers gave no metric, e.g. {parsed.skipped_example!r}")
    return scalars, notes, warnings


def _pattern_notes(patterns: dict[str, str]) -> list[str]:
    """Which line shape gave which metrics (digits shown as #), one note per shape."""
    by_shape: dict[str, list[str]] = {}
    for name, shape in patterns.items():
        by_shape.setdefault(shape, []).append(name)
    return [f"line {shape.strip()[:90]!r} -> {', '.join(names)}" for shape, names in by_shape.items()]
