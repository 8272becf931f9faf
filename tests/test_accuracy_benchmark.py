"""benchmarks/accuracy.py: the scoring definitions its report and --check rely on."""
from __future__ import annotations

import importlib.util
import shutil
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


LABELS = {run_id: accuracy.read_label(raw) for run_id, raw in {
    "a_flat": {"codes": ["flat"], "healthy": False},
    "b_sched": {"codes": ["lr_schedule_mismatch", "flat"], "healthy": False},
    "c_overfit": {"codes": ["overfit"], "healthy": False},
    "d_ok": {"codes": [], "healthy": True},
    "e_ok": {"codes": [], "healthy": True},
    "f_gone": {"codes": ["diverge"], "healthy": False},
    "g_spiky_ok": {"label": "healthy", "acceptable": ["spike"], "why": "one bump that recovers"},
    "h_borderline": {"label": "crawl", "acceptable": ["healthy"], "why": "slow but maybe fine"},
}.items()}
SHARED = Path(__file__).resolve().parents[2] / "shared"


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
            rd("g_spiky_ok", ("spike", "warning", 0.7)),  # a fair remark on a healthy run
            rd("h_borderline"),  # nothing fires: fair where the label accepts healthy
        ],
    )
    return accuracy.metrics(accuracy.score(diagnosis, LABELS))


def test_top1_counts_label_alternatives_and_missing_runs(m):
    # a_flat hit, b_sched hit (flat is an accepted code), c_overfit miss (crawl), f_gone miss (not read),
    # h_borderline hit (quiet, and its label accepts healthy)
    assert m["top1"] == pytest.approx(3 / 5)
    assert m["unread"] == ["f_gone"]
    assert [x["run"] for x in m["top1_misses"]] == ["c_overfit", "f_gone"]


def test_false_alarms_ignore_info_findings_and_acceptable_remarks(m):
    assert m["false_alarm"] == pytest.approx(1 / 3)
    assert [a["run"] for a in m["false_alarms"]] == ["e_ok"]


def test_per_code_precision_and_recall(m):
    flat = m["per_code"]["flat"]
    assert (flat["labelled"], flat["fired"], flat["tp"], flat["precision"], flat["recall"]) == (2, 2, 2, 1.0, 1.0)
    assert m["per_code"]["lr_schedule_mismatch"]["recall"] == 0.0
    assert m["per_code"]["crawl"]["precision"] == 0.0
    assert "info_note" not in m["per_code"] and "healthy" not in m["per_code"]


def test_confusion_uses_the_main_label_code(m):
    assert m["confusion"]["lr_schedule_mismatch -> flat"] == 1
    assert m["confusion"]["healthy -> none"] == 1


def test_both_label_schemas_read_to_the_same_meaning():
    sample = accuracy.read_label({"codes": ["oscillate", "spike"], "healthy": False, "notes": "bursts"})
    shared = accuracy.read_label({"label": "oscillate", "acceptable": ["spike"], "why": "bursts", "family": "gan"})
    assert (sample.main, sample.acceptable, sample.healthy) == (shared.main, shared.acceptable, shared.healthy)
    assert shared.family == "gan" and "bursts" in sample.why
    assert accuracy.read_label({"codes": [], "healthy": True}).healthy
    assert accuracy.read_label({"label": "flat", "framework": "Keras"}).format == "Keras"
    assert accuracy.read_label({"label": "healthy", "acceptable": ["crawl"]}).fair == {"crawl"}
    with pytest.raises(ValueError):
        accuracy.read_label({"verdict": "flat"})


@pytest.mark.skipif(not (SHARED / "real-logs-dev" / "labels.json").is_file(), reason="../shared/real-logs-dev not present")
def test_real_logs_dev_labels_are_read_as_faulty_and_healthy_runs_with_codes():
    folder = SHARED / "real-logs-dev"
    labels = accuracy.load_labels(folder / "labels.json")
    faulty = {k: v for k, v in labels.items() if not v.healthy}
    assert faulty and len(faulty) < len(labels)
    assert all(v.main in v.fair and v.why for v in faulty.values())
    assert accuracy.runs_root(folder, labels) == folder / "runs"
    assert all((folder / "runs" / run_id).is_dir() for run_id in labels)


def test_every_generated_run_has_a_family_and_a_label_in_known_codes():
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    from logdoctor.rules import all_rules

    spec = importlib.util.spec_from_file_location("holdout_corpus", Path(accuracy.ROOT) / "benchmarks" / "holdout_corpus.py")
    holdout = importlib.util.module_from_spec(spec)
    sys.modules["holdout_corpus"] = holdout
    spec.loader.exec_module(holdout)
    cases = holdout.cases()
    assert len({c.run_id for c in cases}) == len(cases)
    labels = [accuracy.read_label(c.label()) for c in cases]
    assert all(lab.family for lab in labels)
    assert {c for lab in labels for c in lab.fair} <= set(all_rules())
    families = {lab.family for lab in labels}
    assert len(families) >= 10 and all(any(not lab.healthy for lab in labels if lab.family == f) for f in families)


def test_the_json_contract_scores_like_the_in_process_diagnosis(tmp_path):
    samples = Path(accuracy.ROOT) / "sample_runs"
    for run_id in ("tb_flat_orphan_optimizer", "csv_healthy_amp_charlm", "hf_overfit_charlm_small_corpus"):
        shutil.copytree(samples / run_id, tmp_path / run_id)
    labels = {k: v for k, v in accuracy.load_labels(samples / "labels.json").items() if (tmp_path / k).is_dir()}

    def tops(diagnosis):
        return {s.run_id: (s.top, s.found) for s in accuracy.score(diagnosis, labels)}

    assert tops(accuracy.analyze_via_json(tmp_path)) == tops(accuracy.analyze(tmp_path))
    assert tops(accuracy.analyze(tmp_path))["tb_flat_orphan_optimizer"] == ("flat", True)
