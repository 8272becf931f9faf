"""`logdoctor audit` end to end on small real log folders: results, errors, cache, CLI, processes."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import logdoctor.ingest as ingest
from logdoctor.audit import audit
from logdoctor.audit import executor
from logdoctor.cli import app
from logdoctor.config import Config

LINK_KEYS = {"param", "condition", "failing", "total", "codes", "text"}
RUN_KEYS = {"run", "path", "format", "roles", "status", "verdict", "learning", "findings", "warnings"}


def write_run(folder: Path, lr: float, seed: int, steps: int = 400) -> None:
    """A Lightning CSVLogger-style run: exponential decay with noise; NaN from mid-run when lr >= 0.01."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hparams.yaml").write_text(yaml.safe_dump({"lr": lr, "seed": seed, "optimizer": {"name": "sgd"}}))
    loss = 2.3 * np.exp(-np.arange(steps) / 80) + 0.2 + rng.normal(0, 0.01, steps)
    if lr >= 0.01:
        start = 150 + 10 * seed
        loss[start:] = loss[start] * np.exp(np.arange(steps - start) / 5.0)
        loss[start + 40:] = np.nan
    lines = ["epoch,step,train_loss,val_loss"]
    for s in range(steps):
        lines.append(f"{s // 100},{s},{loss[s]},")
        if s % 50 == 49:
            lines.append(f"{s // 100},{s},,{loss[s] * 1.05}")
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")


def same(a, b) -> bool:
    """Equal results (NaN equal to NaN, as in the JSON they round-trip through)."""
    dump = lambda rs: json.dumps([r.to_dict() for r in rs], sort_keys=True)  # noqa: E731
    return dump(a) == dump(b)


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch) -> Path:
    """The user cache folder, inside the test's own folder (an audit caches there by default)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    for lr in (1e-3, 3e-3, 1e-2, 3e-2):
        for seed in range(4):
            write_run(root / f"lr{lr:g}_s{seed}" / "version_0", lr, seed)
    return root


@pytest.fixture
def count_reads(monkeypatch):
    calls: list[str] = []
    real = ingest.read_source

    def counted(source, root):
        calls.append(str(source.path))
        return real(source, root)

    monkeypatch.setattr(ingest, "read_source", counted)
    return calls


def test_audit_finds_failures_best_run_and_lr_link(sweep: Path):
    report = audit(sweep, jobs=1, use_cache=False)
    assert len(report.results) == 16 and report.errors == []
    diverged = {r.run for r in report.results if "diverge" in r.codes}
    assert diverged == {f"lr{lr:g}_s{s}/version_0" for lr in (1e-2, 3e-2) for s in range(4)}
    # ordered by severity: every critical run before any healthy one
    statuses = [r.status for r in report.results]
    assert statuses == sorted(statuses, key=["critical", "warning", "healthy"].index)
    best, metric = report.best
    assert metric == "val_loss_final" and best.params["lr"] < 0.01
    link = next(l for l in report.links if l.codes == ["diverge"])
    assert (link.param, link.condition, link.failing, link.total, link.failing_out, link.total_out) == ("lr", ">= 0.01", 8, 8, 0, 8)
    doc = report.to_json()
    assert doc["by_status"]["critical"] == 8 and doc["by_code"]["diverge"] == 8
    assert doc["best"]["run"] == best.run


def test_json_table_carries_each_runs_config_and_the_swept_settings(sweep: Path):
    doc = audit(sweep, jobs=1, use_cache=False).to_json()
    # the linked setting first, then the others that vary; optimizer.name is the same everywhere
    assert doc["swept"] == ["lr", "seed"]
    row = next(r for r in doc["table"] if r["run"] == "lr0.03_s2/version_0")
    assert row["config"] == {"lr": 0.03, "seed": 2, "optimizer.name": "sgd"}


def test_runs_with_the_same_standing_sort_in_natural_order(tmp_path: Path):
    for trial in range(1, 13):
        write_run(tmp_path / "sweep" / f"trial_{trial}", lr=1e-3 if trial % 2 else 3e-4, seed=0)
    names = [r.run for r in audit(tmp_path / "sweep", jobs=1, use_cache=False).results if not r.findings]
    assert len(names) == 12 and names == [f"trial_{t}" for t in range(1, 13)]


def test_swept_settings_leave_out_identifiers_and_constants():
    from logdoctor.audit.result import RunResult
    from logdoctor.audit.summary import swept_settings

    def result(i: int, **params) -> RunResult:
        return RunResult(run=f"r{i}", path=f"r{i}", format="csv", roles={}, status="healthy", findings=[], params=params)

    runs = [result(i, output_dir=f"out/r{i}", optimizer="adam", batch_size=32 * (1 + i % 2), warmup=i % 3 == 0)
            for i in range(6)]
    runs.append(result(6, lr=0.1))  # a key one run sets varies nothing
    assert swept_settings(runs) == ["batch_size", "warmup"]
    assert swept_settings(runs, linked=["warmup"]) == ["warmup", "batch_size"]


def test_one_bad_run_never_stops_the_audit(sweep: Path, monkeypatch):
    (sweep / "broken").mkdir()
    (sweep / "broken" / "metrics.csv").write_bytes(b"\x00\x01\x02 not a csv")
    real = ingest._module

    class Exploding:
        def __getattr__(self, name):
            return getattr(real("csv_table"), name)

        @staticmethod
        def read(source):
            if "lr0.001_s0" in str(source.path):
                raise RuntimeError("reader bug")
            return real("csv_table").read(source)

    monkeypatch.setattr(ingest, "_module", lambda name: Exploding() if name == "csv_table" else real(name))
    report = audit(sweep, jobs=1, use_cache=False)
    assert len(report.results) == 15
    assert len(report.errors) == 2
    assert any("broken" in e and "metrics.csv" in e for e in report.errors)
    assert any("lr0.001_s0" in e and "RuntimeError: reader bug" in e for e in report.errors)
    assert report.by_status["error"] == 2


def test_reaudit_reads_only_changed_runs(sweep: Path, tmp_path: Path, count_reads):
    cache = tmp_path / "cache"
    first = audit(sweep, jobs=1, cache_dir=cache)
    assert len(count_reads) == 16 and first.stats["cached"] == 0
    count_reads.clear()
    again = audit(sweep, jobs=1, cache_dir=cache)
    assert count_reads == [] and again.stats["cached"] == 16
    assert same(again.results, first.results)
    # change three runs (content and mtime), add one
    changed = [sweep / f"lr0.001_s{s}" / "version_0" for s in range(3)]
    for folder in changed:
        write_run(folder, 0.05, seed=9)
        os.utime(folder / "metrics.csv", ns=(1, 2))
    write_run(sweep / "new" / "version_0", 1e-3, 5)
    count_reads.clear()
    third = audit(sweep, jobs=1, cache_dir=cache)
    assert sorted(count_reads) == sorted(str(f) for f in changed + [sweep / "new" / "version_0"])
    assert third.stats == {**third.stats, "cached": 16 - 3, "read": 4}
    assert {r.run for r in third.results if "diverge" in r.codes} >= {f"lr0.001_s{s}/version_0" for s in range(3)}
    # other rule settings: nothing from the cache; --no-cache: neither read nor written
    count_reads.clear()
    audit(sweep, Config(ignore=["spike"]), jobs=1, cache_dir=cache)
    assert len(count_reads) == 17
    count_reads.clear()
    audit(sweep, jobs=1, use_cache=False)
    assert len(count_reads) == 17


def test_damaged_cache_entries_are_misses(sweep: Path, tmp_path: Path, count_reads):
    cache = tmp_path / "cache"
    audit(sweep, jobs=1, cache_dir=cache)
    entries = sorted(cache.rglob("*.json"))
    assert len(entries) == 16
    entries[0].write_text("{not json")
    entries[1].write_text(json.dumps({"ident": "x", "key": "y", "results": [], "errors": []}))
    count_reads.clear()
    report = audit(sweep, jobs=1, cache_dir=cache)
    assert len(count_reads) == 2 and len(report.results) == 16


def test_default_cache_lives_in_the_user_cache_not_the_sweep(sweep: Path, user_cache: Path):
    before = sorted(sweep.rglob("*"))
    audit(sweep, jobs=1)
    assert sorted(sweep.rglob("*")) == before  # `git status` in the sweep stays clean
    entries = list((user_cache / "logdoctor" / "audit").rglob("*.json"))
    assert len(entries) == 16
    assert audit(sweep, jobs=1).stats["cached"] == 16
    # one folder per audited path: auditing part of the sweep keeps its own
    assert audit(sweep / "lr0.001_s0", jobs=1).stats["cached"] == 0
    assert len(list((user_cache / "logdoctor" / "audit").iterdir())) == 2


def test_process_pool_gives_the_same_report(sweep: Path, monkeypatch):
    monkeypatch.setattr(executor, "POOL_MIN_BYTES", 0)
    serial = audit(sweep, jobs=1, use_cache=False)
    pooled = audit(sweep, jobs=2, use_cache=False)
    assert same(pooled.results, serial.results)
    assert [l.to_json() for l in pooled.links] == [l.to_json() for l in serial.links]


def test_the_pool_starts_while_the_plan_is_still_walking(monkeypatch):
    """Tasks reach the workers as the walk finds them: the pool starts once the runs seen hold
    POOL_MIN_BYTES to read, not after the whole tree was walked; a plan below it runs here."""
    from logdoctor.audit.tasks import Task

    walked = []

    def plan(n, size):
        for i in range(n):
            walked.append(i)
            yield Task(root="r", unit=f"u{i}", size=size)

    started_after = []

    def pool(tasks, config, jobs, on_done):
        started_after.append(len(walked))
        return len(list(tasks))

    monkeypatch.setattr(executor, "run_processes", pool)
    assert executor.execute(plan(100, executor.POOL_MIN_BYTES // 2), Config(), lambda t, o: None, jobs=2) == "2 processes"
    assert started_after == [2] and len(walked) == 100  # started at the second run, then fed the other 98
    walked.clear()
    monkeypatch.setattr(executor, "run_serial", lambda tasks, config, on_done: started_after.append(len(list(tasks))))
    assert executor.execute(plan(5, 10), Config(), lambda t, o: None, jobs=2) == "this process"
    assert started_after[-1] == 5


def test_scikit_learn_is_imported_in_the_background_once_an_audit_reads_enough_runs(sweep: Path, monkeypatch):
    from logdoctor.audit import sweep as sweep_module

    started = []
    monkeypatch.setattr(sweep_module, "warm_up", lambda: started.append(True))
    monkeypatch.setattr(sweep_module, "WARM_RUNS", 5)
    audit(sweep, jobs=1, use_cache=False)
    assert started == [True]  # once, at the fifth run read
    started.clear()
    monkeypatch.setattr(sweep_module, "WARM_RUNS", 10_000)
    audit(sweep, jobs=1, use_cache=False)
    assert started == []  # a smaller audit does not pay for the import up front


def test_batches_grow_from_single_tasks_to_max_batch_and_keep_the_order():
    tasks = list(range(3000))
    got = list(executor.batches(iter(tasks), 2))
    assert [t for b in got for t in b] == tasks
    assert [len(b) for b in got[:16]] == [1] * 16  # a small audit is spread task by task
    assert max(len(b) for b in got) == executor.MAX_BATCH and len(got) < len(tasks) / 15


def test_cli_json_contract_and_fail_on(sweep: Path):
    runner = CliRunner()
    result = runner.invoke(app, ["audit", str(sweep), "--format", "json", "--no-cache", "-j", "1"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "logdoctor.report/v1" and len(doc["runs"]) == 16
    assert doc["audit"]["run_count"] == 16
    assert all(set(run) == RUN_KEYS for run in doc["runs"])
    audit_doc = doc["audit"]
    assert audit_doc["by_status"] == {"critical": 8, "warning": audit_doc["by_status"]["warning"],
                                      "healthy": 8 - audit_doc["by_status"]["warning"], "error": 0}
    assert audit_doc["links"] and all(set(l) == LINK_KEYS for l in audit_doc["links"])
    lr = next(l for l in audit_doc["links"] if l["codes"] == ["diverge"])
    assert lr["text"].startswith("diverge in 8/8 runs with lr >= 0.01, 0/8 below")
    failing = runner.invoke(app, ["audit", str(sweep), "--fail-on", "critical", "-q", "-j", "1"])
    assert failing.exit_code == 1


@pytest.mark.parametrize("fmt", ["terminal", "md", "html"])
def test_cli_human_formats_show_summary_and_link(sweep: Path, tmp_path: Path, fmt: str):
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(app, ["audit", str(sweep), "-f", fmt, "-o", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    for needle in ("Hyperparameter links", "diverge in 8/8 runs with lr", "Best healthy run", "lr0.03_s3"):
        assert needle in text, needle


@pytest.mark.parametrize("width", [80, 120])
def test_terminal_run_table_is_one_line_per_run(sweep: Path, width: int):
    import io

    from rich.console import Console

    from logdoctor.audit.render import runs_table

    report = audit(sweep, jobs=1, use_cache=False)
    console = Console(file=io.StringIO(), width=width, no_color=True)
    console.print(runs_table(report, width=width))
    lines = console.file.getvalue().splitlines()
    assert len(lines) == 1 + len(report.results) + 1  # header, one row per run, caption
    assert all(len(line) <= width for line in lines)
    assert all("…" not in line.split()[-1] for line in lines[1:-1])  # numbers are never cut
    # the swept settings get columns while the run names keep their room
    assert {"lr", "seed"} <= set(lines[0].split())


def test_cli_terminal_details_adds_the_run_blocks(sweep: Path, tmp_path: Path):
    out = tmp_path / "details.txt"
    plain = tmp_path / "plain.txt"
    for extra, target in ((["--details"], out), ([], plain)):
        result = CliRunner().invoke(app, ["audit", str(sweep), "-o", str(target), "-j", "1", "-q", *extra])
        assert result.exit_code == 0, result.output
    assert "first nonfinite step" not in plain.read_text().replace("_", " ")
    details = out.read_text()
    assert "Hyperparameter links" in details and "fix" in details and "lr0.03_s3" in details


def test_cli_input_errors_are_one_line(tmp_path: Path, monkeypatch):
    runner = CliRunner()
    missing = runner.invoke(app, ["audit", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    url = runner.invoke(app, ["audit", "memory://no/such/sweep"])
    assert url.exit_code == 2 and url.stderr.startswith("logdoctor: memory://no/such/sweep: ") and "no such file" in url.stderr
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)
    (tmp_path / "x").mkdir()
    no_dask = runner.invoke(app, ["audit", str(tmp_path / "x"), "--scheduler", "tcp://127.0.0.1:8786"])
    assert no_dask.exit_code == 2 and "pip install 'logdoctor[dask]'" in no_dask.stderr


def test_fsspec_url_planning(sweep: Path, tmp_path: Path):
    """A URL is listed once: one task per top-level folder, loose top files as one more, a run root as one."""
    fsspec = pytest.importorskip("fsspec")
    from logdoctor.audit.tasks import plan_remote

    fs = fsspec.filesystem("memory")
    for f in sweep.rglob("*"):
        if f.is_file():
            fs.pipe(f"/plan/sweep/{f.relative_to(sweep).as_posix()}", f.read_bytes())
    fs.pipe("/plan/sweep/loose.csv", b"step,loss\n1,2.0\n2,1.5\n3,1.2\n")
    fs.pipe("/plan/sweep/.hidden/x.csv", b"step,loss\n1,2\n")
    tasks = plan_remote("memory://plan/sweep")
    assert len(tasks) == 17 and sum(t.flat for t in tasks) == 1
    report = audit("memory://plan/sweep", jobs=1, use_cache=False)
    assert len(report.results) == 17 and report.errors == []
    assert "memory://plan/sweep/loose.csv" in {r.path for r in report.results}
    # a URL that is itself one run (its anchor file at the top) is one task
    run = "memory://plan/sweep/lr0.03_s0/version_0"
    assert len(plan_remote(run)) == 1
    assert [r.run for r in audit(run, jobs=1, use_cache=False).results] == ["."]


def test_audit_with_no_run_read_exits_2_like_analyze(tmp_path: Path):
    """An empty or misspelt folder, or one whose every run is unreadable, is an input error, whatever
    --fail-on says; the unreadable files are still named."""
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(app, ["audit", str(tmp_path / "empty"), "--fail-on", "warning", "--no-cache"])
    assert empty.exit_code == 2 and empty.stderr.strip() == f"logdoctor: {tmp_path / 'empty'}: no training log found"
    garbage = tmp_path / "garbage" / "run0"
    garbage.mkdir(parents=True)
    (garbage / "metrics.csv").write_bytes(bytes(range(256)) * 8)
    unreadable = runner.invoke(app, ["audit", str(tmp_path / "garbage"), "--fail-on", "critical", "--no-cache"])
    assert unreadable.exit_code == 2, unreadable.output
    assert "skipped:" in unreadable.stderr and "metrics.csv" in unreadable.stderr
    assert unreadable.stderr.strip().splitlines()[-1].endswith("no usable training log")


def test_one_readable_run_beside_an_unreadable_one_is_audited(tmp_path: Path):
    """Near miss: one good run is enough to audit; the unreadable one is listed in the report."""
    write_run(tmp_path / "sweep" / "good" / "version_0", 1e-3, 0)
    bad = tmp_path / "sweep" / "bad"
    bad.mkdir()
    (bad / "metrics.csv").write_bytes(bytes(range(256)) * 8)
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "sweep"), "--fail-on", "critical", "--no-cache", "-j", "1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 unreadable" in result.stdout and "Unreadable runs" in result.stdout


@pytest.mark.parametrize("fmt", ["terminal", "json", "md", "html"])
def test_report_to_a_missing_folder_is_one_line(sweep: Path, tmp_path: Path, fmt: str):
    out = tmp_path / "no" / "such" / "report.txt"
    result = CliRunner().invoke(app, ["audit", str(sweep), "-f", fmt, "-o", str(out), "-j", "1", "--no-cache"])
    assert result.exit_code == 2 and result.stderr.strip().count("\n") == 0
    assert "cannot write report" in result.stderr and not out.parent.exists()
