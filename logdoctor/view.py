"""RunView: a run's scalars as per-metric sorted arrays, looked up by role.

Built once per run and shared by every rule, so the tidy table is split by
metric exactly once (no frame rebuilt per rule). Duplicate steps (several
values logged at one step) keep the last value logged, as TensorBoard shows a
re-logged point; non-monotonic steps are sorted. Both are counted so `inspect`
can say so.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

from .model import Run, Series
from .roles import amp_scale_candidates, assign_roles, primary

#: The roles whose constant parts give way to moving ones.
LOSS_ROLES = ("train_loss", "val_loss")


class RunView:
    def __init__(self, run: Run, role_overrides: dict[str, list[str]] | None = None):
        self.run = run
        self._overrides = role_overrides or {}
        self._cache: dict[str, Series] = {}

    @cached_property
    def _codes(self) -> tuple[dict[str, int], np.ndarray]:
        """Metric name -> code (first-appearance order) and each row's code.

        The tidy table is indexed, not split: splitting it copies every row (a 14 M-row console
        log held 830 MB more), while only the handful of metrics the rules read are ever needed.
        """
        if self.run.scalars.is_empty():
            return {}, np.zeros(0, dtype=np.uint32)
        metric = self.run.scalars.get_column("metric")
        names = metric.unique(maintain_order=True).drop_nulls().to_list()
        codes = metric.cast(pl.Enum(names)).to_physical().fill_null(len(names)).to_numpy()
        return {name: i for i, name in enumerate(names)}, codes

    @cached_property
    def counts(self) -> dict[str, int]:
        index, codes = self._codes
        per_code = np.bincount(codes, minlength=len(index) + 1)
        return {name: int(per_code[i]) for name, i in index.items()}

    def _rows(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """One metric's steps and values in the order they were logged, or None if absent."""
        index, codes = self._codes
        if name not in index:
            return None
        # filtered in polars: the columns are chunked, so taking them whole as arrays would copy them
        rows = pl.Series(codes == index[name])
        scalars = self.run.scalars
        return scalars.get_column("step").filter(rows).to_numpy(), scalars.get_column("value").filter(rows).to_numpy()

    @cached_property
    def all_roles(self) -> dict[str, list[str]]:
        """Role -> metric names, best first (a bare `scale` is told apart by its values).

        A loss part that never moves (a one-class detector's class loss, 0 at every step) is
        dropped from its loss role when another part of that role moves: it is no curve to
        judge, neither the primary loss nor a finding. Alone in its role it stays: a constant
        loss is then the run's loss, and the strongest sign that nothing learned."""
        amp = amp_scale_candidates(self.counts.keys(), self._values)
        found = assign_roles(self.counts.keys(), self.counts, self._overrides, amp)
        for role in LOSS_ROLES:
            names = found.get(role, [])
            moving = [n for n in names if not _constant(self._values(n))]
            if moving and len(moving) < len(names) and role not in self._overrides:
                found[role] = moving
        return found

    def _values(self, name: str) -> np.ndarray | None:
        series = self.metric(name)
        return None if series is None else series.values

    @cached_property
    def roles(self) -> dict[str, str]:
        """Role -> the one metric used for it."""
        return primary(self.all_roles)

    def metric(self, name: str) -> Series | None:
        """One metric as a Series (sorted, one value per step), or None if absent/empty."""
        if name in self._cache:
            return self._cache[name]
        rows = self._rows(name)
        if rows is None or len(rows[0]) == 0:
            return None
        series = _normalise(name, rows[0], rows[1].astype(np.float64, copy=False))
        self._cache[name] = series
        return series

    def series(self, role: str) -> Series | None:
        """The primary metric for a role, or None if the run does not log it."""
        name = self.roles.get(role)
        return self.metric(name) if name else None

    def all_series(self, role: str) -> list[Series]:
        """Every metric given a role (e.g. one LR per param group)."""
        out = [self.metric(n) for n in self.all_roles.get(role, [])]
        return [s for s in out if s is not None]


def _constant(values: np.ndarray | None) -> bool:
    """Every finite value identical (at least two of them): a part that never moved."""
    if values is None:
        return False
    ok = values[np.isfinite(values)]
    return len(ok) >= 2 and bool(np.all(ok == ok[0]))


def _normalise(name: str, steps: np.ndarray, values: np.ndarray) -> Series:
    steps = np.asarray(steps, dtype=np.int64)
    n = len(steps)
    if n > 1 and np.any(np.diff(steps) <= 0):
        order = np.argsort(steps, kind="stable")
        steps, values = steps[order], values[order]
        # keep the last logged value for each step
        last = np.r_[steps[1:] != steps[:-1], True]
        steps, values = steps[last], values[last]
    return Series(name=name, steps=steps, values=values, duplicates=n - len(steps))


def step_report(view: RunView) -> dict[str, dict[str, int]]:
    """Per metric: points, unique steps, duplicates and backwards jumps (for `inspect`)."""
    out = {}
    for name in view.counts:
        steps = view._rows(name)[0]
        back = int(np.sum(np.diff(steps) < 0)) if len(steps) > 1 else 0
        series = view.metric(name)
        out[name] = {
            "points": len(steps),
            "first_step": int(series.steps[0]) if series is not None and len(series) else 0,
            "last_step": int(series.steps[-1]) if series is not None and len(series) else 0,
            "duplicates": series.duplicates if series is not None else 0,
            "backwards": back,
        }
    return out
