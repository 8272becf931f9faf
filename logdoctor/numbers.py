"""How a number reads, in one style for every report and every message.

2.301 (four significant digits), 4,000 (thousands separated), 7e-7 and 1.2e6
(compact scientific outside 1e-3..1e6), NaN / inf, 84% / 0.04% (never "0.0%"
for a value that is not zero). Renderers phrase evidence with it; finding titles
and other messages use it too, so a title never says 3.277e+04 where the
evidence beside it says 32,768, or step 1032 beside 1,032.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

#: List items shown before "(+N more)".
_MAX_LIST = 6


def fmt_num(value: Any) -> str:
    """A number as a person reads it: 2.301, 4,000, 7e-7, NaN; other values as str."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 1e6 or a < 1e-3:
            return _sci(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if v.is_integer():
            return f"{int(v):,}"
        return f"{v:.4g}"
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [fmt_num(x) for x in list(value)[:_MAX_LIST]]
        more = len(value) - _MAX_LIST
        return ", ".join(items) + (f" (+{more} more)" if more > 0 else "")
    if isinstance(value, str):
        return _numeric_string(value)
    return str(value)


def _sci(v: float) -> str:
    """Compact scientific notation: 7e-7, 1.2e6 (no '+' or leading zeros)."""
    mantissa, exp = f"{v:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"


def _numeric_string(value: str) -> str:
    """JSON turns inf/NaN into strings; render those like numbers."""
    return {"nan": "NaN", "inf": "inf", "-inf": "-inf"}.get(value.lower(), value)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """A number of things with its noun agreeing: '1 run', '52 runs', '1,040 runs' (never '1 runs'
    or 'run(s)')."""
    return f"{fmt_num(int(n))} {noun if n == 1 else plural or noun + 's'}"


def percent(fraction: float) -> str:
    """A fraction as a percentage in one style: whole percents from 10% (84%, 1,250%), one decimal
    below (4.6%), two significant digits under 1% (0.65%, 0.031%); never '0.0%' for a value that
    is not zero (`<0.01%`), never '100%' for one that is not all (`99.9%+`)."""
    pct = 100 * fraction
    size = abs(pct)
    if pct != 0 and size < 0.01:
        return "<0.01%" if pct > 0 else ">-0.01%"
    if 99.5 <= pct < 100:
        return "99.9%+" if pct >= 99.95 else f"{pct:.1f}%"
    if size >= 10:
        return f"{fmt_num(round(pct))}%"
    return f"{pct:.1f}%" if size >= 1 else f"{pct:.2g}%"
