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

SCHEMAS = Path(__file__).resolve().parent.parent / "logdoctor" / "schemas"


def validate(doc: dict, name: str = "report") -> None:
    """`doc` against the JSON Schema the package publishes (every JSON output is checked here)."""
    import jsonschema

    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)


def check_contract(doc: dict) -> None:
    """The schema, plus what a schema cannot say: status follows the findings, runs worst first,
    the summary counts every run."""
    validate(doc)
    assert doc["schema"] == SCHEMA
    rank = {"critical": 0, "warning": 1, "not checked": 2, "healthy": 3}
    assert [rank[r["verdict"]] for r in doc["runs"]] == sorted(rank[r["verdict"]] for r in doc["runs"])
    for run in doc["runs"]:
        assert run["learning"]["learned"] in (True, False, None) and isinstance(run["learning"]["reason"], str)
        if run["learning"]["learned"] is False:
            assert run["status"] != "healthy"
        severities = {f["severity"] for f in run["findings"]}
        expected = "critical" if "critical" in severities else "warning" if "warning" in severities else "healthy"
        assert run["status"] == expected
        assert run["verdict"] in (expected, "not checked")
        assert not any(fix.startswith("Confirm with replay") for f in run["findings"] for fix in f["fixes"])
    assert sum(doc["summary"]["by_verdict"].values()) == doc["summary"]["runs"] >= len(doc["runs"])


def test_rendered_document_follows_the_schema_worst_first_with_a_summary():
    d = mixed()
    d.runs.append(evil())
    doc = json.loads(render_json(d))
    check_contract(doc)
    assert [r["status"] for r in doc["runs"]] == ["critical", "critical", "critical", "warning", "warning", "healthy"]
    assert EVIL in [r["run"] for r in doc["runs"]]  # strings are data in JSON: kept verbatim, escaped by json only
    assert doc["summary"]["by_verdict"] == {"critical": 3, "warning": 2, "healthy": 1}
    assert doc["summary"]["by_code"]["diverge"] >= 1
    flat = next(f for r in doc["runs"] for f in r["findings"] if f["code"] == "flat")
    assert flat["probe"] == "update_ratio" and flat["docs"] == "logdoctor explain flat"


def test_quiet_lists_only_problem_runs_and_still_counts_all():
    doc = json.loads(render_json(mixed(), quiet=True))
    check_contract(doc)
    assert "healthy" not in {r["verdict"] for r in doc["runs"]} and doc["summary"]["runs"] == 5


def test_nonfinite_evidence_is_still_valid_json():
    text = render_json(Diagnosis("runs/", [diverging()]))

    def reject(token):
        raise AssertionError(f"bare {token} in the JSON")

    ev = json.loads(text, parse_constant=reject)["runs"][0]["findings"][0]["evidence"]
    assert ev["loss_end"] == "inf"


def test_extra_sections_are_added_at_top_level():
    audit = {"run_count": 5, "by_status": {}, "by_code": {}, "best": None, "links": [], "table": [], "errors": [], "stats": {}}
    doc = json.loads(render_json(mixed(), {"audit": audit}))
    assert doc["audit"] == audit
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
    status = {r["run"]: r["status"] for r in doc["runs"]}
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
    doc = json.loads(result.stdout)  # still one document: no runs, and why in `skipped`
    check_contract(doc)
    assert doc["runs"] == [] and len(doc["skipped"]) == 1 and "missing" in doc["skipped"][0]
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
        "pl_clip_charlm_sgd/lightning_logs/version_0",
        "pl_clip_charlm_sgd",
        "wb_flat_loss_rewrap/wandb/offline-run-20261122_031656-k6izagjo/run-k6izagjo.wandb",
        "csv_healthy_amp_charlm/log.csv",
    ],
)
def test_a_run_given_as_path_is_named_after_its_folder_never_dot(run_file):
    """One run, one name: the folder a person named, whichever file or writer folder PATH points at."""
    result = CliRunner().invoke(app, ["analyze", str(SAMPLES / run_file), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    assert [r["run"] for r in json.loads(result.stdout)["runs"]] == [run_file.split("/")[0]]


def test_the_same_name_in_every_format_and_command(tmp_path):
    run = SAMPLES / "pl_flat_frozen_head_swap"
    invoke = lambda *a: CliRunner().invoke(app, [*a], env={"COLUMNS": "80", "NO_COLOR": "1"})  # noqa: E731
    assert json.loads(invoke("analyze", str(run), "-f", "json").stdout)["runs"][0]["run"] == "pl_flat_frozen_head_swap"
    assert json.loads(invoke("inspect", str(run), "-f", "json").stdout)["runs"][0]["run"] == "pl_flat_frozen_head_swap"
    assert invoke("analyze", str(run)).stdout.startswith("✖ CRITICAL  pl_flat_frozen_head_swap  [lightning]")
    invoke("analyze", str(run), "-o", str(tmp_path / "r.md"), "--no-plots")
    assert "CRITICAL · pl\\_flat\\_frozen\\_head\\_swap\n" in (tmp_path / "r.md").read_text()
    invoke("analyze", str(run), "-o", str(tmp_path / "r.html"), "--no-plots")
    assert "pl_flat_frozen_head_swap</" in (tmp_path / "r.html").read_text()


def test_a_file_given_as_path_is_named_after_the_folder_a_person_named():
    from logdoctor.naming import root_label

    assert root_label("/x/run7/checkpoint-500") == "run7"
    assert root_label("/x/run7/lightning_logs/version_0/checkpoints/epoch=3-step=100.ckpt") == "run7"
    assert root_label("/x/run7/wandb/offline-run-20261122_031656-k6izagjo/run-k6izagjo.wandb") == "run7"
    assert root_label("/x/sweep/lr0.1_seed2.log") == "lr0.1_seed2" and root_label("/x/exp3/nohup.out") == "exp3"
