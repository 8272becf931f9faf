"""Which hyperparameter settings separate failing runs from healthy ones.

Method, chosen for sweeps of a handful to thousands of runs:

* Candidate conditions from each run's flattened config: for a numeric
  parameter, every threshold split between two observed values, both ways
  (`lr >= 0.003`, `lr <= 0.0001`); for a categorical one, equality
  (`precision=fp16`). Then conjunctions of two conditions on different
  parameters, built from each parameter's best few conditions, for failures
  that need both (high LR *and* no warmup).
* Outcomes: each finding code seen (at warning or critical) in at least two
  runs, plus "any problem" (status warning or critical).
* Each condition is scored by a one-sided Fisher exact test (the
  hypergeometric tail: are failures over-represented where the condition
  holds?) among the runs that set the parameter.
* Multiple testing: a threshold scan tries many overlapping splits, so a
  Bonferroni count would be needlessly harsh and an uncorrected p-value far
  too kind. Instead the search itself is repeated on random permutations of
  the outcome (Westfall-Young max-T): a condition's adjusted p-value is the
  share of permutations whose *best* condition, over the whole family of
  singles and pairs, does at least as well. This controls the family-wise
  error at exactly the nominal level, even for ten runs.
* Reported only when the adjusted p <= alpha (0.01, Bonferroni-split across
  outcomes) and at least two failing runs
  satisfy the condition: never a link from one run. A pair is reported only
  when it is clearly better than each of its parts alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import gammaln

from .result import RunResult

#: Family-wise error rate. Strict on purpose: a wrong link sends a person to turn the wrong knob.
ALPHA = 0.01
PERMUTATIONS = 999
MIN_FAILING = 2
MAX_CUTS = 24
PAIR_TOP = 3
PAIR_PARAMS = 8
#: A pair must beat the better of its two single conditions by this factor in raw p.
PAIR_GAIN = 100.0
ANY_PROBLEM = "problem"


@dataclass(frozen=True)
class Condition:
    param: str
    op: str  # ">=", "<=", "=="
    value: Any

    def text(self) -> str:
        return f"{self.param}={_fmt(self.value)}" if self.op == "==" else f"{self.param} {self.op} {_fmt(self.value)}"


@dataclass
class Link:
    conditions: tuple[Condition, ...]
    codes: list[str]
    failing: int
    total: int
    failing_out: int
    total_out: int
    p: float
    p_adjusted: float

    @property
    def param(self) -> str:
        return ", ".join(c.param for c in self.conditions)

    @property
    def condition(self) -> str:
        if len(self.conditions) == 1 and self.conditions[0].op != "==":
            c = self.conditions[0]
            return f"{c.op} {_fmt(c.value)}"
        return " and ".join(c.text() for c in self.conditions)

    @property
    def text(self) -> str:
        what = "/".join(self.codes) if self.codes else "problems"
        where = " and ".join(c.text() for c in self.conditions)
        stats = f"p = {self.p:.2g}, adjusted {self.p_adjusted:.2g}"
        single = self.conditions[0] if len(self.conditions) == 1 else None
        if self.failing_out == 0 and single is not None and single.op == "==":
            return f"{what} only with {where} ({self.failing}/{self.total}; 0/{self.total_out} otherwise; {stats})"
        rest = {">=": "below", "<=": "above"}.get(single.op, "otherwise") if single else "otherwise"
        return f"{what} in {self.failing}/{self.total} runs with {where}, {self.failing_out}/{self.total_out} {rest} ({stats})"

    def to_json(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "condition": self.condition,
            "failing": self.failing,
            "total": self.total,
            "codes": list(self.codes),
            "text": self.text,
        }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --- parameters -> candidate conditions -------------------------------------------------


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _native(values: list[Any], x: float) -> Any:
    """Show a threshold as the parameter was written (int stays int)."""
    return int(x) if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and x.is_integer() else x


def candidates(results: list[RunResult]) -> list[tuple[Condition, np.ndarray, np.ndarray]]:
    """(condition, holds-mask, population-mask) for every single-parameter split worth testing."""
    names = sorted({k for r in results for k in r.params})
    out = []
    for name in names:
        raw = [r.params.get(name) for r in results]
        present = np.array([v is not None for v in raw])
        values = [v for v in raw if v is not None]
        if present.sum() < 4:
            continue
        numbers = [_number(v) for v in values]
        if all(x is not None for x in numbers):
            x = np.array([_number(v) if v is not None else np.nan for v in raw])
            distinct = np.unique(x[present])
            if len(distinct) < 2:
                continue
            if len(distinct) > MAX_CUTS + 1:
                distinct = np.unique(np.quantile(x[present], np.linspace(0, 1, MAX_CUTS + 1), method="nearest"))
            with np.errstate(invalid="ignore"):
                for lo, hi in zip(distinct[:-1], distinct[1:]):
                    out.append((Condition(name, ">=", _native(values, float(hi))), present & (x >= hi), present))
                    out.append((Condition(name, "<=", _native(values, float(lo))), present & (x <= lo), present))
            continue
        keys = [repr(v) for v in raw]
        levels = {}
        for v, k in zip(raw, keys):
            if v is not None:
                levels.setdefault(k, v)
        if len(levels) < 2 or len(levels) == int(present.sum()):  # constant, or an id per run
            continue
        for k, v in levels.items():
            holds = np.array([kk == k for kk in keys])
            if holds.sum() >= MIN_FAILING:
                out.append((Condition(name, "==", v), holds, present))
    return out


# --- the exact test ---------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _tail(N: int, K: int, n: int) -> np.ndarray:
    """P(X >= a) for a = 0..n+1, X ~ Hypergeometric(N population, K failing, n drawn).

    Built from the log-pmf and summed from the far tail inwards, so tiny
    p-values (1e-40) keep their precision.
    """
    k = np.arange(n + 1)
    ok = (k <= K) & (n - k <= N - K)
    logc = lambda a, b: gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)  # noqa: E731
    logpmf = np.full(n + 1, -np.inf)
    kk = k[ok]
    logpmf[ok] = logc(K, kk) + logc(N - K, n - kk) - logc(N, n)
    tail = np.cumsum(np.exp(logpmf)[::-1])[::-1]
    return np.minimum(np.r_[tail, 0.0], 1.0)


def fisher_greater(a: int, n: int, K: int, N: int) -> float:
    """One-sided Fisher exact p: a of the n runs in the condition fail, K of all N runs fail."""
    return float(_tail(N, K, n)[a])


def _pvalues(holds: np.ndarray, pop: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """p-values of one condition for each column of Y (outcomes, e.g. permutations)."""
    a = holds.astype(np.float32) @ Y
    K = pop.astype(np.float32) @ Y
    N, n = int(pop.sum()), int(holds.sum())
    a, K = a.astype(int), K.astype(int)
    p = np.ones(Y.shape[1])
    for k in np.unique(K):
        sel = K == k
        p[sel] = _tail(N, int(k), n)[a[sel]]
    enriched = a * (N - n) > (K - a) * n  # failure rate inside > outside
    p[(a < MIN_FAILING) | ~enriched | (n == N)] = 1.0
    return p


# --- search ----------------------------------------------------------------------------


def _outcomes(results: list[RunResult]) -> list[tuple[list[str] | None, np.ndarray]]:
    out: list[tuple[list[str] | None, np.ndarray]] = []
    codes = sorted({c for r in results for c in r.codes})
    for code in codes:
        y = np.array([code in r.codes for r in results])
        if y.sum() >= MIN_FAILING:
            out.append(([code], y))
    problem = np.array([r.status in ("critical", "warning") for r in results])
    if problem.sum() >= MIN_FAILING and not any(np.array_equal(problem, y) for _, y in out):
        out.append((None, problem))
    return out


def _search(cands, y: np.ndarray, Y: np.ndarray):
    """Observed p per single condition, the pair family, and the adjusted p-values of both."""
    obs = np.array([_pvalues(h, pop, y[:, None].astype(np.float32))[0] for _, h, pop in cands])
    best_per_param: dict[str, list[int]] = {}
    for i in np.argsort(obs, kind="stable"):
        if obs[i] < 1.0:
            best_per_param.setdefault(cands[i][0].param, []).append(int(i))
    params = sorted(best_per_param, key=lambda p: obs[best_per_param[p][0]])[:PAIR_PARAMS]
    pairs = []
    for x in range(len(params)):
        for z in range(x + 1, len(params)):
            for i in best_per_param[params[x]][:PAIR_TOP]:
                for j in best_per_param[params[z]][:PAIR_TOP]:
                    ci, cj = cands[i], cands[j]
                    pairs.append(((ci[0], cj[0]), ci[1] & cj[1], ci[2] & cj[2], (i, j)))
    family = [((c,), h, pop) for c, h, pop in cands] + [(cs, h, pop) for cs, h, pop, _ in pairs]
    observed = np.r_[obs, [_pvalues(h, pop, y[:, None].astype(np.float32))[0] for _, h, pop, _ in pairs]]
    null_min = np.ones(Y.shape[1])
    for _, h, pop in family:
        null_min = np.minimum(null_min, _pvalues(h, pop, Y))
    adjusted = (1 + (null_min[None, :] <= observed[:, None] * (1 + 1e-9)).sum(axis=1)) / (Y.shape[1] + 1)
    return family, observed, adjusted, [ij for *_, ij in pairs]


def _equivalent(h1: np.ndarray, p1: np.ndarray, h2: np.ndarray, p2: np.ndarray) -> bool:
    """Two splits that pick exactly the same runs wherever both parameters are set
    (a duplicated or derived setting, e.g. train_batch_size beside batch_size)."""
    both = p1 & p2
    return bool(both.any()) and bool(np.array_equal(h1[both], h2[both]))


def _severity_order(results: list[RunResult]) -> dict[str, int]:
    """Code -> 0 when some run has it as critical, 1 otherwise (critical outcomes listed first)."""
    out: dict[str, int] = {}
    for r in results:
        for f in r.findings:
            out[f["code"]] = min(out.get(f["code"], 1), 0 if f["severity"] == "critical" else 1)
    return out


def find_links(
    results: list[RunResult], alpha: float = ALPHA, permutations: int = PERMUTATIONS, seed: int = 0
) -> list[Link]:
    """Supported links between settings and failures, most severe outcome and strongest first.

    Per outcome: the best split of each parameter that survives the correction,
    minus splits equivalent to a stronger one, plus at most one pair (when it
    beats every single split by PAIR_GAIN). "Any problem" links are kept only
    for parameters no code link already names.
    """
    runs = [r for r in results if r.params]
    if len(runs) < 4:
        return []
    cands = candidates(runs)
    if not cands:
        return []
    rng = np.random.default_rng(seed)
    outcomes = [(codes, y) for codes, y in _outcomes(runs) if not y.all()]
    level = alpha / max(1, len(outcomes))  # Bonferroni across outcomes; max-T within each
    severity = _severity_order(runs)
    ranked: list[tuple[tuple, Link]] = []
    code_params: set[str] = set()
    # enough permutations that the smallest possible adjusted p (1 / (B + 1)) can pass the level
    permutations = max(permutations, math.ceil(2 / level))
    for codes, y in outcomes:
        Y = np.stack([rng.permutation(y) for _ in range(permutations)], axis=1).astype(np.float32)
        family, observed, adjusted, pair_parts = _search(cands, y, Y)
        n_single = len(cands)
        best: dict[str, int] = {}
        for i in range(n_single):
            param = cands[i][0].param
            if observed[i] < 1.0 and (param not in best or observed[i] < observed[best[param]]):
                best[param] = i
        chosen: list[int] = []
        for i in sorted((i for i in best.values() if adjusted[i] <= level), key=lambda i: observed[i]):
            if not any(_equivalent(family[i][1], family[i][2], family[k][1], family[k][2]) for k in chosen):
                chosen.append(i)
        floor = min((observed[i] for i in chosen), default=1.0)
        pairs = [
            n_single + k
            for k, (i, j) in enumerate(pair_parts)
            if adjusted[n_single + k] <= level and observed[n_single + k] * PAIR_GAIN < min(observed[i], observed[j], floor)
        ]
        for idx in sorted(pairs, key=lambda idx: observed[idx])[:1]:
            if not any(_equivalent(family[idx][1], family[idx][2], family[k][1], family[k][2]) for k in chosen):
                chosen.append(idx)
        for idx in chosen:
            conds, holds, pop = family[idx]
            link = _link(runs, codes, y, conds, holds, pop, observed[idx], adjusted[idx])
            if codes is None and {c.param for c in conds} & code_params:
                continue
            if codes is not None:
                code_params.update(c.param for c in conds)
            order = 2 if codes is None else severity.get(codes[0], 1)
            ranked.append(((order, link.p, -link.failing), link))
    # any-problem links come last in `outcomes`, so code_params is complete when they are checked
    return [link for _, link in sorted(ranked, key=lambda kv: kv[0])]


def _link(runs, codes, y, conds, holds, pop, p, p_adjusted) -> Link:
    a, n = int((holds & y).sum()), int(holds.sum())
    outside = pop & ~holds
    fail_codes = codes or sorted({c for r, h in zip(runs, holds & y) if h for c in r.codes})
    return Link(conds, fail_codes, a, n, int((outside & y).sum()), int(outside.sum()), float(p), float(p_adjusted))
