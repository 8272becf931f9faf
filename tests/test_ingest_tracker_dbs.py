"""MLflow's SQLite store (`mlflow.db`) and trackio's `<project>.db`, written by the real libraries.

Each database is written once per session (MLflow's migrations alone take seconds): an lr sweep of
three runs (one learns, one is stuck at its initial loss, one turns NaN) with a fourth run deleted,
an empty database, one whose run logged no number, a sweep of twelve for the audit's links, and the
same MLflow sweep taken back to the schema before MLflow's `workspace` migration with MLflow's own
alembic downgrade. Reading must never write the database, lock its writer out, or leave a file
beside it.
"""
from __future__ import annotations

import math
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from logdoctor.audit import audit
from logdoctor.diagnose import analyze
from logdoctor.ingest import load_runs, mlflow_sqlite, sqlite_db
from logdoctor.ingest import trackio as trackio_db
from logdoctor.naming import display_names

STEPS = 60
#: (run name, lr, what its loss does); the deleted run is logged, then deleted with the tool's own call.
SWEEP = [("lr-0.01", 0.01, "learns"), ("lr-1e-06", 1e-6, "stuck"), ("lr-3", 3.0, "nan")]
DELETED = ("lr-0.1", 0.1, "learns")
#: Twelve runs, six of them at an lr past the stability limit: the audit must link `lr` to diverge.
LINKED = [(f"lr-{lr:g}", lr, "nan" if lr >= 0.3 else "learns") for lr in (0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.3, 0.5, 1, 2, 3, 5)]


def loss(kind: str, step: int) -> float:
    """A training loss: falls to 0.2 with a small wiggle, stays at ln 10 (stuck), or falls, blows up from
    step 30 and is NaN from step 36."""
    wiggle = 0.01 * math.sin(1.7 * step)
    if kind == "stuck":
        return math.log(10) + 0.2 * wiggle
    if kind == "nan" and step >= 36:
        return float("nan")
    if kind == "nan" and step >= 30:
        return 0.6 * 10 ** (step - 29)
    return 2.1 * math.exp(-step / 12) + 0.2 + wiggle


# --- writers -------------------------------------------------------------------------------------

def _mlflow_client(db: Path):
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{db}")


def _mlflow_log(db: Path, runs, experiment="lr-sweep", finish=True) -> list[str]:
    from mlflow.entities import Metric, Param

    client = _mlflow_client(db)
    eid = client.create_experiment(experiment)
    ids = []
    for name, lr, kind in runs:
        run = client.create_run(eid, run_name=name)
        metrics = [Metric("train_loss", loss(kind, s), 1_800_000_000_000 + 1000 * s, s) for s in range(STEPS)]
        client.log_batch(run.info.run_id, metrics=metrics, params=[Param("lr", str(lr)), Param("optimizer", "adam")])
        if finish:
            client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
    return ids


def _trackio_log(project: str, runs) -> None:
    import trackio

    for name, lr, kind in runs:
        trackio.init(project=project, name=name, config={"lr": lr, "optimizer": "adam"})
        for s in range(STEPS):
            trackio.log({"train/loss": loss(kind, s)}, step=s)
        trackio.finish()


@pytest.fixture(scope="session")
def dbs(tmp_path_factory):
    """Every database of this module, written by MLflow and trackio: {name: path}."""
    pytest.importorskip("mlflow")
    base = tmp_path_factory.mktemp("tracker_dbs")
    trackio_dir = base / "trackio"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKIO_DIR", str(trackio_dir))  # read once, when trackio is imported
        trackio = pytest.importorskip("trackio")
        import trackio.utils

        assert trackio.utils.TRACKIO_DIR == trackio_dir, "trackio was imported before this fixture set its folder"
        out = {"mlflow_empty": base / "empty" / "mlflow.db"}
        out["mlflow_empty"].parent.mkdir()
        _mlflow_client(out["mlflow_empty"]).search_experiments()  # creates the tables, no run
        for name in ("mlflow_sweep", "mlflow_linked", "mlflow_old", "mlflow_unlogged"):
            out[name] = base / name / "mlflow.db"
            out[name].parent.mkdir()
            shutil.copy(out["mlflow_empty"], out[name])
        deleted = _mlflow_log(out["mlflow_sweep"], [*SWEEP, DELETED])[-1]
        _mlflow_client(out["mlflow_sweep"]).delete_run(deleted)
        _mlflow_log(out["mlflow_linked"], LINKED)
        client = _mlflow_client(out["mlflow_unlogged"])
        client.log_param(client.create_run(client.create_experiment("crashed")).info.run_id, "lr", "0.1")
        shutil.copy(out["mlflow_sweep"], out["mlflow_old"])
        _downgrade(out["mlflow_old"], "c8d9e0f1a2b3")  # the schema before `workspace` (MLflow 3.7-3.8)

        _trackio_log("sweep", [*SWEEP, DELETED])
        next(r for r in trackio.Api().runs("sweep") if r.name == DELETED[0]).delete()
        _trackio_log("linked", LINKED)
        import trackio.sqlite_storage

        trackio.sqlite_storage.SQLiteStorage.init_db("empty")  # what a project holds before its first run
        trackio.init(project="unlogged", name="crashed", config={"lr": 0.1})
        trackio.log({"status": "starting"})  # text only: no curve
        trackio.finish()
        for project in ("sweep", "linked", "empty", "unlogged"):
            out[f"trackio_{project}"] = trackio_dir / f"{project}.db"
    return out


def _downgrade(db: Path, revision: str) -> None:
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config
    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    config = _get_alembic_config(f"sqlite:///{db}")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
    engine.dispose()


def _alone(db: Path, tmp_path: Path) -> Path:
    """A folder holding only a copy of `db` (trackio keeps all projects in one folder)."""
    folder = tmp_path / db.stem
    folder.mkdir()
    shutil.copy(db, folder / db.name)
    return folder


# --- what is read --------------------------------------------------------------------------------

@pytest.mark.parametrize("store", ["mlflow_sweep", "mlflow_old", "trackio_sweep"])
def test_sweep_runs_named_as_the_tool_names_them_with_settings_and_verdicts(dbs, store, tmp_path):
    folder = _alone(dbs[store], tmp_path)
    before = sorted(os.listdir(folder))
    diagnosis = analyze(folder)
    assert diagnosis.errors == []
    by_name = {r.run.name.split("/")[-1]: r for r in diagnosis.runs}
    assert set(by_name) == {name for name, _, _ in SWEEP}  # the deleted run is left out
    for name, lr, _ in SWEEP:
        assert by_name[name].run.config == {"lr": lr, "optimizer": "adam"}
        assert by_name[name].run.scalars.height == STEPS
    codes = {name: [f.code for f in r.findings if f.severity != "info"][:1] for name, r in by_name.items()}
    assert codes == {"lr-0.01": [], "lr-1e-06": ["flat"], "lr-3": ["diverge"]}
    assert sorted(os.listdir(folder)) == before  # nothing written beside the database


def test_mlflow_runs_are_named_within_their_experiment(dbs):
    runs, errors = load_runs(dbs["mlflow_sweep"].parent)
    assert errors == []
    assert sorted(r.name for r in runs) == sorted(f"mlflow.db/lr-sweep/{name}" for name, _, _ in SWEEP)
    assert {r.format for r in runs} == {"mlflow_sqlite"}


def test_reports_name_runs_by_project_and_experiment_not_by_database_file(dbs, tmp_path):
    for project in ("sweep", "copy"):  # trackio: two projects with the same run names
        shutil.copy(dbs["trackio_sweep"], tmp_path / f"{project}.db")
    runs, _ = load_runs(tmp_path)
    assert set(display_names([r.name for r in runs], str(tmp_path))) == {f"{p}/{name}" for p in ("sweep", "copy") for name, _, _ in SWEEP}
    runs, _ = load_runs(dbs["mlflow_sweep"].parent)  # the file name mlflow.db names nothing, the experiment only on a clash
    assert set(display_names([r.name for r in runs], str(dbs["mlflow_sweep"].parent))) == {name for name, _, _ in SWEEP}


@pytest.mark.parametrize("store, reader", [("mlflow_sweep", mlflow_sqlite), ("trackio_sweep", trackio_db)])
def test_a_table_read_in_batches_reads_the_same(dbs, store, reader, monkeypatch):
    whole, _ = load_runs(dbs[store])
    monkeypatch.setattr(reader, "_BATCH", 7)  # 60 steps a run: batches that end mid-run
    batched, _ = load_runs(dbs[store])
    assert [r.name for r in batched] == [r.name for r in whole] and len(whole) == len(SWEEP)
    for one, other in zip(batched, whole):
        assert_frame_equal(one.scalars, other.scalars)  # NaN equal to NaN


@pytest.mark.parametrize(
    "store, line",
    [
        ("mlflow_empty", "MLflow database holds no runs"),
        ("trackio_empty", "trackio database holds no runs"),
        ("mlflow_unlogged", "MLflow run 'crashed/"),  # a run that logged its params, then nothing
        ("trackio_unlogged", "trackio run 'crashed' has no numeric metric values"),
    ],
)
def test_a_database_without_metric_values_is_one_line(dbs, store, line, tmp_path):
    runs, errors = load_runs(_alone(dbs[store], tmp_path))
    assert runs == [] and len(errors) == 1 and line in errors[0]


@pytest.mark.parametrize("store", ["mlflow_linked", "trackio_linked"])
def test_audit_over_a_database_links_its_params(dbs, store, tmp_path):
    report = audit(_alone(dbs[store], tmp_path), jobs=1, use_cache=False)
    assert report.errors == [] and len(report.results) == len(LINKED)
    link = next(link for link in report.links if link.codes == ["diverge"])
    assert (link.param, link.condition, link.failing, link.total, link.failing_out) == ("lr", ">= 0.3", 6, 6, 0)


# --- a database in use or broken -----------------------------------------------------------------

def test_mlflow_database_written_while_read(dbs, tmp_path):
    """A real MLflow writer logs step after step while the database is read over and over: every read
    sees a prefix of the run, the writer never meets a lock, the last read sees it all."""
    db = _alone(dbs["mlflow_sweep"], tmp_path) / "mlflow.db"
    client = _mlflow_client(db)
    run = client.create_run(client.get_experiment_by_name("lr-sweep").experiment_id, run_name="live")
    client.log_metric(run.info.run_id, "train_loss", loss("learns", 0), step=0)
    failures: list[BaseException] = []

    def write():
        try:
            for s in range(1, STEPS):
                client.log_metric(run.info.run_id, "train_loss", loss("learns", s), step=s)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    seen = []
    while writer.is_alive():
        runs, errors = load_runs(db)
        assert errors == []
        live = [r for r in runs if r.name.endswith("/live")]
        steps = live[0].scalars.get_column("step").to_list() if live else []
        assert steps == list(range(len(steps)))
        seen.append(len(steps))
    writer.join()
    assert failures == []
    assert seen == sorted(seen) and len(seen) > 1
    runs, _ = load_runs(db)
    live = next(r for r in runs if r.name.endswith("/live"))
    assert live.scalars.height == STEPS and "MLflow run status RUNNING" in live.notes


def _wait_for_rows(db: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = sqlite_db.open_readonly(db)
            try:
                if conn.execute("SELECT count(*) FROM metrics").fetchone()[0]:
                    return
            finally:
                conn.close()
        except sqlite3.Error:  # not created yet
            pass
        assert time.monotonic() < deadline, "trackio wrote no metric in 30 s"
        time.sleep(0.05)


def test_trackio_database_written_while_read(dbs, tmp_path):
    """A trackio run still open (its WAL beside the database) reads as far as it has been written;
    reading leaves the WAL to trackio and, once the run is finished, no file at all."""
    import trackio

    db = dbs["trackio_sweep"].with_name("live.db")
    trackio.init(project="live", name="live", config={"lr": 0.01})
    for s in range(STEPS):
        trackio.log({"train/loss": loss("learns", s)}, step=s)
        if s == STEPS // 2:
            _wait_for_rows(db)  # trackio writes from a thread of its own, in batches
            runs, errors = load_runs(db)
            assert errors == []
            steps = runs[0].scalars.get_column("step").to_list()
            assert steps == list(range(len(steps)))
    trackio.finish()
    files = sorted(os.listdir(db.parent))
    runs, errors = load_runs(db)
    assert errors == [] and sorted(os.listdir(db.parent)) == files
    assert [(r.name, r.scalars.height, r.config) for r in runs] == [("live", STEPS, {"lr": 0.01})]


@pytest.mark.parametrize("locked", ["mlflow.db", "sweep.db"])
def test_locked_database_is_one_line_and_the_other_runs_are_read(dbs, locked, tmp_path, monkeypatch):
    folder = _alone(dbs["mlflow_sweep"], tmp_path)
    shutil.copy(dbs["trackio_sweep"], folder / "sweep.db")
    sqlite3.connect(folder / "sweep.db").execute("PRAGMA journal_mode = DELETE").close()  # as trackio on a Space
    monkeypatch.setattr(sqlite_db, "BUSY_TIMEOUT_S", 0.2)
    writer = sqlite3.connect(folder / locked, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # what a writer holds while it commits
    try:
        runs, errors = load_runs(folder)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert len(errors) == 1 and errors[0].startswith(f"{folder / locked}: SQLite database locked by another process")
    other = "sweep.db" if locked == "mlflow.db" else "mlflow.db/lr-sweep"
    assert sorted(r.name for r in runs) == sorted(f"{other}/{name}" for name, _, _ in SWEEP)


def test_damaged_database_is_one_line_and_the_other_runs_are_read(dbs, tmp_path):
    folder = tmp_path / "both"
    folder.mkdir()
    data = dbs["mlflow_sweep"].read_bytes()
    (folder / "mlflow.db").write_bytes(data[: len(data) // 3])  # cut short by a full disk or a copy
    shutil.copy(dbs["trackio_sweep"], folder / "sweep.db")
    runs, errors = load_runs(folder)
    assert len(errors) == 1 and errors[0].startswith(f"{folder / 'mlflow.db'}: SQLite database damaged")
    assert sorted(r.name for r in runs) == sorted(f"sweep.db/{name}" for name, _, _ in SWEEP)
