"""A run whose loss no rule could judge says so (`not_checked`, `· NOT CHECKED`) instead of `✓ HEALTHY`."""
from __future__ import annotations

import io
import json

import numpy as np
from rich.console import Console

from _report_fixtures import _run
from logdoctor.config import Config
from logdoctor.diagnose import diagnose_run
from logdoctor.model import Diagnosis
from logdoctor.report.html import render_html
from logdoctor.report.json_report import render_json
from logdoctor.report.markdown import render_markdown
from logdoctor.report.terminal import render_terminal

STEPS = np.arange(0, 500, 5)


def diagnosed(series: dict):
    return diagnose_run(_run("run", series), Config())


def codes(rd) -> dict[str, str]:
    return {f.code: f.evidence.get("checked") for f in rd.findings if f.severity == "info"}


def test_fires_on_reward_only_runs_single_point_losses_and_rl_losses():
    reward_only = diagnosed({"episode_reward": (STEPS, np.linspace(0, 100, len(STEPS)))})
    assert codes(reward_only) == {"not_checked": "nothing"}
    one_point = diagnosed({"loss": (np.array([900]), np.array([0.7]))})
    assert codes(one_point)["not_checked"] == "nothing" and "(1)" in one_point.findings[0].title
    rl = diagnosed({"episode_reward": (STEPS, np.linspace(0, 100, len(STEPS))), "loss": (STEPS, np.linspace(2, 1, len(STEPS)))})
    assert codes(rl) == {"not_checked": "NaN / inf only"}


def test_near_miss_a_short_loss_that_the_rules_can_judge_or_a_nan_tail():
    four = diagnosed({"loss": (np.arange(4), np.array([2.3, 1.5, 1.0, 0.8]))})
    assert "not_checked" not in codes(four)
    nan_tail = np.full(len(STEPS), np.nan)
    nan_tail[:2] = [2.3, 2.2]
    assert "not_checked" not in codes(diagnosed({"loss": (STEPS, nan_tail)}))


def test_status_stays_healthy_in_json_but_reads_not_checked_for_people():
    rd = diagnosed({"episode_reward": (STEPS, np.linspace(0, 100, len(STEPS)))})
    d = Diagnosis("runs/", [rd])
    assert json.loads(render_json(d))["runs"][0]["status"] == "healthy"
    console = Console(file=io.StringIO(), width=80, no_color=True)
    render_terminal(d, console)
    out = console.file.getvalue()
    assert out.startswith("· NOT CHECKED  run") and "HEALTHY" not in out
    assert "not checked: no loss series logged" in out and "1 not checked" in out
    assert "NOT CHECKED" in render_markdown(d) and "No problem found" not in render_markdown(d)
    assert "NOT CHECKED" in render_html(d, plots=False)


def test_an_rl_run_whose_losses_were_checked_for_nan_only_is_counted_not_checked():
    rd = diagnosed({"episode_reward": (STEPS, np.linspace(0, 100, len(STEPS))), "loss": (STEPS, np.linspace(2, 1, len(STEPS)))})
    console = Console(file=io.StringIO(), width=80, no_color=True)
    render_terminal(Diagnosis("runs/", [rd, diagnosed({"episode_reward": (STEPS, np.linspace(0, 9, len(STEPS)))})]), console)
    out = console.file.getvalue()
    assert out.startswith("· NOT CHECKED") and "(checked NaN / inf only)" in out and "HEALTHY" not in out
    assert out.splitlines()[-1] == "2 runs: 0 critical, 0 warning, 2 not checked, 0 healthy"
    assert json.loads(render_json(Diagnosis("runs/", [rd])))["summary"]["by_verdict"]["not_checked"] == 1
