"""CLI habits a user brings from ruff and pytest: --version, -h, -o by extension, the config the
report used, "did you mean", selections that say what they did, and output that survives
NO_COLOR, an ASCII-only stream and a pipe (no trailing blanks)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor import __version__
from logdoctor.cli import app
from test_report_json import validate

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
RUN = SAMPLES / "pl_clip_charlm_sgd"
PLAIN = {"COLUMNS": "80", "NO_COLOR": "1"}


def invoke(*args: str, **kw):
    return CliRunner().invoke(app, list(args), env=PLAIN, **kw)


def test_version_and_short_help():
    assert invoke("--version").stdout == f"logdoctor {__version__}\n"
    assert invoke("-h").stdout.startswith("Usage:") and "analyze" in invoke("-h").stdout
    assert "--fail-on" in invoke("analyze", "-h").stdout


@pytest.mark.parametrize("command", ["analyze", "audit", "inspect", "replay", "rules", "explain"])
def test_help_fits_80_columns_and_never_splits_a_choice_list(command):
    out = invoke(command, "--help").stdout
    assert all(len(line) <= 80 and line == line.rstrip() for line in out.splitlines())
    for choices in re.findall(r"\[([a-z|]+)", out):  # click shows choices as [a|b|c] on one line
        assert "|" in choices or choices.isalpha()
    assert "<bool>" not in out


@pytest.mark.parametrize("name, marker", [("r.json", '"schema": "logdoctor.report/v1"'), ("r.md", "# logdoctor report"), ("r.html", "<!DOCTYPE html>"), ("r.txt", "▲ WARNING  pl_clip_charlm_sgd")])
def test_o_takes_the_format_from_the_extension_and_says_where_it_wrote(tmp_path, name, marker):
    out = tmp_path / name
    result = invoke("analyze", str(RUN), "-o", str(out), "--no-plots")
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and marker in out.read_text()
    assert result.stderr.strip() == f"wrote {out}: 1 run: 0 critical, 1 warning, 0 healthy"


def test_a_format_that_contradicts_the_extension_is_one_line(tmp_path):
    result = invoke("analyze", str(RUN), "-f", "md", "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and not (tmp_path / "r.html").exists()


def test_a_near_miss_of_fail_on_is_told_the_nearest_level():
    result = invoke("analyze", str(RUN), "--fail-on=warn")
    assert result.exit_code == 2 and "did you mean 'warning'?" in result.stderr
    assert invoke("analyze", str(RUN), "--fail-on", "warning", "-q").exit_code == 1  # pl_clip_charlm_sgd warns


def test_an_extension_no_format_writes_is_a_usage_error_naming_it(tmp_path):
    """`-o out.pdf` silently wrote terminal text under a PDF's name."""
    result = invoke("analyze", str(RUN), "-o", str(tmp_path / "out.pdf"))
    assert result.exit_code == 2 and ".pdf" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "out.pdf").exists()
    assert invoke("analyze", str(RUN), "-f", "terminal", "-o", str(tmp_path / "out.pdf"), "--no-plots").exit_code == 0  # asked for


def test_the_config_in_the_current_directory_is_found_and_named(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.logdoctor]\nignore = ["clip_saturation"]\n')
    monkeypatch.chdir(tmp_path)
    result = invoke("analyze", str(RUN))
    lines = result.stdout.splitlines()
    assert lines[-2] == f"config: {tmp_path / 'pyproject.toml'}" and lines[-1] == "1 run: all healthy"
    doc = json.loads(invoke("analyze", str(RUN), "-f", "json").stdout)
    assert doc["config"] == str(tmp_path / "pyproject.toml")


def test_unknown_codes_and_keys_suggest_the_nearest(tmp_path):
    assert "did you mean 'crawl'?" in invoke("analyze", str(RUN), "--ignore", "crwal").stderr
    assert "did you mean 'overfit'?" in invoke("explain", "overfitt").stderr
    config = tmp_path / "logdoctor.toml"
    config.write_text("selct = ['flat']\n")
    result = invoke("analyze", str(RUN), "--config", str(config))
    assert result.exit_code == 2 and "unknown key 'selct'; did you mean 'select'?" in result.stderr


def test_a_selection_says_what_it_did():
    nothing = invoke("analyze", str(RUN), "--select", "flat", "--ignore", "flat")
    assert nothing.exit_code == 2 and nothing.stderr == "logdoctor: nothing left to check: --select flat --ignore flat leaves no rule on\n"
    probe_only = invoke("analyze", str(RUN), "--select", "lr_range", "-q")
    assert probe_only.exit_code == 0 and "lr_range: replay probe(s), run only with --replay CKPT; every log rule runs" in probe_only.stderr
    assert "clip_saturation" in probe_only.stdout


def _run_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **PLAIN, **env, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, env=environment)


def test_an_ascii_only_stream_gets_no_traceback():
    result = _run_cli("analyze", str(SAMPLES / "hf_diverge_bce_log0"), PYTHONIOENCODING="ascii")
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    assert result.stdout.decode("ascii").startswith("? CRITICAL  hf_diverge_bce_log0")


@pytest.mark.parametrize("args", [("inspect", str(RUN)), ("rules",), ("explain", "crawl"), ("audit", str(SAMPLES), "--no-cache", "-j", "1")])
def test_listings_carry_no_trailing_blanks(args):
    out = invoke(*args).stdout
    assert out.strip() and all(line == line.rstrip() for line in out.splitlines())


def test_the_progress_bar_draws_no_colour_under_no_color():
    """The bar goes to stderr only on a terminal: forced here through a pty."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-m", "logdoctor", "analyze", str(SAMPLES), "-f", "json"], stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert proc.returncode == 0 and b"diagnosing" in drawn
    assert not re.search(rb"\x1b\[[0-9;]*m", drawn)  # cursor moves only, no colour codes


def test_inspect_rules_and_audit_json_follow_their_schemas():
    inspect = json.loads(invoke("inspect", str(SAMPLES / "hf_diverge_bce_log0"), "-f", "json").stdout)
    validate(inspect, "inspect")
    assert inspect["runs"][0]["run"] == "hf_diverge_bce_log0" and inspect["runs"][0]["roles"]["train_loss"] == "loss"
    rules = json.loads(invoke("rules", "-f", "json").stdout)
    validate(rules, "rules")
    assert {"flat", "overfit"} <= {r["code"] for r in rules["rules"]} and "lr_range" in rules["probes"]
    audit = json.loads(invoke("audit", str(SAMPLES), "-f", "json", "--no-cache", "-j", "1").stdout)
    validate(audit)
    assert audit["summary"]["runs"] == 52 and audit["audit"]["run_count"] == 52
    assert len({r["run"] for r in audit["runs"]}) == 52 and not any("lightning_logs" in r["run"] for r in audit["runs"])


def test_analyze_json_of_every_sample_run_follows_the_schema():
    result = invoke("analyze", str(SAMPLES), "-f", "json")
    doc = json.loads(result.stdout)
    validate(doc)
    assert doc["summary"]["runs"] == 52 and result.stderr == ""  # the base install reads every bundled run
    quiet = json.loads(invoke("analyze", str(SAMPLES), "-f", "json", "-q").stdout)
    validate(quiet)
    assert len(quiet["runs"]) == sum(n for v, n in quiet["summary"]["by_verdict"].items() if v != "healthy")


def test_colon_words_from_a_log_are_printed_as_written_never_as_emoji(tmp_path):
    """ESPnet prints `:train:` and a folder may be called `run:fire:`: rich would draw 🚋 and 🔥."""
    run = tmp_path / "run:fire:"
    run.mkdir()
    (run / "train.log").write_text("".join(f"epoch {e} :train: loss {2.5 - 0.2 * e}\n" for e in range(1, 7)))
    for args in (["analyze", str(tmp_path)], ["inspect", str(tmp_path)]):
        out = invoke(*args).output
        assert "run:fire:" in out and "🔥" not in out and "🚋" not in out
    assert ":train:" in invoke("inspect", str(tmp_path)).output


@pytest.mark.parametrize("content", [None, "hello 1\nworld 2\n"])
def test_json_with_nothing_usable_is_still_a_report_that_says_why(tmp_path, content):
    """A script reading `-f json` gets a document, not an empty stdout: no runs, `skipped` says why,
    and the exit code stays 2 (an input error, not a clean bill of health)."""
    target = tmp_path / "prose.log"
    if content is not None:
        target.write_text(content)
    result = invoke("analyze", str(target), "-f", "json")
    doc = json.loads(result.stdout)
    validate(doc)
    assert result.exit_code == 2 and doc["runs"] == [] and doc["summary"]["skipped"] == 1
    assert doc["skipped"][0].startswith(str(target)) and str(target) in result.stderr


def test_json_of_unusable_stdin_is_a_report_too():
    result = invoke("analyze", "-", "-f", "json", input="no numbers here\n")
    doc = json.loads(result.stdout)
    assert result.exit_code == 2 and doc["runs"] == [] and doc["skipped"][0].startswith("<stdin>")
