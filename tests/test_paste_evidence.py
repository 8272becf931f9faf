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


def _diagnose_lines(tmp_path, lines):
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    run = only_run(tmp_path)
    return run, [f for f in diagnose_run(run, Config()).findings if f.severity != "info"]


def test_a_skipped_step_counter_at_most_steps_is_a_collapsed_scaler(tmp_path):
    """DeepSpeed's `step=N, skipped=M` log_dist line: 1,995 of 2,000 steps skipped."""
    lines = []
    for step in range(1600, 2100, 100):
        lines += [f"[2024-03-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped={step - 5}, lr=[1e-05], mom=[(0.9, 0.999)]",
                  f"steps: {step} loss: {2.31 + 0.001 * (step % 300):.4f} iter time (s): 0.5 samples/sec: 64.0"]
    _, found = _diagnose_lines(tmp_path, lines)
    collapse = next(f for f in found if f.code == "scaler_collapse")
    assert collapse.evidence["skipped_steps"] == 1995 and collapse.evidence["skipped_share"] == 1.0


def test_a_few_skipped_steps_are_no_collapse(tmp_path):
    lines = [f"[Rank 0] step={step}, skipped={3 + step // 1000}, lr=[1e-05]\nsteps: {step} loss: {2.3 - 0.0001 * step:.4f}" for step in range(1000, 2100, 100)]
    _, found = _diagnose_lines(tmp_path, lines)
    assert "scaler_collapse" not in [f.code for f in found]


def test_fairseq_overflow_notes_are_the_loss_scale_not_its_rounded_column(tmp_path):
    lines, scale = [], 128.0
    for update in range(10, 130, 10):
        lines.append(f"| epoch 001:    {update} / 500 loss=9.{update // 10:02d}, ppl=512.3, num_updates={update}, lr=0.0005, gnorm=1.2, loss_scale=0, wall=100")
        scale /= 2
        lines.append(f"2021-01-01 10:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: {scale}")
    run, found = _diagnose_lines(tmp_path, lines)
    assert found[0].code == "scaler_collapse" and found[0].evidence["scale_final"] == 128.0 / 2**12


def test_two_closing_zero_losses_beside_nan_gradient_norms_are_enough(tmp_path):
    """A three-line paste: 0.2051, then 0.0 / nan twice to the end."""
    found = _hf(tmp_path, [(0.2051, "nan", 9.77e-6), (0.0, "nan", 9.76e-6), (0.0, "nan", 9.75e-6)])
    assert found[0].code == "diverge" and found[0].evidence["nonfinite_points"] == 2


def test_an_accuracy_frozen_while_the_loss_swings_and_comes_back_is_a_constant_metric(tmp_path):
    """Eight epochs at val acc 0.5000 while the train loss swings 1.36 -> 0.73 -> 1.39: it moved."""
    loss = (1.3633, 1.3360, 1.0868, 0.7682, 0.7315, 1.0313, 1.3165, 1.3862)
    lines = [f"I1112 15:56:44.818868 140547 train.py:23] epoch {210 + i} train loss: {v}; train acc: 0.5000 val acc: 0.5000"
             for i, v in enumerate(loss)]
    _, found = _diagnose_lines(tmp_path, lines)
    assert "val_metric_constant" in [f.code for f in found]
