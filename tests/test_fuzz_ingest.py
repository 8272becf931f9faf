"""The promise, as a property: whatever bytes a log of any format holds, reading the folder gives
runs or one clear line per unusable source, and the good run beside the damaged one is read
exactly as alone. A small fixed budget here; benchmarks/fuzz.py runs the long form (10,000
cases in-process, 700 through the CLI, time and memory capped) with results in docs/robustness.md."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logdoctor.ingest import load_runs

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
GOOD = "kcsv_healthy_history"
#: One sample run per reader, and the file of it that is damaged.
SEEDS = {
    "tensorboard": ("tb_healthy_adam_constant", "events.out.tfevents.*"),
    "hf_trainer": ("hf_healthy_linear_warmup", "trainer_state.json"),
    "lightning": ("pl_healthy_onecycle_cnn", "metrics.csv"),
    "lightning_hparams": ("pl_healthy_onecycle_cnn", "hparams.yaml"),
    "csv": ("csv_healthy_amp_charlm", "log.csv"),
    "mlflow": ("mlf_healthy_short_10_epochs", "val_loss"),
    "mlflow_meta": ("mlf_healthy_short_10_epochs", "meta.yaml"),
    "wandb": ("wb_healthy_amp_digits", "*.wandb"),
}

#: Damage: (offset as a fraction of the file, bytes cut there, bytes put in their place).
damage = st.tuples(
    st.floats(0, 1),
    st.integers(0, 4096),
    st.one_of(
        st.binary(max_size=64),
        st.sampled_from([b"\x00" * 512, b"\xff" * 16, b"NaN", b"-Infinity", b"[" * 3000, b"\x1b[31m", b"\r\n,,,\n", b"!!python/name:os.system"]),
    ),
)


def _good_alone(tmp_path_factory) -> tuple[str, int, list[str]]:
    folder = tmp_path_factory.mktemp("alone")
    shutil.copytree(SAMPLES / GOOD, folder / "good")
    runs, errors = load_runs(folder)
    assert errors == [] and len(runs) == 1
    return runs[0].name, runs[0].scalars.height, sorted(runs[0].metrics)


@pytest.fixture(scope="module")
def good_alone(tmp_path_factory):
    return _good_alone(tmp_path_factory)


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(damage, min_size=1, max_size=3))
def test_damaged_logs_cost_only_themselves(tmp_path_factory, good_alone, fmt, cuts):
    root = tmp_path_factory.mktemp(fmt)
    shutil.copytree(SAMPLES / GOOD, root / "good")
    sample, pattern = SEEDS[fmt]
    shutil.copytree(SAMPLES / sample, root / "bad")
    target = sorted((root / "bad").rglob(pattern))[0]
    data = target.read_bytes()
    for where, cut, put in cuts:
        at = int(where * len(data))
        data = data[:at] + put + data[at + cut :]
    target.write_bytes(data)

    runs, errors = load_runs(root)

    good = [r for r in runs if r.name == good_alone[0]]
    assert len(good) == 1 and (good[0].scalars.height, sorted(good[0].metrics)) == good_alone[1:]
    assert all(r.name.startswith("bad") for r in runs if r is not good[0])
    for line in errors + [w for r in runs for w in r.warnings]:
        assert "\n" not in line and "Traceback" not in line and line.strip()
