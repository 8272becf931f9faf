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
* Greedy, one explanation at a time: per outcome the strongest condition is
  reported when its adjusted p <= alpha (0.01, Bonferroni-split across
  outcomes); its runs are set aside and the search repeats on the rest. A
  setting that merely travels with a stronger one (a duplicate, a derived
  value, a confounded design) then explains nothing new and is not reported.
* At least two failing runs must satisfy a condition: never a link from one
  run. A pair is preferred only when it beats every single split by a wide
  margin (PAIR_GAIN in raw p).
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
#: Links per outcome at most (each must explain failures the earlier ones leave).
MAX_LINKS_PER_OUTCOME = 3
#: Conditions on other settings that catch the same failing runs with a raw p within this factor
#: are named alongside a link ("about as well explained by"), at most MAX_TIED of them.
TIE_FACTOR = 10.0
MAX_TIED = 2
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
    #: Conditions of stronger links whose runs were set aside before this one was found.
    given: tuple[Condition, ...] = ()
    #: Conditions on other settings that catch the same failing runs about as well (confounded here).
    tied: tuple[Condition, ...] = ()

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
        if self.failing_out == 0 and single is not None and single.op == "==" and not self.given:
            return f"{what} only with {where} ({self.failing}/{self.total}; 0/{self.total_out} otherwise; {stats})" + self._context()
        rest = {">=": "below", "<=": "above"}.get(single.op, "otherwise") if single else "otherwise"
        text = f"{what} in {self.failing}/{self.total} runs with {where}, {self.failing_out}/{self.total_out} {rest} ({stats})"
        return text + self._context()

    def _context(self) -> str:
        text = ""
        if self.given:
            text += "; among runs without " + " or ".join(c.text() for c in self.given)
        if self.tied:
            text += "; about as well explained by " + " or ".join(c.text() for c in self.tied)
        return text

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


def _native(whole: bool, x: float) -> Any:
    """Show a threshold as the parameter was written (int stays int): `whole`, every value is an int."""
    return int(x) if whole and x.is_integer() else x


def _all_ints(values: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


_TRUE, _FALSE = {True, 1, "true", "True", "yes"}, {False, 0, "false", "False", "no"}


def _switches(raw: list[Any]) -> list[Any]:
    """An on/off setting written as True/False by some loggers and 1/0 by others (TensorBoard
    hparams store booleans as numbers) is one setting: normalise it to booleans."""
    present = [v for v in raw if v is not None]
    is_switch = any(isinstance(v, bool) or isinstance(v, str) for v in present) and all(
        (not isinstance(v, float) or v in (0.0, 1.0)) and (v in _TRUE or v in _FALSE) for v in present
    )
    return [None if v is None else v in _TRUE for v in raw] if is_switch else raw


def candidates(results: list[RunResult]) -> list[tuple[Condition, np.ndarray, np.ndarray]]:
    """(condition, holds-mask, population-mask) for every single-parameter split worth testing."""
    names = sorted({k for r in results for k in r.params})
    out = []
    for name in names:
        raw = _switches([r.params.get(name) for r in results])
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
            whole = _all_ints(values)  # once per setting, not per cut (10,000 runs: 0.26 s)
            with np.errstate(invalid="ignore"):
                for lo, hi in zip(distinct[:-1], distinct[1:]):
                    out.append((Condition(name, ">=", _native(whole, float(hi))), present & (x >= hi), present))
                    out.append((Condition(name, "<=", _native(whole, float(lo))), present & (x <= lo), present))
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


def _pvalues(holds: np.ndarray, pops: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """p-values of C conditions (rows of `holds`, `pops`: C x R) for each outcome column of Y (R x B).

    One matrix product counts the failing runs inside every condition under
    every permutation at once; the exact tails come from cached tables.
    """
    A = (holds.astype(np.float32) @ Y).astype(np.int64)
    K = (pops.astype(np.float32) @ Y).astype(np.int64)
    N, n = pops.sum(axis=1), holds.sum(axis=1)
    p = np.ones(A.shape)
    for i in range(len(holds)):
        a, k = A[i], K[i]
        for kk in np.unique(k):
            sel = k == kk
            p[i, sel] = _tail(int(N[i]), int(kk), int(n[i]))[a[sel]]
    enriched = A * (N - n)[:, None] > (K - A) * n[:, None]  # failure rate inside > outside
    p[(A < MIN_FAILING) | ~enriched | (n == N)[:, None]] = 1.0
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
    column = y[:, None].astype(np.float32)
    H = np.array([h for _, h, _ in cands])
    P = np.array([pop for _, _, pop in cands])
    obs = _pvalues(H, P, column)[:, 0]
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
                    pairs.append((i, j))
    if pairs:
        I, J = np.array(pairs).T
        H, P = np.vstack([H, H[I] & H[J]]), np.vstack([P, P[I] & P[J]])
    family = [((c,), h, pop) for c, h, pop in cands] + [
        ((cands[i][0], cands[j][0]), H[len(cands) + k], P[len(cands) + k]) for k, (i, j) in enumerate(pairs)
    ]
    observed = np.r_[obs, _pvalues(H[len(cands):], P[len(cands):], column)[:, 0]] if pairs else obs
    null_min = _pvalues(H, P, Y).min(axis=0)
    adjusted = (1 + (null_min[None, :] <= observed[:, None] * (1 + 1e-9)).sum(axis=1)) / (Y.shape[1] + 1)
    return family, observed, adjusted, pairs


def _severity_order(results: list[RunResult]) -> dict[str, int]:
    """Code -> 0 when some run has it as critical, 1 otherwise (critical outcomes listed first)."""
    out: dict[str, int] = {}
    for r in results:
        for f in r.findings:
            out[f["code"]] = min(out.get(f["code"], 1), 0 if f["severity"] == "critical" else 1)
    return out


def _best(cands, y: np.ndarray, keep: np.ndarray, permutations: int, rng) -> tuple | None:
    """The strongest condition among the runs in `keep`: (conditions, holds, pop, p, adjusted, tied)."""
    restricted = [(c, h & keep, pop & keep) for c, h, pop in cands]
    y = y & keep
    Y = np.zeros((len(y), permutations), dtype=np.float32)
    Y[keep] = np.stack([rng.permutation(y[keep]) for _ in range(permutations)], axis=1)
    family, observed, adjusted, pair_parts = _search(restricted, y, Y)
    n_single = len(restricted)
    if observed.min() >= 1.0:
        return None
    single = int(np.argmin(observed[:n_single]))
    pick = single
    if len(observed) > n_single:
        pair = n_single + int(np.argmin(observed[n_single:]))
        if observed[pair] * PAIR_GAIN < observed[single]:
            pick = pair
    conds, holds, pop = family[pick]
    # settings on other parameters that catch the same failing runs about as well: the sweep
    # cannot tell them apart (sorted, best first)
    tied: dict[str, Condition] = {}
    close = np.flatnonzero(observed[:n_single] <= observed[pick] * TIE_FACTOR)
    for i in close[np.argsort(observed[close], kind="stable")]:
        if not np.array_equal(family[i][1] & y, holds & y):
            continue
        c = family[i][0][0]
        if c.param not in {x.param for x in conds} and c.param not in tied and len(tied) < MAX_TIED:
            tied[c.param] = c
    return conds, holds, pop, float(observed[pick]), float(adjusted[pick]), tuple(tied.values())


def find_links(
    results: list[RunResult], alpha: float = ALPHA, permutations: int = PERMUTATIONS, seed: int = 0
) -> list[Link]:
    """Supported links between settings and failures, most severe outcome and strongest first.

    Per outcome, greedily: the strongest condition (a single split, or a pair
    when it beats every single split by PAIR_GAIN) is reported if it survives
    the correction; its runs are set aside and the search repeats on the rest,
    so a second link must explain failures the first does not. A setting that
    only travels with the first (a duplicate, a derived value, a confounded
    design) explains nothing new and is not reported. "Any problem" links are
    kept only for parameters no code link already names.
    """
    runs = [r for r in results if r.params]
    if len(runs) < 4:
        return []
    cands = candidates(runs)
    if not cands:
        return []
    rng = np.random.default_rng(seed)
    outcomes = [(codes, y) for codes, y in _outcomes(runs) if not y.all()]
    level = alpha / max(1, len(outcomes))  # Bonferroni across outcomes; max-T within each search
    # enough permutations that the smallest possible adjusted p (1 / (B + 1)) can pass the level
    permutations = max(permutations, math.ceil(2 / level))
    severity = _severity_order(runs)
    ranked: list[tuple[tuple, Link]] = []
    code_params: set[str] = set()
    for codes, y in outcomes:
        keep = np.ones(len(runs), dtype=bool)
        given: tuple[Condition, ...] = ()
        for _ in range(MAX_LINKS_PER_OUTCOME):
            if (y & keep).sum() < MIN_FAILING:
                break
            found = _best(cands, y, keep, permutations, rng)
            if found is None or found[4] > level:
                break
            conds, holds, pop, p, p_adjusted, tied = found
            if codes is None and {c.param for c in conds} & code_params:
                break
            link = _link(runs, codes, y & keep, conds, holds, pop, p, p_adjusted, given, tied)
            order = 2 if codes is None else severity.get(codes[0], 1)
            ranked.append(((order, len(given), link.p, -link.failing), link))
            keep &= ~holds
            given += conds
        if codes is not None:
            code_params.update(c.param for _, link in ranked for c in link.conditions if link.codes == codes)
    # any-problem links come last in `outcomes`, so code_params is complete when they are checked
    return [link for _, link in sorted(ranked, key=lambda kv: kv[0])]


def _link(runs, codes, y, conds, holds, pop, p, p_adjusted, given, tied) -> Link:
    a, n = int((holds & y).sum()), int(holds.sum())
    outside = pop & ~holds
    fail_codes = codes or sorted({c for r, h in zip(runs, holds & y) if h for c in r.codes})
    return Link(conds, fail_codes, a, n, int((outside & y).sum()), int(outside.sum()), float(p), float(p_adjusted), given, tied)
