"""Plain-text training logs: console output as its writers leave it in a file.

TensorFlow is not installed here, so the Keras writers are rebuilt from Keras' own Progbar code
(keras 2.x `utils/generic_utils.py`, keras 3 `src/utils/progbar.py`): the same format strings, the
`\\b` * width + `\\r` redraws Keras uses on posix even when stdout is a file (`_dynamic_display`
is true whenever "posix" is in sys.modules), the `\\n`-per-update layout elsewhere, Keras 3's ANSI
colours. Loop logs are written by Python's own logging module and print().
"""
from __future__ import annotations

import json
import logging
import math

import pytest

from logdoctor.config import Config
from logdoctor.diagnose import diagnose_run
from logdoctor.ingest import Source, load_runs, read_source
from logdoctor.roles import assign_roles, primary
from _ingest_helpers import only_run, series


# --------------------------------------------------------------------------- Keras writers


def _avg(value: float, keras3: bool) -> str:
    """Keras' number format: `%.4f`, or `%.4e` at or below 1e-3 (so 0 is `0.0000e+00`, nan is `nan`)."""
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


class KerasProgbar:
    """Keras' Progbar for one epoch, writing what it writes (verbose=1 or 2)."""

    def __init__(self, out: list[str], target: int, keras3: bool, dynamic: bool = True, verbose: int = 1):
        self.out, self.target, self.keras3, self.dynamic, self.verbose = out, target, keras3, dynamic, verbose
        self.width = 30 if not keras3 else 20
        self.prev_width = 0

    def _bar(self, current: int) -> tuple[str, int]:
        digits = int(math.log10(self.target)) + 1
        count = f"{current:>{digits}d}/{self.target}"
        prog = int(self.width * current / self.target)
        if self.keras3:
            bar = f"\x1b[1m{count}\x1b[0m "
            special = 8
            if prog > 0:
                bar += "\x1b[32m" + "━" * prog + "\x1b[0m"
                special += 9
            bar += "\x1b[37m" + "━" * (self.width - prog) + "\x1b[0m"
            return bar, special + 9
        bar = count + " ["
        if prog > 0:
            bar += "=" * (prog - 1) + (">" if current < self.target else "=")
        return bar + "." * (self.width - prog) + "]", 0

    def update(self, current: int, values: dict[str, float], finalize: bool = False, elapsed: int = 5) -> None:
        if self.verbose == 2:
            if finalize:
                digits = int(math.log10(self.target)) + 1
                info = f"{current:>{digits}d}/{self.target} - {elapsed}s"
                info += " - 2ms/step" if self.keras3 else ""
                for k, v in values.items():
                    info += f" - {k}: {_avg(v, self.keras3)}"
                if not self.keras3:
                    info += f" - {elapsed}s/epoch - 2ms/step"
                self.out.append(info + "\n")
            return
        message = ("\b" * self.prev_width + "\r") if self.dynamic else "\n"
        bar, special = self._bar(current)
        if self.keras3:
            eta = f"{(self.target - current) // 50}s" if not finalize else f"{elapsed}s"
            info = f" \x1b[1m{eta}\x1b[0m 2ms/step"
            special += 8
        else:
            info = f" - {elapsed}s 2ms/step" if finalize else f" - ETA: {(self.target - current) // 50}s"
        for k, v in values.items():
            info += f" - {k}: {_avg(v, self.keras3)}"
        width = len(bar) + len(info) - special
        if self.prev_width > width:
            info += " " * (self.prev_width - width)
        if finalize:
            info += "\n"
        self.out.append(message + bar + info)
        self.prev_width = width


def keras_fit(epochs: list[dict[str, float]], keras3: bool = False, dynamic: bool = True, verbose: int = 1, steps: int = 200) -> str:
    """What `model.fit(verbose=...)` prints for these per-epoch end values (training metrics drift
    toward them during the epoch, validation metrics only arrive at the epoch's final update)."""
    out: list[str] = []
    for e, final in enumerate(epochs):
        out.append(f"Epoch {e + 1}/{len(epochs)}\n")
        bar = KerasProgbar(out, steps, keras3, dynamic, verbose)
        train = {k: v for k, v in final.items() if not k.startswith("val_")}
        for current in range(1, steps + 1, 37):
            bar.update(current, {k: v * (1 + (steps - current) / steps) for k, v in train.items()})
        bar.update(steps, train)  # the last batch's update: ETA 0s, no validation values yet
        bar.update(steps, final, finalize=True)
    return "".join(out)


def keras_evaluate(values: dict[str, float], keras3: bool = False, steps: int = 40) -> str:
    out: list[str] = []
    bar = KerasProgbar(out, steps, keras3)
    bar.update(steps // 2, {k: 9.0 for k in values})
    bar.update(steps, values, finalize=True)
    return "".join(out)


EPOCHS = [
    {"loss": 0.9, "accuracy": 0.61, "val_loss": 0.8, "val_accuracy": 0.66},
    {"loss": 0.6, "accuracy": 0.74, "val_loss": 0.62, "val_accuracy": 0.73},
    {"loss": 0.45, "accuracy": 0.81, "val_loss": 0.55, "val_accuracy": 0.78},
    {"loss": 0.37, "accuracy": 0.85, "val_loss": 0.53, "val_accuracy": 0.8},
]


def _values(run, metric):
    s = series(run, metric)
    return list(s.steps), [round(float(v), 4) for v in s.values]


# --------------------------------------------------------------------------- Keras


@pytest.mark.parametrize("keras3", [False, True], ids=["keras2", "keras3"])
@pytest.mark.parametrize("dynamic", [True, False], ids=["redraws", "line_per_update"])
def test_keras_fit_output_gives_each_epochs_final_values(tmp_path, keras3, dynamic):
    text = "python train.py\nLoading 5912 training pairs...\n" + keras_fit(EPOCHS, keras3, dynamic)
    text += keras_evaluate({"loss": 0.21, "accuracy": 0.93}, keras3)  # model.evaluate(): not an epoch
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    run = only_run(tmp_path)
    assert run.format == "text_log" and run.name == "train.log"
    for metric in ("loss", "accuracy", "val_loss", "val_accuracy"):
        assert _values(run, metric) == ([1, 2, 3, 4], [e[metric] for e in EPOCHS]), metric
    assert primary(assign_roles(run.metrics)) == {"train_loss": "loss", "val_loss": "val_loss", "train_acc": "accuracy", "val_acc": "val_accuracy"}
    if dynamic:  # one physical line per epoch, every redraw in it
        assert text.count("\r") > 20 and "\b" in text


@pytest.mark.parametrize("keras3", [False, True], ids=["keras2", "keras3"])
def test_keras_verbose_2(tmp_path, keras3):
    (tmp_path / "nohup.out").write_text(keras_fit(EPOCHS, keras3, verbose=2), encoding="utf-8")
    run = only_run(tmp_path)
    assert _values(run, "val_loss") == ([1, 2, 3, 4], [e["val_loss"] for e in EPOCHS])


def test_keras_nan_and_zero_are_kept_and_diagnosed(tmp_path):
    nan = [{"loss": float("nan"), "acc": 0.9042, "val_loss": float("nan"), "val_acc": 0.9042}] * 6
    zero = [{"loss": 0.0, "accuracy": 0.0958, "val_loss": 0.0, "val_accuracy": 0.0958}] * 5
    (tmp_path / "nan.txt").write_text(keras_fit(nan), encoding="utf-8")
    (tmp_path / "zero.log").write_text(keras_fit(zero, keras3=True), encoding="utf-8")
    assert "loss: nan" in (tmp_path / "nan.txt").read_text() and "loss: 0.0000e+00" in (tmp_path / "zero.log").read_text()
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    assert all(math.isnan(v) for v in series(by_name["nan.txt"], "loss").values)
    assert list(series(by_name["zero.log"], "loss").values) == [0.0] * 5

    codes = {name: [f.code for f in diagnose_run(run, Config()).findings] for name, run in by_name.items()}
    assert codes["nan.txt"][0] == "diverge"
    assert codes["zero.log"][0] == "flat"


def test_one_epoch_of_redraws_filling_the_head_is_still_claimed(tmp_path):
    # a long epoch on posix: one physical line of thousands of redraws, far beyond the 64 KiB sniffed
    text = keras_fit(EPOCHS, steps=40000)
    assert text.index("Epoch 2/") > 64 * 1024
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    assert _values(only_run(tmp_path), "loss") == ([1, 2, 3, 4], [e["loss"] for e in EPOCHS])


# --------------------------------------------------------------------------- loops that print or log


def _logged(path, messages, fmt):
    """Messages written through Python's logging module with `fmt`, as a training script does."""
    logger = logging.getLogger(f"train-{path.name}")
    logger.propagate = False
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(fmt))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.info("Using device: cpu")
    logger.info("  learning_rate: 0.001")  # config before training: no epoch of its own
    for message in messages:
        logger.info(message)
    handler.close()
    logger.removeHandler(handler)


def test_logged_epoch_lines_with_spaced_names_and_percent(tmp_path):
    losses = [1.6279, 1.2434, 1.1221, 1.0465]
    lines = [f"Epoch {e + 1}/35, Train Loss: {v:.4f}, Val Loss: {v + 0.1:.4f}, Val Acc: {60 + e:.1f}%" for e, v in enumerate(losses)]
    _logged(tmp_path / "training.log", lines, "%(asctime)s - %(levelname)s - %(message)s")
    run = only_run(tmp_path)
    assert set(run.metrics) == {"train_loss", "val_loss", "val_acc"}
    assert _values(run, "train_loss") == ([1, 2, 3, 4], losses)
    assert _values(run, "val_acc") == ([1, 2, 3, 4], [60.0, 61.0, 62.0, 63.0])
    assert primary(assign_roles(run.metrics)) == {"train_loss": "train_loss", "val_loss": "val_loss", "val_acc": "val_acc"}


def test_a_line_opened_by_a_split_word_gives_it_to_the_names_after_it(tmp_path):
    """PyTorch's transfer-learning tutorial prints `train Loss: … Acc: …` then `val Loss: … Acc: …`
    under each `Epoch N/M` and a dashed line: the validation accuracy is not the training one."""
    lines = []
    for e, (tl, ta, vl, va) in enumerate([(0.5866, 0.6803, 0.2130, 0.9281), (0.4366, 0.7951, 0.2860, 0.8954), (0.3866, 0.8303, 0.2330, 0.9181)]):
        lines += [f"Epoch {e}/24", "-" * 10, f"train Loss: {tl:.4f} Acc: {ta:.4f}", f"val Loss: {vl:.4f} Acc: {va:.4f}", ""]
    (tmp_path / "train.log").write_text("\n".join(lines + ["Training complete in 1m 30s", "Best val Acc: 0.928100"]) + "\n")
    run = only_run(tmp_path)
    assert set(run.metrics) == {"train_loss", "train_acc", "val_loss", "val_acc"}
    assert _values(run, "train_acc") == ([0, 1, 2], [0.6803, 0.7951, 0.8303])
    assert _values(run, "val_acc") == ([0, 1, 2], [0.9281, 0.8954, 0.9181])


def test_step_lines_use_the_global_step_and_keep_the_epoch(tmp_path):
    lines = [f"epoch {s // 400} | step {s} | loss {3 - s / 1000:.2f} | lr 3e-4" for s in range(100, 1300, 100)]
    _logged(tmp_path / "train.log", lines, "%(levelname)s:%(name)s:%(message)s")  # logging's default: INFO:root:…
    run = only_run(tmp_path)
    steps, values = _values(run, "loss")
    assert steps == list(range(100, 1300, 100)) and values[0] == 2.9
    assert _values(run, "lr")[1] == [3e-4] * 12
    assert _values(run, "epoch")[1][-1] == 3


def test_a_step_counter_that_restarts_every_epoch_becomes_a_global_step(tmp_path):
    # the PyTorch tutorial's print
    lines = [f"Epoch [{e}/5], Step [{s}/600], Loss: {2 / (e * 6 + s / 100):.4f}" for e in range(1, 4) for s in range(100, 700, 100)]
    (tmp_path / "out.txt").write_text("\n".join(lines) + "\n")
    run = only_run(tmp_path)
    steps, _ = _values(run, "loss")
    assert len(steps) == 18 and steps == sorted(set(steps))
    assert any("restarts every epoch" in n for n in run.notes)


def test_bracketed_key_value_lines(tmp_path):
    text = "\n".join(f"[epoch {e}] train_loss={1 / (e + 1):.3f} val_loss={1.2 / (e + 1):.3f}" for e in range(5))
    (tmp_path / "run.log").write_text(text + "\n")
    assert _values(only_run(tmp_path), "val_loss") == ([0, 1, 2, 3, 4], [1.2, 0.6, 0.4, 0.3, 0.24])


def test_step_colon_lines_behind_the_default_logging_prefix(tmp_path):
    _logged(tmp_path / "train.log", [f"Step {s}: loss = {3 - s / 1000:.3f}" for s in range(100, 600, 100)], "%(levelname)s:%(name)s:%(message)s")
    assert _values(only_run(tmp_path), "loss") == ([100, 200, 300, 400, 500], [2.9, 2.8, 2.7, 2.6, 2.5])


def test_rows_without_the_step_and_a_second_training_are_warned_not_hidden(tmp_path):
    lines = [f"epoch {e} step {100 * e} loss {1 / (e + 1):.3f}" for e in range(1, 4)] * 2  # fit() run twice
    lines.append("epoch 3 val_loss 0.4 test_acc 0.8")  # no step: placed at its epoch's last step
    lines.append("summary: val_loss 0.5 at step ?")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    run = only_run(tmp_path)
    assert _values(run, "val_loss") == ([300], [0.4])
    assert any("goes back 1 time(s)" in w for w in run.warnings)


def test_counter_line_then_indented_values(tmp_path):
    # OLMo's logger: `[step=N/total,epoch=E]` then one `name=value` per indented line
    blocks = []
    for s in range(1, 6):
        blocks.append(f"2025-12-12 11:05:0{s}.009\thost:0\tolmo.train:979\tINFO\t[step={s}/15000,epoch=0]")
        blocks += [f"    optim/total_grad_norm={0.2 + s / 100:.4f}", f"    train/CrossEntropyLoss={3 - s / 10:.3f}", "    throughput/total_tokens=2,097,152"]
    (tmp_path / "training.log").write_text("\n".join(blocks) + "\n")
    run = only_run(tmp_path)
    assert _values(run, "train/crossentropyloss") == ([1, 2, 3, 4, 5], [2.9, 2.8, 2.7, 2.6, 2.5])
    assert _values(run, "throughput/total_tokens")[1][0] == 2097152
    assert "olmo.train" not in run.metrics and "host" not in run.metrics  # file:line, host:rank
    assert primary(assign_roles(run.metrics))["grad_norm"] == "optim/total_grad_norm"


def test_hf_trainer_stdout_dicts_are_ordered_by_line(tmp_path):
    rows = [{"loss": 2.0 - i / 10, "learning_rate": 5e-05 * (1 - i / 10), "epoch": round(0.1 * (i + 1), 2)} for i in range(6)]
    (tmp_path / "nohup.out").write_text("".join(f"{row}\n" for row in rows))
    run = only_run(tmp_path)
    assert _values(run, "loss") == ([0, 1, 2, 3, 4, 5], [2.0, 1.9, 1.8, 1.7, 1.6, 1.5])
    assert any("row number used as the step" in n for n in run.notes)


# --------------------------------------------------------------------------- what is not a training log


NEAR_MISSES = {
    "README.txt": (
        "# My model\n\nTrain for 10 epochs: python train.py --epochs 10\n"
        "Each epoch takes about 5 minutes. The loss: 0.35 after epoch 10 is typical.\n"
        "Step 1: install the requirements. Step 2: run the script.\n"
    ),
    "requirements.txt": "numpy==1.26.4\ntensorflow==2.15.0\nkeras==2.15.0\nscikit-learn>=1.3\n",
    "crash.log": (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n    loss = step(model, batch)\n'
        '  File "train.py", line 41, in step\n    loss.backward()\n'
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)\n"
    ),
    "prices.txt": "date,store,sales,loss\n2021-01-01,3,100.5,2.3\n2021-01-02,3,98.1,2.9\n2021-01-03,4,120.0,1.7\n",
    "setup.log": "\n".join(f"2026-04-13 09:37:4{i},232 - INFO - Step {i}: Loading dataset part {i}..." for i in range(1, 8)),
    "report.txt": (  # logdoctor's own `inspect` table
        "metric     role        points  steps\nepoch      epoch       5       500–2,500\n"
        "loss       train_loss  5       500–2,500\nval_loss   val_loss    5       500–2,500\n"
    ) * 3,
}


def test_near_misses_are_left_alone(tmp_path):
    for name, text in NEAR_MISSES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert load_runs(tmp_path) == ([], [])
    for name in NEAR_MISSES:
        assert load_runs(tmp_path / name) == ([], [f"{tmp_path / name}: not a training log logdoctor recognises"])


def test_a_file_that_cannot_be_read_is_one_line_naming_it(tmp_path):
    gone = tmp_path / "train.log"
    runs, errors = read_source(Source("text_log", gone, [gone]), tmp_path)
    assert runs == [] and len(errors) == 1 and str(gone) in errors[0] and "\n" not in errors[0]


def test_a_csv_logger_file_under_a_log_name_stays_keras_csv(tmp_path):
    (tmp_path / "training.log").write_text("epoch,loss,val_loss\n" + "".join(f"{e},{1 / (e + 1)},{1.1 / (e + 1)}\n" for e in range(5)))
    assert only_run(tmp_path).format == "keras_csv"


# --------------------------------------------------------------------------- W&B console output


def test_wandb_run_with_only_summary_and_console_output_reads_the_console(tmp_path):
    files = tmp_path / "wandb" / "run-20241028_143626-cgh31nxi" / "files"
    files.mkdir(parents=True)
    (files / "wandb-summary.json").write_text(json.dumps({"loss": 0.37, "epoch": 3}))
    (files / "config.yaml").write_text("epochs:\n  value: 4\nlearning_rate:\n  value: 0.001\n")
    (files / "output.log").write_text("wandb: WARNING WandbCallback is deprecated\n" + keras_fit(EPOCHS, dynamic=False))
    run = only_run(tmp_path)
    assert run.format == "wandb" and run.config["learning_rate"] == 0.001
    assert _values(run, "val_loss") == ([1, 2, 3, 4], [e["val_loss"] for e in EPOCHS])
    assert any("output.log" in n for n in run.notes)


def test_a_console_log_piped_to_analyze_dash_is_read_from_stdin():
    """`python train.py | logdoctor analyze -`: the run is named <stdin>, and text that is no
    training log gets one line on stderr and exit code 2, never a traceback."""
    import json

    from typer.testing import CliRunner

    from logdoctor.cli import app

    lines = "".join(f"step {s} | loss {2.3 * 0.99 ** s:.4f} | lr 0.001\n" for s in range(0, 400, 10))
    got = CliRunner().invoke(app, ["analyze", "-", "--format", "json"], input=lines)
    assert got.exit_code == 0, got.output
    (run,) = json.loads(got.stdout)["runs"]
    assert run["run"] == "<stdin>" and run["format"] == "text_log" and run["roles"]["train_loss"] == "loss"
    bad = CliRunner().invoke(app, ["analyze", "-"], input="just some words\nand more words\n")
    assert bad.exit_code == 2 and "<stdin>: no training-log lines" in bad.output and "Traceback" not in bad.output
