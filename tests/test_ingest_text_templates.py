"""Pasted console logs no line family knows, read by their numeric templates.

Each excerpt is written for the test in the shape users paste (numbers made up): lines that differ only
in their numbers are one template, and a template of three lines or more is a series.
"""
from __future__ import annotations

import math

from logdoctor.ingest import load_runs
from logdoctor.ingest.text_templates import loss_templates, tokenise
from _ingest_helpers import only_run, series


def _run(tmp_path, lines: list[str], name: str = "train.log"):
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return only_run(tmp_path)


def test_bare_numbers_one_a_line_are_the_loss_in_line_order(tmp_path):
    values = [9.3, 8.9, 9.0, 8.5, 8.9, 8.4]
    run = _run(tmp_path, [f"{v:.2f}" for v in values])
    loss = series(run, "loss")
    assert list(loss.values) == values and list(loss.steps) == list(range(6))
    assert any(n.startswith("template '<*>' (6 lines)") and "nothing on the page is named a loss" in n for n in run.notes)


def test_rows_of_counts_without_their_header_give_epoch_batch_and_the_first_varying_number(tmp_path):
    """A detector's per-batch rows pasted without the header printed once above them: `0/300` is the
    epoch, `17/5000` the batch, the first number after them the loss (NaN here)."""
    rows = [f"   0/300     {b}/5000       nan       nan       nan       {90 + 7 * b % 40}     0.25" for b in range(17, 24)]
    run = _run(tmp_path, rows)
    loss = series(run, "loss")
    assert len(loss) == 7 and all(math.isnan(v) for v in loss.values)
    assert list(loss.steps) == list(range(17, 24))


def test_a_header_printed_once_names_the_columns_of_the_rows_under_it(tmp_path):
    lines = ["starting", "  Epoch  batch  box  objness  total", *(f"  1/10  {b}/50  0.{9 - b}  0.3  0.{9 - b}5" for b in range(1, 6))]
    run = _run(tmp_path, lines)
    assert list(series(run, "box").values) == [0.8, 0.7, 0.6, 0.5, 0.4]
    assert any("box (header)" in n for n in run.notes)
    # no column named a loss: the header's total is read as one, and the note says so
    assert list(series(run, "loss").values) == [0.85, 0.75, 0.65, 0.55, 0.45]
    assert any("headed 'total'" in n for n in run.notes)


def test_detector_rows_under_a_header_among_validation_lines_with_a_bar_after_each(tmp_path):
    """A detector's console: a header once, then per epoch a row (epoch count, memory size, losses,
    labels, image size, then a progress bar), a validation header with `mAP@.5:.95` in it and a row
    of scores. The rows are a table by their header, even as a third of the numbered lines."""
    lines = ["      Epoch   gpu_mem       box       obj       cls     total    labels  img_size"]
    for e in range(8):
        lines += [f"      {e}/299     3.21G   {0.08 - 0.004 * e:.5f}   0.04000   0.03000    {0.15 - 0.007 * e:.5f}        25       640: "
                  f"100%|##########| 16/16 [00:05<00:00,  2.78it/s]",
                  "               Class     Images     Labels          P          R     mAP@.5 mAP@.5:.95: 100%|####| 2/2 [00:00<00:00]",
                  f"                 all         50        120      0.{50 + e}       0.{40 + e}       0.{30 + e}      0.{10 + e}"]
    run = _run(tmp_path, lines)
    assert [round(v, 3) for v in series(run, "loss").values] == [round(0.15 - 0.007 * e, 3) for e in range(8)]
    assert not any(m.startswith("map") for m in run.metrics)


def test_the_name_is_the_word_before_its_colon_not_the_type_printed_after_it(tmp_path):
    run = _run(tmp_path, [f"Loss: Tensor Float []  {v}" for v in (0.52, 0.47, 0.41, 0.40)])
    assert list(series(run, "loss").values) == [0.52, 0.47, 0.41, 0.40]


def test_a_whole_number_rising_after_the_loss_name_is_its_step_not_the_loss(tmp_path):
    """`Train loss 12001 0.166`: read as a loss of 12001 it is a counter; the step it is. Markdown bold
    around some lines of the paste does not split the template, and an overflow message between two
    steps sits at the step before it."""
    lines = ["**Train loss 501 0.166** Grad Norm 0.37 2.51s/it"]
    for step, loss in ((502, 4.97), (503, 5.31), (506, 4.38), (507, 8.91)):
        lines += [f"Train loss {step} {loss} Grad Norm 29.5 1.85s/it", "Gradient overflow.  Skipping step, reducing loss scale to 512.0"]
    run = _run(tmp_path, lines)
    loss = series(run, "train_loss")
    assert list(loss.steps) == [501, 502, 503, 506, 507] and list(loss.values) == [0.166, 4.97, 5.31, 4.38, 8.91]
    assert list(series(run, "reducing_loss_scale_to").steps) == [502, 503, 506, 507]


def test_a_loss_written_short_is_the_loss(tmp_path):
    run = _run(tmp_path, [f"it {i}\tls {2.3 - 0.1 * i:.2f}\tacc 0.{i}" for i in range(1, 6)])
    assert list(series(run, "loss").values) == [2.2, 2.1, 2.0, 1.9, 1.8]
    assert list(series(run, "loss").steps) == [1, 2, 3, 4, 5]


def test_what_holds_no_measurement_makes_no_series_and_no_run(tmp_path):
    """Progress bars (counts, shares, rates, times), dates and a numbered README make no series: no run."""
    bars = [f"Epoch 1/10 - Training:  {p}%|████ | {p * 2}/200 [00:0{p % 10}<00:20, 5.{p % 9}it/s]" for p in range(5, 60, 7)]
    readme = ["Install:", "1. pip install x", "2. run it", "Version 1.2 of 2021-06-30", "See section 3 and 4"]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "output.log").write_text("\n".join(bars) + "\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("\n".join(readme * 3) + "\n")
    runs, errors = load_runs(tmp_path)
    assert runs == [] and errors == []
    assert tokenise("2021-06-30 11:36:21 45% 3.1it/s 2.5s step 7/9 loss 0.3")[0] == "<t> <t> <t> <t> <t> step <n/m> loss <*>"


def test_a_guessed_loss_needs_half_the_numbered_lines(tmp_path):
    """Bare numbers among more numbered lines of other text, or too few of them to be a curve (three
    rows of a data table), are no loss curve by their place alone."""
    words = ("alpha", "beta", "gamma", "delta", "eta", "theta", "iota", "kappa")
    numbers = ["0.5", "0.4", "0.3", "0.25", "0.2"]
    lines = [*numbers, *(f"{w} has {i} parts" for i, w in enumerate(words))]
    assert loss_templates(lines) is None
    assert loss_templates(lines[:7]) is not None
    assert loss_templates(numbers[:3]) is None


def test_a_log_the_line_families_read_is_read_as_before(tmp_path):
    """Templates read only what the families give no loss from: a known shape keeps its reading."""
    run = _run(tmp_path, [f"epoch {e} | step {100 * e} | loss {2.5 - 0.2 * e:.2f}" for e in range(1, 6)])
    assert not any("numeric templates" in n for n in run.notes)
    assert list(series(run, "loss").values) == [2.3, 2.1, 1.9, 1.7, 1.5]


def test_a_nan_loss_said_in_words_is_a_nan_point_where_it_is_said(tmp_path):
    """`Stopping epoch because loss is NaN` after the last epoch's line, even after other text: one
    closing NaN point of the loss; both readings agree. Said mid-log (a trainer that then prints a
    stand-in 0) it is no point."""
    from logdoctor.ingest import text_log

    lines = [f"End of epoch  {e} | loss   {4.2 - 0.02 * e:.4f}  | kl_loss   1.20" for e in range(15, 21)]
    lines += ["evaluating...", "Stopping epoch because loss is NaN", "Stopping training session because loss is NaN"]
    run = _run(tmp_path, lines)
    loss = series(run, "loss").values
    assert len(loss) == 7 and math.isnan(loss[-1]) and loss[0] == 3.9 and loss[-2] == 3.8
    text_log._LINE_BY_LINE_ONLY = True
    try:
        again = only_run(tmp_path)
    finally:
        text_log._LINE_BY_LINE_ONLY = False
    assert again.scalars.equals(run.scalars)


def test_a_nan_said_mid_log_is_no_point(tmp_path):
    lines = [f"Epoch: [1][{b}/6051]   Loss {40 + b % 7:.4f} (73.3)" for b in range(4686, 4692)]
    lines += ["WARNING: received a nan loss, setting loss value to 0", "Skipping grad update"]
    lines += [f"Epoch: [1][{b}/6051]   Loss {0 if b == 4692 else 41:.4f} (73.3)" for b in range(4692, 4695)]
    loss = series(_run(tmp_path, lines), "loss").values
    assert len(loss) == 9 and not any(math.isnan(v) for v in loss)


def test_prose_about_a_nan_loss_is_no_training_log(tmp_path):
    (tmp_path / "README.txt").write_text("If the loss is NaN, lower the LR.\nA NaN loss means 2 things.\n")
    assert load_runs(tmp_path) == ([], [])


def test_a_nan_said_on_a_counted_line_is_the_total_loss_at_that_step(tmp_path):
    """detectron2 stops with `FloatingPointError: Loss became infinite or NaN at iteration=147!`: the
    log's total loss (not a part of it) is NaN at step 147."""
    lines = [f"[11/01 19:16:{15 + i} d2.utils.events]: eta: 4:52:26  iter: {it}  total_loss: {1.75 - 0.01 * i:.3f}  "
             f"loss_cls: 1.248  loss_box_reg: 0.503  lr: 0.0002" for i, it in enumerate(range(19, 159, 20))]
    lines += ["Traceback (most recent call last):", "FloatingPointError: Loss became infinite or NaN at iteration=147!"]
    run = _run(tmp_path, lines)
    total = series(run, "total_loss")
    assert list(total.steps)[-1] == 147 and math.isnan(total.values[-1]) and len(series(run, "loss_cls")) == 7


def test_a_value_in_brackets_after_its_name_keeps_the_name(tmp_path):
    run = _run(tmp_path, [f"iteration {i} train loss [{1.2 - 0.05 * i:.4f}] val loss [{1.3 - 0.04 * i:.4f}]" for i in range(8)])
    assert list(series(run, "val_loss").values)[:2] == [1.3, 1.26] and len(series(run, "train_loss")) == 8


def test_numbers_glued_to_words_of_another_script_are_numbers(tmp_path):
    """A loop printing Chinese labels (`第3轮 损失: 1.15 准确率: 0.62`): the round is the step, the first
    number that varies the loss (no name on the page is an ASCII loss name)."""
    run = _run(tmp_path, [f"第{e}轮 损失: {1.2 - 0.05 * e:.4f} 准确率: 0.{60 + e}" for e in range(1, 9)])
    loss = series(run, "loss")
    assert list(loss.steps) == list(range(1, 9)) and round(float(loss.values[0]), 4) == 1.15


def test_a_notebook_table_copied_as_text_is_read_by_its_header_cells(tmp_path):
    """HF's notebook table pasted as text: `Step<TAB>Training Loss<TAB>Validation Loss`, then rows."""
    rows = [f"{10 * i}\t{2.5 - 0.2 * i:.6f}\t{2.6 - 0.15 * i:.6f}" for i in range(1, 4)]
    run = _run(tmp_path, ["Step\tTraining Loss\tValidation Loss", *rows])
    assert list(series(run, "training_loss").steps) == [10, 20, 30]
    assert list(series(run, "validation_loss").values) == [2.45, 2.3, 2.15]


def test_train_and_validation_losses_written_as_two_letters(tmp_path):
    run = _run(tmp_path, [f"Ep {e}\tTL {1.2 - 0.1 * e:.2f}\tVL {1.3 - 0.05 * e:.2f}\tTA 0.{60 + e}" for e in range(1, 7)])
    assert list(series(run, "loss").values)[:2] == [1.1, 1.0] and list(series(run, "val_loss").values)[:2] == [1.25, 1.2]
