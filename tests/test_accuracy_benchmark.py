"""benchmarks/accuracy.py: the scoring definitions its report and --check rely on."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from logdoctor.model import Diagnosis, Finding, Run, RunDiagnosis

SPEC = importlib.util.spec_from_file_location("accuracy", Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy.py")
accuracy = importlib.util.module_from_spec(SPEC)
sys.modules["accuracy"] = accuracy  # dataclasses look their module up
SPEC.loader.exec_module(accuracy)


def rd(name: str, *codes: tuple[str, str, float]) -> RunDiagnosis:
    findings = [Finding(code=c, severity=s, confidence=p, title=c, metric=None, steps=None) for c, s, p in codes]
    return RunDiagnosis(run=Run(name=name, path=name, format="csv"), roles={}, findings=findings)


LABELS = {
    "a_flat": {"codes": ["flat"], "healthy": False},
    "b_sched": {"codes": ["lr_schedule_mismatch", "flat"], "healthy": False},
    "c_overfit": {"codes": ["overfit"], "healthy": False},
    "d_ok": {"codes": [], "healthy": True},
    "e_ok": {"codes": [], "healthy": True},
    "f_gone": {"codes": ["diverge"], "healthy": False},
}


@pytest.fixture()
def m():
    diagnosis = Diagnosis(
        root="x",
        runs=[
            rd("a_flat", ("flat", "critical", 0.9)),
            rd("b_sched/version_0", ("flat", "critical", 0.95)),  # nested run: belongs to b_sched
            rd("c_overfit", ("info_note", "info", 0.99), ("crawl", "warning", 0.6)),
            rd("d_ok", ("info_note", "info", 0.8)),  # info is a remark, not an alarm
            rd("e_ok", ("spike", "warning", 0.7)),
        ],
    )
    return accuracy.metrics(accuracy.score(diagnosis, LABELS))


def test_top1_counts_label_alternatives_and_missing_runs(m):
    # a_flat hit, b_sched hit (flat is an accepted code), c_overfit miss (crawl), f_gone miss (not found)
    assert m["top1"] == pytest.approx(2 / 4)
    assert m["missing"] == ["f_gone"]


def test_false_alarms_ignore_info_findings(m):
    assert m["false_alarm"] == pytest.approx(1 / 2)
    assert [a["run"] for a in m["false_alarms"]] == ["e_ok"]


def test_per_code_precision_and_recall(m):
    flat = m["per_code"]["flat"]
    assert (flat["labelled"], flat["fired"], flat["tp"], flat["precision"], flat["recall"]) == (2, 2, 2, 1.0, 1.0)
    assert m["per_code"]["lr_schedule_mismatch"]["recall"] == 0.0
    assert m["per_code"]["crawl"]["precision"] == 0.0
    assert "info_note" not in m["per_code"]


def test_confusion_uses_the_main_label_code(m):
    assert m["confusion"]["lr_schedule_mismatch -> flat"] == 1
    assert m["confusion"]["healthy -> none"] == 1
