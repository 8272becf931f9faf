"""Damaged and hostile folders found by the fuzzer (benchmarks/fuzz.py): each gives one clear
line, and the good run beside it is still read. The inputs are the smallest that showed it."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.ingest import load_runs

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
GOOD = "tb_healthy_adam_constant"


def _beside_good(tmp_path: Path, bad: str) -> Path:
    """A folder holding a copy of a good sample run and of sample run `bad` (to be damaged)."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    shutil.copytree(SAMPLES / bad, tmp_path / "bad")
    return tmp_path / "bad"


def _names(runs) -> list[str]:
    return sorted(r.name for r in runs)


def _unprivileged() -> list[str] | None:
    """A command prefix under which file permissions apply (root ignores them): the process as is
    for a normal user; for root, without the capabilities that bypass read permission."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    probe = subprocess.run([setpriv, "--bounding-set=-dac_override,-dac_read_search", "true"], capture_output=True)
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"] if probe.returncode == 0 else None


LOAD = "import json,sys; from logdoctor.ingest import load_runs; r,e=load_runs(sys.argv[1]); print(json.dumps([sorted(x.name for x in r), e]))"


@pytest.mark.parametrize(
    ("bad", "locked"),
    [
        ("mlf_crawl_sgd_lr_low", "mlruns/947427902577955505/35fe5f2846d153de970d74e375210a3d"),
        ("hf_healthy_linear_warmup", "."),
        ("pl_healthy_onecycle_cnn", "lightning_logs"),
    ],
)
def test_a_run_folder_another_user_owns_is_one_line_and_the_runs_beside_it_are_read(tmp_path, bad, locked):
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("no way to drop root's permission bypass here (setpriv missing or refused)")
    folder = _beside_good(tmp_path, bad) / locked
    folder.chmod(0)
    try:
        out = subprocess.run(
            prefix + [sys.executable, "-c", LOAD, str(tmp_path)],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SAMPLES.parent)}, timeout=120,
        )
    finally:
        folder.chmod(0o755)
    assert out.returncode == 0, out.stderr
    names, errors = json.loads(out.stdout)
    assert names == ["good"]
    assert errors == [f"{folder}: cannot read folder (Permission denied)"]


def test_a_symlink_loop_beside_runs_costs_nothing(tmp_path):
    _beside_good(tmp_path, "hf_healthy_linear_warmup")
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "up").symlink_to("..")
    (tmp_path / "self").symlink_to("self")
    runs, errors = load_runs(tmp_path)
    assert _names(runs) == ["bad", "good"] and errors == []


def _yaml_bomb(levels: int = 10) -> str:
    """The billion laughs: each alias list repeats the one before nine times (9^10 values in 10 lines)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (_yaml_bomb(), "more than 100,000 values once its aliases are expanded"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "hparams.yaml: config not"),  # libyaml refuses it, PyYAML nests too deep
        ("\n".join(f"k{i}: {i}" for i in range(200_000)) + "\n", "larger than 1 MB"),
        ("!!python/object/apply:os.system ['echo pwned']\n", "config is not a mapping"),
    ],
    ids=["alias-bomb", "deep", "huge", "python-tag"],
)
def test_a_hostile_hparams_yaml_is_refused_and_its_run_still_read(tmp_path, text, why):
    hparams = _beside_good(tmp_path, "pl_healthy_onecycle_cnn") / "lightning_logs" / "version_0" / "hparams.yaml"
    hparams.write_text(text)
    runs, errors = load_runs(tmp_path)
    assert _names(runs) == ["bad/lightning_logs/version_0", "good"] and errors == []
    bad = next(r for r in runs if r.name.startswith("bad"))
    assert bad.config == {} and len(bad.warnings) == 1 and why in bad.warnings[0]


BOUNDED = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from logdoctor.ingest import load_runs
runs, errors = load_runs(sys.argv[1])
print(json.dumps([{r.name: sorted(r.metrics) for r in runs}, errors]))
"""


def _bounded_load(folder: Path) -> tuple[dict, list[str]]:
    """load_runs in a subprocess capped at 2 GiB of address space and 120 s (a hang or a blow-up
    fails): run name -> its metric names, and the error lines."""
    env = {**os.environ, "PYTHONPATH": str(SAMPLES.parent), "POLARS_MAX_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", BOUNDED, str(folder)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    runs, errors = json.loads(out.stdout)
    return runs, errors


def test_a_sparse_wide_wandb_history_is_read_within_two_gib(tmp_path):
    """loss every step, 1,000 per-class accuracies every 1,000 steps: 100,000 lines, 10 MB (a dense
    frame of it took 4.2 GB)."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    files = tmp_path / "bad" / "wandb" / "run-20240101_000000-abcd1234" / "files"
    files.mkdir(parents=True)
    every = {f"eval/class_{i}_acc": 0.5 for i in range(1000)}
    with open(files / "wandb-history.jsonl", "w") as fh:
        for step in range(100_000):
            fh.write(json.dumps({"_step": step, "loss": 1 / (step + 1), **(every if step % 1000 == 0 else {})}) + "\n")
    (files / "wandb-summary.json").write_text("{}")
    runs, errors = _bounded_load(tmp_path)
    assert errors == [] and sorted(runs) == ["bad/wandb/run-20240101_000000-abcd1234", "good"]
    assert len(runs["bad/wandb/run-20240101_000000-abcd1234"]) == 1001


def test_a_csv_with_thousands_of_columns_is_read_in_linear_time(tmp_path):
    """Lightning's per-layer gradient norms: epoch, step, train_loss + 6,000 columns (reading was
    quadratic in the columns: 3,000 took 45 s, 6,000 would take minutes; the cap is 120 s)."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    version = tmp_path / "bad" / "version_0"
    version.mkdir(parents=True)
    columns = [f"grad_norm_layer_{i}" for i in range(6000)]
    rows = [f"0,{s},{1 / (s + 1)}," + ",".join(["0.5"] * len(columns)) for s in range(50)]
    (version / "metrics.csv").write_text("\n".join(["epoch,step,train_loss," + ",".join(columns)] + rows) + "\n")
    (version / "hparams.yaml").write_text("lr: 0.1\n")
    runs, errors = _bounded_load(tmp_path)
    assert errors == [] and set(columns) < set(runs["bad/version_0"])


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[tool]\nlogdoctor = 5\n", "[tool.logdoctor] must be a table, not 5"),
        ("tool = 1\n", None),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", None),
    ],
    ids=["logdoctor-not-a-table", "tool-not-a-table", "deep"],
)
def test_a_projects_broken_pyproject_is_one_line_or_not_ours(tmp_path, text, found):
    """A pyproject.toml found on the way up belongs to some project: only its [tool.logdoctor] is ours."""
    from logdoctor.config import ConfigError, load_config

    (tmp_path / "pyproject.toml").write_text(text)
    if found is None:
        assert load_config(start=tmp_path).source is None
    else:
        with pytest.raises(ConfigError, match=re.escape(f"{tmp_path / 'pyproject.toml'}: {found}")):
            load_config(start=tmp_path)


@pytest.mark.parametrize("fmt", ["json", "md", "terminal"])
def test_hostile_folder_names_are_escaped_in_every_report(tmp_path, fmt):
    """A Latin-1 name copied from another machine, an ESC sequence and DEL in folder names: every
    report shows them escaped (\\xe9, \\x1b, \\x7f), none carries the raw character."""
    from typer.testing import CliRunner

    from logdoctor.cli import app

    shutil.copytree(SAMPLES / GOOD, tmp_path / os.fsdecode(b"r\xe9sultats"))
    shutil.copytree(SAMPLES / "hf_healthy_linear_warmup", tmp_path / "\x1b[31mred\x1b[0m")
    shutil.copytree(SAMPLES / "csv_healthy_amp_charlm", tmp_path / "nul\x7fdel")
    report = tmp_path / f"report.{ {'terminal': 'txt'}.get(fmt, fmt) }"
    args = ["analyze", str(tmp_path), "-f", fmt, "--no-plots"] + ([] if fmt == "terminal" else ["-o", str(report)])
    result = CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    text = (result.output + (report.read_text() if report.exists() else "")).replace("\\\\", "\\")  # JSON doubles backslashes
    assert "r\\xe9sultats" in text and "\\x1b[31mred\\x1b[0m" in text and "nul\\x7fdel" in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udcff]", text)


def test_a_console_line_of_40000_values_is_read_in_linear_time(tmp_path):
    """One line printing a whole metrics dict (reading its slots was quadratic: 20,000 values took minutes)."""
    lines = [f"epoch 1 step {s} | train_loss {2 / (s + 1):.4f}" for s in range(1, 40)]
    lines.insert(20, "step 20 " + " ".join(f"m{i}: {i * 0.1:.3f}" for i in range(40_000)))
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    runs, errors = _bounded_load(tmp_path)
    assert errors == [] and {"train_loss", "m39999"} < set(runs["train.log"])


def test_a_wandb_history_line_of_dicts_100_deep_is_read_per_row(tmp_path):
    """The key count over a 100-deep struct took minutes and 2 GB (found by the fuzzer)."""
    files = tmp_path / "wandb" / "run-20240101_000000-abcd1234" / "files"
    files.mkdir(parents=True)
    deep = '{"a":' * 100 + "1" + "}" * 100
    lines = [f'{{"_step": {s}, "loss": {1 / (s + 1)}}}' for s in range(50)] + [deep]
    (files / "wandb-history.jsonl").write_text("\n".join(lines) + "\n")
    runs, errors = _bounded_load(tmp_path)
    assert errors == [] and len(runs) == 1 and "loss" in next(iter(runs.values()))


@pytest.mark.parametrize("name", ["lr=[0.1,0.2]", "[red]x", "run*"])
def test_a_run_folder_named_like_a_glob_pattern_is_read(tmp_path, name):
    """Hydra and sweep folders carry brackets, stars and question marks: polars took such a path
    as a glob pattern and lost the run ('not a readable CSV')."""
    shutil.copytree(SAMPLES / "csv_healthy_amp_charlm", tmp_path / name / "csv")
    shutil.copytree(SAMPLES / "mlf_healthy_short_10_epochs", tmp_path / name / "mlflow")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and len(runs) == 2
    assert all(run.scalars.height > 0 and not run.warnings for run in runs), [run.warnings for run in runs]


def test_a_fifo_or_a_device_where_a_log_belongs_is_passed_over(tmp_path):
    """A named pipe opens and then waits for a writer forever; `/dev/zero` never ends. Neither is
    a log: the walk hands no reader a FIFO, socket or device (a FIFO named train.log hung it)."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    for name in ("train.log", "metrics.csv", "events.out.tfevents.1.host"):
        (tmp_path / "fifo").mkdir(exist_ok=True)
        os.mkfifo(tmp_path / "fifo" / name)
    (tmp_path / "keras" / "train").mkdir(parents=True)
    os.mkfifo(tmp_path / "keras" / "train" / "events.out.tfevents.1.host")
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "metrics.csv").symlink_to("/dev/zero")
    runs, errors = _bounded_load(tmp_path)
    assert sorted(runs) == ["good"] and errors == []


def test_a_folder_nested_1500_deep_beside_runs_costs_nothing(tmp_path):
    """Python 3.11's os.walk recursed once per level: 1,500 nested folders raised RecursionError
    and every run beside them was lost. The run at the bottom is read too."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    deep = tmp_path / "deep"
    deep.mkdir()
    for _ in range(1500):
        deep = deep / "a"
        deep.mkdir()
    (deep / "train.log").write_text("\n".join(f"step {s} train_loss {2 / s:.4f}" for s in range(1, 40)) + "\n")
    try:
        runs, errors = load_runs(tmp_path)
    finally:  # pytest's own clean-up (shutil.rmtree) recurses per level too, in every later session
        subprocess.run(["rm", "-rf", str(tmp_path / "deep")], check=True)
    assert errors == [] and len(runs) == 2 and "good" in _names(runs)


def test_a_run_folder_with_a_latin1_name_is_read(tmp_path):
    """`résultats/` copied from a Latin-1 machine: its name is not UTF-8, and polars, which takes
    a path only as UTF-8 text, raised TypeError: the CSV and MLflow runs were lost."""
    folder = tmp_path / os.fsdecode(b"r\xe9sultats")
    shutil.copytree(SAMPLES / "csv_healthy_amp_charlm", folder / "csv")
    shutil.copytree(SAMPLES / "mlf_healthy_short_10_epochs", folder / "mlflow")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and len(runs) == 2
    assert all(run.scalars.height > 0 and not run.warnings for run in runs), [run.warnings for run in runs]


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_latin1_named_folder_written_to_a_latin1_named_report_is_a_report(tmp_path, fmt):
    """`résultats/` analysed into `résultats.md`, both named in Latin-1: the folder's name reached
    the report raw (a UnicodeEncodeError traceback writing it), and the Markdown plot link held
    the plots folder's undecodable name. The name is escaped; the link is percent-encoded bytes."""
    from urllib.parse import unquote_to_bytes

    from typer.testing import CliRunner

    from logdoctor.cli import app

    root = tmp_path / os.fsdecode(b"r\xe9sultats")
    shutil.copytree(SAMPLES / GOOD, root / "run")
    report = tmp_path / os.fsdecode(b"r\xe9sultats." + fmt.encode())
    result = CliRunner().invoke(app, ["analyze", str(root), "-o", str(report)], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    assert "r\\xe9sultats" in text
    if fmt == "md":
        link = re.search(r"\]\((r%E9sultats_plots/[^)]+\.png)\)", text).group(1)
        assert (tmp_path / os.fsdecode(unquote_to_bytes(link))).is_file()


@pytest.mark.parametrize("side", ["tags/mlflow.runName", "params/lr", "../meta.yaml"])
def test_a_pipe_where_an_mlflow_side_file_belongs_is_passed_over(tmp_path, side):
    """Side files are opened by name, not walked to: a named pipe as the run-name tag (found by
    the fuzzer), a param or the experiment's meta.yaml hung the reader waiting for a writer."""
    run = _beside_good(tmp_path, "mlf_healthy_short_10_epochs") / "mlruns" / "947427902577955505" / "c9494b558eae5dc686e3912bb32555e5"
    target = run / side
    target.parent.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    runs, errors = _bounded_load(tmp_path)
    assert len(runs) == 2 and "good" in runs and errors == []
