"""How deep and how wide an input a log may be: the limits where input decides the work.

Python's json recurses once per level and raises RecursionError near 1,000 (a W&B history line
100,000 deep cost its run); polars' schema inference grows with the depth (one history line
nested 1,000 deep in an 8.8 kB file: 10.9 GB) and with the width of a row (a W&B row of 200,000
keys: 17-23 CPU-s and 1.1 GB; a CSV header of 10^6 names: 200+ CPU-s, or out of memory). The
loggers nest a few levels and log at most a few thousand values a row, so a JSON line past a
limit is no history row (its reader leaves it out with one line naming the limit and reads the
rest) and a CSV wider than MAX_WIDTH columns is no log to read (one line naming the limit).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson

#: Nesting (dicts and lists) a JSON value may have; W&B and Hugging Face nest a few levels.
MAX_DEPTH = 64
#: Values one row may hold: the keys of a JSONL line (nested ones included), the columns of a CSV.
MAX_WIDTH = 10_000
#: Bytes scanned at a time: the scan's arrays stay a few times this, whatever the file's size.
_CHUNK = 1 << 20
_QUOTE, _BACKSLASH, _COLON, _NEWLINE = (ord(c) for c in '"\\:\n')
_OPEN, _CLOSE = np.zeros(256, np.int8), np.zeros(256, np.int8)
_OPEN[[ord("{"), ord("[")]] = 1
_CLOSE[[ord("}"), ord("]")]] = 1


#: Bytes as `_long_integer` reads them: a digit is 1, a decimal point stays, anything else is 0; and
#: what it looks for: 19 digits (enough for an integer past 64 bits) after neither a point nor a digit.
_DIGIT_SHAPE = bytes(49 if 48 <= c <= 57 else 46 if c == 46 else 48 for c in range(256))
_RUN = b"0" + b"1" * 19


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH; str() says so, naming the limit."""


def limits_line(what: str, count: int, unit: str = "line") -> str:
    """The one line for `count` lines (entries, rows) of `what` left out for a limit."""
    return (f"{what}: {count} {unit}(s) left out, nested more than {MAX_DEPTH} levels deep"
            f" or holding more than {MAX_WIDTH:,} keys")


def shape(data: bytes) -> tuple[int, int]:
    """(deepest nesting, most colons on one line) of JSON text, brackets and colons inside
    strings not counted (a quote after an odd number of backslashes is escaped). Colons bound a
    line's keys from above. Depth is counted from the start of the data, so a damaged line with
    an unclosed bracket makes the lines after it look deeper, never shallower: a check against
    the limits can fail needlessly (the caller then reads line by line), never pass wrongly."""
    depth = deepest = widest = carry = slashes = 0  # carry: colons so far on the line a chunk ends in
    inside = False
    view = memoryview(data)
    for start in range(0, len(data), _CHUNK):
        chunk = np.frombuffer(view[start : start + _CHUNK], np.uint8)
        slash = chunk == _BACKSLASH
        count = np.cumsum(slash, dtype=np.int32)
        run = count - np.maximum.accumulate(np.where(slash, 0, count))  # backslashes ending at each byte
        run[: len(slash) if slash.all() else int(np.argmin(slash))] += slashes  # a run the last chunk ended in
        quote = chunk == _QUOTE
        quote[1:] &= run[:-1] % 2 == 0
        quote[0] &= slashes % 2 == 0
        slashes = int(run[-1])
        outside = (np.cumsum(quote, dtype=np.int32) + inside) % 2 == 0  # a quote itself may count either way: no matter
        inside = not outside[-1]
        levels = np.cumsum((_OPEN[chunk] - _CLOSE[chunk]) * outside, dtype=np.int32) + depth
        deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
        colons = np.cumsum(outside & (chunk == _COLON), dtype=np.int32)
        ends = np.append(colons[chunk == _NEWLINE], colons[-1])  # colons up to each line's end, and the chunk's
        per_line = np.diff(ends, prepend=0)
        per_line[0] += carry
        widest, carry = max(widest, int(per_line.max())), int(per_line[-1])
    return deepest, widest


def within_limits(data: bytes) -> bool:
    """Whether JSON text is no deeper than MAX_DEPTH and no line holds more than MAX_WIDTH keys."""
    deepest, widest = shape(data)
    return deepest <= MAX_DEPTH and widest <= MAX_WIDTH


def loads(text: str | bytes) -> Any:
    """`json.loads`, refusing what is nested deeper than MAX_DEPTH with TooDeep (a ValueError,
    as a damaged document raises). json recurses once per level, so what is nested past
    Python's recursion limit fails as it parses; what parses is measured as a value only when
    its bracket count (a fast C scan) leaves room for the depth: on a 116 kB trainer state with
    its 1,000 entries the walk of the parsed value costs a fraction of scanning the text."""
    try:
        value = _parse(text)
    except RecursionError:
        raise TooDeep(f"nested more than {MAX_DEPTH} levels deep") from None
    opens = text.count("{") + text.count("[") if isinstance(text, str) else text.count(b"{") + text.count(b"[")
    if opens > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise TooDeep(f"nested more than {MAX_DEPTH} levels deep")
    return value


def _parse(text: str | bytes) -> Any:
    """`json.loads(text)`, parsed by orjson where the two are sure to agree: a trainer state of 116 kB
    takes json 1.48 ms, orjson 0.29 ms plus 0.19 for the guard below, and a sweep audit reads thousands. orjson refuses what json
    takes (NaN and Infinity literals, a byte-order mark, numbers past a double, nesting past 1,024):
    those go to json (a diverged run's NaN after orjson read up to it: looking for NaN first cost
    every other text more). The one text both take but read differently is an integer past 64 bits
    (orjson makes it a float), so an integer of 19 digits or more sends the text to json too."""
    if not _long_integer(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def _long_integer(data: bytes) -> bool:
    """Whether JSON text may hold an integer of 19 digits or more: a run of 19 digits that does not
    follow a decimal point or another digit (a float's fraction, `0.00028000000000000003`, has such
    runs and is no integer). The text mapped to digit / point / other, then one substring search:
    a regular expression backtracked through every digit run (2.3 ms a trainer state, more than
    parsing it)."""
    shape = data.translate(_DIGIT_SHAPE)
    return shape.startswith(_RUN[1:]) or _RUN in shape


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests dicts and lists more than `limit` levels: walked a level at
    a time (not by recursion: the value may be nearly as deep as the recursion limit), each level's
    containers gathered in one comprehension (a trainer state's 1,000 entries: 0.49 -> 0.23 ms)."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
    return False
