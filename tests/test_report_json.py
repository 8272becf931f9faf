"""JSON report: exactly the logdoctor.report/v1 contract of DESIGN.md, stdout clean, exit codes for CI."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from _report_fixtures import EVIL, diverging, evil, mixed
from logdoctor.cli import FailOn, app, exit_code
from logdoctor.model import Diagnosis
from logdoctor.report.json_report import SCHEMA, render_json

TOP_KEYS = {"schema", "tool", "runs"}
RUN_KEYS = {"run", "path", "format", "roles", "status", "findings", "warnings"}
FINDING_KEYS = {"code", "severity", "confidence", "title", "metric", "steps", "evidence", "causes", "fixes"}


def check_contract(doc: dict) -> None:
    assert set(doc) >= TOP_KEYS and doc["schema"] == SCHEMA
    assert doc["tool"]["name"] == "logdoctor" and isinstance(doc["tool"]["version"], str)
    for run in doc["runs"]:
        assert set(run) == RUN_KEYS
        assert run["status"] in ("critical", "warning", "healthy")
        assert isinstance(run["roles"], dict) and all(isinstance(v, str) for v in run["roles"].values())
        assert all(isinstance(w, str) for w in run["warnings"])
        severities = {f["severity"] for f in run["findings"]}
        expected = "critical" if "critical" in severities else "warning" if "warning" in severities else "healthy"
        assert run["status"] == expected
        for f in run["findings"]:
            assert set(f) == FINDING_KEYS
            assert f["severity"] in ("critical", "warning", "info")
            assert 0 <= f["confidence"] <= 1
            assert f["steps"] is None or (len(f["steps"]) == 2 and all(isinstance(s, int) for s in f["steps"]))
            assert isinstance(f["evidence"], dict) and isinstance(f["causes"], list) and isinstance(f["fixes"], list)


def test_rendered_document_has_exactly_the_contract_keys():
    d = mixed()
    d.runs.append(evil())
    doc = json.loads(render_json(d))
    assert set(doc) == TOP_KEYS
    check_contract(doc)
    assert [r["status"] for r in doc["runs"]] == ["healthy", "critical", "critical", "warning", "warning", "critical"]
    assert doc["runs"][-1]["run"] == EVIL  # strings are data in JSON: kept verbatim, escaped by json only


def test_nonfinite_evidence_is_still_valid_json():
    text = render_json(Diagnosis("runs/", [diverging()]))

    def reject(token):
        raise AssertionError(f"bare {token} in the JSON")

    ev = json.loads(text, parse_constant=reject)["runs"][0]["findings"][0]["evidence"]
    assert ev["loss_end"] == "inf"


def test_extra_sections_are_added_at_top_level():
    doc = json.loads(render_json(mixed(), {"audit": {"counts": {"critical": 2}}}))
    assert doc["audit"] == {"counts": {"critical": 2}}
    check_contract(doc)


def _write_run(folder: Path, loss: np.ndarray) -> None:
    folder.mkdir(parents=True)
    rows = "".join(f"{s * 10},{v},0.01\n" for s, v in enumerate(loss))
    (folder / "metrics.csv").write_text("step,train_loss,lr\n" + rows)


@pytest.fixture
def runs(tmp_path) -> Path:
    steps = np.arange(200)
    good = 2.3 * np.exp(-steps / 40) + 0.1
    bad = good.copy()
    bad[120:] *= np.exp((steps[120:] - 120) / 5.0)
    bad[150:] = np.nan
    _write_run(tmp_path / "runs" / "good", good)
    _write_run(tmp_path / "runs" / "bad", bad)
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "metrics.csv").write_bytes(b"")
    return tmp_path / "runs"


def test_cli_json_stdout_is_one_clean_document(runs):
    result = CliRunner().invoke(app, ["analyze", str(runs), "--format", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)  # nothing but the document on stdout
    check_contract(doc)
    status = {r["run"].split("/")[0]: r["status"] for r in doc["runs"]}
    assert status == {"bad": "critical", "good": "healthy"}
    assert "broken" in result.stderr  # the unreadable file is named on stderr, not in the JSON stream


def test_fail_on_sets_the_exit_code(runs):
    invoke = lambda *a: CliRunner().invoke(app, ["analyze", str(runs), "-f", "json", *a])  # noqa: E731
    assert invoke("--fail-on", "critical").exit_code == 1
    assert invoke("--fail-on", "warning").exit_code == 1
    assert invoke("--fail-on", "never").exit_code == 0
    assert invoke().exit_code == 0
    good_only = CliRunner().invoke(app, ["analyze", str(runs / "good"), "-f", "json", "--fail-on", "warning"])
    assert good_only.exit_code == 0
    assert exit_code(["warning"], FailOn.critical) == 0 and exit_code(["warning"], FailOn.warning) == 1


def test_input_errors_exit_2_with_one_line(tmp_path):
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "missing"), "-f", "json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing" in lines[0] and "Traceback" not in result.stderr
    bad_format = CliRunner().invoke(app, ["analyze", str(tmp_path), "-f", "pdf"])
    assert bad_format.exit_code == 2


def test_a_report_into_a_missing_folder_fails_before_anything_is_read(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "metrics.csv").write_bytes(bytes(range(256)))  # would be a `skipped:` line
    out = tmp_path / "no" / "such" / "report.json"
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "logs"), "-f", "json", "-o", str(out)])
    assert result.exit_code == 2 and result.stderr == f"logdoctor: {out}: cannot write report (no folder {out.parent})\n"
    assert not out.parent.exists()


SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"


@pytest.mark.parametrize(
    "run_file",
    [
        "hf_diverge_bce_log0/trainer_state.json",
        "tbn_crawl_lr1000x_low/events.out.tfevents.1795317436.vm.29571.1",
        "pl_clip_charlm_sgd/lightning_logs/version_0/metrics.csv",
        "wb_flat_loss_rewrap/wandb/offline-run-20261122_031656-k6izagjo/run-k6izagjo.wandb",
        "csv_healthy_amp_charlm/log.csv",
    ],
)
def test_a_file_of_a_run_names_that_run_dot(run_file):
    """`run` is relative to PATH, '.' when PATH is the run itself, or any one file of it."""
    result = CliRunner().invoke(app, ["analyze", str(SAMPLES / run_file), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    assert [r["run"] for r in json.loads(result.stdout)["runs"]] == ["."]


def test_a_run_folder_is_dot_and_a_parent_folder_names_it_relatively():
    run = CliRunner().invoke(app, ["analyze", str(SAMPLES / "pl_clip_charlm_sgd"), "-f", "json"])
    assert [r["run"] for r in json.loads(run.stdout)["runs"]] == ["lightning_logs/version_0"]
    version = CliRunner().invoke(app, ["analyze", str(SAMPLES / "pl_clip_charlm_sgd/lightning_logs/version_0"), "-f", "json"])
    assert [r["run"] for r in json.loads(version.stdout)["runs"]] == ["."]
