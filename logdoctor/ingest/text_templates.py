"""Numeric line templates: series from console lines no family pattern knows.

`text_line` reads the line shapes trainers are known to print. A paste from a
trainer nobody listed (bare numbers one a line, a detector's per-batch rows
whose header was cut off, `Loss: Tensor Float []  0.34`, `it 40<TAB>ls 0.61`)
gives it nothing. Log-parsing tools solve this by template mining: lines that
differ only in their numbers share a template, and a number slot that recurs
over many lines is a series. This module does that, in one pass:

* a line's numbers become slots, everything else is its template text; a
  count `18/7328` is one slot (a counter), a size (`6.7G`) one of its number,
  and what is no measurement is text: dates and times of day, durations and
  rates (`2.5s`, `3.1it/s`, `s/it`), shares (`45%`), a progress bar after a
  row, the threshold in a metric's name (`mAP@.5:.95`);
* a template seen on `MIN_LINES` lines or more is kept;
* each slot is named by the words before it (`Grad Norm 0.37` -> `grad_norm`,
  `Loss: Tensor Float [] 0.34` -> `loss`: a name ends at its `:` or `=`, the
  words after that are a type, not a name), or by a header line of as many
  names printed once above the rows;
* a slot without a name gets its meaning from its values: two counts `0/272
  18/7328` are the epoch and the batch, one count or a whole number that rises
  on every line is the step, the first other number is the loss when nothing
  on the page is named a loss (a paste of losses is what people bring to a
  loss doctor), the rest `column_K`; a name that is an abbreviation of "loss"
  (`l`, `ls`, `lo`) is the loss too.

`text_log` uses this only for a file its families read no loss from, so every
log they already read is read as before; `inspect` shows each template and what
its slots were read as.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..roles import TOTAL_WORDS, tokens
from .csv_steps import grain
from .text_line import normalise, number, role

#: Lines a template must hold to be a series.
MIN_LINES = 3
_NUMBER = r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
#: What a line's numbers are, in order of precedence: a count, text that holds digits but no
#: measurement (a date, a time of day, a duration, a rate, a share, a size), a number.
_TOKEN = re.compile(
    r"(?<![\w.])(?P<count>\d+)\s*/\s*\d+(?![\w./])"
    r"|(?P<text>@[\d.:]+|(?<![\w.])\d{1,4}[-/]\d{1,2}[-/]\d{1,4}|\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?"
    rf"|(?<![\w.]){_NUMBER}\s?(?:%|s/it|it/s|(?:s|ms|us|min|sec|h)\b))"
    r"|(?<![\w.])(?P<size>\d+(?:\.\d+)?)[KMGT]i?B?\b"
    rf"|(?<![\w.])(?P<number>{_NUMBER})(?![\w.])",
    re.IGNORECASE | re.ASCII,  # a number glued to a CJK word is one (`第3轮 损失: 1.15`)
)
#: The progress bar a detector draws after each row (`640: 100%|██████████| 16/16 [00:05<00:00, 2.78it/s]`).
BAR_TAIL = re.compile(r":\s+\d+%\|.*$")
#: Markdown emphasis and code marks a paste into an issue thread adds around some lines (`**Train loss 1 0.2**`).
_MARKUP = re.compile(r"\*\*|`")
_WORD = re.compile(r"[a-z_][\w./-]*", re.IGNORECASE)
#: A header cell of several words (`Training Loss`).
_NAME = re.compile(r"[a-z_][\w./-]*(?: [a-z_][\w./-]*){1,3}", re.IGNORECASE)
#: Where a name cannot reach back past: a cell border, a list separator, a spaced dash (Keras' ` - loss:`).
_BORDER = re.compile(r"[|,;\[\](){}\t]|\s-\s")
#: Loss written short (`l`, `ls`, `lo`, `los`), a split's letter before it (`tl`, `vl`: train and
#: validation loss).
_LOSS_SHORT = re.compile(r"(?:(?P<train>t|tr|trn)|(?P<val>v|val|vl))?_?l(?:o?s{0,2}|s)", re.IGNORECASE)
_LOSS_ROLES = ("train_loss", "val_loss")
#: Lines a template must hold for its loss to be found by its place (three rows of a data table are no curve).
GUESS_MIN_LINES = 5
#: How a loss found by its place, not its name, is noted.
GUESSED = "first unnamed number that varies (nothing on the page is named a loss)"


@dataclass
class Slot:
    """One number place of a template: its name (after `name_slots`), whether it counts, its values."""

    key: str
    count: bool
    values: list[float] = field(default_factory=list)
    name: str = ""
    counter: bool = False
    how: str = ""


@dataclass
class Template:
    """Lines that differ only in their numbers: the text between them, the lines, the slots."""

    text: str
    lines: list[int] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)


def tokenise(line: str) -> tuple[str, list[tuple[str, bool, str]]]:
    """A line's template text (numbers as `<*>`, counts as `<n/m>`, other digit text as `<t>`) and
    its slots as (key text before it, is a count, the number as written)."""
    line = BAR_TAIL.sub("", _MARKUP.sub("", line))
    out, slots, at = [], [], 0
    for m in _TOKEN.finditer(line):
        gap = line[at : m.start()]
        out.append(gap)
        at = m.end()
        if m["text"] is not None:
            out.append("<t>")
            continue
        out.append("<n/m>" if m["count"] is not None else "<*>")
        slots.append((gap, m["count"] is not None, m["count"] or m["size"] or m["number"]))
    out.append(line[at:])
    return " ".join("".join(out).split()), slots


def mine(lines: Iterable[str]) -> tuple[list[Template], list[tuple[int, list[str]]], int]:
    """Templates of `MIN_LINES` lines or more with a number in them, in order of first line; the
    header lines (names only) seen, by line number, for `name_slots`; and the count of lines with
    a number."""
    found: dict[str, Template] = {}
    headers: list[tuple[int, list[str]]] = []
    numeric = 0
    for i, line in enumerate(lines):
        text, slots = tokenise(line)
        if not slots:
            words = _header(line)
            if words:
                headers.append((i, words))
            continue
        numeric += 1
        t = found.get(text)
        if t is None:
            t = found[text] = Template(text, slots=[Slot(key, count) for key, count, _ in slots])
        t.lines.append(i)
        for slot, (_, _, written) in zip(t.slots, slots):
            slot.values.append(number(written))
    return [t for t in found.values() if len(t.lines) >= MIN_LINES], headers, numeric


def _header(line: str) -> list[str] | None:
    """A line of names only: its names, split at tabs or runs of spaces where it has them (a
    notebook table copied as text: `Step<TAB>Training Loss<TAB>Validation Loss`), else at spaces."""
    cells = line.strip()
    words = re.split(r"\t|\s{2,}", cells) if re.search(r"\t|\s{2,}", cells) else cells.split()
    words = [w.strip() for w in words if w.strip()]
    return words if len(words) >= 2 and all(_WORD.fullmatch(w) or _NAME.fullmatch(w) for w in words) else None


def _slot_key(gap: str) -> str:
    """The name in the text before a number: the words before the last `:` / `=` when one is there
    (`Loss: Tensor Float [] ` -> `Loss`), else the words right before the number, up to a border,
    at most four."""
    gap = gap.rstrip(" \t[({'\"")  # `loss [0.5]`, `loss(0.5)`: the bracket opens the value, not a cell
    cut = max(gap.rfind(":"), gap.rfind("="))
    if cut >= 0 and _WORD.search(gap[:cut]):
        gap = gap[:cut]
    gap = _BORDER.split(gap)[-1] if _BORDER.search(gap) else gap
    words = _WORD.findall(gap)
    return normalise(" ".join(words[-4:])) if words else ""


def name_slots(templates: list[Template], headers: list[tuple[int, list[str]]]) -> None:
    """Give every slot its name and say how it was read (see the module doc); a header is the last
    line of as many names as the template has slots before its first line."""
    for t in templates:
        header = next((words for at, words in reversed(headers) if at < t.lines[0] and len(words) == len(t.slots)), None)
        for i, slot in enumerate(t.slots):
            slot.name = normalise(header[i]) if header else _slot_key(slot.key)
            slot.how = "header" if header else "key"
        _meaning_from_values(t)
    if not any(role(s.name) in _LOSS_ROLES for t in templates for s in t.slots if not s.counter):
        _loss_by_position(templates)


def _meaning_from_values(t: Template) -> None:
    """Counters by their name, or by their values where the slot has no name."""
    counts = [s for s in t.slots if s.count and not s.name]
    if len(counts) >= 2:
        counts[0].name, counts[1].name = "epoch", "batch"
    elif counts:
        counts[0].name = "step"
    for s in counts:
        s.how = "count N/M"
    has_step = any(_is_counter(s.name) for s in t.slots)
    for k, s in enumerate(t.slots):
        if not has_step and (not s.name or (k == 0 and role(s.name) is None)) and _rises_by_whole_numbers(s.values):
            # unnamed, or named first on the line by a word no role knows (`it 40`, `ep 3`)
            s.how = "whole number rising every line" + (f", named {s.name!r}" if s.name else "")
            s.name, has_step = "step", True
        elif not _is_counter(s.name) and role(s.name) in _LOSS_ROLES and _rises_by_whole_numbers(s.values) and not has_step:
            # `Train loss 12001 0.166`: the number after a name that rises by one is its step
            s.name, s.how, has_step = "step", "whole number rising every line", True
            if k + 1 < len(t.slots) and not t.slots[k + 1].name:
                t.slots[k + 1].name, t.slots[k + 1].how = _slot_key(s.key), "the value after the step"
        s.counter = _is_counter(s.name)


def _is_counter(name: str) -> bool:
    """A named step, iteration, batch or epoch (an empty name is no pandas index here)."""
    return bool(name) and grain(name) is not None


def _rises_by_whole_numbers(values: list[float]) -> bool:
    return all(v == int(v) for v in values if v == v) and all(b > a for a, b in zip(values, values[1:]))


def _loss_by_position(templates: list[Template]) -> None:
    """No loss named on the page: names that shorten "loss" are it (`vl` the validation loss), else
    the first unnamed number of the template with the most lines."""
    short = False
    for t in templates:
        for s in t.slots:
            m = _LOSS_SHORT.fullmatch(s.name or "-") if not s.counter else None
            if m:
                s.name, s.how, short = "val_loss" if m["val"] else "loss", f"{s.name!r}, loss written short", True
    if short:
        return
    for t in sorted(templates, key=lambda t: -len(t.lines)):
        # no name, or a header's name that says nothing of its role (a detector's `box  obj  cls  total`)
        unnamed = [s for s in t.slots if not s.counter and (not s.name or (s.how == "header" and role(s.name) is None))]
        if unnamed:
            # a header's total is the loss; else a number that never changes beside one that does is a
            # tag (`[  1]`), not the loss
            varying = [s for s in unnamed if len(set(s.values)) > 1]
            s = next((s for s in varying if TOTAL_WORDS & set(tokens(s.name))), None) or (varying or unnamed)[0]
            s.how = GUESSED + (f", headed {s.name!r}" if s.name else "")
            s.name = "loss"
            break
    for t in templates:
        for k, s in enumerate(t.slots):
            if not s.name:
                s.name, s.how = f"column_{k + 1}", "unnamed"


def loss_templates(lines: Iterable[str]) -> list[Template] | None:
    """The named templates of a text that reads as a training log by its templates alone, else None.

    A loss slot must be named so on the page (by its key, a header, or a short form of "loss"),
    or, where it is a guess by position, its template must hold `GUESS_MIN_LINES` lines and, unless a
    header of names stands over them, at least half the lines with a number: a file of losses one a
    line is a loss curve, a README with three numbered lines is not."""
    templates, headers, numeric = mine(lines)
    name_slots(templates, headers)
    for t in templates:
        for s in t.slots:
            if s.counter or role(s.name) not in _LOSS_ROLES:
                continue
            headed = "headed" in s.how  # a header of names over the rows: a table, whatever else the file holds
            if not s.how.startswith(GUESSED) or (len(t.lines) >= GUESS_MIN_LINES and (headed or 2 * len(t.lines) >= numeric)):
                return templates
    return None


def named_loss(templates: list[Template]) -> bool:
    """Whether the page names the loss the templates read (by a key, a header or a short form), or a
    header of names stands over the column guessed to be it."""
    return any(not s.how.startswith(GUESSED) or "headed" in s.how for t in templates for s in t.slots if not s.counter and role(s.name) in _LOSS_ROLES)


def records(templates: list[Template]) -> list[tuple[int, str, dict[str, float], dict[str, float]]]:
    """Each template line as (line number, template text, counters, values), in line order; a line
    without a counter is at the last counters printed before it (an overflow message between steps)."""
    out = []
    for t in templates:
        for j, at in enumerate(t.lines):
            counters = {s.name: s.values[j] for s in t.slots if s.counter}
            values = {s.name: s.values[j] for s in t.slots if not s.counter}
            out.append((at, t.text, counters, values))
    out.sort(key=lambda r: r[0])
    last: dict[str, float] = {}
    for at, text, counters, values in out:
        if counters:
            last = counters
        else:
            counters.update(last)
    return out


def notes(templates: list[Template]) -> list[str]:
    """One line per template: its text, its line count and what each slot was read as."""
    return [
        f"template {t.text[:90]!r} ({len(t.lines)} lines): " + ", ".join(f"{s.name} ({s.how})" for s in t.slots)
        for t in templates
    ]
