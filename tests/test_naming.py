"""One name per run: the run's own name, whichever way it is pointed at and in every command.

Each case builds runs on disk and reads the names back from the JSON reports, as a script would.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.cli import app
from logdoctor.naming import display_names, natural_key, root_label


def write_run(folder: Path, file: str = "metrics.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"{i},{2.0 * 0.98 ** i + 0.1:.5f}" for i in range(120))
    (folder / file).write_text("step,loss\n" + rows + "\n")
    return folder


def names(*args: str) -> list[str]:
    result = CliRunner().invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return sorted(r["run"] for r in json.loads(result.stdout)["runs"])


def test_a_sweep_version_has_one_name_in_analyze_and_audit(tmp_path):
    """`analyze sweep/lightning_logs/version_1` once called the run `sweep` (as it would every run
    of the sweep) while `audit sweep` said `version_1`."""
    for v in range(3):
        write_run(tmp_path / "sweep" / "lightning_logs" / f"version_{v}")
    one = tmp_path / "sweep" / "lightning_logs" / "version_1"
    assert names("analyze", str(one)) == ["version_1"]
    assert names("analyze", str(one / "metrics.csv")) == ["version_1"]
    assert names("inspect", str(one)) == ["version_1"]
    assert names("analyze", str(tmp_path / "sweep")) == ["version_0", "version_1", "version_2"]
    assert names("audit", str(tmp_path / "sweep"), "--no-cache", "-j", "1") == ["version_0", "version_1", "version_2"]


def test_a_lone_logger_folder_takes_the_name_a_person_gave_its_run(tmp_path):
    write_run(tmp_path / "pl_frozen_head" / "lightning_logs" / "version_0")
    write_run(tmp_path / "yolo_small" / "runs" / "detect" / "train3", "results.csv")
    for path in ("pl_frozen_head", "pl_frozen_head/lightning_logs/version_0", "pl_frozen_head/lightning_logs/version_0/metrics.csv"):
        assert names("analyze", str(tmp_path / path)) == ["pl_frozen_head"]
    assert names("analyze", str(tmp_path)) == ["pl_frozen_head", "yolo_small"]


def test_a_dotted_folder_name_is_kept_whole(tmp_path):
    """`lr0.001_m0_bs16_s0` was named `lr0` (all after the first dot taken for a file extension)."""
    write_run(tmp_path / "sweep" / "lr0.001_m0_bs16_s0")
    write_run(tmp_path / "sweep" / "lr0.01_m0_bs16_s0")
    assert names("analyze", str(tmp_path / "sweep" / "lr0.001_m0_bs16_s0")) == ["lr0.001_m0_bs16_s0"]
    assert names("analyze", str(tmp_path / "sweep")) == ["lr0.001_m0_bs16_s0", "lr0.01_m0_bs16_s0"]


def test_a_log_file_with_a_name_of_its_own_is_named_by_its_stem_both_ways(tmp_path):
    write_run(tmp_path / "sweep", "lr0.1_seed2.csv")
    write_run(tmp_path / "sweep", "lr0.3_seed2.csv")
    assert names("analyze", str(tmp_path / "sweep" / "lr0.1_seed2.csv")) == ["lr0.1_seed2"]
    assert names("analyze", str(tmp_path / "sweep")) == ["lr0.1_seed2", "lr0.3_seed2"]


def test_runs_sharing_an_own_name_take_their_parents_name_only_then(tmp_path):
    """Three Hugging Face runs all called `output` were three runs named alike."""
    for exp in ("bert_a", "bert_b"):
        write_run(tmp_path / exp / "output", "trainer_log.csv")
    for lr in ("lr0.1", "lr0.2"):
        write_run(tmp_path / "grid" / lr / "seed0")
    assert names("analyze", str(tmp_path / "bert_a" / "output")) == ["bert_a"]
    assert names("analyze", str(tmp_path / "grid" / "lr0.1" / "seed0")) == ["seed0"]
    assert names("analyze", str(tmp_path)) == ["bert_a", "bert_b", "lr0.1/seed0", "lr0.2/seed0"]


def test_names_are_distinct_even_where_no_folder_tells_the_runs_apart(tmp_path):
    shown = display_names(["a/lightning_logs/version_0", "b/lightning_logs/version_0"], str(tmp_path))
    assert shown == ["a", "b"]
    assert len(set(display_names(["x/metrics.csv", "x/log.csv"], str(tmp_path)))) == 2


@pytest.mark.parametrize("path, name", [
    ("/x/run7/checkpoint-500", "run7"),
    ("/x/run7/lightning_logs/version_0/checkpoints/epoch=3-step=100.ckpt", "run7"),
    ("/x/run7/wandb/offline-run-20261122_031656-k6izagjo/run-k6izagjo.wandb", "run7"),
    ("/x/sweep/lr0.1_seed2.log", "lr0.1_seed2"),
    ("/x/exp3/nohup.out", "exp3"),
    ("/x/rw-011/mlruns/1/ed05f9cd599442fe9a0c9222184710b8", "rw-011"),  # an experiment id names no run
    ("/x/rw-012/runs/Mar24_22-23-40_DESKTOP-41L2EO3", "rw-012"),  # SummaryWriter's default folder
])
def test_a_checkpoint_or_log_file_is_named_after_its_run(path, name):
    assert root_label(path) == name


def test_names_sort_by_the_numbers_in_them():
    """The audit table interleaved `lr0.001, lr0.01, lr0.001`: a decimal compared digit run by digit run."""
    runs = ["lr0.01_s1", "lr0.001_s1", "lr0.01_s0", "lr0.001_s0", "version_10", "version_2"]
    assert sorted(runs, key=natural_key) == ["lr0.001_s0", "lr0.001_s1", "lr0.01_s0", "lr0.01_s1", "version_2", "version_10"]
    assert sorted(["lr1e-3", "lr3e-4", "lr1e-4"], key=natural_key) == ["lr1e-4", "lr3e-4", "lr1e-3"]


def test_piped_names_are_whole_in_analyze_and_audit(tmp_path):
    """A script greps the piped output for a run: no name may be cut with `…` (CliRunner is no terminal)."""
    long = [f"learning_rate_sweep_adamw_cosine_warmup_trial_{i:04d}_seed_{i}" for i in range(3)]
    for name in long:
        write_run(tmp_path / name)
    env = {"COLUMNS": "80", "NO_COLOR": "1"}
    for args in (["analyze", str(tmp_path)], ["audit", str(tmp_path), "--no-cache", "-j", "1"]):
        out = CliRunner().invoke(app, args, env=env).stdout
        assert "…" not in out and all(name in out for name in long), out
