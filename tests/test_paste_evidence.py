"""Evidence a few pasted lines carry on their face: a loss of 0 beside a NaN gradient norm, an LR of 0.

Excerpts written for the test in HF Trainer's dict shape (numbers made up)."""
from __future__ import annotations

from logdoctor.config import Config
from logdoctor.diagnose import diagnose_run
from _ingest_helpers import only_run


def _hf(tmp_path, rows):
    lines = ["{'loss': %s, 'grad_norm': %s, 'learning_rate': %s, 'epoch': %.2f}" % (*row, 0.01 * i) for i, row in enumerate(rows, 1)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    rd = diagnose_run(only_run(tmp_path), Config())
    return [f for f in rd.findings if f.severity != "info"]


def test_a_loss_of_zero_beside_a_nan_gradient_norm_is_a_divergence(tmp_path):
    rows = [(1.9, 3.1, 2e-5), (1.7, 2.8, 2e-5), *[(0.0, "nan", 2e-5)] * 6]
    found = _hf(tmp_path, rows)
    assert found[0].code == "diverge" and found[0].evidence["first_nonfinite_step"] == 2
    assert found[0].evidence["nonfinite_points"] == 6


def test_a_zero_loss_with_finite_gradients_is_no_divergence(tmp_path):
    found = _hf(tmp_path, [(0.0, 0.0, 2e-5)] * 8)
    assert "diverge" not in [f.code for f in found]


def test_an_lr_of_exactly_zero_on_every_line_is_a_schedule_fault(tmp_path):
    found = _hf(tmp_path, [(2.3 - 0.001 * i, 1.2, 0.0) for i in range(8)])
    lr = next(f for f in found if f.code == "lr_schedule_mismatch")
    assert lr.evidence["points"] == 8 and "exactly 0" in lr.title


def test_a_warmup_from_zero_is_no_zero_lr(tmp_path):
    found = _hf(tmp_path, [(2.3 - 0.1 * i, 1.2, 1e-6 * i) for i in range(8)])
    assert not any(f.code == "lr_schedule_mismatch" and "exactly 0" in f.title for f in found)
