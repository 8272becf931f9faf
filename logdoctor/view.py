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

from .model import Run, Series, metric_codes
from .roles import amp_scale_candidates, assign_roles, primary

#: The roles whose constant parts give way to moving ones.
LOSS_ROLES = ("train_loss", "val_loss")


class RunView:
    def __init__(self, run: Run, role_overrides: dict[str, list[str]] | None = None):
        self.run = run
        self._overrides = role_overrides or {}
        self._cache: dict[str, Series] = {}

    @cached_property
    def _index(self) -> tuple[dict[str, int], dict[str, list[tuple[int, int]]] | None, np.ndarray | None]:
        """Metric name -> rows logged (first-appearance order), and where each metric's rows are:
        its stretches of consecutive rows (start, length), or, when the table interleaves its
        metrics, each row's metric code (`_MAX_STRETCHES`).

        The tidy table is indexed, not split: splitting it copies every row (a 14 M-row console
        log held 830 MB more), while only the handful of metrics the rules read are ever needed.
        Most readers write a metric's rows together, and a metric in one stretch is read as a view
        of the table's memory, not a copy (the 315 MB console log's four long series: 227 MB).
        Both are found on the metric column's category codes in numpy: polars' own run-length and
        enum calls cost more than the whole index on the small tables an audit reads by thousands."""
        if self.run.scalars.is_empty():
            return {}, {}, None
        metric = self.run.scalars.get_column("metric")
        if metric.dtype != pl.Categorical:
            metric = metric.cast(pl.Categorical)
        physical = metric.to_physical()
        stretches = _stretches(metric, physical)
        if stretches is not None:
            counts = {name: sum(n for _, n in where) for name, where in stretches.items()}
            return counts, stretches, None
        order = metric.unique(maintain_order=True)
        order = order.drop_nulls() if order.null_count() else order
        codes = _codes(physical, order.to_physical().to_numpy())
        per_code = np.bincount(codes, minlength=len(order) + 1)
        return {name: int(per_code[i]) for i, name in enumerate(order.to_list())}, None, codes

    @property
    def counts(self) -> dict[str, int]:
        return self._index[0]

    def logged(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """One metric's steps and values in the order they were logged, or None if absent (unsorted,
        duplicates kept: what `metric` normalises, and what "the last value logged" is read from)."""
        counts, stretches, codes = self._index
        if name not in counts:
            return None
        scalars = self.run.scalars
        step, value = scalars.get_column("step"), scalars.get_column("value")
        if stretches is not None:
            where = stretches[name]
            if len(where) == 1:  # a view of the table, when the stretch lies in one chunk
                start, n = where[0]
                return step.slice(start, n).to_numpy(), value.slice(start, n).to_numpy()
            return (np.concatenate([step.slice(a, n).to_numpy() for a, n in where]),
                    np.concatenate([value.slice(a, n).to_numpy() for a, n in where]))
        rows = codes == list(counts).index(name)
        if self._whole is not None:
            return self._whole[0][rows], self._whole[1][rows]
        # filtered in polars: the columns are chunked, so taking them whole as arrays would copy them
        rows = pl.Series(rows)
        return step.filter(rows).to_numpy(), value.filter(rows).to_numpy()

    @cached_property
    def _whole(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The step and value columns as arrays when that copies nothing (one chunk, no null: what
        polars' filter returns, as numpy sees it), else None."""
        scalars = self.run.scalars
        step, value = scalars.get_column("step"), scalars.get_column("value")
        if step.n_chunks() != 1 or value.n_chunks() != 1 or step.null_count() or value.null_count():
            return None
        return step.to_numpy(), value.to_numpy()

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
        rows = self.logged(name)
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


#: Rows read at a time, and the most stretches of consecutive rows a table may have to be read by
#: stretch. Each stretch costs a slice per metric read, so a table that interleaves its metrics
#: (TensorBoard files log their tags step by step: one stretch a row) is read by metric codes: at
#: 4,096 stretches a 2,500-row event file took 5 ms per metric through 500 slices, against 0.05 ms
#: through one filter; the tables this path is for (a metric written in a few long blocks) have a
#: handful of stretches.
_SLICE = 1 << 20
_MAX_STRETCHES = 64


#: The code given to a row without a metric name.
_NULL = np.iinfo(np.uint32).max


def _stretches(metric: pl.Series, physical: pl.Series) -> dict[str, list[tuple[int, int]]] | None:
    """Each metric's stretches of consecutive rows (start, length), in first-appearance order;
    None when there are more than `_MAX_STRETCHES` (read a slice at a time, so an interleaved
    table costs one slice's codes before it is given up on). `physical`: the column's codes."""
    found: list[tuple[int, int, int]] = []  # (code, start, length)
    for at in range(0, len(physical), _SLICE):
        part = metric_codes(physical.slice(at, _SLICE), _NULL)
        cuts = np.flatnonzero(part[1:] != part[:-1]) + 1
        if len(found) + len(cuts) + 1 > _MAX_STRETCHES + 1:
            return None  # before the cuts become a list: an interleaved 2M-row table has 1M of them
        cuts = cuts.tolist()
        for start, end in zip([0] + cuts, cuts + [len(part)]):
            code = int(part[start])
            if found and found[-1][0] == code and found[-1][1] + found[-1][2] == at + start:
                found[-1] = (code, found[-1][1], found[-1][2] + end - start)
            else:
                found.append((code, at + start, end - start))
    first: dict[int, int] = {}
    for code, start, _ in found:
        if code != _NULL:
            first.setdefault(code, start)
    names = dict(zip(first, metric.gather(list(first.values())).to_list())) if first else {}
    out: dict[str, list[tuple[int, int]]] = {}
    for code, start, n in found:
        if code != _NULL:
            out.setdefault(names[code], []).append((start, n))
    return out


def _codes(physical: pl.Series, named: np.ndarray) -> np.ndarray:
    """Each row's index into the metric names whose category codes are `named` (len(named) for a
    null), in the smallest unsigned type: the codes the column holds, translated through a table."""
    dtype = np.min_scalar_type(len(named))
    table = np.full(max(int(physical.max() or 0), int(named.max(initial=0))) + 2, len(named), dtype=dtype)
    table[named] = np.arange(len(named))
    return table[metric_codes(physical, len(table) - 1)]


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
        steps = view.logged(name)[0]
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
