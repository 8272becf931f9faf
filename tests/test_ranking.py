"""diagnose.rank: suppression, severity/confidence order, root causes ahead of the symptoms they explain."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from logdoctor import diagnose
from logdoctor.config import Config
from logdoctor.model import Finding, Run
from logdoctor.rules import all_rules
from logdoctor.rules.base import Rule


def finding(code: str, severity: str = "warning", confidence: float = 0.5) -> Finding:
    return Finding(code=code, severity=severity, confidence=confidence, title=code, metric=None, steps=None)


def fake_rules(monkeypatch, **relations):
    """Replace the catalogue rank() reads with rules whose outranks/suppresses are given as 'code=(outranks, suppresses)'."""
    catalogue = {
        code: type(code, (Rule,), {"code": code, "outranks": tuple(out), "suppresses": tuple(sup)})
        for code, (out, sup) in relations.items()
    }
    monkeypatch.setattr(diagnose, "all_rules", lambda: catalogue)


def order(findings: list[Finding]) -> list[str]:
    return [f.code for f in diagnose.rank(findings)]


def test_unrelated_findings_sort_by_severity_then_confidence(monkeypatch):
    fake_rules(monkeypatch, a=((), ()), b=((), ()), c=((), ()), d=((), ()))
    got = order([finding("a", "info", 0.9), finding("b", "warning", 0.4), finding("c", "critical", 0.3), finding("d", "warning", 0.8)])
    assert got == ["c", "d", "b", "a"]


def test_root_cause_moves_ahead_of_a_more_severe_symptom(monkeypatch):
    fake_rules(monkeypatch, cause=(("symptom",), ()), symptom=((), ()), other=((), ()))
    got = order([finding("symptom", "critical", 0.95), finding("other", "critical", 0.9), finding("cause", "warning", 0.4)])
    assert got == ["cause", "symptom", "other"]


def test_chains_of_causes_are_ordered_transitively(monkeypatch):
    """x explains f, f explains c: x must precede f even though c is ranked first by severity."""
    fake_rules(monkeypatch, x=(("f",), ()), f=(("c",), ()), c=((), ()))
    got = order([finding("c", "critical", 0.9), finding("x", "warning", 0.9), finding("f", "warning", 0.5)])
    assert got == ["x", "f", "c"]


def test_info_findings_are_not_pulled_ahead(monkeypatch):
    fake_rules(monkeypatch, note=(("symptom",), ()), symptom=((), ()))
    assert order([finding("note", "info", 0.99), finding("symptom", "warning", 0.5)]) == ["symptom", "note"]


def test_suppressed_codes_are_removed(monkeypatch):
    fake_rules(monkeypatch, boom=((), ("wobble", "spike")), wobble=((), ()), spike=((), ()), other=((), ()))
    got = order([finding("wobble", "warning", 0.9), finding("boom", "critical", 0.6), finding("other", "warning", 0.1)])
    assert got == ["boom", "other"]


def test_outrank_cycles_do_not_hang_or_drop_findings(monkeypatch):
    fake_rules(monkeypatch, a=(("b",), ()), b=(("a",), ()))
    assert sorted(order([finding("a", "warning", 0.2), finding("b", "critical", 0.9)])) == ["a", "b"]


# --------------------------------------------------------------------------- the real catalogue


def test_declared_relations_name_real_codes():
    codes = set(all_rules())
    for code, cls in all_rules().items():
        for other in (*cls.outranks, *cls.suppresses):
            assert other != code
            assert other in codes, f"{code} names unknown code {other!r}"


@pytest.mark.parametrize("cause", ["lr_schedule_mismatch", "scaler_collapse"])
def test_real_root_causes_outrank_flat(cause):
    if "flat" not in all_rules():
        pytest.skip("no flat rule")
    findings = [finding("flat", "critical", 0.97), finding(cause, "warning", 0.55)]
    assert [f.code for f in diagnose.rank(findings)] == [cause, "flat"]


def test_lr_floor_run_is_diagnosed_root_cause_first():
    """End to end: LR collapses in the first 2 % of the run and the loss never moves."""
    steps = np.arange(1500)
    rng = np.random.default_rng(0)
    lr = 0.1 * 0.1 ** (steps // 10)
    loss = 2.3026 * (1 + 0.01 * rng.standard_normal(len(steps)))
    frame = pl.DataFrame(
        {
            "metric": ["train/loss"] * len(steps) + ["train/lr"] * len(steps),
            "step": np.r_[steps, steps],
            "value": np.r_[loss, lr],
        }
    ).with_columns(pl.lit(None, dtype=pl.Float64).alias("wall_time"))
    result = diagnose.diagnose_run(Run(name="r", path="r", format="csv", scalars=frame), Config())
    got = [f.code for f in result.findings]
    assert got[0] == "lr_schedule_mismatch"
    assert "flat" in got[1:], "the symptom is still reported, after its cause"
    assert result.status == "critical"


def test_training_instability_outranks_the_validation_rise_it_causes():
    """A training loss thrown about (oscillate) or kicked by spikes explains a validation loss
    that climbs with it: the instability is named first, overfitting second."""
    for cause in ("oscillate", "spike"):
        findings = [finding("overfit", "warning", 0.98), finding(cause, "warning", 0.6)]
        assert order(findings) == [cause, "overfit"]


def test_a_spike_explains_an_overfit_only_when_it_came_before_the_validation_turned():
    """Spikes kick the weights, so a validation loss that climbs after them is their echo; a spike
    that comes after the validation loss already turned cannot have turned it."""
    def at(code, first, last, confidence):
        return Finding(code=code, severity="warning", confidence=confidence, title=code, metric=None, steps=(first, last))

    overfit = at("overfit", 675, 2599, 0.99)
    assert order([overfit, at("spike", 300, 1800, 0.7)]) == ["spike", "overfit"]
    assert order([overfit, at("spike", 1859, 1859, 0.7)]) == ["overfit", "spike"]
