"""Console line families as trainers print them, each read by the one general line tokenizer.

Excerpts are written for the test in each trainer's own format (from its logging code and the
issue threads users paste them into); the numbers are made up, the shapes are not.
"""
from __future__ import annotations

import math

import pytest

from logdoctor.ingest import load_runs
from logdoctor.view import RunView
from _ingest_helpers import only_run, series


def _run(tmp_path, lines: list[str], name: str = "train.log"):
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return only_run(tmp_path)


def _values(run, metric):
    s = series(run, metric)
    return list(s.steps), [round(float(v), 4) for v in s.values]


def test_opennmt_batch_counter_within_an_epoch_and_perplexity_as_the_loss(tmp_path):
    lines = []
    for epoch in (1, 2):
        lines += [f"Epoch  {epoch},   {b:>3}/  150; acc:  {10 + b / 10:5.2f}; ppl:  {30 - 5 * epoch - b / 50:5.2f}; "
                  f"5187 src tok/s;     {b // 10} s elapsed" for b in (50, 100, 150)]
        lines += [f"Train perplexity: {28 - 5 * epoch}", f"Validation perplexity: {27 - 5 * epoch}", ""]
    run = _run(tmp_path, lines)
    steps, ppl = _values(run, "ppl")
    assert len(steps) == 6 and steps == sorted(steps)  # epoch x period + batch
    loss = series(run, "loss")
    assert [round(v, 4) for v in loss.values] == [round(math.log(p), 4) for p in ppl]
    assert any("ln(ppl)" in n for n in run.notes)
    assert _values(run, "validation_loss")[1] == [round(math.log(22), 4), round(math.log(17), 4)]


def test_fairseq_pipe_cells_are_name_value_pairs_with_a_clip_percentage(tmp_path):
    lines = [f"| epoch 001 | loss {9 - u / 1000:.3f} | nll_loss {8.9 - u / 1000:.3f} | ppl 477.1 | wps 1234 | ups 2 | "
             f"wpb 4096 | bsz 128 | num_updates {u} | lr 0.0005 | gnorm 1.2 | clip 100% |" for u in (500, 1000, 1500, 2000)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([500, 1000, 1500, 2000], [8.5, 8.0, 7.5, 7.0])
    assert _values(run, "clip")[1] == [100.0] * 4
    assert _values(run, "gnorm")[1] == [1.2] * 4


def test_tacotron2_iter_lines_with_overflow_lines_between_them(tmp_path):
    lines = ["OVERFLOW! Skipping step. Attempted loss scale: 8388608.0"]
    for i, loss in enumerate([49.3, 40.5, 23.8, 13.4], start=16):
        lines += [f"Train iter       {i} loss {loss:.6f} Grad Norm {10 + i:.6f} 3.22s/it"]
        if i == 17:
            lines += ["OVERFLOW! Skipping step. Attempted loss scale: 65536.0"]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([16, 17, 18, 19], [49.3, 40.5, 23.8, 13.4])
    assert _values(run, "grad_norm")[1] == [26.0, 27.0, 28.0, 29.0]
    assert _values(run, "attempted_loss_scale") == ([17], [65536.0])


def test_apex_overflow_lines_become_the_loss_scale_series(tmp_path):
    lines = []
    for i, step in enumerate(range(100, 700, 100)):
        lines += [f"step {step} | loss {2 - i / 10:.2f}",
                  f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {2.0 ** (10 - 3 * i)}"]
    run = _run(tmp_path, lines)
    steps, scale = _values(run, "loss_scale")
    assert steps == list(range(100, 700, 100)) and scale[0] == 1024.0 and scale[-1] == round(2.0 ** -5, 4)


def test_acme_bracketed_tags_are_no_part_of_the_name(tmp_path):
    lines = [f"[Learner] Loss = {0.06 + i / 1000:.3f} | Steps = {70 + 17 * i} | Walltime = {4 + i:.3f}" for i in range(6)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss")[0] == [70 + 17 * i for i in range(6)]


def test_lines_without_a_counter_take_their_line_order(tmp_path):
    run = _run(tmp_path, [f"train_loss.item()={2.3 - i / 100}" for i in range(12)])
    assert _values(run, "train_loss.item()") == (list(range(12)), [round(2.3 - i / 100, 4) for i in range(12)])


def test_absl_logging_without_a_counter_keeps_nan(tmp_path):
    lines = [f"I0412 10:{i:02d}:33.355 140 train.py:88] train loss:{v}" for i, v in enumerate(["1.10", "1.53", "0.86", "nan", "nan"])]
    steps, values = _values(_run(tmp_path, lines), "train_loss")
    assert steps == [0, 1, 2, 3, 4] and values[:3] == [1.1, 1.53, 0.86] and all(math.isnan(v) for v in values[3:])


def test_number_before_the_counter_word(tmp_path):
    run = _run(tmp_path, [f"{i} iterations -- validation loss {2.1 - i / 1000:.2f}" for i in (250, 500, 750, 1000)])
    assert _values(run, "validation_loss") == ([250, 500, 750, 1000], [1.85, 1.6, 1.35, 1.1])


def test_nanogpt_iter_and_step_lines_are_one_counter(tmp_path):
    lines = [f"iter {i}: loss {4 - i / 1000:.4f}, time 1099.34ms, mfu 15.34%" for i in range(0, 100, 10)]
    lines += ["step 100: train loss 3.9000, val loss 3.9500", "saving checkpoint to out"]
    run = _run(tmp_path, lines)
    assert _values(run, "loss")[0] == list(range(0, 100, 10))
    assert _values(run, "val_loss") == ([100], [3.95])


def test_a_markdown_table_pasted_from_a_notebook(tmp_path):
    lines = ["| epoch | train loss | val loss |", "| :------| ------: | :------: |"]
    lines += [f"| {e} | {2.2 - e / 100:.2f} | {2.9 + e / 100:.2f} |" for e in range(5, 30, 5)]
    run = _run(tmp_path, lines)
    assert _values(run, "val_loss") == ([5, 10, 15, 20, 25], [2.95, 3.0, 3.05, 3.1, 3.15])


def test_a_loops_own_aligned_table(tmp_path):
    lines = ["epoch   train_loss   val_loss   val_acc"]
    lines += [f"{e:>5}   {1 / e:.4f}       {1.2 / e:.4f}     {0.5 + e / 100:.2f}" for e in range(1, 6)]
    assert _values(_run(tmp_path, lines), "val_acc") == ([1, 2, 3, 4, 5], [0.51, 0.52, 0.53, 0.54, 0.55])


def test_keras_batch_bars_without_an_epoch_header_end_in_nan(tmp_path):
    lines = ["  1/100 [..............................] - ETA: 12:52 - loss: 0.0838 - mse: 0.0486"]
    lines += [f"  {b}/100 [>.............................] - ETA: 20:11 - loss: nan - mse: nan" for b in range(2, 8)]
    steps, values = _values(_run(tmp_path, lines), "loss")
    assert steps == list(range(1, 8)) and values[0] == 0.0838 and all(math.isnan(v) for v in values[1:])


def test_mmengine_epoch_with_a_bracketed_batch(tmp_path):
    lines = [f"2024-01-01 10:00:00 - mmengine - INFO - Epoch(train) [1][{b}/500]  lr: 2.000e-02, eta: 1:02:03, "
             f"time: 0.51, loss: {1.5 - b / 1000:.4f}" for b in range(50, 550, 50)]
    steps, values = _values(_run(tmp_path, lines), "loss")
    assert len(steps) == 10 and steps == sorted(steps) and values[0] == 1.45


def test_lightning_progress_bar_redraws(tmp_path):
    lines = ["\r".join(f"Epoch {e}: {b * 10}%|██        | {b}/10 [00:0{b}<00:00, loss={1 / (e + 1) + (10 - b) / 100:.3f}, v_num=1]"
                       for b in range(1, 11)) for e in range(4)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss")[1] == [1.0, 0.5, 0.333, 0.25]


def test_deepspeed_rank_prefix_with_a_list_of_lrs(tmp_path):
    lines = [f"[Rank 0] step={s}, skipped=3, lr=[0.0001, 0.0001], mom=[(0.9, 0.999)]" for s in range(100, 400, 100)]
    lines += [f"[Rank 0] step={s}, loss={3 - s / 1000:.2f}" for s in range(100, 400, 100)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([100, 200, 300], [2.9, 2.8, 2.7])


def test_what_was_not_read_is_said(tmp_path):
    lines = [f"epoch {e} loss: {1 / (e + 1):.3f}" for e in range(5)] + ["Saved 3 checkpoints to /tmp/x in 12 s"]
    run = _run(tmp_path, lines)
    assert any("1 line(s) with numbers gave no metric" in n and "Saved 3 checkpoints" in n for n in run.notes)
    assert any(n.startswith("line 'epoch # loss: #.#'") and n.endswith("-> loss") for n in run.notes)


@pytest.mark.parametrize("text", [
    "# Project\n\nWe trained 3 models; the loss: 0.5 was best.\nSee step 2 of the guide.\n",
    "Traceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n    loss = model(x)\nRuntimeError: CUDA out of memory\n",
    "torch==2.1.0\nnumpy>=1.24\nloss-landscapes==3.0\n",
])
def test_files_that_are_not_training_logs_are_left_alone(tmp_path, text):
    (tmp_path / "notes.txt").write_text(text)
    runs, errors = load_runs(tmp_path)
    assert runs == [] and errors == []


def test_cyclegan_loss_log_is_read_and_its_gan_losses_are_not_judged_by_shape(tmp_path):
    """pytorch-CycleGAN-and-pix2pix's loss_log.txt: no `loss` word anywhere, the iteration restarts
    each epoch; the generator / discriminator losses hover by design, so no shape rule judges them."""
    from logdoctor.config import Config
    from logdoctor.diagnose import diagnose_run

    lines = ["================ Training Loss (Sat Jun  6 16:47:21 2020) ================"]
    for epoch in range(1, 6):
        for it in (100, 200, 300):
            d, g = 0.25 - 0.01 * epoch + 0.01 * (it % 200 == 0), 0.45 + 0.05 * (it % 300 == 0)
            lines.append(f"(epoch: {epoch}, iters: {it}, time: 0.261, data: 0.004) D_A: {d:.3f} G_A: {g:.3f} "
                         f"cycle_A: {2.0 - 0.3 * epoch:.3f} idt_A: {0.9 - 0.1 * epoch:.3f} ")
    run = _run(tmp_path, lines, "loss_log.txt")
    assert len(series(run, "d_a")) == 15 and series(run, "cycle_a").values[-1] < series(run, "cycle_a").values[0]
    result = diagnose_run(run, Config())
    assert result.learning.learned is None and result.status == "healthy"
    assert [f.code for f in result.findings] == ["not_checked"]


def test_lines_of_single_letter_losses_repeated_are_a_log_and_overflow_lines_give_the_scale(tmp_path):
    """YOLACT prints `[  1]    1440 || B: 5.495 | C: 3.668 | M: 6.919 | S: 1.564 | T: 17.647 || ...`:
    no name says loss, but a line of five named values printed again and again is a metrics line."""
    lines = []
    for i in range(8):
        lines.append(f"[  1]    {1440 + 10 * i} || B: {5.5 + 0.01 * i:.3f} | C: {3.6 - 0.1 * i:.3f} | M: 6.9{i} | "
                     f"S: 1.5{i} | T: {17.6 - 0.1 * i:.3f} || ETA: 197 days, 23:50:39 || timer: 0.298")
    lines.insert(5, "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.52587890625e-05")
    run = _run(tmp_path, lines)
    assert len(series(run, "t")) == 8 and series(run, "loss_scale").values[-1] == 1.52587890625e-05


def test_full_width_punctuation_of_a_loop_printing_chinese_labels(tmp_path):
    """A tutorial loop that labels its prints in Chinese writes the CJK colon and comma (`：`, `，`);
    the warning PyTorch prints on the first batch (`functional.py:718:`, `TensorImpl.h:1156.)`) is no metric."""
    lines = ["-------第 1 轮训练开始------",
             "/env/lib/python3.8/site-packages/torch/nn/functional.py:718: UserWarning: Named tensors are experimental "
             "(Triggered internally at  /conda/work/c10/core/TensorImpl.h:1156.)"]
    lines += [f"训练次数：{100 * i}，Loss：{2.3 - i / 10:.4f}" for i in range(1, 6)]
    lines += ["整体测试集上的正确率：0.389", "-------第 2 轮训练开始------"]
    lines += [f"训练次数：{100 * i}，Loss：{2.3 - i / 10:.4f}" for i in range(6, 9)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == (list(range(8)), [round(2.3 - i / 10, 4) for i in range(1, 9)])
    assert run.metrics == ["loss"]


def test_legacy_fairseq_json_lines_give_their_quoted_numbers(tmp_path):
    """Old fairseq's --log-format json quotes most numbers (`"loss": "3.097"`, `"clip": "100%"`);
    a quoted text that is no number alone (a version, a date) gives nothing."""
    lines = []
    for epoch in (11, 12, 13, 14):
        lines += [f'{{"epoch": {epoch}, "loss": "{4.2 - epoch / 10:.3f}", "ppl": "18.17", "num_updates": {epoch * 100}, '
                  f'"lr": 0.0005, "gnorm": "0.191", "clip": "100%", "version": "0.6.2", "date": "2019-03-21"}}',
                  f'{{"epoch": {epoch}, "valid_loss": {4.4 - epoch / 20:.4f}, "valid_ppl": "21.50"}}']
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([1100, 1200, 1300, 1400], [3.1, 3.0, 2.9, 2.8])
    assert _values(run, "clip")[1] == [100.0] * 4 and _values(run, "gnorm")[1] == [0.191] * 4
    assert _values(run, "valid_loss")[1] == [3.85, 3.8, 3.75, 3.7]
    assert "version" not in run.metrics and "date" not in run.metrics


def test_a_keras_paste_that_begins_with_a_cut_progress_bar_is_read_by_epoch(tmp_path):
    """The paste starts inside epoch 1's final line (`0/200 [===…`, its first digits cut): that one
    stray batch count must not become the step and leave every `Epoch N/M` record unplaced."""
    lines = ["0/200 [==============================] - 4s 20ms/step - loss: 0.6125 - val_loss: 0.6020"]
    for epoch in range(2, 7):
        lines += [f"Epoch {epoch}/6", f"200/200 [==============================] - 4s 20ms/step - loss: {0.7 - epoch / 20:.4f} - "
                  f"val_loss: {0.71 - epoch / 20:.4f}"]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([2, 3, 4, 5, 6], [0.6, 0.55, 0.5, 0.45, 0.4])
    assert _values(run, "val_loss")[0] == [2, 3, 4, 5, 6]


def test_records_run_together_on_one_line_are_read_one_by_one(tmp_path):
    """A paste that lost its newlines: ppocr's records follow each other on one line, the first
    starting with the tail of a record the paste cut; durations (`reader_cost: 0.52 s`) are no metric."""
    record = ("[2021/06/30 11:{m:02d}:21] root INFO: epoch: [1/500], iter: {i}, lr: 0.001000, loss: {loss:.6f}, "
              "acc: 0.066406, reader_cost: 8.17048 s, batch_cost: 10.17095 s, samples: 5120, ips: 50.33945 ")
    glued = "st: 7.77313 s, samples: 5120, ips: 65.86797 " + "".join(
        record.format(m=10 + k, i=440 + 10 * k, loss=28.9 - k / 10) for k in range(4))
    run = _run(tmp_path, [glued, record.format(m=20, i=480, loss=28.5)])
    assert _values(run, "loss") == ([440, 450, 460, 470, 480], [28.9, 28.8, 28.7, 28.6, 28.5])
    assert _values(run, "acc")[1] == [0.0664] * 5
    assert not {"reader_cost", "batch_cost"} & set(run.metrics)


def test_a_sentence_that_names_its_counter_twice_is_one_record(tmp_path):
    lines = [f"Epoch {e}: loss: {1 - e / 10:.2f}, val_loss: {1.1 - e / 10:.2f}, best val_loss so far at epoch {e}" for e in range(1, 6)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([1, 2, 3, 4, 5], [0.9, 0.8, 0.7, 0.6, 0.5])
    assert _values(run, "val_loss")[1] == [1.0, 0.9, 0.8, 0.7, 0.6]


def test_yolo_results_txt_rows_without_a_header_are_read_by_column(tmp_path):
    """YOLOv5/v7's results.txt, pasted as is: `epoch/last gpu_mem box obj cls total labels img_size
    P R mAP@.5 mAP@.5:.95 val_box val_obj val_cls`, no header line, no word that says loss."""
    rows = [f"{e:>10}/149 {'7.9G':>9} {0.09 - e / 100:9.4g} {0.006:9.4g} {0.05:9.4g} {0.146 - e / 100:9.4g} {150 + e:9d} {640:9d} "
            f"{0.1 * e:9.4g} {0.05:9.4g} {0.01 * e:9.4g} {0.002 * e:9.4g} {0.12 + e / 100:9.4g} {0.008:9.4g} {0.06:9.4g}" for e in range(5)]
    run = _run(tmp_path, ["results.txt:", *rows], name="results.log")
    assert _values(run, "train/total_loss") == ([0, 1, 2, 3, 4], [0.146, 0.136, 0.126, 0.116, 0.106])
    assert _values(run, "val/box_loss")[1] == [0.12, 0.13, 0.14, 0.15, 0.16]
    assert _values(run, "metrics/mAP_0.5")[1] == [0.0, 0.01, 0.02, 0.03, 0.04]
    assert "labels" in run.metrics and not any("mem" in m for m in run.metrics)


def test_a_date_before_its_time_is_no_batch_count(tmp_path):
    """PaddleDetection starts each line with `[07/21 14:40:44]`: that date is no `N/M` batch count;
    the batch is the padded `[ 20/200]` after the epoch. The total `loss` is the primary training
    loss, not a part named for a score (`loss_iou`)."""
    lines = [f"[07/21 14:{40 + b // 10}:44] ppdet.engine INFO: Epoch: [0] [{b:>3}/200] learning_rate: 0.000{b:03d} "
             f"loss_xy: 6.4 loss_iou: 25.{b:02d} loss_obj: {900 - 8 * b:.2f} loss: {950 - 8 * b:.2f} eta: 10 days, 19:39:33 "
             f"batch_cost: 6.6231 data_cost: 6.0753 ips: 4.8315 images/s" for b in (0, 20, 40, 60)]
    run = _run(tmp_path, lines)
    assert _values(run, "loss") == ([0, 20, 40, 60], [950.0, 790.0, 630.0, 470.0])
    assert RunView(run).series("train_loss").name == "loss"


def test_deepspeed_overflow_lines_after_a_logging_location_give_the_loss_scale(tmp_path):
    """`[stage2.py:1628:step]` is where DeepSpeed logged from, not a step the line fails to give:
    the overflow lines after a tqdm bar are read as the loss scale they report."""
    bar = "  0%|▋          | {n}/24128 [00:40<2:40:10,  2.50it/s]"
    lines = [(bar.format(n=n) if n else "") + f"[2021-11-27 00:36:5{n % 10},800] [INFO] [stage2.py:1628:step] [deepscale] "
             f"OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {s * 2}, reducing to {s}" for n, s in ((0, 8), (98, 4), (99, 2), (100, 1))]
    run = _run(tmp_path, lines)
    assert _values(run, "loss_scale") == ([0, 1, 2, 3], [8.0, 4.0, 2.0, 1.0])


def test_espnet2_epochs_glued_to_their_number_and_split_tags(tmp_path):
    """ESPnet2 writes `18epoch:train:1-375batch:` and, once an epoch ends, `18epoch results: [train]
    loss=…, [valid] loss=…`: the epoch is read where its number is glued to it, and a bracketed split
    tag names the value after it (the validation loss must not become a training one)."""
    lines = []
    for epoch in (17, 18):
        lines += [f"[host] 2020-11-11 17:00:4{b},375 (trainer:486) INFO: {epoch}epoch:train:{375 * b + 1}-{375 * (b + 1)}batch: "
                  f"iter_time=0.001, loss={1.5 - epoch / 100 - b / 100:.3f}, lr_0=0.100, train_time=0.014" for b in range(3)]
        lines.append(f"[host] 2020-11-11 17:00:56,455 (trainer:243) INFO: {epoch}epoch results: [train] iter_time=0.001, "
                     f"loss={1.3 - epoch / 100:.3f}, lr_0=0.100, train_time=0.014, time=1 minute and 44.48 seconds, "
                     f"total_count=135126, [valid] loss={1.9 - epoch / 100:.3f}, time=3.15 seconds, total_count=4320")
    run = _run(tmp_path, lines)
    assert _values(run, "loss")[1] == [1.33, 1.32, 1.31, 1.32, 1.31, 1.3]
    assert _values(run, "epoch")[1][:3] == [17.0, 17.0, 17.0]
    assert _values(run, "valid_loss")[1] == [1.73, 1.72] and _values(run, "train_loss")[1] == [1.13, 1.12]


def test_ultralytics_console_table_rows_with_their_progress_bars(tmp_path):
    """YOLOv8 prints a header, then one row per epoch that counts the epoch (`70/1000`), gives the GPU
    memory with its unit (`6.73G`) and ends in a progress bar; the validation table between epochs
    is another header with no loss and ends the table."""
    lines = []
    for e, box in ((70, 1.081), (71, 1.038), (72, 1.012)):
        lines += ["      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
                  f"    {e}/1000      6.73G      {box}     0.4706      1.084         10        640: 100%|██████████| 16/16 [00:05<00:00,  2.78it/s]",
                  "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██████████| 8/8 [00:03<00:00,  2.17it/s]",
                  "                   all        722       1444      0.989       0.99      0.993      0.681", ""]
    run = _run(tmp_path, lines)
    assert _values(run, "box_loss") == ([70, 71, 72], [1.081, 1.038, 1.012])
    assert _values(run, "gpu_mem")[1] == [6.73] * 3 and _values(run, "size")[1] == [640.0] * 3
    assert not any("map" in m for m in run.metrics)  # `mAP50-95): 100%|`: the bar's share, no score


def test_mmengine_date_before_its_time_is_no_progress_bar(tmp_path):
    """mmengine prints `MM/DD HH:MM:SS - mmengine - INFO - Epoch(train) [1][200/735] ...`: the date at
    the line's start is no Keras `count/target` bar (read as one, every line was batch 10)."""
    lines = [f"10/30 22:{18 + b // 100}:0{b % 10} - mmengine - INFO - Epoch(train) [1][{b}/735]  lr: 1.9870e-04  "
             f"eta: 2:46:39  time: 2.8906  data_time: 0.0042  memory: 10762  loss: {2.8 - b / 1000:.4f}  grad_norm: 3.06"
             for b in range(200, 260, 10)]
    steps, loss = _values(_run(tmp_path, lines), "loss")
    assert len(steps) == 6 and steps == sorted(steps) and loss == [2.6, 2.59, 2.58, 2.57, 2.56, 2.55]


def test_every_rank_printing_the_same_steps_is_read_once_from_the_lowest_rank(tmp_path):
    """Four ranks each print every step (`[rank3]: loss = ...`, torchrun's `[default3]:`, behind a host
    name): one rank's lines are the run, not four points a step."""
    lines = [f"[rank{r}]: loss = {3 - 0.2 * s + 0.01 * r:.3f}" for s in range(6) for r in (2, 0, 3, 1)]
    (tmp_path / "bare").mkdir()
    steps, loss = _values(_run(tmp_path / "bare", lines), "loss")
    assert steps == list(range(6)) and loss == [round(3 - 0.2 * s, 4) for s in range(6)]
    hosts = [f"worker-{h}: [default{h}]: iteration {10 * s}/1000 | lm loss: {7 - 0.3 * s + 0.01 * h:.4f}" for s in range(1, 7) for h in range(4)]
    (tmp_path / "hosts").mkdir()
    steps, loss = _values(_run(tmp_path / "hosts", hosts), "lm_loss")
    assert steps == [10, 20, 30, 40, 50, 60] and loss == [round(7 - 0.3 * s, 4) for s in range(1, 7)]


def test_one_rank_tagging_its_lines_is_read_as_it_is(tmp_path):
    lines = [f"[Rank 0] step={s}, skipped=0, lr=[1e-05]\nsteps: {s} loss: {2.3 - 0.0001 * s:.4f}" for s in range(100, 700, 100)]
    steps, loss = _values(_run(tmp_path, lines), "loss")
    assert steps == [100, 200, 300, 400, 500, 600]


def test_every_host_printing_the_same_lines_is_read_once(tmp_path):
    """A launcher prefixing each line with its host (`10.0.1.7: {'loss': ...}`), three hosts a step."""
    lines = [f"{host}: {{'loss': {1.9 - 0.2 * s:.4f}, 'learning_rate': 5e-05, 'epoch': {0.01 * s:.2f}}}"
             for s in range(1, 7) for host in ("10.0.1.9", "10.0.1.7", "node-3")]
    run = _run(tmp_path, lines)
    assert _values(run, "loss")[1] == [round(1.9 - 0.2 * s, 4) for s in range(1, 7)]
    assert any("lines of 3 hosts" in n for n in run.notes)


def test_a_counter_before_a_colon_is_no_host(tmp_path):
    lines = [f"step{s}: loss {2.0 - 0.1 * s:.2f}" for s in range(1, 8)]
    assert len(_values(_run(tmp_path, lines), "loss")[1]) == 7
