"""Console logs read column-wise give exactly what the line-by-line reading gives.

The line-by-line parser (`text_log._Parser`) is the reference; `text_log_columns` is how a long
log is read in seconds. Every log the tests know is read both ways and the tidy scalars, notes
and warnings must be equal; a file whose lines depend on the lines before them must go line by line.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from logdoctor.ingest import ReadError, text_line, text_log, text_log_columns

ROOT = Path(__file__).parents[1]
SHARED = ROOT.parent / "shared"
CORPORA = [ROOT / "sample_runs", SHARED / "real-logs-dev-text" / "runs", SHARED / "real-logs-dev" / "runs", SHARED / "real-logs"]


def _both_ways(path: Path, monkeypatch) -> tuple[object, object]:
    """The file read line by line and as read by default, each with no line shape learned before."""
    got = []
    for line_by_line in (True, False):
        monkeypatch.setattr(text_log, "_LINE_BY_LINE_ONLY", line_by_line)
        monkeypatch.setattr(text_line, "_SHAPES", {})
        try:
            got.append(text_log.read_scalars(path))
        except ReadError as exc:
            got.append(str(exc))
    return got[0], got[1]


def _assert_same(reference, columns) -> None:
    if isinstance(reference, str) or isinstance(columns, str):
        assert reference == columns
        return
    assert reference[0].equals(columns[0]), "tidy scalars differ"
    assert reference[1] == columns[1] and reference[2] == columns[2]


def _reads_column_wise(path: Path) -> bool:
    with open(path, "rb") as fh:
        return text_log_columns.parse(fh) is not None


def _many_families(steps: int = 400) -> str:
    """One log of many line families a loop prints (all of them readable column-wise), redraws,
    escapes, CRLF endings, thousands separators, `nan`, lines that read as nothing."""
    out = ["Namespace(lr=0.0003, batch_size=64)", "\x1b[32mINFO\x1b[0m starting run 3", "train loss: 2.91", ""]
    for i in range(steps):
        loss = 2.5 * math.exp(-i / 150) + 0.01 * (i % 7)
        out.append(f"iter {i}: loss {loss:.4f}, time 31.{i % 10}ms, mfu 15.{i % 9}%")
        if i % 50 == 0:
            out += [f"step {i}: train loss {loss:.4f}, val loss {loss + 0.1:.4f}", "saving checkpoint to out"]
        if i % 10 == 3:
            out.append(f"| epoch {i // 100:03d} | loss {loss:.3f} | ppl {2 ** loss:.2f} | wps 1,234 | clip 100% | num_updates {i} |")
        if i % 37 == 5:
            out.append("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.52587890625e-05")
        if i % 25 == 7:
            out.append(f"{{'loss': {loss:.4f}, 'learning_rate': 5e-05, 'epoch': {i / 100:.2f}}}\r")
        if i % 60 == 11:
            out.append("\r".join(f"Evaluating: {p}%|{'#' * (p // 10):<10}| {p // 10}/10" for p in range(0, 101, 50)))
            out.append(f"Validation perplexity: {2 ** loss:.2f}")
        if i % 45 == 13:
            out += [f"Epoch  {i // 45},   {i % 45:>3}/  150; acc:  {40 + i / 10:5.2f}; ppl:  {30 - i / 50:5.2f}; 5187 src tok/s"]
        if i == 123:
            out.append(f"I0412 10:00:33.355 140 train.py:88] train loss:nan")
        if i % 80 == 17:
            out += [f"Saved {i} checkpoints in {i % 13} s", "", "-" * 40]
        if i % 90 == 21:
            out.append(f"[Learner] Loss = {loss:.3f} | Steps = {i} | Walltime = -1.5e-05")
    return "\n".join(out) + "\n"


def test_a_log_of_many_families_reads_the_same_both_ways(tmp_path, monkeypatch):
    log = tmp_path / "train.log"
    log.write_text(_many_families())
    assert _reads_column_wise(log)
    reference, columns = _both_ways(log, monkeypatch)
    assert not isinstance(reference, str) and reference[0]["metric"].n_unique() >= 10
    _assert_same(reference, columns)


@pytest.mark.parametrize("lines", [
    ["Epoch 1/2", "10/10 [==============================] - 1s 5ms/step - loss: 0.6931"],  # Keras
    ["[step=1/100,epoch=0]", "    train/CrossEntropyLoss=2.998", "[step=2/100,epoch=0]", "    train/CrossEntropyLoss=2.9"],
    ["| epoch | train loss | val loss |", "| 1 | 2.2 | 2.9 |", "| 2 | 2.1 | 2.8 |"],
    ["epoch 1 loss 2.5 #3", "epoch 2 loss 2.4 1#", "epoch 3 loss 2.3 #3"],  # one `#`-keyed shape, two texts
])
def test_lines_that_depend_on_the_lines_before_them_are_read_line_by_line(tmp_path, lines):
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert not _reads_column_wise(log)


def _text_logs() -> list[Path]:
    found = []
    for corpus in CORPORA:
        if corpus.is_dir():
            found += sorted(p for p in corpus.rglob("*") if p.suffix in (".log", ".txt", ".out") and text_log.is_text_log(p))
    return found


def test_every_text_log_in_the_corpora_reads_the_same_both_ways(monkeypatch):
    logs = _text_logs()
    if not logs:
        pytest.skip("no console logs beside the checkout (../shared is absent)")
    for path in logs:
        reference, columns = _both_ways(path, monkeypatch)
        _assert_same(reference, columns)
