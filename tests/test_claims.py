"""No headline is refuted by the numbers it prints.

Two layers. `logdoctor.claims` is the one place a finding's claimed relation is
checked against its own numbers before it is reported. And, independently of
the rules' and the checker's code, a parser of the printed headlines reads every
relation a headline states ("A → B (-5.2%, within its noise ±N)", "first A, best
B", "falls only 17% (A to B)", "climbs back from its best A ... to B") and checks
it against the numbers printed beside it, over every corpus on disk.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from logdoctor.claims import measured_change, refutation
from logdoctor.diagnose import analyze
from logdoctor.model import Finding, Series

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPORA = [ROOT / "sample_runs", ROOT / "tests" / "data" / "lr_sweep"] + [
    SHARED / name
    for name in ("real-logs-dev", "real-logs-dev2", "real-logs-dev-text", "real-logs-dev2-text", "real-logs", "external-curves")
]

NUM = r"(-?(?:\d[\d,]*)?\.?\d+(?:e-?\d+)?|NaN|-?inf)"


def _n(text: str) -> float:
    return float(text.replace(",", "").replace("NaN", "nan"))


def _finding(claim: str, **evidence) -> Finding:
    return Finding(code="flat", severity="critical", confidence=0.9, title="t", metric="loss", steps=(0, 9), evidence={"claim": claim, **evidence})


# ------------------------------------------------------------------ the checker


def test_a_fall_beyond_the_noise_refutes_a_no_fall_claim():
    assert refutation(_finding("no_fall", loss_start=2.228, loss_end=2.113, change_noise=0.05)) is not None
    assert refutation(_finding("no_fall", loss_start=2.228, loss_end=2.113, change_noise=0.2)) is None


def test_a_best_below_the_first_evaluation_refutes_never_below_first():
    """The issue's case: 'validation never got below its first evaluation (0.4346 ... )' with a best of 0.345."""
    assert refutation(_finding("never_below_first", loss_start=0.4346, loss_end=0.3803, val_loss_best=0.345, change_noise=0.02)) is not None
    assert refutation(_finding("never_below_first", loss_start=2.87, loss_end=2.99, val_loss_best=2.73, change_noise=0.2)) is None


def test_the_series_it_cites_can_refute_a_claim_its_evidence_supports():
    falling = Series("loss", np.arange(20), np.linspace(2.0, 1.0, 20))
    claim = _finding("no_fall", loss_start=2.0, loss_end=2.0, change_noise=0.05)
    assert refutation(claim, falling) is not None
    assert refutation(claim, Series("loss", np.arange(20), np.full(20, 2.0))) is None


def test_rose_fell_and_chance_claims_are_checked():
    assert refutation(_finding("rose", loss_start=1.0, loss_end=1.01, change_noise=0.05)) is not None
    assert refutation(_finding("fell", loss_start=1.0, loss_end=1.2)) is not None
    assert refutation(_finding("at_chance", loss_end=2.0, chance_level=math.log(10), chance_tolerance=0.115)) is not None
    assert refutation(_finding("at_chance", loss_end=2.30, chance_level=math.log(10), chance_tolerance=0.115)) is None


def test_a_finding_without_a_claim_is_not_checked():
    assert refutation(Finding("spike", "warning", 0.8, "t", "loss", (0, 1), {"loss_start": 1.0, "loss_end": 9.0})) is None


def test_the_measured_change_says_which_side_of_the_noise_it_is():
    assert measured_change(2.228, 2.113, 0.12) == "2.228 → 2.113 (-5.2%, within its noise ±0.12)"
    assert measured_change(1.0, 0.5, 0.1, "3% of its level") == "1 → 0.5 (-50.0%, beyond 3% of its level ±0.1)"


# ------------------------------------------------------------------ the printed headlines, parsed


PATTERNS = ("→", "first ", "falls only", "from its best", "ends at chance")


def states_a_relation(title: str) -> bool:
    """The headline states a relation between numbers this parser reads."""
    return any(p in title for p in PATTERNS)


def refuted(title: str) -> list[str]:
    """Every relation the headline states that its own printed numbers contradict."""
    bad = []
    for a, b, pct, within, noise in re.findall(NUM + r" → " + NUM + r" \(([+-][\d.]+)%, (within|beyond) [^±]*±" + NUM + r"\)", title):
        a, b, noise = _n(a), _n(b), _n(noise)
        if (float(pct) > 0.05 and b < a) or (float(pct) < -0.05 and b > a):
            bad.append(f"sign of {pct}% against {a} → {b}")
        if within == "within" and abs(b - a) > noise * 1.01 + 1e-12:
            bad.append(f"{a} → {b} is not within ±{noise}")
        if within == "beyond" and abs(b - a) < noise * 0.99:
            bad.append(f"{a} → {b} is not beyond ±{noise}")
    for a, b in re.findall(r"ended no lower than it started \(" + NUM + r" → " + NUM, title):
        if _n(b) < _n(a):
            bad.append(f"'no lower' but {b} < {a}")
    for a, b in re.findall(r"rose above its start and stayed there \(" + NUM + r" → " + NUM, title):
        if _n(b) <= _n(a):
            bad.append(f"'rose' but {b} <= {a}")
    for a, best, noise in re.findall(r"first " + NUM + r", best " + NUM + r", within its noise ±" + NUM, title):
        if _n(best) < _n(a) - _n(noise) * 1.01:
            bad.append(f"best {best} below first {a} beyond ±{noise}")
    for pct, a, b in re.findall(r"falls only ([\d.]+)% over [\d,]+ steps \(" + NUM + r" to " + NUM + r"\)", title):
        if not _n(b) < _n(a):
            bad.append(f"'falls' but {a} to {b}")
    for low, high in re.findall(r"(?:blows up|climbs back) from its best " + NUM + r" at step [\d,]+ to " + NUM, title):
        if not _n(high) > _n(low):
            bad.append(f"'climbs' but {low} to {high}")
    for pct in re.findall(r"rose (-?[\d.]+)% from its best", title):
        if float(pct) <= 0:
            bad.append(f"'rose' {pct}%")
    for chance, _, end in re.findall(r"ends at chance \(ln \d+ = " + NUM + r"\) \(" + NUM + r" → " + NUM, title):
        if abs(_n(end) - _n(chance)) > 0.05 * _n(chance) * 1.01:
            bad.append(f"'at chance' {chance} but ends at {end}")
    return bad


def test_the_parser_catches_the_sentences_the_issue_quotes():
    assert refuted("loss did not learn: ended no lower than it started (2.228 → 2.113 (-5.2%, within its noise ±0.01))")
    assert refuted("val_loss did not learn: validation never got clearly below its first evaluation (first 0.4346, best 0.345, within its noise ±0.01; 0.3803 at the end)")
    assert refuted("loss falls only 3.0% over 100 steps (0.6773 to 0.6931) and is not levelling off")
    assert refuted("loss did not learn: ends at chance (ln 10 = 2.303) (2.4 → 2.0 (-16.7%, within its noise ±0.5))")
    assert not refuted("loss did not learn: fell no further than its noise (2.228 → 2.113 (-5.2%, within its noise ±0.12))")


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda p: p.name)
def test_no_headline_is_refuted_by_its_own_numbers(corpus):
    if not corpus.exists():
        pytest.skip(f"{corpus} is not on disk")
    diagnosis = analyze(corpus)
    bad = {
        (r.run.name, f.code, f.title): refuted(f.title)
        for r in diagnosis.runs
        for f in r.findings
        if refuted(f.title)
    }
    assert not bad
    # the parser did read relations here (a corpus with problems states some)
    titles = [f.title for r in diagnosis.runs for f in r.findings if f.severity != "info"]
    assert not titles or any(states_a_relation(t) for t in titles)
    # and nothing was withdrawn: the rules only claim what their numbers prove
    withdrawn = [w for r in diagnosis.runs for w in r.run.warnings if "withdrawn" in w]
    assert not withdrawn
