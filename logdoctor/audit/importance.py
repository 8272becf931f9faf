"""Which swept settings matter most, all together: the ranking a sweep page shows beside its plots.

The per-setting tests of `effects` look at one setting at a time. An importance
ranking fits every setting at once, so a setting that only matters together
with another, or a U-shaped one, still ranks. It is scikit-learn's (a
well-kept, widely used implementation, not one written here):

* a `RandomForestRegressor` predicts the outcome's *ranks* (the final or best
  loss of `effects.outcomes`, a run that ended NaN / inf ranking worst; a sweep
  with no loss logged uses failed-or-not), text settings coded by their values;
* importance is `sklearn.inspection.permutation_importance` on held-out runs
  (k-fold): how much worse the forest predicts runs it did not see when one
  setting's column is shuffled. Held-out, because the forest's own impurity
  importance favours settings with many distinct values, such as a seed.

Shares are the importances clipped at zero and scaled to sum to one (a setting
that does not help prediction gets 0). Large sweeps are subsampled to
`MAX_ROWS` runs (the ranking needs the shape, not every run).

Without scikit-learn (`pip install 'logdoctor[audit]'`) the ranking falls back
to the size of each setting's strongest rank test (|Spearman rho|, or the square
root of Kruskal-Wallis epsilon squared), and says so.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from .effects import FAILURES, Effect, outcomes
from .links import _number, _switches
from .result import RunResult

#: Forest size, folds and shuffles per setting: 60 runs ~0.7 s, 1,000 runs ~1.1 s on the loaded 2-core VM (50 trees,
#: 5 folds: 1.4 / 2.6 s, the same ranking), plus importing scikit-learn once (~1 s idle, 4.5 s at load 8).
MAX_ROWS = 1000
TREES = 30
FOLDS = 3
REPEATS = 3
#: Runs to read before scikit-learn is imported in the background (`warm_up`): an audit this large
#: takes seconds, a smaller one need not pay for the import when it may not rank at all.
WARM_RUNS = 500
#: The importance line names settings with at least this share, at most SHOWN of them.
SHOWN_SHARE = 0.01
SHOWN = 6
#: Fewer runs than this: no ranking (a forest on a handful of runs ranks noise).
MIN_RUNS = 8
FOREST = "random-forest permutation importance, scikit-learn"
FALLBACK = "rank-test effect size (scikit-learn not installed: pip install 'logdoctor[audit]' for the random-forest ranking)"


@dataclass
class Importance:
    #: setting -> share of the importance (sums to 1 when anything matters), most important first.
    shares: dict[str, float]
    #: What was predicted ("final val loss") and how it was ranked (FOREST or FALLBACK).
    outcome: str
    method: str

    @property
    def top(self) -> str | None:
        return next(iter(self.shares), None) if any(v > 0 for v in self.shares.values()) else None

    @property
    def text(self) -> str:
        """The settings that carry at least `SHOWN_SHARE` of the importance (at most `SHOWN`), and how many others do not."""
        shown = [(k, v) for k, v in self.shares.items() if v >= SHOWN_SHARE][:SHOWN]
        if not shown:
            return f"Importance for {self.outcome}: no setting helps predict it ({self.method})."
        rest = len(self.shares) - len(shown)
        tail = f"; {rest} other setting{'s' if rest > 1 else ''} less" if rest else ""
        return f"Importance for {self.outcome}: {', '.join(f'{k} {v:.2f}' for k, v in shown)}{tail} ({self.method})."

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "method": self.method, "shares": {k: round(v, 4) for k, v in self.shares.items()}}


def _features(results: list[RunResult], settings: list[str]) -> tuple[np.ndarray, list[str]]:
    """One column per setting: numbers as they are (missing: NaN), anything else coded by its values."""
    columns, names = [], []
    for name in settings:
        raw = _switches([r.params.get(name) for r in results])
        numbers = [_number(v) for v in raw]
        if all(x is not None for x, v in zip(numbers, raw) if v is not None) and not any(isinstance(v, bool) for v in raw):
            col = np.array([np.nan if x is None else x for x in numbers])
        else:
            codes = {k: i for i, k in enumerate(dict.fromkeys(repr(v) for v in raw if v is not None))}
            col = np.array([np.nan if v is None else codes[repr(v)] for v in raw], dtype=float)
        if np.unique(col[~np.isnan(col)]).size >= 2:
            columns.append(col)
            names.append(name)
    return (np.column_stack(columns) if columns else np.empty((len(results), 0))), names


def _target(results: list[RunResult], rank_by: str) -> tuple[np.ndarray, str] | None:
    """The outcome as ranks scaled to [0, 1] (NaN where a run lacks it); the loss when any run has it."""
    from .effects import _ranks

    for outcome in outcomes(results, rank_by):
        has = ~np.isnan(outcome.values)
        if has.sum() >= MIN_RUNS and np.unique(outcome.values[has]).size >= 2:
            y = np.full(len(results), np.nan)
            y[has] = (_ranks(outcome.values[has]) - 1) / max(1, has.sum() - 1)
            return y, outcome.name
    return None


def warm_up() -> None:
    """Import scikit-learn's forest and permutation importance on a background thread. A sweep large
    enough to rank spends its seconds waiting on its workers; the import (~1 s of CPU) then need not
    wait for them to finish before `rank_settings` can start (no scikit-learn: nothing happens)."""
    def load() -> None:
        try:
            import sklearn.ensemble  # noqa: F401
            import sklearn.inspection  # noqa: F401
            import sklearn.model_selection  # noqa: F401
        except ImportError:
            pass

    threading.Thread(target=load, name="logdoctor-sklearn-import", daemon=True).start()


def _forest_shares(X: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import KFold

    folds = min(FOLDS, len(y) // 2)
    total = np.zeros(X.shape[1])
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(X):
        forest = RandomForestRegressor(n_estimators=TREES, min_samples_leaf=2, random_state=seed, n_jobs=1)
        forest.fit(X[train], y[train])
        total += permutation_importance(forest, X[test], y[test], n_repeats=REPEATS, random_state=seed).importances_mean
    return total / folds


def _fallback_shares(names: list[str], effects: list[Effect], outcome: str) -> np.ndarray:
    size = {}
    for e in effects:
        if e.outcome == outcome:
            size[e.param] = max(size.get(e.param, 0.0), abs(e.statistic) if e.test == "spearman" else math.sqrt(max(0.0, e.statistic)))
    return np.array([size.get(n, 0.0) for n in names])


def rank_settings(
    results: list[RunResult], settings: list[str], effects: list[Effect] = (), rank_by: str = "final", seed: int = 0
) -> Importance | None:
    """The swept settings ranked by how much they matter to the outcome, or None with too few runs."""
    runs = [r for r in results if r.params]
    target = _target(runs, rank_by)
    if target is None:
        return None
    y, outcome = target
    keep = ~np.isnan(y)
    X, names = _features([r for r, k in zip(runs, keep) if k], settings)
    y = y[keep]
    if not names or len(y) < MIN_RUNS:
        return None
    if len(y) > MAX_ROWS:
        pick = np.random.default_rng(seed).choice(len(y), MAX_ROWS, replace=False)
        X, y = X[pick], y[pick]
    try:
        raw, method = _forest_shares(X, y, seed), FOREST
    except ImportError:
        raw, method = _fallback_shares(names, list(effects), outcome), FALLBACK
    raw = np.clip(np.nan_to_num(raw), 0, None)
    shares = raw / raw.sum() if raw.sum() > 0 else raw
    order = sorted(range(len(names)), key=lambda i: (-shares[i], i))
    return Importance({names[i]: float(shares[i]) for i in order}, outcome if outcome != FAILURES else "failing or not", method)


def drop_confounded(effects: list[Effect], importance: Importance | None) -> list[Effect]:
    """The effects on settings the forest has a use for (a share of at least `SHOWN_SHARE`).

    A setting whose rank test passes but which the forest never needs once it knows the others
    travels with a stronger one: a copy of it, or a setting logged by only some runs and confounded
    with the cause there (a trainer's own `train_batch_size`, present in a third of a sweep, that
    follows its lr). Naming it would send a person to the wrong knob. Kept as they are when the
    ranking is the fallback (it is made of these very tests) or missing.
    """
    if importance is None or importance.method != FOREST or not importance.top:
        return effects
    return [e for e in effects if importance.shares.get(e.param, 0.0) >= SHOWN_SHARE]
