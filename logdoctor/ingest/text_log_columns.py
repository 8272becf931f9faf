"""Console logs read column-wise: a long log in seconds, with the same result as line by line.

`text_log._Parser` reads a log a line at a time in Python, about 20 µs a line: a
315 MB log (3.5 million lines) took over a minute. But a training log is a few line
shapes repeated (the text between its digit runs; `text_line` parses each shape
once), so most of the work can be done a block of lines at a time in polars:

* a block of the file is cut into lines, escapes and redraws undone (lines with a
  `\\r` or `\\b` go through `text_log.display`, as line by line), blank lines dropped;
* each line's digit layout is its text with every digit marked (in numpy); each new
  shape's first line (its text with each digit run marked, as `text_line` keys it)
  is parsed by `text_line.extract`, which says which digit runs make which counter
  or value, so each value sits at a fixed place in every line of a layout and the
  values of all the block's lines are sliced out and converted at once;
* which lines make records follows the line-by-line rules in numpy: a line with
  counters and values opens a record (or joins the one before when its counters
  are the same and its names new), a line of values without a counter joins or
  follows the record before it when it comes right after one (or the log has no
  counters yet), anything else with numbers is a skipped line.

This holds only while no line's meaning depends on an open record: a counter-only
line that gathers the value lines after it, a line of several records run together,
Keras' `Epoch N/M` and progress bars, a YOLO results.txt row,
a table's header, a NaN loss said in words, lines of several ranks or hosts, or a shape whose parse would not be the same for every line of it
(the `#` a shape is keyed by stands in the line itself too; a digit outside ASCII;
a number polars does not read as Python does). A file with any of them is read
line by line instead (`parse` gives None), so both readings give the same records,
names, notes and skipped lines; a test holds them equal on every log the tests know.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np
import polars as pl

from .csv_steps import grain
from .text_line import _DIGITS, Shape, extract
from .text_log import (
    _ANSI, _COUNTER_WORD, _KERAS_EPOCH, _PROGRESS, _RANK_REACH, _YOLO_ROW, HOST_TAG, NAN_STATEMENT, RANK_TAG, Wide, _header_names, ascii_forms,
    display, is_table_header,
)

#: Bytes read at a time: a block costs about eight times this while it is read (its text, its lines, their layouts).
_BLOCK = 8 << 20
#: More digit layouts than this (a shape with each of its numbers' lengths) is no log of repeated
#: lines: read it line by line.
_MAX_LAYOUTS = 4096
_RUNS = re.compile("\x00+")
#: Values one line shape may hold to be read column-wise (a line of 20,000 values took 80 s and 600 MB).
_MAX_SLOTS = 256
#: What marks a digit run in a shape's key (a line holding it is read line by line).
_MARK = "\x00"
#: A value name given on fewer than one record in this many is kept as its values and their rows,
#: not as a column of the wide table (a validation loss every 1,000 steps of a 3.5 M-record log
#: would hold 28 MB for 3,500 values).
_SPARSE = 4

# What a non-blank line is, by its shape.
_TEXT = 0  # no digit
_COUNTED = 1  # counters and values: a record
_VALUES = 2  # values without a counter: a record when it follows one
_VALUES_NAMING_STEP = 3  # values beside a counter word without its number: skipped
_NOTHING = 4  # numbers that read as nothing: skipped


@dataclass
class _Form:
    """One line shape: what its first line read as, and the values of its lines that make records."""

    shape: Shape
    kind: int
    counters: list[str]
    values: list[str]
    #: The counters' slots, then the values' (see `text_line._Slot`).
    slots: list
    numbers: list[pl.Expr]
    #: Where each slot's text sits in the lines of each digit layout (`_Reader.layouts`) of this shape.
    spans: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    #: Per block: the record lines' numbers (their place among all record lines) and their values.
    blocks: list[pl.DataFrame] = field(default_factory=list)

    def take(self) -> pl.DataFrame:
        """All blocks as one, no longer held here: the records let each column go once read."""
        blocks, self.blocks = self.blocks, []
        return pl.concat(blocks) if blocks else pl.DataFrame()


def _form(line: str) -> _Form | None:
    """A shape's reading from its first line; None when it needs the line-by-line reading."""
    if _KERAS_EPOCH.fullmatch(line) or _PROGRESS.match(line) or _YOLO_ROW.fullmatch(line) or NAN_STATEMENT.search(line):
        return None
    counters, values, shape = extract(line)
    if shape.glued:
        return None  # several records on one line: each is read as a line of its own
    if counters and not values:
        return None  # a counter-only line: the value lines after it are its record's
    if len(shape.slots) > _MAX_SLOTS:
        return None  # a whole metrics dict on one line: an expression per value costs minutes and GBs
    if counters:
        kind = _COUNTED
    elif values:
        kind = _VALUES_NAMING_STEP if _COUNTER_WORD.search(line) else _VALUES
    else:
        kind = _NOTHING
    slots = [s for s in shape.slots if s.counter] + [s for s in shape.slots if not s.counter]
    form = _Form(shape, kind, list(counters), list(values), slots, [])
    spans = _spans(form, line)
    if spans is None:
        return None
    for j, (slot, (start, length)) in enumerate(zip(slots, spans)):
        if slot.first < 0:
            number = pl.lit(slot.const, dtype=pl.Float64)
        else:
            number = pl.col("line").str.slice(pl.col(f"s{j}"), pl.col(f"n{j}"))
            if "," in line[start : start + length]:
                number = number.str.replace_all(",", "", literal=True)
            number = number.cast(pl.Float64, strict=False)
        form.numbers.append(number.alias(f"v{j}"))
    return form


def _spans(form: _Form, line: str) -> list[tuple[int, int]] | None:
    """Where each slot's number sits in a line of the shape (start, length); None if one does not fit."""
    parts = _DIGITS.split(line)
    ends = list(itertools.accumulate(map(len, parts), initial=0))  # parts[k] is line[ends[k]:ends[k + 1]]
    spans = []
    for slot in form.slots:
        if slot.first < 0:
            spans.append((0, 0))
            continue
        if 2 * slot.last + 2 >= len(ends):
            return None
        first, last = ends[2 * slot.first + 1], ends[2 * slot.last + 2]
        if line[first - len(slot.prefix) : first] != slot.prefix or line[last : last + len(slot.suffix)] != slot.suffix:
            return None
        spans.append((first - len(slot.prefix), last + len(slot.suffix) - first + len(slot.prefix)))
    return spans


class _Reader:
    """Blocks of decoded lines -> each shape's record lines and values; records are made in `records`."""

    def __init__(self) -> None:
        self.forms: list[_Form] = []
        #: A line's digit layout (each digit marked) -> its number; the shape of each layout.
        self.layouts: dict[str, int] = {}
        self.layout_form: list[int] = []
        #: A shape's key (each digit run marked once) -> its form; the line-by-line reading's keys.
        self.by_shape: dict[str, int] = {}
        self.shape_keys: set[str] = set()
        #: The shape of each record line, in order (one array per block).
        self.record_forms: list[np.ndarray] = []
        self.record_lines = 0
        self.counters_seen = False
        #: Whether the last non-blank line gave a record values (as if so before the first line).
        self.last_gave = True
        self.skipped = 0
        self.skipped_example = ""

    def feed(self, text: str) -> bool:
        """Read a block of whole lines; False when the file needs the line-by-line reading."""
        text = ascii_forms(text)
        lines = pl.Series("line", [text]).str.split("\n").explode()
        if "\x1b" in text:
            lines = lines.str.replace_all(_ANSI.pattern, "")
        if "\r" in text or "\b" in text:
            redrawn = lines.str.contains(r"[\r\x08]").arg_true()
            lines = lines.scatter(redrawn, [display(t) for t in lines.gather(redrawn).to_list()])
        if "\x1b" in text or "\r" in text or "\b" in text:
            text = lines.str.join("\n").item()
        if _MARK in text:
            return False
        heads = lines.str.slice(0, _RANK_REACH)
        ranked = heads.str.contains(r"(?i)rank|default").any() and heads.str.extract(f"(?i){RANK_TAG.pattern}", 1).drop_nulls().n_unique() > 1
        if ranked or heads.str.extract(HOST_TAG.pattern, 1).drop_nulls().n_unique() > 1:
            return False  # lines of several ranks or hosts: the line-by-line reading keeps one's
        codes = np.frombuffer(text.encode(), dtype=np.uint8)
        if codes.size and codes.max() >= 128 and lines.str.contains(r"[\d&&[^0-9]]").any():
            return False  # a digit outside ASCII: Python and polars may not agree on it
        marked = codes.copy()
        marked[(codes >= 48) & (codes <= 57)] = 0
        layouts = pl.Series("layout", [marked.tobytes().decode()]).str.split("\n").explode()
        frame = pl.DataFrame([lines, layouts]).filter(~pl.col("line").str.contains(r"^[\s\x1c-\x1f]*$"))
        frame = frame.with_row_index("i").with_columns(digits=pl.col("layout").str.contains(_MARK, literal=True))
        for line in frame.filter(~pl.col("digits"))["line"].unique().to_list():
            if is_table_header(_header_names(line)) or NAN_STATEMENT.search(line):
                return False  # a table, or a NaN loss said in words: lines the record before them takes
        numbered = frame.filter("digits").drop("digits")
        if not self._learn(numbered):
            return False
        layout = numbered["layout"].replace_strict(self.layouts, return_dtype=pl.Int32).to_numpy()
        form = np.array(self.layout_form, dtype=np.int32)[layout]
        self._records(frame, numbered.select("i", "line", layout=layout, form=form))
        return True

    def _learn(self, numbered: pl.DataFrame) -> bool:
        """Parse each new shape's first line, place each new layout's numbers; False when a shape
        cannot be read column-wise."""
        first = numbered.unique("layout", keep="first", maintain_order=True)
        for layout, line in first.select("layout", "line").iter_rows():
            if layout in self.layouts:
                continue
            key = _RUNS.sub(_MARK, layout)
            f = self.by_shape.get(key)
            if f is None:
                form = _form(line)
                if form is None or form.shape.text != key.replace(_MARK, "#") or form.shape.text in self.shape_keys:
                    return False  # two shapes the line-by-line reading would take as one (a `#` in the text)
                f = self.by_shape[key] = len(self.forms)
                self.shape_keys.add(form.shape.text)
                self.forms.append(form)
            spans = _spans(self.forms[f], line)
            if spans is None or len(self.layouts) >= _MAX_LAYOUTS:
                return False
            self.forms[f].spans[len(self.layouts)] = spans
            self.layouts[layout] = len(self.layouts)
            self.layout_form.append(f)
        return True

    def _records(self, frame: pl.DataFrame, numbered: pl.DataFrame) -> None:
        """Which of the block's lines give a record values (see the module doc), and their values."""
        kinds = np.array([f.kind for f in self.forms], dtype=np.int8)
        kind = np.full(frame.height, _TEXT, dtype=np.int8)
        index = numbered["i"].to_numpy()
        kind[index] = kinds[numbered["form"].to_numpy()]
        counted, values = kind == _COUNTED, kind == _VALUES
        # a value line is a record line when no counter came before it or the line before gave a record values
        seen = self.counters_seen | ((np.cumsum(counted) - counted) > 0)
        place = np.arange(frame.height)
        before = np.maximum.accumulate(np.where(values, -1, place))  # the line before each run of value lines
        before_gave = np.where(before >= 0, counted[np.maximum(before, 0)], self.last_gave)
        taken = values & (~seen | before_gave)
        gives = counted | taken
        skipped = (kind >= _VALUES) & ~taken
        if skipped.any():
            if not self.skipped_example:
                self.skipped_example = frame["line"][int(np.argmax(skipped))].strip()[:120]
            self.skipped += int(skipped.sum())
        if frame.height:
            self.counters_seen |= bool(counted.any())
            self.last_gave = bool(gives[-1])
        record = numbered.filter(pl.Series(gives[index])).with_columns(
            n=pl.int_range(self.record_lines, self.record_lines + pl.len(), dtype=pl.Int64)
        )
        self.record_forms.append(record["form"].to_numpy())
        self.record_lines += record.height
        for (f,), part in record.partition_by("form", as_dict=True, maintain_order=True).items():
            form = self.forms[f]
            layout = part["layout"].to_numpy()
            places = {}
            for j, slot in enumerate(form.slots):
                if slot.first >= 0:
                    span = np.zeros((len(self.layouts), 2), dtype=np.int64)
                    for k, spans in form.spans.items():
                        span[k] = spans[j]
                    places[f"s{j}"], places[f"n{j}"] = span[layout, 0], span[layout, 1]
            form.blocks.append(part.select("n", "line").with_columns(**places).select("n", *form.numbers))

    def readable(self) -> bool:
        """Every value converted as Python would, and no name both a counter and a value."""
        for form in self.forms:
            if any(b.drop("n").null_count().pipe(sum).item() for b in form.blocks):
                return False
        counters = {c for f in self.forms for c in f.counters}
        return not counters & {v for f in self.forms for v in f.values}


@dataclass
class Records:
    """What `text_log._Parser` holds after a file, made column-wise: the same `wide()` and notes."""

    table: Wide
    patterns: dict[str, str]
    skipped: int
    skipped_example: str

    @property
    def has_values(self) -> bool:
        return self.table.frame.height > 0

    def wide(self) -> Wide:
        """The records, handed over (not held here too: see `csv_table.wide_to_tidy`)."""
        table, self.table = self.table, Wide(pl.DataFrame(), {}, [])
        return table


def parse(fh: BinaryIO) -> Records | None:
    """A log file's records read column-wise, or None when it needs the line-by-line reading."""
    reader = _Reader()
    tail = b""
    while block := fh.read(_BLOCK):
        block = tail + block
        cut = block.rfind(b"\n") + 1
        tail = block[cut:]
        if cut and not reader.feed(block[:cut].decode("utf-8", errors="replace")):
            return None
    if tail and not reader.feed(tail.decode("utf-8", errors="replace")):
        return None
    if not reader.readable():
        return None
    return _records(reader)


def _records(reader: _Reader) -> Records:
    """Record lines -> records, as `_Parser` makes them: a counted line opens a record unless its
    counters are the record's and its names new to it; a value line joins the record unless it
    repeats one of its names, then opens one under the same counters."""
    forms = reader.forms
    form = np.concatenate(reader.record_forms) if reader.record_forms else np.zeros(0, dtype=np.int32)
    reader.record_forms = []
    n = len(form)
    if n == 0:
        return Records(Wide(pl.DataFrame(), {}, []), {}, reader.skipped, reader.skipped_example)
    # each shape's values, each column let go once it is in the records (a long log's values are
    # then held about once: its shapes' columns turn into the records' one by one)
    tables = [f.take() for f in forms]
    counted = np.array([f.kind == _COUNTED for f in forms])[form]
    # each record line's counters: its own, or (a value line) those of the record before
    source = np.maximum.accumulate(np.where(counted, np.arange(n), -1))
    counter_names = list(dict.fromkeys(c for f in forms for c in f.counters))
    own = {c: np.full(n, np.nan) for c in counter_names}
    for i, f in enumerate(forms):
        if f.kind == _COUNTED and tables[i].height:
            lines = tables[i]["n"].to_numpy()
            for j, c in enumerate(f.counters):
                own[c][lines] = tables[i][f"v{j}"].to_numpy()
            tables[i] = tables[i].drop([f"v{j}" for j in range(len(f.counters))])
    counters = {c: np.where(source >= 0, own.pop(c)[np.maximum(source, 0)], np.nan) for c in counter_names}
    same = np.ones(n - 1, dtype=bool)
    for v in counters.values():
        same &= (v[1:] == v[:-1]) | (np.isnan(v[1:]) & np.isnan(v[:-1]))
    names = [frozenset(f.values) for f in forms]
    # whether two shapes share a name, for each pair of shapes that follow one another (a table
    # over the pairs, not a sort of the lines' pair codes)
    pair_of = form[:-1].astype(np.int64) * len(forms) + form[1:]
    overlaps = np.zeros(len(forms) ** 2, dtype=bool)
    seen = np.zeros(len(forms) ** 2, dtype=bool)
    seen[pair_of] = True
    for p in np.flatnonzero(seen).tolist():
        overlaps[p] = bool(names[p // len(forms)] & names[p % len(forms)])
    opens = np.ones(n, dtype=bool)
    opens[1:] = overlaps[pair_of] | (counted[1:] & ~same)
    del same, pair_of, seen, counted  # a long log's arrays are let go as soon as they are done with
    # a line that joins a record of two lines or more: only its whole set of names says
    current: frozenset[str] = frozenset()
    last = -2
    for k in np.flatnonzero(~opens).tolist():
        if k - 1 != last:
            current = names[form[k - 1]]
        if current & names[form[k]]:
            opens[k] = True
            current = names[form[k]]
        else:
            current = current | names[form[k]]
        last = k
    row = np.cumsum(opens) - 1
    rows = int(row[-1]) + 1
    order, patterns = _names(forms, form, opens, source)
    del source, form
    columns = []
    sparse: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    openers = np.flatnonzero(opens)
    del opens
    rows_of: dict[int, np.ndarray] = {}  # each shape's lines' rows, while a column of it is left
    for name in order:
        if name in counters:
            v = counters.pop(name)[openers]
            where, got = np.flatnonzero(~np.isnan(v)), v[~np.isnan(v)]
        else:
            where, got = [], []
            for i, f in enumerate(forms):
                if name in f.values and tables[i].height:
                    if i not in rows_of:
                        rows_of[i] = row[tables[i]["n"].to_numpy()]
                    where.append(rows_of[i])
                    column = f"v{len(f.counters) + f.values.index(name)}"
                    got.append(tables[i][column].to_numpy())
                    tables[i] = tables[i].drop(column)
                    if tables[i].width == 1:
                        tables[i], _ = pl.DataFrame(), rows_of.pop(i)
            where, got = (where[0], got[0]) if len(where) == 1 else (np.concatenate(where), np.concatenate(got))
            if counter_names and len(got) * _SPARSE < rows and grain(name) is None:
                # a value no step is read from, with counters beside it; its rows in order, as a
                # column would hold them (its shapes' lines come one shape after another)
                by_row = np.argsort(where, kind="stable")
                sparse[name] = (where[by_row], got[by_row])
                continue
        columns.append(pl.Series(name, [], dtype=pl.Float64).extend_constant(None, rows).scatter(where, got))
        del where, got
    return Records(Wide(pl.DataFrame(columns), sparse, order), patterns, reader.skipped, reader.skipped_example)


def _names(forms: list[_Form], form: np.ndarray, opens: np.ndarray, source: np.ndarray) -> tuple[list[str], dict[str, str]]:
    """The columns in the order the line-by-line reading first gives each (a record's counters when
    it opens, then the line's values), and each value's first line shape."""
    counters_from = np.where(source >= 0, form[np.maximum(source, 0)], -1)
    code = (form.astype(np.int64) * 2 + opens) * (len(forms) + 1) + counters_from + 1
    span = 2 * len(forms) * (len(forms) + 1)
    if span <= len(code):  # each code's first line from a table over the codes, not a sort of the lines
        first = np.full(span, len(code))
        np.minimum.at(first, code, np.arange(len(code)))
        first = first[first < len(code)]
    else:
        _, first = np.unique(code, return_index=True)
    del code
    order: dict[str, None] = {}
    patterns: dict[str, str] = {}
    for k in np.sort(first).tolist():
        if opens[k] and counters_from[k] >= 0:
            order.update(dict.fromkeys(forms[counters_from[k]].counters))
        f = forms[form[k]]
        for name in f.values:
            order.setdefault(name)
            patterns.setdefault(name, f.shape.text)
    return list(order), patterns
