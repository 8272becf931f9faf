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
print(json.dumps([{r.name: sorted(r.metrics) for r in runs}, errors, {r.name: r.warnings for r in runs}]))
"""


def _bounded_load(folder: Path, warnings: bool = False) -> tuple:
    """load_runs in a subprocess capped at 2 GiB of address space and 120 s (a hang or a blow-up
    fails): run name -> its metric names, and the error lines (and run name -> its warnings)."""
    env = {**os.environ, "PYTHONPATH": str(SAMPLES.parent), "POLARS_MAX_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", BOUNDED, str(folder)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    runs, errors, said = json.loads(out.stdout)
    return (runs, errors, said) if warnings else (runs, errors)


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


# --------------------------------------------------------------------------- issue 29: deep and wide inputs, holes, permissions, names


def _history(tmp_path: Path, extra: str) -> Path:
    """A W&B run folder beside the good run whose history holds one `extra` line among 60 good rows."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    files = tmp_path / "bad" / "wandb" / "run-20240101_000000-abcd1234" / "files"
    files.mkdir(parents=True)
    lines = [f'{{"_step": {s}, "loss": {2.5 * 0.97 ** s}}}' for s in range(60)]
    (files / "wandb-history.jsonl").write_text("\n".join(lines[:30] + [extra] + lines[30:]) + "\n")
    return files


@pytest.mark.parametrize(
    "extra",
    [
        '{"_step": 30, "a": ' + '{"a": ' * 1000 + "1" + "}" * 1000 + "}",
        '{"_step": 30, "a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        json.dumps({"_step": 30, **{f"k{i}": 0.5 for i in range(200_000)}}),
    ],
    ids=["dicts-1000-deep", "lists-100000-deep", "200000-keys"],
)
def test_a_history_line_past_the_depth_or_width_limit_is_left_out_with_one_line(tmp_path, extra):
    """Found by the fuzzer: a line nested 1,000 deep (polars' schema inference: 10.9 GB, an abort
    under a 4 GiB cap; Python's json: RecursionError, the run lost) and a row of 200,000 keys
    (17-23 CPU-s, 1.1 GB). The line is left out, named with the limits; every other row is read."""
    _history(tmp_path, extra)
    runs, errors, said = _bounded_load(tmp_path, warnings=True)
    name = next(name for name in runs if name.startswith("bad/"))
    assert errors == [] and sorted(runs) == sorted([name, "good"]) and runs[name] == ["loss"]
    assert said[name] == ["wandb-history.jsonl: 1 line(s) left out, nested more than 64 levels deep or holding more than 10,000 keys"]


def test_a_trainer_state_nested_past_the_limit_is_one_line(tmp_path):
    state = _beside_good(tmp_path, "hf_healthy_linear_warmup") / "trainer_state.json"
    state.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")
    runs, errors = _bounded_load(tmp_path)
    assert sorted(runs) == ["good"] and errors == [f"{state}: nested more than 64 levels deep, no trainer state"]


@pytest.mark.parametrize("wide", [100_000, 1_000_000])
def test_a_csv_wider_than_the_limit_is_one_line_naming_it(tmp_path, wide):
    """100,000 columns took 51 s and 658 MB; a header of 10^6 names ran out of memory under 4 GiB."""
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    (tmp_path / "bad").mkdir()
    rows = [f"{s},{2.5 * 0.97 ** s}" + (",0.5" * wide if wide < 1_000_000 else "") for s in range(3)]
    (tmp_path / "bad" / "log.csv").write_text("\n".join(["step,loss," + ",".join(f"c{i}" for i in range(wide))] + rows) + "\n")
    runs, errors = _bounded_load(tmp_path)
    assert sorted(runs) == ["good"]
    assert errors == [f"{tmp_path / 'bad' / 'log.csv'}: {wide + 2:,} columns, more than the 10,000 a log is read with"]


@pytest.mark.parametrize("step", ["1e19", "inf", "nan", "9223372036854775808"])
def test_an_mlflow_step_no_integer_holds_costs_only_its_line(tmp_path, step):
    """A step of 1e19 or inf failed the cast of the whole metric file, and the error cost every
    run of the experiment (the sibling too)."""
    experiment = _beside_good(tmp_path, "mlf_healthy_short_10_epochs") / "mlruns" / "947427902577955505"
    run = experiment / "c9494b558eae5dc686e3912bb32555e5"
    sibling = experiment / ("0" * 32)
    shutil.copytree(run, sibling)
    (sibling / "meta.yaml").write_text((sibling / "meta.yaml").read_text().replace(run.name, sibling.name))
    (sibling / "tags" / "mlflow.runName").write_text("sibling")
    metric = run / "metrics" / "val_loss"
    lines = metric.read_text().splitlines()
    stamp, value, _ = lines[3].split()
    lines[3] = f"{stamp} {value} {step}"
    metric.write_text("\n".join(lines) + "\n")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and len(runs) == 3
    damaged = [r for r in runs if r.path == str(run)][0]
    assert damaged.scalars.filter(damaged.scalars["metric"] == "val_loss").height == len(lines) - 1


def test_an_event_file_with_an_8gb_hole_is_read_past_it(tmp_path):
    """A preallocated file or a crashed writer's hole was scanned for a header at ~22 MB per
    CPU-second (minutes for 2 GB; 8 GB is past the 120 s cap); the records after it are read too."""
    events = next(_beside_good(tmp_path, "tbn_healthy_charlm_warmup_cosine").rglob("events.out.tfevents.*"))
    alone = load_runs(tmp_path / "bad")[0][0].scalars.height
    data = events.read_bytes()
    cut = 0
    while cut < len(data) // 2:  # a record boundary half-way through
        cut += 16 + int.from_bytes(data[cut : cut + 8], "little")
    with open(events, "wb") as fh:
        fh.write(data[:cut])
        fh.seek(8 << 30, os.SEEK_CUR)
        fh.write(data[cut:])
    if os.stat(events).st_blocks * 512 > 1 << 30:  # (or ran out of room trying)
        pytest.skip("this filesystem writes holes out as zeros")
    runs, errors, said = _bounded_load(tmp_path, warnings=True)
    assert errors == [] and sorted(runs) == ["bad", "good"]
    assert load_runs(tmp_path / "bad")[0][0].scalars.height == alone
    assert said["bad"] == [f"{events}: corrupted record header at byte {cut:,}; {8 << 30:,} byte(s) skipped in 1 place(s)"]


def test_a_console_line_of_records_printed_without_newlines_is_read_in_linear_time(tmp_path):
    """`print(..., end=" ")` in a loop: one 1 MB line of `step N loss x` records. Checking each
    counter against every one before it was quadratic (300 kB: 19 s; 1 MB: over 300 s)."""
    records = " ".join(f"step {s} loss {2.5 * 0.999 ** s:.4f}" for s in range(45_000))
    (tmp_path / "train.log").write_text(records + "\n")
    runs, errors = _bounded_load(tmp_path)
    assert errors == [] and "loss" in runs["train.log"]


def test_an_accented_tensorboard_download_tag_under_a_latin1_name_is_read(tmp_path):
    """TensorBoard's "Download CSV" names the file for its tag: `run-train-tag-précision.csv` in
    Latin-1. The tag became a metric name polars refused (lone surrogates): the run was lost."""
    (tmp_path / "run").mkdir()
    body = "\n".join(f"{1.7e9 + s},{s},{2.5 * 0.97 ** s}" for s in range(40))
    (tmp_path / "run" / os.fsdecode(b"run-train-tag-pr\xe9cision.csv")).write_text("Wall time,Step,Value\n" + body + "\n")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and [sorted(r.metrics) for r in runs] == [["train/pr\\xe9cision"]]  # `train`: a Keras split


def test_a_pipe_or_a_device_given_as_path_is_refused_by_its_kind(tmp_path):
    """Given as PATH, a FIFO or a link to /dev/zero was "cannot read folder (Not a directory)"."""
    from logdoctor.ingest import ReadError

    os.mkfifo(tmp_path / "train.log")
    (tmp_path / "zero.log").symlink_to("/dev/zero")
    with pytest.raises(ReadError, match=r"train\.log: a named pipe \(FIFO\), not a log file or folder"):
        load_runs(tmp_path / "train.log")
    with pytest.raises(ReadError, match=r"zero\.log: a character device, not a log file or folder"):
        load_runs(tmp_path / "zero.log")


def _logdoctor(prefix: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SAMPLES.parent), "NO_COLOR": "1", "COLUMNS": "200", "XDG_CACHE_HOME": str(cwd / "cache")}
    return subprocess.run(prefix + [sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


@pytest.mark.parametrize("command", ["analyze", "inspect", "audit"])
def test_a_tree_whose_folders_cannot_be_entered_is_one_line_per_folder(tmp_path, command):
    """`chmod -R 644 runs/`: folders listable but not enterable. The configuration lookup raised
    PermissionError (a traceback, no report) for analyze, inspect and audit; now each folder is
    one line (audit's plan passed over the walk's lines: "no training log found"), and a run
    inside one given as PATH is one line too."""
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("no way to drop root's permission bypass here (setpriv missing or refused)")
    runs = tmp_path / "runs"
    for name in ("good", "tb"):
        shutil.copytree(SAMPLES / GOOD, runs / name)
    folders = [runs / "good", runs / "tb", runs]
    for folder in folders:  # innermost first: a folder not enterable hides what is inside it
        folder.chmod(0o644)
    try:
        whole = _logdoctor(prefix, [command, str(runs)], tmp_path)
        inside = _logdoctor(prefix, [command, str(runs / "good")], tmp_path)
    finally:
        for folder in reversed(folders):
            folder.chmod(0o755)
    for out in (whole, inside):
        assert "Traceback" not in out.stderr + out.stdout and out.returncode in (0, 2), out.stderr[-2000:]  # inspect lists, exit 0
    assert f"{runs / 'good'}: cannot read (Permission denied)" in inside.stderr
    said = whole.stdout + whole.stderr
    assert all(f"{runs / name}: cannot read folder (Permission denied)" in said for name in ("good", "tb")), said


def test_logs_another_user_keeps_are_named_not_passed_over(tmp_path):
    """Mode 600, owned by someone else: a console log vanished without a line, a CSV was called
    "binary data". Each is now named with its reason; the good run is read."""
    prefix = _unprivileged()
    if prefix is None or os.geteuid() != 0:
        pytest.skip("needs root to give files to another user, and a way to drop its permission bypass")
    shutil.copytree(SAMPLES / GOOD, tmp_path / "good")
    (tmp_path / "console").mkdir()
    log = tmp_path / "console" / "train.log"
    log.write_text("\n".join(f"epoch 1 step {s} | train_loss {2 / s:.4f}" for s in range(1, 40)) + "\n")
    csv = tmp_path / "csv" / "log.csv"
    shutil.copytree(SAMPLES / "csv_healthy_amp_charlm", csv.parent)
    for path in (log, csv):
        path.chmod(0o600)
        os.chown(path, 65534, 65534)
    out = subprocess.run(prefix + [sys.executable, "-c", LOAD, str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(SAMPLES.parent)}, timeout=120)
    assert out.returncode == 0, out.stderr
    names, errors = json.loads(out.stdout)
    assert names == ["good"]
    assert sorted(errors) == sorted([f"{csv}: cannot read (Permission denied)", f"{log}: cannot read (Permission denied)"])


def test_a_config_json_asking_for_100000_layers_is_refused_before_a_model_is_built():
    """`replay` on a damaged HF checkpoint-N/ hung while the model was built on the meta device
    to order the parameters."""
    pytest.importorskip("torch")
    from logdoctor.replay import ReplayError
    from logdoctor.replay.hf import build_from_config, parameter_order, too_many_repeats

    damaged = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 100_000, "n_embd": 16, "n_head": 2}
    assert too_many_repeats(damaged) == "n_layer = 100000"
    assert too_many_repeats({"text_config": {"num_hidden_layers": 32}, "vision_config": {"depths": [2, 2, 50_000, 2]}}) == "vision_config.depths = 50000"
    assert too_many_repeats({"num_hidden_layers": 80, "num_local_experts": 256, "vocab_size": 250_000}) is None
    pytest.importorskip("transformers")
    with pytest.raises(ReplayError, match="asks for n_layer = 100000, more than the 1,024 repeated modules"):
        build_from_config(damaged, "checkpoint-1")
    assert parameter_order(damaged) is None


def test_a_loss_near_the_float_maximum_is_drawn(tmp_path):
    """Bucket means past 1e308 overflowed the sparkline's scaling: an OverflowError traceback."""
    from typer.testing import CliRunner

    from logdoctor.cli import app

    rows = [f"{i},{1.7e308 * (0.5 + (i % 3) / 3)},{1e308 - i * 1e306}" for i in range(30)]
    (tmp_path / "history.csv").write_text("epoch,loss,val_loss\n" + "\n".join(rows) + "\n")
    result = CliRunner().invoke(app, ["analyze", str(tmp_path)], env={"NO_COLOR": "1"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "1 run:" in result.output
