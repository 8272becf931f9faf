"""One console line -> its counters and its named values.

A general tokenizer, not a pattern per framework. What a line can hold:

* counters: a counter word with its number (``Epoch 3/20``, ``Epoch [3][50/500]``,
  ``epoch=3``, ``[epoch 3]``, ``iter 100:``, ``Train iter    16``, ``num_updates 500``)
  or the number first (``250 iterations -- validation loss 2.11``); beside an
  epoch, a bare ``N/M`` count (``Epoch  2,   550/  725;``, ``Epoch 3: 100%|██| 50/50``)
  is the batch within that epoch;
* ``name: value`` / ``name = value`` pairs, up to four words a name (``Train Loss: 0.53``,
  ``'loss': 0.69``, ``Attempted loss scale: 65536``);
* ``name value`` pairs: inside ``|``-separated cells (fairseq's ``| loss 9.213 | ppl 477 |``)
  every such cell; elsewhere only names roles knows (``loss 2.31``), since free text is
  full of such pairs (``from inf to 0.69``);
* the loss-scale phrase of apex / DeepSpeed / fairseq (``reducing loss scale to 1.5e-05``).

Names are lower-cased with spaces as ``_``; ``nan`` and ``inf`` are values. A log
repeats a few line shapes that differ only in their digits, so each shape is parsed
once and its values are then cut out by digit run: the full patterns cost tens of
microseconds a line, a 300 MB log has three million lines.
"""
from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field

import numpy as np

from ..roles import classify
from .csv_steps import grain

#: A log repeats the same few names on every line: classify each once.
role = functools.lru_cache(maxsize=4096)(classify)
_grain = functools.lru_cache(maxsize=4096)(grain)

_NUMBER = r"[-+]?(?:nan|inf(?:inity)?|\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
#: What may not follow a value: more digits, a time of day or clock (`1:23`), a unit of time (`12s`, `3ms`,
#: PaddlePaddle's `reader_cost: 0.00971 s`: a duration, whatever its name says), a progress bar's share
#: (`mAP50-95): 100%|███| 8/8`: tqdm's description ends in a colon).
_VALUE_END = r"(?!\d|[.:]\d|\s?(?:s|ms|us|min|h|sec)\b|%\|)"
#: One word of a metric name: dots only inside (`decode.acc_seg`), so a sentence's full stop is no part of it.
_WORD = r"[a-z_](?:[\w/@()\[\]-]|\.(?=\w))*"
#: `name: value` / `name = value` (up to four words: `Train Loss: 0.53`, quoted: `'loss': 0.69`); a
#: value in quotes is one too when the quotes hold nothing else (legacy fairseq's JSON: `"loss": "3.097"`).
_NAMED = re.compile(
    rf"(?<![\w.])['\"]?(?P<name>{_WORD}(?: {_WORD}){{0,3}})['\"]?(?P<sep>\s*[:=]\s*)(?P<quote>['\"])?(?P<value>{_NUMBER})"
    rf"(?(quote)%?(?P=quote)|{_VALUE_END})",
    re.IGNORECASE,
)
#: `name value` (`loss 2.31`, `val loss 4.04`, `Grad Norm 10.8`): one space (a table aligns with many),
#: kept only when the two-word name or its last word has a role.
_BARE = re.compile(rf"(?<![\w.])(?P<name>(?:{_WORD} )?{_WORD}) (?P<value>{_NUMBER}){_VALUE_END}", re.IGNORECASE)
#: `| name value |`: a cell of a `|`-separated line holds one name and its value (a percentage too).
_CELL = re.compile(rf"(?:^|\|)\s*(?P<name>{_WORD})\s+(?P<value>{_NUMBER})%?\s*(?=\||$)", re.IGNORECASE)
_COUNTER_WORDS = r"global_step|num_updates|iterations?|epochs?|steps?|iters?|batch"
#: Counters: `Epoch 3/20`, `Epoch [3/20]`, `epoch=3`, `[epoch 3]`, `step: 1200`, `'epoch': 0.01`, `iter   16`,
#: `Epoch(train) [1]`.
COUNTER = re.compile(
    rf"(?<![\w.])['\"]?(?P<name>{_COUNTER_WORDS})(?![a-z])['\"]?(?:\(\w+\))?(?:\s*[:=#]\s*|\s+)?\[?\s*"
    r"(?P<value>\d+(?:\.\d+)?)(?:\s*/\s*\d+)?",
    re.IGNORECASE,
)
#: The number first: `250 iterations -- validation loss 2.11`, or glued to it as ESPnet2 writes its
#: epoch (`18epoch:train:6376-6750batch: ... loss=1.270`, `18epoch results: [train] ...`).
_COUNTER_AFTER = re.compile(
    r"(?<![\w.])(?P<value>\d+)(?:\s+(?P<name>iterations|iters|steps|epochs|updates)\b|(?P<glued>epoch)(?=[:\s]))", re.IGNORECASE
)
#: A bare count `550/ 725` or `[50/500]`: the batch within an epoch when the line names the epoch; a
#: date followed by its time (`[07/21 14:40:44] ppdet.engine INFO: Epoch: [0] [ 20/200]`) is none.
_FRACTION = re.compile(r"(?<![\w./:])\[?(?P<value>\d+)\s*/\s*\d+\]?(?![\w./:]|\s+\d{1,2}:\d\d)")
#: apex / DeepSpeed / fairseq: `Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 1.52e-05`,
#: fairseq's `NOTE: overflow detected, setting loss scale to: 64.0`.
_SCALE_TO = re.compile(rf"loss[ _]scale\b[^\n]{{0,20}}?\bto:?\s+(?P<value>{_NUMBER})", re.IGNORECASE)
_DIGITS = re.compile(r"(\d+)")


#: One counter, however a line names it: nanoGPT prints `iter 100: loss …` and `step 100: train loss …`.
_SAME_COUNTER = {
    "iterations": "step", "iteration": "step", "iters": "step", "iter": "step", "steps": "step",
    "global_step": "step", "num_updates": "step", "epochs": "epoch",
}


def normalise(name: str) -> str:
    """Lower case, spaces as `_`; a bracketed tag before the name is no part of it (`[Learner] Loss`)
    unless it names a data split (ESPnet2's `[train] loss=1.262, ..., [valid] loss=1.718`)."""
    name = "_".join(name.lower().split())
    if "]" in name and "[" not in name:
        tag, rest = name.rsplit("]", 1)
        rest = rest.lstrip("_")
        name = f"{tag}_{rest}" if rest and tag in _SPLITS else rest or name
    return name


def has_counter(text: str) -> bool:
    """Whether any counter pattern occurs in the text (a cheap screen before line-by-line parsing)."""
    return bool(COUNTER.search(text) or _COUNTER_AFTER.search(text))


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

    #: The value is one digit run, the split line's item `run` (-1: it is not; most values are).
    run: int = field(init=False)

    def __post_init__(self) -> None:
        single = self.first >= 0 and self.first == self.last and not self.prefix and not self.suffix
        object.__setattr__(self, "run", 2 * self.first + 1 if single else -1)


@dataclass(frozen=True)
class Shape:
    """A line shape: the text between its digit runs, what it reads and whether it read anything."""

    text: str
    slots: tuple[_Slot, ...]
    #: The line holds several records one after another (see `records`): read each on its own.
    glued: bool = False


#: Line shapes read so far (the text between digit runs) -> their slots.
_SHAPES: dict[str, Shape] = {}
_MAX_SHAPES = 4096


def extract(line: str) -> tuple[dict[str, float], dict[str, float], Shape]:
    """The counters, the values and the shape of a line."""
    parts = _DIGITS.split(line)  # text, digits, text, digits, ..., text
    key = "#".join(parts[0::2])
    shape = _SHAPES.get(key)
    if shape is None:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        shape = _SHAPES[key] = Shape(key, tuple(_slots(line, parts)), _glued(line))
    counters: dict[str, float] = {}
    values: dict[str, float] = {}
    for slot in shape.slots:
        if slot.run > 0:
            value = float(parts[slot.run])
        elif slot.first < 0:
            value = slot.const
        else:
            value = number(slot.prefix + "".join(parts[2 * slot.first + 1 : 2 * slot.last + 2]) + slot.suffix)
        (counters if slot.counter else values)[slot.name] = value
    return counters, values, shape


def records(line: str) -> list[str]:
    """The line cut before each place its first counter is named again: a paste that lost its
    newlines holds a run of records on one line (`... ips: 65.9 [2021/06/30 11:36:21] root INFO:
    epoch: [1/500], iter: 440, loss: 28.9, ... [2021/06/30 11:38:51] root INFO: epoch: [1/500], iter:
    450, ...`). What comes before the first record (the tail of one cut by the paste) is a piece too."""
    named = [(m.start(), _SAME_COUNTER.get(m["name"].lower(), m["name"].lower())) for m in COUNTER.finditer(line)]
    if not named:
        return [line]
    cuts = sorted({0, *(at for at, name in named if name == named[0][1]), len(line)})
    return [line[a:b] for a, b in zip(cuts, cuts[1:]) if line[a:b].strip()]


def _glued(line: str) -> bool:
    """Several records on one line: its first counter named again, and the first two records it
    opens give the same names, a loss among them (`best epoch 2` in a sentence opens no record)."""
    if not has_counter(line):
        return False
    opened = [p for p in records(line) if COUNTER.match(p)]
    if len(opened) < 2:
        return False
    named = [set(_named_values(p)) for p in opened[:2]]
    return named[0] == named[1] and any(role(n) in ("train_loss", "val_loss") for n in named[0])


def _named_values(piece: str) -> list[str]:
    """The value names a piece of a line gives (parsed afresh: it is no shape of its own yet)."""
    return [slot.name for slot in _slots(piece, _DIGITS.split(piece)) if not slot.counter]


def _blank(line: str, spans: list[tuple[int, int]]) -> str:
    """The line with the spans blanked out (same length, so later spans still fit the line)."""
    chars = list(line)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _counters(line: str) -> tuple[dict[tuple[bool, str], tuple[int, int]], list[tuple[int, int]]]:
    """The counters a line names, and the spans they use (disjoint, kept sorted: whether a match
    overlaps one is a bisection, not a scan of them all, which was quadratic in a long line of
    `step N loss x` records printed with `end=" "`: a 300 kB line took 19 s)."""
    found: dict[tuple[bool, str], tuple[int, int]] = {}
    used: list[tuple[int, int]] = []
    for pattern in (COUNTER, _COUNTER_AFTER):
        for m in pattern.finditer(line):
            at = bisect.bisect_left(used, (m.end(), -1))  # spans before `at` start before the match ends
            if at and used[at - 1][1] > m.start():  # of those, the last ends furthest (disjoint spans)
                continue
            name = (m["name"] or m.groupdict()["glued"]).lower()
            name = _SAME_COUNTER.get(name, name)
            found.setdefault((True, name), m.span("value"))
            used.insert(at, m.span())
    if (True, "epoch") in found and (True, "batch") not in found:
        m = _FRACTION.search(_blank(line, used))
        if m:
            found[(True, "batch")] = m.span("value")
            used.append(m.span())
    return found, used


def _slots(line: str, parts: list[str]) -> list[_Slot]:
    """Parse one line with the full patterns: its counters, then its `name: value` pairs, then its
    `name value` pairs, each as a slot of its shape (`parts`: the line split around its digit runs)."""
    found, used = _counters(line)
    rest = _blank(line, used)
    for m in _NAMED.finditer(rest):
        if m["sep"] == ":" and m["value"].rstrip(".").isdigit() and not m["quote"]:
            continue  # `train.py:417`, `host:0`: a logging prefix's file:line or a rank, no metric
        found[(False, normalise(m["name"]))] = m.span("value")
    if rest.count("|") >= 2:
        for m in _CELL.finditer(rest):
            found.setdefault((False, normalise(m["name"])), m.span("value"))
    for m in _BARE.finditer(rest):
        name = normalise(m["name"])
        if role(name) is None:
            name = name.rsplit("_", 1)[-1] if " " in m["name"] else name
        key = (False, name)
        if key not in found and role(name) is not None:
            found[key] = m.span("value")
    m = _SCALE_TO.search(rest)
    if m:
        found[(False, "loss_scale")] = m.span("value")
    found = _carry_split(found)
    offsets = np.cumsum([0] + [len(p) for p in parts])  # parts[k] spans offsets[k]:offsets[k + 1]
    slots = []
    for (counter, name), (start, end) in found.items():
        if not counter and _grain(name) is not None:
            continue  # a counter in a form the counter pattern does not read (`total_steps: 100`) is no metric
        # the digit runs (odd k) inside the span, found by bisection: a scan per slot is quadratic
        # in a line of 20,000 values (minutes)
        lo = int(np.searchsorted(offsets, start, "left"))
        lo += 1 - lo % 2
        hi = int(np.searchsorted(offsets, end, "right")) - 2
        hi -= 1 - hi % 2
        if lo > hi:
            slots.append(_Slot(counter, name, const=number(line[start:end])))
        else:
            first, last = lo // 2, hi // 2
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


def number(text: str) -> float:
    return float(text.replace(",", ""))
