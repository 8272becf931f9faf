"""Shared curve mathematics: every rule calls these, none re-implements them.

Scale-free by design: statistics are expressed relative to a series' own
range and noise so one threshold works for a loss of 11.0 and one of 0.002.
"""
from __future__ import annotations

import numpy as np


def first_nonfinite(values: np.ndarray) -> int | None:
    """Index of the first NaN/inf value, or None."""
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if len(bad) else None
