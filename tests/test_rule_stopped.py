"""A console log that ends on the error that stopped the run says so (`stopped`), whatever its curve.

The excerpts are written for the test in the shapes trainers and shells print (numbers made up)."""
from __future__ import annotations

import io
import json

import pytest
from typer.testing import CliRunner

from logdoctor.cli import app
from logdoctor.config import Config
from logdoctor.diagnose import diagnose_run
from logdoctor.ingest.text_log import read_stream
from logdoctor.report.text import verdict
from _ingest_helpers import only_run

STEPS = [f"epoch 1 | step {s} | loss {2.5 - 0.001 * s:.3f} | lr 0.001" for s in range(100, 1300, 100)]
TRACEBACK = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>', "    loss.backward()"]
ENDINGS = {
    "out of memory": [*TRACEBACK, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 15.78 GiB"],
    "distributed timeout": ["[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: "
                            "WorkNCCL(SeqNum=2210, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out."],
    "loss scale at its minimum": ["[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, reducing to 1",
                                  *TRACEBACK, "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."],
    "killed": ["./run.sh: line 12: 40213 Killed                  python train.py --bs 64"],
    "error": [*TRACEBACK, "ValueError: Expected input batch_size (32) to match target batch_size (16)."],
}


def _diagnose(tmp_path, lines):
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return diagnose_run(only_run(tmp_path), Config())


@pytest.mark.parametrize("kind", ENDINGS)
def test_each_class_of_ending_is_a_stopped_run_quoting_its_line_and_last_step(tmp_path, kind):
    rd = _diagnose(tmp_path, STEPS + ENDINGS[kind])
    stopped = next(f for f in rd.findings if f.code == "stopped")
    assert stopped.evidence["ending"] == kind and stopped.evidence["error_line"] == ENDINGS[kind][-1].strip()
    assert stopped.evidence["last_step"] == 1200 and stopped.steps == (1200, 1200) and "after step 1,200" in stopped.title
    # never "healthy"; no curve fault named, but a scaler that gave up is a collapsed scaler
    assert stopped.severity == "info" and verdict(rd) == ("critical" if kind == "loss scale at its minimum" else "stopped")


def test_an_error_the_run_went_on_after_is_no_ending(tmp_path):
    """A traceback printed as a warning mid-run, with losses after it, did not stop the run."""
    rd = _diagnose(tmp_path, STEPS[:6] + ENDINGS["error"] + STEPS[6:])
    assert not any(f.code == "stopped" for f in rd.findings) and verdict(rd) == "healthy"


def test_a_curve_fault_before_the_crash_leads_and_the_ending_is_still_said(tmp_path):
    lines = [*STEPS[:8], *(f"epoch 1 | step {s} | loss nan | lr 0.001" for s in (900, 1000, 1100)), *ENDINGS["loss scale at its minimum"]]
    rd = _diagnose(tmp_path, lines)
    assert rd.findings[0].code == "diverge" and verdict(rd) == "critical"
    assert any(f.code == "stopped" and f.evidence["last_step"] == 1100 for f in rd.findings)


def test_a_log_piped_in_is_read_to_its_ending_too():
    run = read_stream(io.BytesIO(("\n".join(STEPS + ENDINGS["killed"]) + "\n").encode()))
    assert run.ending == ("killed", ENDINGS["killed"][0])


def test_json_and_terminal_say_stopped(tmp_path):
    (tmp_path / "train.log").write_text("\n".join(STEPS + ENDINGS["out of memory"]) + "\n")
    doc = json.loads(CliRunner().invoke(app, ["analyze", str(tmp_path), "-f", "json"]).stdout)
    assert doc["runs"][0]["verdict"] == "stopped" and doc["summary"]["by_verdict"]["stopped"] == 1
    out = CliRunner().invoke(app, ["analyze", str(tmp_path), "-q"], env={"COLUMNS": "200", "NO_COLOR": "1"}).stdout
    assert "stopped" in out and "CUDA out of memory." in out and "1 stopped" in out


def test_a_run_stopped_by_the_scaler_at_its_minimum_is_a_collapsed_scaler(tmp_path):
    rd = _diagnose(tmp_path, STEPS + ENDINGS["loss scale at its minimum"])
    collapse = next(f for f in rd.findings if f.code == "scaler_collapse")
    assert collapse.severity == "critical" and collapse.evidence["ending"] == "loss scale at its minimum"
    assert rd.findings[0].code == "scaler_collapse"


def test_a_short_paste_of_a_crash_is_read_and_says_stopped(tmp_path):
    """Two Keras progress lines, then TensorFlow's OOM: too few lines to count as a log by its losses
    alone, but a loss printed and a crash ending make it one."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train.log").write_text(
        "Epoch 1/10\n100/100 [==============================] - 12s 120ms/step - loss: 0.6931 - accuracy: 0.5012\n"
        "Epoch 2/10\n 37/100 [=========>....................] - ETA: 7s - loss: 0.6929 - accuracy: 0.5050\n"
        + "\n".join(TRACEBACK) + "\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor\n"
    )
    out = CliRunner().invoke(app, ["analyze", str(tmp_path), "-q"], env={"COLUMNS": "200", "NO_COLOR": "1"}).stdout
    assert "stopped" in out.splitlines()[0] and "ran out of memory" in out and "1 stopped" in out
