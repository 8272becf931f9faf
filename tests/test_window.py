"""A console log is often a window of a run (a paste): it is judged on what that window can show.

Excerpts written for the test; the same numbers written as a logger's CSV are judged as a whole run."""
from __future__ import annotations

import numpy as np

from logdoctor.config import Config
from logdoctor.diagnose import diagnose_run
from logdoctor.report.text import verdict
from _ingest_helpers import only_run

RNG = np.random.default_rng(0)


def _diagnose(folder, name: str, text: str):
    folder.mkdir()
    (folder / name).write_text(text)
    return diagnose_run(only_run(folder), Config())


def _codes(rd, firing=True):
    return [f.code for f in rd.findings if (f.severity != "info") == firing]


def _remark(rd) -> str:
    return next(f.title for f in rd.findings if f.code == "not_checked")


def test_a_slow_fall_in_a_window_that_starts_mid_run_is_not_called_crawl(tmp_path):
    epochs = range(50, 62)
    loss = [2.30 - 0.003 * (e - 50) + 0.0005 * RNG.standard_normal() for e in epochs]
    paste = _diagnose(tmp_path / "paste", "train.log", "".join(f"Epoch {e}/200 - loss: {v:.4f}\n" for e, v in zip(epochs, loss)))
    whole = _diagnose(tmp_path / "csv", "metrics.csv", "epoch,loss\n" + "".join(f"{e},{v:.4f}\n" for e, v in zip(epochs, loss)))
    assert "crawl" in _codes(whole)  # a logger's file holds the run: the same numbers are a crawl there
    assert _codes(paste) == [] and _remark(paste) == "too short to judge: crawl (the log starts mid-run: its first point is no start)"
    assert verdict(paste) == "not checked"


def test_a_few_noisy_points_are_neither_flat_crawl_nor_oscillate(tmp_path):
    rd = _diagnose(tmp_path / "few", "train.log", "".join(f"step {s}: loss {v}\n" for s, v in zip(range(4000, 4600, 100), (2.31, 2.45, 2.28, 2.39, 2.33, 2.36))))
    assert not set(_codes(rd)) & {"flat", "crawl", "oscillate"}
    assert _remark(rd) == "too short to judge: flat, crawl, oscillate (6 loss points)"


def test_what_any_window_shows_is_still_said(tmp_path):
    """An exact repeat is flat and a NaN is diverge, in five lines as in five thousand."""
    frozen = _diagnose(tmp_path / "frozen", "train.log", "".join(f"iter {i}: loss 10.8259\n" for i in range(76, 81)))
    assert _codes(frozen)[0] == "flat"
    nan = _diagnose(tmp_path / "nan", "train.log", "".join(f"step {s}: loss {v}\n" for s, v in zip(range(900, 1500, 100), (2.1, 2.0, 1.9, "nan", "nan", "nan"))))
    assert _codes(nan)[0] == "diverge"


def test_a_whole_short_run_from_its_start_is_judged_as_usual(tmp_path):
    rd = _diagnose(tmp_path / "start", "train.log", "".join(f"Epoch {e}/10 - loss: {2.3 - 0.1 * e:.2f}\n" for e in range(1, 11)))
    assert not any(f.code == "not_checked" for f in rd.findings) and verdict(rd) == "healthy"


def test_a_few_dozen_bare_loss_prints_are_no_crawl_they_may_be_a_runs_opening(tmp_path):
    """35 batches of an MNIST loop printed as bare `train_loss.item()=` lines (no counter): 2.295 ->
    1.88 and not levelling off is how any run opens."""
    loss = np.linspace(2.295, 1.88, 35) + 0.003 * RNG.standard_normal(35)
    bare = _diagnose(tmp_path / "bare", "train.log", "".join(f"train_loss.item()={v:.4f}\n" for v in loss))
    assert "crawl" not in _codes(bare)
    assert _remark(bare) == "too short to judge: crawl (35 loss points with no step counter: perhaps only the opening of a longer run)"


def test_a_window_mid_run_shows_no_first_evaluation_to_say_validation_never_improved_on(tmp_path):
    """Keras epochs 87-91 of 5000: loss 0.103 -> 0.079, val_loss 0.278, 0.273, 0.290, 0.269, 0.279.
    The run's best validation came earlier; nothing here says the run did not learn."""
    pairs = [(0.1033, 0.2777), (0.0888, 0.2726), (0.0919, 0.2895), (0.0813, 0.2690), (0.0792, 0.2793)]
    text = "".join(f"Epoch {e}/5000\n405/405 - 0s - loss: {a} - val_loss: {b}\n" for e, (a, b) in enumerate(pairs, 87))
    rd = _diagnose(tmp_path / "mid", "train.log", text)
    assert rd.learning.learned is not False and _codes(rd) == []
