"""Series logged without a step (every point at step 0) are numbered in logging order, with a note,
instead of collapsing to one point."""
from __future__ import annotations


import numpy as np
import polars as pl
import pytest

from logdoctor.model import tidy
from logdoctor.view import RunView

pytest.importorskip("torch.utils.tensorboard")
from torch.utils.tensorboard import SummaryWriter  # noqa: E402
from _ingest_helpers import only_run


def test_tensorboard_add_scalar_without_global_step_keeps_every_point_in_order(tmp_path):
    with SummaryWriter(str(tmp_path)) as writer:
        for i in range(100):
            writer.add_scalar("loss", 2 - 0.01 * i)  # no global_step: stored as step 0
            writer.add_scalar("acc", 0.5, i)  # a normal series beside it
    run = only_run(tmp_path)
    view = RunView(run)
    loss = view.metric("loss")
    assert list(loss.steps) == list(range(100)) and loss.duplicates == 0
    assert loss.values[0] == pytest.approx(2.0) and loss.values[-1] == pytest.approx(1.01)
    assert list(view.metric("acc").steps) == list(range(100))
    assert any("logged without a step" in n and "loss" in n and "acc" not in n for n in run.notes)


def test_mlflow_log_metric_without_step_is_ordered_by_timestamp(tmp_path):
    # mlflow.log_metric(key, value) without step writes `timestamp value 0`; lines need not be in time order
    run_dir = tmp_path / "mlruns" / "0" / ("d" * 32)
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "meta.yaml").write_text(f"run_id: {'d' * 32}\nexperiment_id: '0'\nlifecycle_stage: active\n")
    times = [3, 0, 1, 2] + list(range(4, 20))
    (run_dir / "metrics" / "loss").write_text("".join(f"{1700000000000 + 1000 * t} {1 / (t + 1)} 0\n" for t in times))
    run = only_run(run_dir)
    loss = RunView(run).metric("loss")
    assert list(loss.steps) == list(range(20))
    assert list(loss.values) == pytest.approx([1 / (t + 1) for t in range(20)])
    assert any("ordered by wall time" in n for n in run.notes)


def test_a_restart_that_relogs_one_step_is_not_stepless(tmp_path):
    with SummaryWriter(str(tmp_path)) as writer:
        for i in range(10):
            writer.add_scalar("loss", 1.0 / (i + 1), i)
        writer.add_scalar("loss", 0.5, 9)
    run = only_run(tmp_path)
    assert list(RunView(run).metric("loss").steps) == list(range(10))
    assert not any("without a step" in n for n in run.notes)


def test_the_linear_precheck_never_hides_a_stepless_metric(monkeypatch):
    from logdoctor.ingest import stepless

    rng = np.random.default_rng(4)
    for trial in range(300):
        rows = []
        for name in ("loss", "lr", "acc")[: int(rng.integers(1, 4))]:
            n = int(rng.integers(1, 40))
            shared = rng.random(n) < rng.choice([0.5, 0.85, 0.9, 0.95, 1.0])  # points at the one shared step
            steps = np.where(shared, 0, rng.integers(1, 10**6, n))
            rows += [(name, int(s)) for s in steps]
        order = rng.permutation(len(rows)) if trial % 2 else np.arange(len(rows))  # interleaved or in blocks
        frame = tidy(pl.DataFrame({"metric": [rows[i][0] for i in order], "step": [rows[i][1] for i in order],
                                   "value": np.zeros(len(rows))}))
        found = stepless.stepless_metrics(frame)
        monkeypatch.setattr(stepless, "_may_share_steps", lambda scalars: True)
        assert found == stepless.stepless_metrics(frame)
        monkeypatch.undo()
