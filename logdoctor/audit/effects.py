"""How each swept setting moves the sweep's outcome, not only which settings gather failures.

`links` asks "are failures of one kind over-represented above a threshold?",
which needs several runs of one finding code. A sweep where the loss rises with
the learning rate, and only the worst few runs blow up, shows its cause in the
outcome of every run. So, per swept setting and per outcome:

* **Outcomes**: the final validation loss (the best, with `--rank-by best`;
  train loss when no run logs validation), a run whose loss ended NaN / inf
  ranking worst of all; and failed-or-not (status warning or critical).
* **Tests**, on ranks (no outcome scale or outlier decides): a numeric setting
  gets Spearman's rank correlation (an ordered trend); a numeric setting with
  few values also gets a Kruskal-Wallis test over them (an outcome that is
  best in the middle, as learning rates usually are, has no monotone trend);
  a text or on/off setting gets Kruskal-Wallis over its values.
* **Multiple testing**, as `links` does it: the outcome is permuted and every
  test of the family is repeated (Westfall-Young single-step min-p), so a
  setting's adjusted p-value is the share of permutations whose best test, on
  any setting, is at least as extreme. Bonferroni across the two outcomes. With
  `ASYMPTOTIC_FROM` runs or more per test the textbook p-values are accurate,
  and Bonferroni over the tests replaces the permutations.
* **Wording** says the setting, the direction and the size: "final val loss
  rises with lr (Spearman rho 0.81, p 2e-06, adjusted p 0.001); lowest at lr = 1
  (median 0.098); every diverge at lr >= 10". The last part is descriptive (no
  test): the range of the setting that holds every run with that finding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import chdtrc, stdtr

from .links import ALPHA, MIN_FAILING, _number, _switches
from .result import RunResult

#: Runs that must set a setting (and have the outcome) before it is tested.
MIN_RUNS = 6
#: A numeric setting with at most this many values is also tested level by level (Kruskal-Wallis).
MAX_LEVELS = 12
PERMUTATIONS = 999
#: At most this many permutations (each scores every test on every run).
MAX_PERMUTATIONS = 9999
#: From this many runs in every test, textbook p-values with a Bonferroni adjustment replace the permutations
#: (accurate there, and the permutations cost ~90 s at 10,000 runs).
ASYMPTOTIC_FROM = 500
#: Permutations scored at once (bounds the scratch memory to runs x CHUNK floats).
CHUNK = 128
#: Failure codes named per effect at most ("every diverge at lr >= 10").
MAX_BOUNDS = 2
FAILURES = "failures"


@dataclass(frozen=True)
class Outcome:
    """What the runs are compared on: its words, a value per run (NaN: not logged) and whether lower is better."""

    name: str
    values: np.ndarray
    binary: bool = False


@dataclass
class Effect:
    param: str
    outcome: str
    #: "spearman" (rho, a monotone trend) or "kruskal" (epsilon squared, any difference between values).
    test: str
    statistic: float
    p: float
    p_adjusted: float
    runs: int
    #: Where the outcome is lowest (median per value), e.g. "lr = 1 (median 0.098)"; None for failures.
    lowest: str | None = None
    #: Descriptive ranges of the setting that hold every run with a finding: "every diverge at lr >= 10".
    bounds: list[str] = field(default_factory=list)
    #: The test's own permutation p-value is the smallest the permutations can give: `p_adjusted` is a bound.
    bound: bool = False

    @property
    def rises(self) -> bool | None:
        return None if self.test != "spearman" else self.statistic > 0

    @property
    def headline(self) -> str:
        """The relation in words, without its statistics."""
        if self.outcome == FAILURES:
            if self.test == "spearman":
                return f"runs fail more often at {'higher' if self.statistic > 0 else 'lower'} {self.param}"
            return f"how often runs fail depends on {self.param}"
        if self.test == "spearman":
            return f"{self.outcome} {'rises' if self.statistic > 0 else 'falls'} with {self.param}"
        return f"{self.outcome} depends on {self.param}"

    @property
    def size(self) -> str:
        if self.test == "spearman":
            return f"Spearman ρ {self.statistic:.2f}"
        return f"Kruskal–Wallis ε² {self.statistic:.2f}"

    @property
    def text(self) -> str:
        adjusted = f"adjusted p {'≤ ' if self.bound else ''}{_fmt_p(self.p_adjusted)}"
        parts = [f"{self.headline} ({self.size}, p {_fmt_p(self.p)}, {adjusted}; {self.runs} runs)"]
        if self.lowest:
            parts.append(f"lowest at {self.lowest}")
        return "; ".join(parts + self.bounds)

    def to_json(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "outcome": self.outcome,
            "test": self.test,
            "statistic": round(self.statistic, 4),
            "p": self.p,
            "p_adjusted": self.p_adjusted,
            "runs": self.runs,
            "text": self.text,
        }


def _fmt_p(p: float) -> str:
    return "< 1e-300" if p < 1e-300 else f"{p:.2g}"


# --- outcomes ----------------------------------------------------------------------------


def loss_role(results: list[RunResult]) -> str:
    """The loss the sweep is judged on: validation when any run logs it, else training."""
    return "val_loss" if any(r.roles.get("val_loss") for r in results) else "train_loss"


def outcomes(results: list[RunResult], rank_by: str = "final") -> list[Outcome]:
    """The loss outcome (NaN where a run does not log it, +inf where it ended NaN / inf) and failed-or-not."""
    role = loss_role(results)
    loss = np.full(len(results), np.nan)
    for i, r in enumerate(results):
        if not r.roles.get(role):
            continue
        v = r.stats.get(f"{role}_{rank_by}")
        loss[i] = float(v) if isinstance(v, (int, float)) and math.isfinite(v) else np.inf
    failed = np.array([r.status in ("critical", "warning") for r in results], dtype=float)
    out = [Outcome(f"{rank_by} {role.replace('_', ' ')}", loss)]
    if MIN_FAILING <= failed.sum() <= len(results) - MIN_FAILING:
        out.append(Outcome(FAILURES, failed, binary=True))
    return out


# --- the tests, vectorised over permutations ---------------------------------------------


def _ranks(x: np.ndarray) -> np.ndarray:
    """Mid-ranks (ties share their mean rank); +inf ranks above every finite value."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.r_[0, np.flatnonzero(xs[1:] != xs[:-1]) + 1]
    ends = np.r_[starts[1:], len(x)]
    ranks = np.empty(len(x))
    ranks[order] = np.repeat((starts + ends - 1) / 2.0 + 1, ends - starts)
    return ranks


@dataclass
class _Test:
    param: str
    kind: str  # "spearman" | "kruskal"
    mask: np.ndarray  # runs in the test (bool, over runs with the outcome)
    #: spearman: the setting's centred ranks (0 outside mask); kruskal: level indicators (levels x runs).
    design: np.ndarray
    values: list[Any]  # the setting's value per run (None outside mask)
    numeric: bool


def _tests(results: list[RunResult], settings: list[str], has: np.ndarray) -> list[_Test]:
    out = []
    for name in settings:
        raw = _switches([r.params.get(name) if h else None for r, h in zip(results, has)])
        mask = np.array([v is not None for v in raw])
        if mask.sum() < MIN_RUNS:
            continue
        keys = [repr(v) for v in raw]
        levels = list(dict.fromkeys(k for k, m in zip(keys, mask) if m))
        if len(levels) < 2:
            continue
        numbers = [_number(v) if m else None for v, m in zip(raw, mask)]
        numeric = all(x is not None for x, m in zip(numbers, mask) if m) and not any(isinstance(v, bool) for v in raw)
        if numeric:
            x = np.array([x if x is not None else 0.0 for x in numbers])
            r = np.zeros(len(x))
            r[mask] = _ranks(x[mask])
            r[mask] -= r[mask].mean()
            out.append(_Test(name, "spearman", mask, r, raw, True))
        if (numeric and len(levels) <= MAX_LEVELS) or (not numeric and len(levels) < mask.sum()):
            design = np.array([[k == lv and m for k, m in zip(keys, mask)] for lv in levels], dtype=float)
            if (design.sum(axis=1) >= 2).sum() >= 2:
                out.append(_Test(name, "kruskal", mask, design, raw, numeric))
    return out


def _scores(test: _Test, Y: np.ndarray) -> np.ndarray:
    """The test's statistic for each column of Y (outcome ranks over the runs, runs x B): Spearman's rho, or
    Kruskal-Wallis' epsilon squared (H / (n - 1), tie-corrected)."""
    m = test.mask.astype(float)
    n = m.sum()
    s1, s2 = m @ Y, m @ (Y * Y)
    total = s2 - s1 * s1 / n  # sum of squared deviations of the outcome ranks inside the test
    with np.errstate(divide="ignore", invalid="ignore"):
        if test.kind == "spearman":
            rho = (test.design @ Y) / np.sqrt(total * (test.design @ test.design))  # setting ranks centred in the mask
            return np.clip(np.nan_to_num(rho), -1.0, 1.0)
        counts = test.design.sum(axis=1)[:, None]
        sums = test.design @ Y
        between = (sums * sums / np.maximum(counts, 1)).sum(axis=0) - s1 * s1 / n
        return np.nan_to_num(between / total)


def _asymptotic_p(test: _Test, statistic: float) -> float:
    """The textbook p-value of an observed statistic (t approximation for rho, chi-square for H)."""
    n = float(test.mask.sum())
    if test.kind == "spearman":
        if abs(statistic) >= 1:
            return 0.0
        t = statistic * math.sqrt((n - 2) / (1 - statistic * statistic))
        return float(2 * stdtr(n - 2, -abs(t)))
    k = int((test.design.sum(axis=1) > 0).sum())
    return float(chdtrc(k - 1, statistic * (n - 1)))


def _tail_share(null: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row of `null` (tests x B), the share of its permutations at least as extreme as each of `values`
    (tests x V), counting the observed arrangement: (1 + count) / (B + 1)."""
    out = np.empty(values.shape)
    for i in range(len(null)):
        ordered = np.sort(null[i])
        out[i] = len(ordered) - np.searchsorted(ordered, values[i] * (1 - 1e-9), side="left")
    return out


def permutations_for(tests: int, level: float) -> int:
    """Enough permutations that a clear effect's adjusted p (about tests / B at best) can pass `level`."""
    return int(min(MAX_PERMUTATIONS, max(PERMUTATIONS, math.ceil(20 * tests / level))))


def _search(results, settings, outcome: Outcome, level: float, rng) -> list[tuple[_Test, float, float, float, bool]]:
    """Every test's (test, statistic, raw p, adjusted p, whether the adjusted p is only a bound) on one outcome.

    Each test's permutation p-value is read off its own null distribution (so a rho and an epsilon squared
    compare fairly); the adjusted p is the share of permutations whose smallest p-value, over every test, is
    at least as small as the test's own (Westfall-Young single-step min-p). A test whose own p-value is the
    smallest the permutations can give has its adjusted p reported as a bound ("<="). When every test holds
    `ASYMPTOTIC_FROM` runs or more, the textbook p-values are accurate and the permutations would cost
    minutes: their Bonferroni adjustment is used instead (valid under any dependence between the tests).
    """
    has = ~np.isnan(outcome.values)
    tests = _tests(results, settings, has)
    if not tests:
        return []
    y = np.zeros(len(results))
    y[has] = _ranks(outcome.values[has])
    observed = np.array([float(_scores(t, y[:, None])[0]) for t in tests])
    raw = [_asymptotic_p(t, float(s)) for t, s in zip(tests, observed)]
    if min(int(t.mask.sum()) for t in tests) >= ASYMPTOTIC_FROM:
        return [(t, float(s), p, min(1.0, p * len(tests)), False) for t, s, p in zip(tests, observed, raw)]
    extreme = lambda t, s: np.abs(s) if t.kind == "spearman" else s  # noqa: E731 - rho is two-sided
    permutations = permutations_for(len(tests), level)
    null = np.empty((len(tests), permutations))
    inside = np.flatnonzero(has)
    for start in range(0, permutations, CHUNK):
        b = min(CHUNK, permutations - start)
        Y = np.zeros((len(results), b))
        Y[inside] = rng.permuted(np.tile(y[inside], (b, 1)), axis=1).T
        for i, t in enumerate(tests):
            null[i, start : start + b] = extreme(t, _scores(t, Y))
    obs = np.array([extreme(t, s) for t, s in zip(tests, observed)])
    p_obs = (1 + _tail_share(null, obs[:, None])[:, 0]) / (permutations + 1)
    min_null = (_tail_share(null, null) / (permutations + 1)).min(axis=0)
    adjusted = (1 + (min_null[None, :] <= p_obs[:, None] * (1 + 1e-9)).sum(axis=1)) / (permutations + 1)
    bound = p_obs <= 1 / (permutations + 1) * (1 + 1e-9)
    return [(t, float(s), p, float(a), bool(f)) for t, s, p, a, f in zip(tests, observed, raw, adjusted, bound)]


# --- wording -------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    from ..numbers import fmt_num

    return fmt_num(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _lowest(test: _Test, outcome: Outcome) -> str | None:
    """The value of the setting where the median outcome is lowest, with that median."""
    groups: dict[str, list[float]] = {}
    shown: dict[str, Any] = {}
    for v, o, m in zip(test.values, outcome.values, test.mask):
        if m and not np.isnan(o):
            groups.setdefault(repr(v), []).append(o)
            shown[repr(v)] = v
    if len(groups) > MAX_LEVELS or len(groups) < 2:
        return None
    medians = {k: float(np.median(vs)) for k, vs in groups.items()}
    best = min(medians, key=medians.get)
    if not math.isfinite(medians[best]):
        return None
    sep = " = " if test.numeric else "="
    return f"{test.param}{sep}{_fmt(shown[best])} (median {_fmt(medians[best])})"


def _bounds(test: _Test, results: list[RunResult]) -> list[str]:
    """'every diverge at lr >= 10': for the commonest failure codes, the side of the setting that holds all
    their runs, when it leaves out at least MIN_FAILING runs."""
    present = [(r, v) for r, v, m in zip(results, test.values, test.mask) if m]
    counts: dict[str, int] = {}
    for r, _ in present:
        for c in r.codes:
            counts[c] = counts.get(c, 0) + 1
    out = []
    for code in sorted((c for c, n in counts.items() if n >= MIN_FAILING), key=lambda c: (-counts[c], c)):
        failing = [v for r, v in present if code in r.codes]
        others = [v for r, v in present if code not in r.codes]
        if test.numeric:  # compared as numbers (a setting may be written "0.01")
            lo, hi = min(failing, key=_number), max(failing, key=_number)
            below = sum(1 for _, v in present if _number(v) < _number(lo))
            above = sum(1 for _, v in present if _number(v) > _number(hi))
            if below >= MIN_FAILING and below >= above:
                out.append(f"every {code} at {test.param} ≥ {_fmt(lo)}")
            elif above >= MIN_FAILING:
                out.append(f"every {code} at {test.param} ≤ {_fmt(hi)}")
        elif len({repr(v) for v in failing}) == 1 and sum(1 for v in others if repr(v) != repr(failing[0])) >= MIN_FAILING:
            out.append(f"every {code} with {test.param}={_fmt(failing[0])}")
        if len(out) == MAX_BOUNDS:
            break
    return out


def find_effects(
    results: list[RunResult],
    settings: list[str],
    rank_by: str = "final",
    alpha: float = ALPHA,
    seed: int = 0,
) -> list[Effect]:
    """Supported relations between each swept setting and the outcomes, strongest first, one per setting and
    outcome: the trend when it passes (it says a direction), else the test of its values."""
    runs = [r for r in results if r.params]
    if len(runs) < MIN_RUNS or not settings:
        return []
    rng = np.random.default_rng(seed)
    found = []
    outs = outcomes(runs, rank_by)
    level = alpha / max(1, len(outs))
    for outcome in outs:
        best: dict[str, tuple] = {}
        for test, stat, p, adjusted, bound in _search(runs, settings, outcome, level, rng):
            key = (test.kind != "spearman", adjusted, p)
            if adjusted <= level and (test.param not in best or key < best[test.param][0]):
                best[test.param] = (key, test, stat, p, adjusted, bound)
        for key, test, stat, p, adjusted, bound in best.values():
            found.append(
                Effect(
                    param=test.param, outcome=outcome.name, test=test.kind, statistic=stat, p=p, p_adjusted=adjusted,
                    runs=int((test.mask & ~np.isnan(outcome.values)).sum()),
                    lowest=None if outcome.binary else _lowest(test, outcome),
                    bounds=_bounds(test, runs), bound=bound,
                )
            )
    found.sort(key=lambda e: (e.outcome == FAILURES, e.p_adjusted, e.p))
    said: set[str] = set()
    for effect in found:  # where the failures sit is said once per setting, with its strongest effect
        if effect.param in said:
            effect.bounds = []
        said.add(effect.param)
    return found
