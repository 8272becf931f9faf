"""The promise, as a property: whatever bytes a log of any format holds, reading the folder gives
runs or one clear line per unusable source, and the good run beside the damaged one is read
exactly as alone; so do holes in its files and permissions taken from its entries (checked as a
user without root's read bypass where the machine allows). A small fixed budget here;
benchmarks/fuzz.py runs the long form (10,000 cases in-process, 700 through the CLI, time and
memory capped) with results in docs/robustness.md."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
        st.sampled_from([
            b"\x00" * 512, b"\xff" * 16, b"NaN", b"-Infinity", b"[" * 3000, b"\x1b[31m", b"\r\n,,,\n", b"!!python/name:os.system",
            b'{"a": ' * 1000, b"[" * 100_000, b",c" * 20_000, b" 1e19\n", b" inf\n", b"r\xe9sultat\xe9",  # deep, wide, exotic steps, Latin-1
        ]),
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


#: Entries of the damaged run whose rights are taken: the run's folder, a folder in it, a file in it.
MODES = st.sampled_from(["mode 000", "listable, not enterable", "another user's, 600/700"])


def _unprivileged() -> list[str] | None:
    """A command prefix under which file permissions apply: none for a normal user; for root,
    setpriv without the capabilities that bypass them (None when that cannot be done here)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return prefix if subprocess.run(prefix + ["true"], capture_output=True).returncode == 0 else None


LOAD = "import json,sys; from logdoctor.ingest import load_runs; r,e=load_runs(sys.argv[1]); print(json.dumps([[x.name for x in r], e]))"


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(sorted(SEEDS) + ["console"]), pick=st.floats(0, 1), mode=MODES)
def test_permissions_taken_from_a_run_cost_only_what_they_hide(tmp_path_factory, good_alone, fmt, pick, mode):
    """A folder or file of the damaged run made unreadable (as `chmod`, `chmod -R 644` or another
    user's mode 600 leave it): the good run is read, and the damaged one is read or named in a line."""
    prefix = _unprivileged()
    if prefix is None or (mode.startswith("another") and os.geteuid() != 0):
        pytest.skip("no way to read as a user without root's permission bypass here (setpriv missing or refused)")
    root = tmp_path_factory.mktemp(fmt)
    shutil.copytree(SAMPLES / GOOD, root / "good")
    if fmt == "console":  # no sample run is a console log: one that a claim knows only by its content
        (root / "bad").mkdir()
        (root / "bad" / "train.log").write_text("\n".join(f"epoch 1 step {s} | train_loss {2 / s:.4f}" for s in range(1, 40)) + "\n")
    else:
        shutil.copytree(SAMPLES / SEEDS[fmt][0], root / "bad")
    entries = [root / "bad"] + sorted((root / "bad").rglob("*"))
    victim = entries[min(int(pick * len(entries)), len(entries) - 1)]
    if mode == "mode 000":
        victim.chmod(0)
    elif mode.startswith("listable"):
        victim.chmod(0o644 if victim.is_dir() else 0)
    else:
        victim.chmod(0o700 if victim.is_dir() else 0o600)
        os.chown(victim, 65534, 65534)
    try:
        out = subprocess.run(prefix + [sys.executable, "-c", LOAD, str(root)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(SAMPLES.parent)}, timeout=120)
    finally:
        victim.chmod(0o755)
    assert out.returncode == 0, out.stderr[-2000:]
    names, errors = json.loads(out.stdout)
    assert good_alone[0] in names
    assert any(n.startswith("bad") for n in names) or any(line.startswith(str(root / "bad")) for line in errors), (names, errors)
    assert all("\n" not in line and "Traceback" not in line for line in errors)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1), size=st.sampled_from([4096, 1 << 20, 1 << 30]))
def test_a_hole_anywhere_in_an_event_file_costs_only_itself(tmp_path_factory, good_alone, where, size):
    """A preallocated or crashed writer's hole (zeros, no disk) at any byte of an event file."""
    root = tmp_path_factory.mktemp("hole")
    shutil.copytree(SAMPLES / GOOD, root / "good")
    shutil.copytree(SAMPLES / SEEDS["tensorboard"][0], root / "bad")
    events = sorted((root / "bad").rglob(SEEDS["tensorboard"][1]))[0]
    data = events.read_bytes()
    at = int(where * len(data))
    with open(events, "wb") as fh:
        fh.write(data[:at])
        fh.seek(size, os.SEEK_CUR)
        fh.write(data[at:])
    runs, errors = load_runs(root)
    good = [r for r in runs if r.name == good_alone[0]]
    assert len(good) == 1 and (good[0].scalars.height, sorted(good[0].metrics)) == good_alone[1:]
    assert [r.name for r in runs if r is not good[0]] == ["bad"] or len(errors) == 1
