"""Probe results merged into a log diagnosis, and the replay / analyze --replay commands end to end."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

import _replay_models as models  # noqa: E402
from _replay_models import single_thread  # noqa: E402,F401
from test_report_json import validate  # noqa: E402

from logdoctor.cli import app  # noqa: E402
from logdoctor.model import Diagnosis, Finding, Run, RunDiagnosis  # noqa: E402
from logdoctor.replay import ReplayError  # noqa: E402
from logdoctor.replay.merge import merge_replay, pick_run  # noqa: E402
from logdoctor.replay.runner import run_replay  # noqa: E402
from logdoctor.replay.update_ratio import UpdateRatioLow  # noqa: E402
from logdoctor.rules import all_rules  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FINDING_KEYS = {"code", "severity", "confidence", "title", "metric", "steps", "evidence", "causes", "fixes", "probe", "docs"}
WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A real tiny run with an LR three decades too low: log.csv + ckpt.pt + batch.pt."""
    folder = tmp_path_factory.mktemp("demo_run")
    models.write_demo(folder, lr=1e-6, steps=150)
    return folder


@pytest.fixture(scope="module")
def healthy_ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("healthy_ckpt")
    model = models.mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    models.train(model, opt, 20)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 20}, folder / "ckpt.pt")
    return folder / "ckpt.pt"


def log_finding(code: str) -> Finding:
    """A finding exactly as the log rule `code` would emit it (its documented causes and fixes)."""
    rule = all_rules()[code]()
    return rule.finding(None, title=f"{code} from the logs", steps=(0, 100), confidence=0.8, evidence={"x": 1.0})


def diagnosis_with(*findings: Finding, path: str = "run") -> RunDiagnosis:
    return RunDiagnosis(run=Run(name="run", path=path, format="csv"), roles={}, findings=list(findings))


def test_probe_confirms_a_documented_cause_and_moves_it_first(demo):
    crawl = log_finding("crawl")
    rd = merge_replay(diagnosis_with(crawl), run_replay(demo / "ckpt.pt"))
    merged = next(f for f in rd.findings if f.code == "crawl")
    assert re.search(UpdateRatioLow.cause_pattern, merged.causes[0], re.I)
    assert "confirmed by probe update_ratio_low" in merged.causes[0]
    assert merged.evidence["confirmed_by"] == ["update_ratio_low"]
    assert merged.fixes[0].startswith("raise the LR")
    assert any(f.code == "update_ratio_low" for f in rd.findings), "the probe finding joins the run"


def test_clean_probe_rules_the_cause_out_and_moves_it_last(healthy_ckpt):
    crawl = log_finding("crawl")
    before = list(crawl.causes)
    rd = merge_replay(diagnosis_with(crawl), run_replay(healthy_ckpt))
    merged = rd.findings[0]
    ruled = [c for c in merged.causes if "ruled out by probe update_ratio_low" in c]
    assert ruled and merged.causes[-len(ruled):] == ruled
    assert len(merged.causes) == len(before)
    assert "update_ratio_low" in merged.evidence["ruled_out_by"]


def test_probe_adds_its_own_cause_when_none_matches(demo):
    f = Finding("crawl", "warning", 0.7, "slow", "loss", (0, 10), {}, causes=["the moon is in the wrong phase"], fixes=["wait"])
    rd = merge_replay(diagnosis_with(f), run_replay(demo / "ckpt.pt"))
    causes = next(x for x in rd.findings if x.code == "crawl").causes
    assert causes[0].startswith("LR one to three decades too low") and "confirmed by probe update_ratio_low" in causes[0]
    assert causes[-1] == "the moon is in the wrong phase"


def test_same_code_probe_is_absorbed_not_duplicated(tmp_path):
    model = models.mlp()
    scaler = {"scale": 0.25, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}
    torch.save({"model": model.state_dict(), "scaler": scaler, "step": 900}, tmp_path / "amp.pt")
    rd = merge_replay(diagnosis_with(log_finding("scaler_collapse")), run_replay(tmp_path / "amp.pt"))
    collapsed = [f for f in rd.findings if f.code == "scaler_collapse"]
    assert len(collapsed) == 1
    assert collapsed[0].evidence["probe_scale"] == 0.25 and "confirmed by probe scaler_collapse" in collapsed[0].causes[0]


def test_pick_run_uses_the_run_folder_holding_the_checkpoint(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    runs = [diagnosis_with(path=str(tmp_path / name / "log.csv")) for name in ("a", "b")]
    diagnosis = Diagnosis(root=str(tmp_path), runs=runs)
    assert pick_run(diagnosis, tmp_path / "b" / "ckpt.pt") is runs[1]
    with pytest.raises(ReplayError, match="lies in none of them"):
        pick_run(diagnosis, tmp_path / "elsewhere.pt")


def test_analyze_with_replay_end_to_end(demo):
    args = ["analyze", str(demo), "--replay", str(demo / "ckpt.pt"), "--model", f"{models.__file__}:mlp", "--batch", str(demo / "batch.pt"), "--device", "cpu", "--format", "json"]
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    run = doc["runs"][0]
    assert run["format"] == "csv"
    log = next(f for f in run["findings"] if f["code"] in ("flat", "crawl"))
    assert "confirmed by probe" in log["causes"][0]
    assert {"update_ratio_low", "lr_range"} <= set(log["evidence"]["confirmed_by"])
    codes = {f["code"] for f in run["findings"]}
    assert {"update_ratio_low", "lr_range"} <= codes
    for f in run["findings"]:
        assert set(f) == FINDING_KEYS
    assert "probe(s) fired" in result.stderr


def test_replay_command_json_and_exit_codes(demo):
    runner = CliRunner()
    ok = runner.invoke(app, ["replay", str(demo / "ckpt.pt"), "--format", "json", "--quiet"], env=WIDE)
    assert ok.exit_code == 0
    doc = json.loads(ok.stdout)
    validate(doc)  # the package's JSON Schema, as for analyze and audit
    (run,) = doc["runs"]
    assert run["format"] == "checkpoint/training_dict" and run["status"] == "warning"
    assert run["run"] == demo.name  # named after the folder holding ckpt.pt, as a run given as PATH is
    assert set(run) == {"run", "path", "format", "roles", "status", "verdict", "learning", "findings", "warnings"}
    assert runner.invoke(app, ["replay", str(demo / "ckpt.pt"), "--fail-on", "warning", "-q"], env=WIDE).exit_code == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (["replay", "/no/such/ckpt.pt"], "no such file"),
        (["replay", "{demo}/ckpt.pt", "--model", "{models}:mlp"], "needs --batch"),
        (["analyze", "{demo}", "--replay", "/no/such.pt"], "no such file"),
    ],
)
def test_cli_errors_are_one_line(demo, args, message):
    args = [a.format(demo=demo, models=models.__file__) for a in args]
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.strip().count("\n") == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when no GPU is present")
def test_device_cuda_without_gpu_exits_2(demo):
    args = ["replay", str(demo / "ckpt.pt"), "--model", f"{models.__file__}:mlp", "--batch", str(demo / "batch.pt"), "--device", "cuda"]
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 2 and "no CUDA device" in result.stderr


def test_analyze_without_replay_never_imports_torch(demo, tmp_path):
    (tmp_path / "log.csv").write_text((demo / "log.csv").read_text())
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from logdoctor.cli import app\n"
        f"r = CliRunner().invoke(app, ['analyze', {str(tmp_path)!r}, '--format', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr


def test_explain_prints_a_probe_page():
    result = CliRunner().invoke(app, ["explain", "update_ratio_low"], env=WIDE)
    assert result.exit_code == 0
    assert "Root causes" in result.stdout and "LR one to three decades too low" in result.stdout


SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.mark.skipif(not (SHARED / "DESIGN.md").is_file(), reason="needs the shared design notes beside the checkout")
def test_every_design_probe_code_has_a_probe():
    from logdoctor.replay.catalogue import all_probes

    text = (SHARED / "DESIGN.md").read_text(encoding="utf-8")
    table = text.split("### Replay probe codes", 1)[1].split("##", 1)[0]
    codes = set(re.findall(r"`([a-z_]+)`", table))
    assert codes and codes <= set(all_probes()), codes - set(all_probes())


def test_every_probe_a_rule_names_exists():
    """Rules tell users which replay probe confirms them (their Probe: section); those probes must exist."""
    from logdoctor.replay.catalogue import all_probes

    for code, cls in all_rules().items():
        named = set(re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", cls.doc().get("Probe", "")))
        assert named <= set(all_probes()), f"rule {code} names unknown probes {named - set(all_probes())}"


def test_replay_options_without_replay_are_refused(demo):
    result = CliRunner().invoke(app, ["analyze", str(demo), "--model", "x:y"], env=WIDE)
    assert result.exit_code == 2 and "only apply together with --replay" in result.stderr


def test_failed_overfit_probe_confirms_model_causes_never_the_users_loop():
    """The probe trains with its own loop: it can blame the labels or the loss, not a .detach() in the user's loop."""
    from logdoctor.replay.catalogue import all_probes
    from logdoctor.replay.checkpoint import Checkpoint
    from logdoctor.replay.probe import Outcome
    from logdoctor.replay.runner import ReplayResult

    probe = all_probes()["overfit_batch_failed"]()
    failed = probe.finding(None, title="overfit-one-batch failed at every LR tried", steps=None, confidence=0.85, evidence={})
    result = ReplayResult(Checkpoint("c.pt", "training_dict"), [Outcome(probe, "fired", [failed])], [], "cpu")
    flat = next(f for f in merge_replay(diagnosis_with(log_finding("flat")), result).findings if f.code == "flat")
    confirmed = [c for c in flat.causes if "confirmed by probe overfit_batch_failed" in c]
    assert confirmed and all("label" in c for c in confirmed)
    assert not any("confirmed" in c for c in flat.causes if "detached from the graph" in c or "wrong order" in c)


def test_probe_codes_are_listed_without_torch_and_match_the_catalogue():
    from logdoctor.replay import PROBE_CODES
    from logdoctor.replay.catalogue import all_probes

    assert sorted(PROBE_CODES) == sorted(all_probes())


def test_probes_are_selected_and_ignored_like_rules(demo, tmp_path):
    """--ignore / --select / a config's ignore take probe codes everywhere; a select naming only log
    rules leaves every probe on, and one naming only probes leaves every rule on."""
    runner = CliRunner()
    ckpt = str(demo / "ckpt.pt")
    ignored = runner.invoke(app, ["analyze", str(demo), "--replay", ckpt, "--ignore", "update_ratio_low", "-f", "json"], env=WIDE)
    assert ignored.exit_code == 0, ignored.stderr
    assert "update_ratio_low" not in {f["code"] for f in json.loads(ignored.stdout)["runs"][0]["findings"]}
    config = tmp_path / "logdoctor.toml"
    config.write_text('ignore = ["update_ratio_low"]\n')
    from_config = runner.invoke(app, ["replay", ckpt, "--config", str(config), "-f", "json"], env=WIDE)
    assert from_config.exit_code == 0, from_config.stderr
    assert "update_ratio_low" not in {f["code"] for f in json.loads(from_config.stdout)["runs"][0]["findings"]}
    only = runner.invoke(app, ["replay", ckpt, "--select", "update_ratio_low"], env=WIDE)
    assert only.exit_code == 0 and "1 probe(s) fired, 0 clear" in only.stderr
    probes_only = runner.invoke(app, ["analyze", str(demo), "--replay", ckpt, "--select", "update_ratio_low", "-f", "json"], env=WIDE)
    codes = {f["code"] for f in json.loads(probes_only.stdout)["runs"][0]["findings"]}
    assert codes >= {"update_ratio_low"} and codes & {"flat", "crawl"}
    rules_only = runner.invoke(app, ["analyze", str(demo), "--replay", ckpt, "--select", "flat,crawl", "-f", "json"], env=WIDE)
    assert "update_ratio_low" in {f["code"] for f in json.loads(rules_only.stdout)["runs"][0]["findings"]}
    typo = runner.invoke(app, ["replay", ckpt, "--ignore", "update_ratio_lo"], env=WIDE)
    assert typo.exit_code == 2 and "unknown rule code 'update_ratio_lo'" in typo.stderr
