"""TensorBoard runs from files the real writer produced: encodings, joins, restarts, hparams, damage."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from _tb_writers import REAL, event_file, hparams_in_main_file, write_hparams, write_mixed, write_scalars
from logdoctor.ingest import load_runs
from _ingest_helpers import only_run


def as_dict(run, prefix: str = "") -> dict[tuple[str, int], float]:
    rows = run.scalars.filter(pl.col("metric").cast(pl.String).str.starts_with(prefix)).iter_rows(named=True)
    return {(r["metric"][len(prefix):], r["step"]): r["value"] for r in rows}


def test_simple_value_matches_what_was_written_and_tbparse(tmp_path):
    from tbparse import SummaryReader

    truth = write_scalars(tmp_path / "run", extra_values=[("train/loss", 60, float("nan")), ("train/loss", 61, float("inf"))])
    run = only_run(tmp_path)
    assert run.format == "tensorboard" and run.name == "run" and run.warnings == []
    got = as_dict(run)
    assert got.keys() == truth.keys()
    for key, value in truth.items():
        assert got[key] == value or (math.isnan(value) and math.isnan(got[key])), key
    assert run.scalars.schema["step"] == pl.Int64 and run.scalars.get_column("wall_time").min() > 1.5e9
    frame = SummaryReader(str(tmp_path / "run")).scalars
    theirs = {(t, int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"])}
    assert theirs.keys() == got.keys()
    assert all(theirs[k] == got[k] or (math.isnan(theirs[k]) and math.isnan(got[k])) for k in got)


@pytest.mark.parametrize("double", [False, True])
def test_tensor_encoding_is_read(tmp_path, double):
    truth = write_scalars(tmp_path / "run", new_style=True, double=double)
    assert as_dict(only_run(tmp_path)) == truth


def test_histograms_images_text_are_skipped_and_odd_layouts_still_read(tmp_path):
    truth = write_mixed(tmp_path / "run")
    run = only_run(tmp_path)
    assert as_dict(run) == truth
    assert not {"weights", "sample", "note", "unknown"} & set(run.metrics)


def test_restarted_run_keeps_the_newest_values(tmp_path):
    first = write_scalars(tmp_path / "run", tags=("loss",), steps=range(0, 60))
    second = write_scalars(tmp_path / "run", tags=("loss",), steps=range(40, 100), offset=1.0)
    assert len(list((tmp_path / "run").glob("events.out.tfevents.*"))) == 2
    run = only_run(tmp_path)
    got = as_dict(run)
    assert sorted(s for _, s in got) == list(range(100))
    assert all(got[("loss", s)] == first[("loss", s)] for s in range(40))
    assert all(got[("loss", s)] == second[("loss", s)] for s in range(40, 100))
    assert any("restart" in n and "step 40" in n for n in run.notes)


def test_keras_train_validation_folders_are_only_run(tmp_path):
    train = write_scalars(tmp_path / "exp" / "train", tags=("epoch_loss",), steps=range(10))
    val = write_scalars(tmp_path / "exp" / "validation", tags=("epoch_loss",), steps=range(10), offset=0.2)
    run = only_run(tmp_path)
    assert run.name == "exp" and set(run.metrics) == {"train/epoch_loss", "validation/epoch_loss"}
    assert as_dict(run, "train/") == train and as_dict(run, "validation/") == val
    assert any("train, validation joined" in n for n in run.notes)


def test_sibling_runs_are_not_joined(tmp_path):
    for name in ("seed0", "seed1", "seed2"):
        write_scalars(tmp_path / name, tags=("loss",), steps=range(5))
    runs, errors = load_runs(tmp_path)
    assert errors == [] and sorted(r.name for r in runs) == ["seed0", "seed1", "seed2"]
    assert all(r.metrics == ["loss"] for r in runs)


def test_runs_nested_in_a_run_folder_stay_separate_while_its_own_parts_join(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "exp")) as writer:
        for step in range(20):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalars("Loss/split", {"train": 1.0 / (step + 1), "test": 1.2 / (step + 1)}, step)
        writer.add_hparams({"lr": 0.1}, {"hparam/loss": 0.05}, run_name="session")
    write_scalars(tmp_path / "exp" / "seed0", tags=("loss",), steps=range(30))
    write_scalars(tmp_path / "exp" / "validation", tags=("loss",), steps=range(20))
    runs, errors = load_runs(tmp_path)
    assert errors == [] and sorted(r.name for r in runs) == ["exp", "exp/seed0"]
    exp = next(r for r in runs if r.name == "exp")
    assert set(exp.metrics) == {
        "loss", "Loss_split_train/Loss/split", "Loss_split_test/Loss/split", "session/hparam/loss", "validation/loss",
    }
    assert exp.config["lr"] == 0.1


def test_add_hparams_goes_to_config_and_its_subfolder_joins(tmp_path):
    hp = write_hparams(tmp_path / "run")
    run = only_run(tmp_path)
    assert run.config["lr"] == hp["lr"] and run.config["batch_size"] == 64 and run.config["optimizer"] == "adamw"
    assert run.config["amp"] == 1  # torch stores bools as numbers
    assert "train/loss" in run.metrics and "hp/hparam/final_loss" in run.metrics


def test_hparams_in_the_main_file_and_hparams_yaml(tmp_path):
    hparams_in_main_file(tmp_path / "run", {"lr": 0.1, "layers": 3})
    (tmp_path / "run" / "hparams.yaml").write_text("lr: 0.1\nwarmup: 500\n")
    run = only_run(tmp_path)
    assert run.config == {"lr": 0.1, "layers": 3, "warmup": 500}
    assert run.metrics == ["loss"]


# ----------------------------------------------------------------------------- damage


def test_truncated_file_keeps_complete_records_and_warns_once(tmp_path):
    truth = write_scalars(tmp_path / "run", tags=("loss",), steps=range(100))
    path = event_file(tmp_path / "run")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])  # killed mid-record
    run = only_run(tmp_path)
    got = as_dict(run)
    assert len(got) == 99 and all(truth[k] == v for k, v in got.items())
    assert len(run.warnings) == 1 and "ends mid-record" in run.warnings[0] and path.name in run.warnings[0]


def test_flipped_byte_skips_that_record_only(tmp_path):
    truth = write_scalars(tmp_path / "run", tags=("loss",), steps=range(100))
    path = event_file(tmp_path / "run")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    run = only_run(tmp_path)
    got = as_dict(run)
    assert 97 <= len(got) <= 99 and all(truth[k] == v for k, v in got.items())  # never a wrong number
    assert any("CRC" in w or "corrupted" in w for w in run.warnings), run.warnings


def test_empty_or_garbage_file_is_one_clear_line_and_other_runs_still_read(tmp_path):
    write_scalars(tmp_path / "good", tags=("loss",), steps=range(5))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "events.out.tfevents.1.host").write_bytes(b"")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "events.out.tfevents.2.host").write_bytes(b"this is not an event file at all" * 10)
    runs, errors = load_runs(tmp_path)
    assert [r.name for r in runs] == ["good"]
    assert len(errors) == 2 and all("\n" not in e for e in errors)
    assert "0 bytes" in next(e for e in errors if "empty" in e)
    assert "not a TensorBoard event file" in next(e for e in errors if "junk" in e)


def test_a_run_killed_before_its_first_record_says_so(tmp_path):
    write_scalars(tmp_path / "run", tags=("loss",), steps=range(3))
    path = event_file(tmp_path / "run")
    path.write_bytes(path.read_bytes()[:20])
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1 and "inside its first record" in errors[0] and path.name in errors[0]


def test_a_bad_file_beside_a_good_one_is_a_warning(tmp_path):
    write_scalars(tmp_path / "run", tags=("loss",), steps=range(5))
    (tmp_path / "run" / "events.out.tfevents.9999999999.host").write_bytes(b"")
    run = only_run(tmp_path)
    assert len(as_dict(run)) == 5 and any("0 bytes" in w for w in run.warnings)


# ----------------------------------------------------------------------------- real logs


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-logs not present")
def test_real_keras_v2_files_join_and_match_tbparse_tensors():
    from tbparse import SummaryReader

    folder = REAL / "keras_tb_tutorial_TheCodeheadMT" / "archive" / "experiments" / "Exp_0_adam_200_0.2"
    run = only_run(folder)
    assert {"train/epoch_loss", "validation/epoch_loss", "train/epoch_accuracy"} <= set(run.metrics)
    assert not any("histogram" in m or "image" in m for m in run.metrics)
    for split in ("train", "validation"):
        frame = SummaryReader(str(folder / split)).tensors
        frame = frame[frame["tag"] == "epoch_loss"]
        theirs = {int(s): float(np.asarray(v).item()) for s, v in zip(frame["step"], frame["value"])}
        mine = {s: v for (m, s), v in as_dict(run, f"{split}/").items() if m == "epoch_loss"}
        assert mine == theirs and len(mine) == 10


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-logs not present")
def test_real_torch_files_match_tbparse(tmp_path):
    from tbparse import SummaryReader

    for path in sorted(REAL.rglob("events.out.tfevents.*")):
        if path.suffix == ".v2" or path.stat().st_size == 0:
            continue
        shutil.copy(path, tmp_path / path.name)
        run = only_run(tmp_path)
        frame = SummaryReader(str(tmp_path)).scalars
        theirs = sorted(zip(frame["tag"], frame["step"].astype(int), frame["value"].astype(float)))
        mine = sorted(run.scalars.select("metric", "step", "value").iter_rows())
        assert len(mine) == len(theirs) and np.array_equal(
            np.array([v for *_, v in mine]), np.array([v for *_, v in theirs]), equal_nan=True
        ), path
        assert [k[:2] for k in mine] == [k[:2] for k in theirs], path
        (tmp_path / path.name).unlink()


SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "sample_runs"


@pytest.mark.parametrize("folder", sorted(p.name for p in SAMPLE_RUNS.glob("tb*")))
def test_every_bundled_tensorboard_run_reads_as_tbparse_reads_it(folder):
    """tbparse is the independent reference reader (test extra only): every tag, step and value of
    the bundled TensorBoard runs, point for point (summary scalars, or tensors where TF 2 wrote them)."""
    from tbparse import SummaryReader

    run = only_run(SAMPLE_RUNS / folder)
    reader = SummaryReader(str(SAMPLE_RUNS / folder))
    frame = reader.scalars if len(reader.scalars) else reader.tensors
    theirs = sorted((t, int(s), float(np.asarray(v).item())) for t, s, v in zip(frame["tag"], frame["step"], frame["value"]))
    mine = sorted(run.scalars.select("metric", "step", "value").iter_rows())
    assert [k[:2] for k in mine] == [k[:2] for k in theirs] and len(mine) > 100
    assert np.array_equal(np.float32([v for *_, v in mine]), np.float32([v for *_, v in theirs]), equal_nan=True)
