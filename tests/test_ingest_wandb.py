"""W&B inputs beyond a single file: chart exports joined per run, resumed runs whose step counter
restarts, empty or garbage history files."""
from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.ingest import load_runs
from logdoctor.view import RunView
from _ingest_helpers import only_run


def _chart_export(path: Path, metric: str, runs: dict[str, list[float]], x_axis: str = "Step") -> None:
    """What the W&B UI's chart "Export CSV" writes: the x axis, then `<run> - <metric>` with its band."""
    columns = [x_axis] + [f"{run} - {metric}{band}" for run in runs for band in ("", "__MIN", "__MAX")]
    lines = [",".join(f'"{c}"' for c in columns)]
    for i in range(max(len(v) for v in runs.values())):
        cells = [str(10 * i)]
        for values in runs.values():
            cells += [str(values[i]) if i < len(values) else ""] * 3
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def test_chart_exports_of_one_folder_are_joined_by_run_name(tmp_path):
    falling = [2 - 0.01 * i for i in range(100)]
    _chart_export(tmp_path / "wandb_export_2024-05-01T10_00_00.000+02_00.csv", "train/loss", {"swept-sun-3": falling, "dark-moon-4": falling})
    _chart_export(tmp_path / "wandb_export_2024-05-01T10_00_05.000+02_00.csv", "val/loss", {"swept-sun-3": falling[:50], "dark-moon-4": falling})
    _chart_export(tmp_path / "wandb_export_2024-05-01T10_00_09.000+02_00.csv", "lr", {"dark-moon-4": [1e-3] * 100})
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    assert set(by_name) == {"swept-sun-3", "dark-moon-4"}
    assert RunView(by_name["dark-moon-4"]).roles == {"train_loss": "train/loss", "val_loss": "val/loss", "lr": "lr"}
    sun = RunView(by_name["swept-sun-3"])
    assert sun.roles == {"train_loss": "train/loss", "val_loss": "val/loss"} and len(sun.metric("val/loss")) == 50
    assert any("joined from 2 chart export(s)" in n for n in by_name["swept-sun-3"].notes)


def test_chart_exports_on_different_x_axes_are_not_joined(tmp_path):
    _chart_export(tmp_path / "a.csv", "train/loss", {"run-a": [2.0, 1.5, 1.0]})
    _chart_export(tmp_path / "b.csv", "val/loss", {"run-a": [2.0, 1.6, 1.2]}, x_axis="Relative Time (Process)")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and sorted(r.name for r in runs) == ["a.csv/run-a", "b.csv/run-a"]


def test_a_damaged_export_beside_good_ones_costs_only_its_metric(tmp_path):
    _chart_export(tmp_path / "loss.csv", "train/loss", {"run-a": [2.0, 1.5, 1.0]})
    _chart_export(tmp_path / "lr.csv", "lr", {"run-a": [0.1, 0.1, 0.1]})
    (tmp_path / "val.csv").write_text('"Step","run-a - val/loss"\n"x","y"\n')
    runs, errors = load_runs(tmp_path)
    assert errors == [] and [r.name for r in runs] == ["run-a"]
    assert runs[0].metrics == ["train/loss", "lr"] and any("val.csv" in w for w in runs[0].warnings)


def _resumed_offline_run(tmp_path: Path, segments: list[tuple[list[int] | None, int]]) -> None:
    """wandb offline, `resume="allow"` with one id: each segment logs a falling loss, at the given
    steps or (None) at W&B's own `_step` counter, then finishes with the given exit code."""
    wandb = pytest.importorskip("wandb")
    import time

    value = 2.0
    for i, (steps, exit_code) in enumerate(segments):
        if i:
            time.sleep(1.05)  # W&B names run folders to the second
        run = wandb.init(dir=str(tmp_path), mode="offline", project="p", id="resumeme", resume="allow",
                         settings=wandb.Settings(silent=True, x_disable_stats=True))
        for step in steps if steps is not None else range(50):
            value -= 0.01
            run.log({"loss": value}, **({} if steps is None else {"step": step}))
        run.finish(exit_code=exit_code)
        wandb.teardown()


def test_an_offline_resume_that_restarts_the_step_counter_follows_the_first_segment(tmp_path):
    _resumed_offline_run(tmp_path, [(None, 1), (None, 0)])
    run = only_run(tmp_path)
    loss = RunView(run).metric("loss")
    assert list(loss.steps) == list(range(100)) and loss.duplicates == 0
    assert loss.values == pytest.approx([2.0 - 0.01 * (i + 1) for i in range(100)])
    assert any("restarts the step counter at 0; its steps are shifted by 50" in n for n in run.notes)
    assert not any("exited with code" in n for n in run.notes)  # the last segment ended cleanly


def test_a_resume_from_a_checkpoint_relogs_its_steps_and_reports_the_last_exit_code(tmp_path):
    _resumed_offline_run(tmp_path, [(list(range(50)), 0), (list(range(40, 90)), 3)])
    run = only_run(tmp_path)
    loss = RunView(run).metric("loss")
    assert list(loss.steps) == list(range(90)) and loss.duplicates == 10
    assert loss.values[40] == pytest.approx(2.0 - 0.01 * 51)  # the resumed segment's value wins
    assert not any("shifted" in n for n in run.notes) and "run exited with code 3" in run.notes
