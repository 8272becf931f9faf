"""The audit on real trainings: a generated sweep with a known failing region, and sample_runs/.

The sweep is produced by benchmarks/gen_sweep.py (real SGD trainings written
by SummaryWriter, a Lightning-style CSV logger and an HF-style trainer_state),
reduced here to 18 short runs. Physics decides which runs fail (lr = 0.2 is
past SGD's stability limit on this problem); the audit must name that region.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from logdoctor.audit import audit

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("tensorboard")

REPO = Path(__file__).resolve().parents[1]


def _gen_sweep():
    spec = importlib.util.spec_from_file_location("gen_sweep", REPO / "benchmarks" / "gen_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "sweep"
    records = _gen_sweep().generate(out, seeds=3, steps=200, lrs=(0.003, 0.03, 0.2), batch_sizes=(16,))
    return out, records


def test_generated_sweep_link_names_the_failing_region(generated):
    out, records = generated
    report = audit(out, jobs=1, use_cache=False)
    assert report.errors == [] and len(report.results) == len(records) == 18
    assert {r.format for r in report.results} == {"tensorboard", "lightning", "hf_trainer"}
    # every writer carried the hyperparameters
    assert all({"lr", "momentum", "batch_size", "seed"} <= set(r.params) for r in report.results)
    truth = {rec["run"] for rec in records if rec["diverged"]}
    assert truth == {rec["run"] for rec in records if rec["lr"] == 0.2}
    found = {r.run.split("/")[0] for r in report.results if "diverge" in r.codes}
    assert found == truth
    link = next(l for l in report.links if l.codes == ["diverge"])
    assert (link.param, link.condition, link.failing, link.total, link.failing_out) == ("lr", ">= 0.2", 6, 6, 0)
    best, _ = report.best
    assert best is not None and best.params["lr"] < 0.2


SAMPLES = REPO / "sample_runs"


@pytest.mark.skipif(not (SAMPLES / "labels.json").is_file(), reason="sample_runs/ not present")
def test_sample_runs_summary_is_consistent_with_labels():
    labels = json.loads((SAMPLES / "labels.json").read_text())
    report = audit(SAMPLES, jobs=1, use_cache=False)
    assert report.errors == []
    assert {r.run.split("/")[0] for r in report.results} == set(labels)
    counts = report.by_status
    assert sum(counts[s] for s in ("critical", "warning", "healthy")) == len(labels)
    best, _ = report.best
    assert best is not None and labels[best.run.split("/")[0]]["healthy"]
    # every link the audit states must be true of the runs it summarises
    for link in report.links:
        assert link.failing >= 2
        holding = [r for r in report.results if all(c.param in r.params for c in link.conditions)]
        assert link.total + link.total_out == len(holding)
