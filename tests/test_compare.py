"""`logdoctor compare RUN BASELINE…`: did my change make training worse?

Proof on real trainings (tests/_compare_runs.py: a digits MLP trained on CPU at test time):
a run at a tenth of its baseline's learning rate is behind from where it departs and fails
`--fail-on regression`; a run against a copy of itself, the same training written by
another logger, and seeds of one recipe are level and pass.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from logdoctor.cli import app
from logdoctor.compare import AHEAD, BEHIND, LEVEL, compare
from logdoctor.compare.align import on_run_steps
from logdoctor.compare.band import counting_noise
from logdoctor.ingest import load_runs
from logdoctor.model import Series
from logdoctor.report.github import command
from logdoctor.view import RunView

from _compare_runs import write_runs

SCHEMAS = Path(__file__).resolve().parent.parent / "logdoctor" / "schemas"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
PLAIN = {"COLUMNS": "80", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    return write_runs(tmp_path_factory.mktemp("compare"))


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env=PLAIN)


def verdicts(cmp) -> dict[str, str]:
    return {m.role: m.verdict for m in cmp.metrics}


def validate(doc: dict) -> None:
    import jsonschema
    from referencing import Registry, Resource

    schemas = [json.loads((SCHEMAS / f"{name}.schema.json").read_text()) for name in ("report", "compare")]
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas])
    jsonschema.Draft202012Validator.check_schema(schemas[1])
    jsonschema.Draft202012Validator(schemas[1], registry=registry).validate(doc)


# ---------------------------------------------------------------- the verdicts on real trainings


def test_a_tenth_of_the_learning_rate_is_behind_from_where_it_departs(runs):
    cmp = compare(runs["lr_tenth"], [runs["base"]])
    by_role = {m.role: m for m in cmp.metrics}
    assert verdicts(cmp) == {"val_loss": BEHIND, "train_loss": BEHIND, "val_acc": BEHIND}
    assert cmp.regression and [m.role for m in cmp.gates] == ["val_loss", "val_acc"]
    # it departs at once (the first evaluation) and, read off the logged points, stays worse from there
    val = by_role["val_loss"]
    assert val.departs == val.steps[0] == 19
    mine = RunView(cmp.run.run).series("val_loss")
    theirs = RunView(cmp.baselines[0].run).series("val_loss")
    after = mine.steps >= val.departs
    assert np.all(mine.values[after] > np.interp(mine.steps[after], theirs.steps, theirs.values))
    assert by_role["train_loss"].departs <= 0.05 * by_role["train_loss"].steps[1]
    # by how much: far beyond the band at the end and at each side's best
    assert val.end.change > 10 * val.tolerance and val.best.run > val.best.baseline
    assert by_role["val_acc"].end.change < 0 and by_role["val_acc"].higher_is_better
    assert [(d.key, d.run, d.baselines) for d in cmp.settings] == [("lr", 1e-4, (1e-3,))]


def test_fail_on_regression_exits_1_for_the_slower_run_and_0_without_the_flag(runs):
    failing = invoke("compare", runs["lr_tenth"], runs["base"], "--fail-on", "regression")
    assert failing.exit_code == 1, failing.output
    assert "REGRESSION" in failing.stdout and "val loss    ▼ behind from step 19" in failing.stdout
    assert invoke("compare", runs["lr_tenth"], runs["base"]).exit_code == 0


def test_a_run_against_a_copy_of_itself_is_level_everywhere(runs):
    cmp = compare(runs["base"], [runs["base"]])
    assert set(verdicts(cmp).values()) == {LEVEL} and not cmp.regression
    assert all(m.end.change == 0 and m.departs is None for m in cmp.metrics)
    assert not cmp.settings and not cmp.run_only and not cmp.baselines_only
    assert invoke("compare", runs["base"], runs["base"], "--fail-on", "regression").exit_code == 0


def test_two_seeds_of_one_recipe_are_level_one_against_the_other_and_against_a_band_of_seeds(runs):
    for run, baselines in ((runs["seed1"], [runs["seed2"]]), (runs["seed2"], [runs["seed1"]]), (runs["base"], [runs["seed1"], runs["seed2"]])):
        cmp = compare(run, baselines)
        assert set(verdicts(cmp).values()) == {LEVEL}, [(m.role, m.end, m.tolerance) for m in cmp.metrics]
    result = invoke("compare", runs["seed1"], runs["seed2"], "--fail-on", "regression")
    assert result.exit_code == 0 and "NO REGRESSION" in result.stdout


def test_a_folder_of_baselines_that_holds_the_run_gives_the_others(runs):
    cmp = compare(runs["seed1"], [runs["seed1"].parent])  # every run of the fixture but seed1 itself
    assert sorted(rd.run.name for rd in cmp.baselines) == ["base", "base_csv", "fp16", "lr_tenth", "seed2"]


def test_the_same_holds_across_formats_tensorboard_run_against_csv_baseline(runs):
    slower = compare(runs["lr_tenth"], [runs["base_csv"]])
    assert (slower.run.run.format, slower.baselines[0].run.format) == ("tensorboard", "csv")
    assert verdicts(slower) == {"val_loss": BEHIND, "train_loss": BEHIND, "val_acc": BEHIND}
    # one training written twice: TensorBoard keeps float32, the CSV float64; nothing else differs
    same = compare(runs["base"], [runs["base_csv"]])
    assert set(verdicts(same).values()) == {LEVEL}
    assert all(abs(m.end.change) <= 1e-6 * abs(m.end.baseline) for m in same.metrics)
    assert {m.run_metric: m.baseline_metrics for m in same.metrics} == {
        "Loss/val": ("val_loss",), "Loss/train": ("loss",), "Accuracy/val": ("val_acc",)}
    assert invoke("compare", runs["lr_tenth"], runs["base_csv"], "--fail-on", "regression").exit_code == 1


def test_a_run_whose_loss_turns_nan_is_behind_from_that_step_and_brings_a_finding_the_baseline_has_not(runs):
    cmp = compare(runs["fp16"], [runs["base"]])  # model.half() without loss scaling: NaN from the first update
    by_role = {m.role: m for m in cmp.metrics}
    assert verdicts(cmp) == {"val_loss": BEHIND, "train_loss": BEHIND, "val_acc": BEHIND} and cmp.regression
    assert by_role["train_loss"].departs == 1 and np.isnan(by_role["train_loss"].end.run)
    assert [f.code for f in cmp.run_only] == ["diverge"] and not cmp.baselines_only
    page = invoke("compare", runs["fp16"], runs["base"], "-f", "html")
    charts = [part.split("</script>", 1)[0] for part in page.stdout.split('id="chart-comparison-')[1:]]
    assert page.exit_code == 0 and len(charts) == 3 and not any("NaN" in chart for chart in charts)
    assert invoke("compare", runs["fp16"], runs["base"], "--fail-on", "regression").exit_code == 1


def test_the_baseline_against_the_slower_run_is_ahead(runs):
    cmp = compare(runs["base"], [runs["lr_tenth"]])
    assert verdicts(cmp) == {"val_loss": AHEAD, "train_loss": AHEAD, "val_acc": AHEAD} and not cmp.regression


def test_aligned_on_the_epoch_both_runs_log_the_verdicts_stand(runs):
    assert set(verdicts(compare(runs["seed1"], [runs["seed2"]], axis="epoch")).values()) == {LEVEL}
    assert verdicts(compare(runs["lr_tenth"], [runs["base_csv"]], axis="epoch"))["val_loss"] == BEHIND


def _with_samples(log: Path, out: Path, steps_per_batch: int) -> Path:
    """The logged training again, with a samples-seen column (batch 32) and its steps counted in
    micro-batches of `steps_per_batch` (gradient accumulation as some loggers count it)."""
    import polars as pl

    table = pl.read_csv(log / "log.csv")
    table = table.with_columns(samples_seen=(pl.col("step") + 1) * 32, step=pl.col("step") * steps_per_batch + steps_per_batch - 1)
    out.mkdir()
    table.write_csv(out / "log.csv")
    return out


def test_runs_counting_steps_differently_are_aligned_on_the_samples_both_log(runs, tmp_path):
    base = _with_samples(runs["base_csv"], tmp_path / "base", 1)
    micro = _with_samples(runs["base_csv"], tmp_path / "micro", 2)  # one training, two step counts
    on_steps = compare(micro, [base])  # step 299 of the micro-step run is the baseline's step 149
    assert verdicts(on_steps)["val_loss"] == BEHIND
    on_samples = compare(micro, [base], axis="samples")
    assert set(verdicts(on_samples).values()) == {LEVEL} and all(m.end.change == 0 for m in on_samples.metrics)
    assert on_samples.metrics[0].steps[1] == 599  # the run's own steps


@pytest.mark.parametrize("name", ["mlf_overfit_charlm_small_corpus", "wb_oscillate_adam_small_batch_lr_high", "pl_epoch_jumps_charlm_repeated_data"])
def test_a_sample_run_against_itself_is_level_aligned_on_its_epoch_counter(name):
    # an epoch logged 0, 0, …, 1, 1, … is read between epoch starts: the points of one epoch keep their steps
    cmp = compare(SAMPLES / name, [SAMPLES / name], axis="epoch")
    assert cmp.metrics and all(m.verdict == LEVEL and m.end.change == 0 for m in cmp.metrics)


def test_a_baseline_counted_in_twice_the_samples_per_step_is_placed_at_the_run_step_of_the_same_count():
    # the baseline's batch is twice the run's: its step 50 has seen what the run sees at step 100
    steps = np.arange(0, 101, dtype=np.int64)
    baseline_loss = Series("loss", steps, np.linspace(2.0, 1.0, len(steps)))
    baseline_samples = Series("samples", steps, 64.0 * steps)
    run_samples = Series("samples", np.arange(0, 201, dtype=np.int64), 32.0 * np.arange(0, 201))
    placed = on_run_steps(baseline_loss, baseline_samples, run_samples)
    assert placed.steps[50] == 100 and placed.values[50] == baseline_loss.values[50]
    assert placed.steps[-1] == 200 and len(placed) == len(steps)


def test_an_accuracy_is_as_uncertain_as_the_examples_it_was_counted_on():
    n = 4236  # the char-LM's validation windows; its closest logged accuracies are 3 examples apart
    counted = np.array([1990, 1993, 2058, 2081, 2096, 2129]) / n
    assert counting_noise(counted.astype(np.float32))[-1] == pytest.approx(np.sqrt(counted[-1] * (1 - counted[-1]) / n), rel=1e-3)
    percent = np.array([441, 442, 443, 441, 440, 439]) / 450 * 100  # digits: 450 validation images, in percent
    assert counting_noise(percent) == pytest.approx(np.sqrt(percent * (100 - percent) / 450))
    assert not counting_noise(np.array([0.6121, 0.70343, 0.77117, 0.801234, 0.82319])).any()  # an F1: on no grid of 1/n


# ---------------------------------------------------------------- reports


def test_compare_help_fits_80_columns():
    out = invoke("compare", "--help").stdout
    assert "--fail-on <regression|never>" in out and all(len(line) <= 80 and line == line.rstrip() for line in out.splitlines())


def test_json_follows_the_compare_schema_and_carries_the_runs_as_the_report_does(runs):
    result = invoke("compare", runs["lr_tenth"], runs["base"], runs["seed1"], "-f", "json")
    doc = json.loads(result.stdout)
    validate(doc)
    assert doc["schema"] == "logdoctor.compare/v1" and doc["regression"] is True and doc["band"] == "seeds"
    assert [(m["role"], m["verdict"], m["gate"]) for m in doc["metrics"]] == [
        ("val_loss", "behind", True), ("train_loss", "behind", False), ("val_acc", "behind", True)]
    assert doc["metrics"][0]["departs_step"] == 19 and doc["run"]["run"] == "lr_tenth"
    assert [b["format"] for b in doc["baselines"]] == ["tensorboard", "csv"] and doc["no_settings"] == ["seed1"]


def test_html_overlays_the_runs_with_the_band_and_marks_the_departure(runs, tmp_path):
    out = tmp_path / "c.html"
    assert invoke("compare", runs["lr_tenth"], runs["base"], "-o", out).exit_code == 0
    page = out.read_text()
    specs = [json.loads(part.split(">", 1)[1].split("</script>", 1)[0]) for part in page.split('id="chart-comparison-')[1:]]
    assert [spec["panels"][0]["key"] for spec in specs] == ["val_loss", "train_loss", "val_acc"]
    val = specs[0]["panels"][0]
    assert [line["label"] for line in val["lines"]] == [
        "run: lr_tenth, logged", "baseline: base, logged", "run: lr_tenth", "baseline: base", "band low", "band high"]
    logged = val["lines"][0]
    assert len(logged["dx"]) == 15 and logged["y"][-1] == pytest.approx(float(f"{RunView(load_runs(runs['lr_tenth'])[0][0]).series('val_loss').values[-1]:.4g}"))
    assert {(m["kind"], m["x0"]) for m in val["marks"]} == {("band", 19), ("vline", 19)}
    assert "behind from step 19" in page and "<script src" not in page


CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
PROBE = (
    '<script>window.__e=[];window.addEventListener("error",function(e){window.__e.push(String(e.message))});'
    'window.addEventListener("load",function(){setTimeout(function(){var p=document.createElement("pre");p.id="probe";'
    'p.textContent=JSON.stringify({errors:window.__e,charts:Array.from(document.querySelectorAll("section[id^=comparison-]"))'
    '.map(function(s){return s.querySelectorAll("canvas").length})});document.body.appendChild(p)},1000)});</script>'
)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")
def test_html_charts_draw_in_a_browser_without_a_script_error(runs, tmp_path):
    out = tmp_path / "c.html"
    assert invoke("compare", runs["lr_tenth"], runs["base"], runs["seed1"], "-o", out).exit_code == 0
    probed = tmp_path / "probed.html"
    probed.write_text(out.read_text().replace("<body>", "<body>" + PROBE, 1))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--window-size=1100,2400"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120).stdout
    seen = json.loads(re.search(r'<pre id="probe">([^<]*)', dom).group(1))
    assert seen == {"errors": [], "charts": [1, 1, 1]}


def test_markdown_has_the_verdict_table_and_one_plot_per_metric(runs, tmp_path):
    out = tmp_path / "c.md"
    assert invoke("compare", runs["lr_tenth"], runs["base"], "-o", out).exit_code == 0
    text = out.read_text()
    assert "| val loss (gate): `Loss/val`, steps 19–299 | **behind** | 19 |" in text
    assert sorted(p.name for p in (tmp_path / "c_plots").iterdir()) == ["compare-train_loss.png", "compare-val_acc.png", "compare-val_loss.png"]
    assert "| `lr` | 1e-4 | 0.001 |" in text


# ---------------------------------------------------------------- GitHub annotations


def test_github_format_points_a_regression_at_the_run(runs):
    lines = invoke("compare", runs["lr_tenth"], runs["base"], "-f", "github").stdout.splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 2 and all(f"file={runs['lr_tenth']}," in line for line in errors)
    assert lines[-1].startswith("::notice title=logdoctor compare%3A lr_tenth::regression: val loss behind from step 19")


def test_github_commands_escape_what_would_end_them_early():
    line = command("error", "50% worse\nsee log", file="runs/a,b:c", title="x: y")
    assert line == "::error file=runs/a%2Cb%3Ac,title=x%3A y::50%25 worse%0Asee log"


def test_analyze_and_audit_write_github_commands():
    run = SAMPLES / "tbn_diverge_sgd_lr_high"
    for cmd in ("analyze", "audit"):
        result = invoke(cmd, run, "-f", "github", *(["--no-cache"] if cmd == "audit" else []))
        lines = result.stdout.splitlines()
        assert lines[0].startswith("::error file=") and "title=logdoctor diverge%3A" in lines[0], lines
        assert lines[-1] == "::notice title=logdoctor::1 run: 1 critical, 0 warning, 0 healthy"


# ---------------------------------------------------------------- bad input: one line, exit 2


@pytest.mark.parametrize("args, says", [
    (lambda r: [r["base"].parent, r["base"]], "holds 6 runs"),
    (lambda r: [r["base"], r["base"].parent / "missing"], "no such file or folder"),
    (lambda r: [r["base"], r["seed1"], "--align", "tokens"], "logs no tokens counter"),
])
def test_what_cannot_be_compared_is_one_line_and_exit_2(runs, args, says):
    result = invoke("compare", *args(runs))
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.splitlines()) == 1
