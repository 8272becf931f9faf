"""benchmarks/compare_tools.py: how another tool's report becomes a score next to logdoctor's."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))  # compare_tools imports accuracy as a sibling module
SPEC = importlib.util.spec_from_file_location("compare_tools", BENCH / "compare_tools.py")
compare = importlib.util.module_from_spec(SPEC)
sys.modules["compare_tools"] = compare  # dataclasses look their module up
SPEC.loader.exec_module(compare)
from accuracy import read_label  # noqa: E402  (the labels' reader compare_tools scores with)

RUNMEDIC = compare.BY_NAME["runmedic"]
TRAINSPOTTER = compare.BY_NAME["trainspotter"]
LOSSLINT = compare.BY_NAME["losslint"]


def scored(tool, label: dict, read: bool, *findings: tuple[str, str]):
    outcome = compare.Outcome(read=read, findings=list(findings))
    return compare.Scored("r", read_label(label), compare.as_findings(tool, outcome), found=read)


def test_a_tools_error_ranks_before_its_warning_whatever_order_it_printed():
    s = scored(RUNMEDIC, {"label": "diverge"}, True, ("loss_spikes", "warning"), ("non_finite", "critical"))
    assert [f.code for f in s.fired] == ["diverge", "spike"]
    assert s.right


def test_a_finding_without_counterpart_is_a_false_alarm_on_healthy_and_never_a_hit():
    faulty = scored(RUNMEDIC, {"label": "flat"}, True, ("slowdown", "warning"), ("no_learning", "warning"))
    healthy = scored(RUNMEDIC, {"label": "healthy"}, True, ("memory_growth", "warning"))
    assert faulty.top == "alarm:slowdown" and not faulty.right and faulty.recalled
    assert not healthy.right


def test_info_findings_are_remarks_and_reader_messages_are_not_findings():
    # losslint's overfit_onset is info: no prediction; its `parse` warning is about the file
    s = scored(LOSSLINT, {"label": "healthy"}, True, ("overfit_onset", "info"), ("parse", "warning"))
    assert s.fired == [] and s.right


def test_counting_info_makes_a_tools_remarks_fire_after_its_warnings():
    outcome = compare.Outcome(read=True, findings=[("overfit_onset", "info"), ("loss_spike", "warning")])
    fired = compare.as_findings(LOSSLINT, outcome, count_info=True)
    assert [(f.code, f.severity) for f in fired] == [("spike", "warning"), ("overfit", "warning")]


def test_trainspotter_checks_map_by_detector_and_title():
    assert TRAINSPOTTER.code("grad_norm/Gradient clipping likely saturated") == "clip_saturation"
    assert TRAINSPOTTER.code("grad_norm/Gradient-norm explosion") == "grad_norm_trend"
    assert TRAINSPOTTER.code("spikes/Loss spike") == "spike"
    assert TRAINSPOTTER.code("grad_norm/something new") == "alarm:grad_norm/something new"


def test_read_only_scores_leave_out_what_the_tool_could_not_read():
    runs = [scored(RUNMEDIC, {"label": "flat"}, False),
            scored(RUNMEDIC, {"label": "overfit"}, True, ("overfitting", "warning")),
            scored(RUNMEDIC, {"label": "healthy"}, False),
            scored(RUNMEDIC, {"label": "healthy"}, True, ("loss_spikes", "warning"))]
    m = compare.summary(runs)
    assert (m["read"], m["top1"], m["false_alarm"]) == (2, 0.5, 0.5)
    assert (m["read_only"]["top1"], m["read_only"]["false_alarm"]) == (1.0, 1.0)


def fake(tmp_path: Path, script: str) -> compare.Tool:
    return compare.Tool("fake", "fake==1", lambda venv, p: [sys.executable, "-c", script, str(p)],
                        compare.parse_driver, compare.the_folder, {}, "anything")


@pytest.mark.parametrize("script, note", [
    ("import time; time.sleep(5)", "timeout after 1 s"),
    ("print('not json at all')", "output not a report (JSONDecodeError)"),
    ("import sys; sys.exit('fake: no training metrics found')", "fake: no training metrics found"),
])
def test_a_tool_that_hangs_crashes_or_prints_no_report_reads_nothing(tmp_path, script, note):
    outcome = compare.run_tool(fake(tmp_path, script), tmp_path, tmp_path, timeout=1, cache=None)
    assert not outcome.read and outcome.findings == []
    assert outcome.notes == [f"{tmp_path.name}: {note}"]


def test_findings_of_every_input_are_pooled(tmp_path):
    (tmp_path / "a.log").write_text("x")
    (tmp_path / "b.log").write_text("x")
    tool = compare.Tool("fake", "fake==1", lambda venv, p: [sys.executable, "-c", (
        "import json, sys; print(json.dumps({'read': sys.argv[1].endswith('b.log'), 'findings': [[sys.argv[1][-5:], 'warning']]}))"
    ), str(p)], compare.parse_driver, compare.text_logs, {}, "logs")
    outcome = compare.run_tool(tool, tmp_path, tmp_path, timeout=30, cache=None)
    assert outcome.read and outcome.findings == [("a.log", "warning"), ("b.log", "warning")]
