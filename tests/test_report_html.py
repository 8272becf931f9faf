"""HTML report: one self-contained file, chart data per run (drawn in the browser), index by severity,
every log string escaped, scales. What the page does in a browser is tests/test_browser.py's job."""
from __future__ import annotations

import json
import re

import numpy as np
from typer.testing import CliRunner

from _report_fixtures import EVIL, diverging, evil, finding, frame, healthy, many, mixed, overfitting, scaler
from logdoctor.cli import app
from logdoctor.model import Diagnosis
from logdoctor.report.charts import CHART_POINTS
from logdoctor.report.html import render_html
from logdoctor.report.figure import panels_for
from logdoctor.report.plots import MAX_POINTS, RunPlotter, downsample

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHART = re.compile(r'<script type="application/json" id="chart-(\d+)">(.*?)</script>', re.S)


def external_references(html: str) -> list[str]:
    """Anything the page could fetch: src/href/url()/@import pointing off the page."""
    refs = re.findall(r'(?:src|href|action|poster|data)\s*=\s*"([^"]*)"', html)
    refs += re.findall(r"url\(([^)]*)\)", html) + re.findall(r"@import[^;]*", html)
    return [r for r in refs if not r.startswith("#")]


def charts(html: str) -> dict[int, dict]:
    return {int(i): json.loads(text) for i, text in CHART.findall(html)}


def test_one_self_contained_file_with_chart_data_per_run():
    html = render_html(mixed())
    assert external_references(html) == []
    assert "<link" not in html and "http://" not in html
    assert "default-src 'none'" in html  # the Content-Security-Policy forbids any fetch
    assert html.count("uPlot.iife") == 0 and html.count("var uPlot=") == 1  # the library, embedded once
    assert html.count("<img") == 0  # the browser draws the charts; PNGs are the Markdown report's
    assert sorted(charts(html)) == [1, 2, 3, 4, 5]
    assert html.count("data-run=") == 5  # each card says which chart data are its own


def test_chart_data_carry_the_figure_description_thinned():
    """The JSON is figure.panels_for's description: same panels, lines and marks; long lines thinned."""
    rd = healthy("big", n=50_000)
    rd.findings.append(finding("spike", "warning", "train/loss", (100, 30_000), {"spike_steps": [100, 30_000]}, "spikes"))
    spec = charts(render_html(Diagnosis("runs/", [rd])))[1]
    panels = panels_for(rd)
    assert [p["key"] for p in spec["panels"]] == [p.key for p in panels]
    loss = spec["panels"][0]
    assert [line["label"] for line in loss["lines"]] == [line.label for line in panels[0].lines]
    assert all(len(line["dx"]) == len(line["y"]) <= CHART_POINTS for line in loss["lines"])
    steps = np.cumsum(loss["lines"][0]["dx"])  # integer steps go as gaps
    assert 0 <= steps[0] < 500 and 49_500 < steps[-1] <= 49_999 and np.all(np.diff(steps) > 0)
    assert {m["kind"] for m in loss["marks"]} == {m.kind for m in panels[0].marks} >= {"band", "ticks"}
    by_id = charts(render_html(Diagnosis("runs/", [diverging()])))
    loss = by_id[1]["panels"][0]
    assert loss["lines"][0]["key"] == "train loss"  # what "Compare runs" offers it as
    assert any(m["kind"] == "vline" and m["x0"] == 1450 for m in loss["marks"])  # first NaN


def test_a_run_that_turns_inf_keeps_its_whole_step_range_on_the_chart():
    """A run that went to inf at step 20 of 300 had its chart stop at step 20 (analyze cards and
    the audit's, whose thinned curves stopped at the first inf): its last step now ends the line, as a gap."""
    from logdoctor.audit.result import thin_curve

    steps = np.arange(300)
    loss = np.where(steps < 20, 2.3 * np.exp(steps / 3), np.inf)
    thinned = thin_curve(steps, loss)
    assert thinned["steps"][-1] == 299 and thinned["steps"][:21] == list(range(21))
    rd = healthy("blown")
    rd.run.scalars = frame({"train/loss": (steps, loss)})
    line = charts(render_html(Diagnosis("runs/", [rd])))[1]["panels"][0]["lines"][0]
    assert np.cumsum(line["dx"])[-1] == 299 and line["y"][-1] is None and line["y"][19] is not None


def test_index_is_ordered_by_severity_and_links_to_each_run():
    html = render_html(mixed())
    index = html[html.index('<table class="index">'): html.index("</table>")]
    names = re.findall(r'<a href="#(run-\d+)">([^<]*)</a>', index)
    assert [n for _, n in names] == [
        "sweep/lr=1.0/seed0", "sweep/lr=1e-7/seed0", "amp/fp16-run", "resnet18/cifar10", "baseline/seed1",
    ]
    for anchor, _ in names:
        assert f'id="{anchor}"' in html


def test_findings_show_evidence_causes_and_fixes():
    html = render_html(Diagnosis("runs/", [diverging()]))
    assert "Loss blows up and becomes NaN at step 1,450" in html
    assert '<span class="ev">loss level <b>0.53 → inf</b></span>' in html
    assert '<span class="ev">first NaN/inf at <b>step 1,450</b></span>' in html
    assert "<li>diverge cause three</li>" in html
    assert "Confirm with replay: update_ratio" in html
    assert "steps 1,200–1,450" in html


def test_every_log_string_is_escaped():
    html = render_html(Diagnosis("<b>root</b>", [evil(), healthy()]), extra_sections=[("Audit", f"note {EVIL} <img src=x onerror=alert(1)>")])
    assert EVIL not in html
    assert "onerror=alert(1)>" not in html
    assert "<b>root</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script>") == 2  # uPlot and the page's script; data sit in application/json blocks
    assert html.count("<script") == html.count("</script>") == 2 + len(charts(html)) + 1  # + the runs index
    assert 'class="later"' not in html  # a small report keeps everything as markup
    assert "config (1 keys)" in html  # the config value is shown, escaped
    # in the JSON blocks the name is escaped as \u003c...; it reads back as the name itself
    index = json.loads(re.search(r'id="runs-index">(.*?)</script>', html, re.S).group(1))
    assert EVIL in [r["name"] for r in index]


def test_no_plots_option_and_empty_diagnosis():
    assert charts(render_html(mixed(), plots=False)) == {}
    assert "No training runs found under" in render_html(Diagnosis("empty/", []))


def test_panels_follow_the_roles_that_are_logged():
    assert [p.key for p in panels_for(scaler())] == ["loss", "grad_norm", "loss_scale"]
    panels = panels_for(overfitting())
    assert [p.key for p in panels] == ["loss"]
    assert [line.role for line in panels[0].main] == ["train_loss", "val_loss"]
    assert [line.role for line in panels[0].twin] == ["lr"]
    # a finding about a metric no role covers (a reward) still gets its curve drawn, on a panel of its own
    rd = healthy()
    steps = np.arange(100)
    rd.run.scalars = rd.run.scalars.vstack(frame({"episode_reward": (steps, np.sin(steps))}))
    rd.findings.append(finding("oscillate", "warning", "episode_reward", (0, 99), {"period_steps": 6}, "reward oscillates"))
    assert panels_for(rd)[-1].metrics == {"episode_reward"}


def test_downsample_keeps_every_spike_and_drops_nonfinite():
    rng = np.random.default_rng(0)
    n = 200_000
    steps = np.arange(n)
    values = 1 + rng.normal(0, 0.01, n)
    spikes = rng.choice(n, 25, replace=False)
    values[spikes] = 50.0
    values[spikes[:3] + 1] = np.nan
    x, y = downsample(steps, values)
    assert len(x) <= MAX_POINTS
    assert np.all(np.diff(x) > 0) and np.all(np.isfinite(y))
    assert set(spikes) <= set(x.tolist())  # every spike survives thinning
    assert y.min() == np.nanmin(values)
    short = downsample(steps[:10], values[:10])
    assert len(short[0]) == 10


def test_plot_of_a_long_run_renders_and_nan_is_marked():
    plotter = RunPlotter()
    png = plotter.png(healthy("big", n=200_000))
    assert png.startswith(PNG_MAGIC)
    assert plotter.png(diverging()).startswith(PNG_MAGIC)


def test_many_runs_render_with_healthy_ones_collapsed():
    """40 runs here (the 1,000-run timing is benchmarks/report_scale.py's job, not a test's)."""
    d = many(40)
    html = render_html(d)
    assert len(charts(html)) == 40
    # healthy runs start collapsed in a big report; runs with findings are open
    assert html.count("<details open>") == 10


def test_a_big_report_keeps_closed_cards_and_the_index_tail_as_raw_text():
    """The browser scans raw text without building elements: a 1,000-run page opens fast. Log strings in it stay escaped."""
    d = many(40)
    quiet = evil()
    quiet.findings = []  # healthy: its card starts closed and its row is past the first 20
    d.runs.append(quiet)
    html = render_html(d)
    later = re.findall(r'<script type="text/html" class="later" data-what="(\w+)">(.*?)</script>', html, re.S)
    kinds = [what for what, _ in later]
    assert kinds.count("rows") == 1 and kinds.count("body") == 41 - html.count("<details open>")
    index = html[html.index('<table class="index">'): html.index("</table>")]
    assert index.count("<tr>") == 1 + 20  # header + the worst 20
    assert EVIL not in html and any("&lt;script&gt;alert(1)&lt;/script&gt;" in text for _, text in later)


def test_a_big_report_opens_only_its_worst_cards(monkeypatch):
    from logdoctor.report import html as html_report

    monkeypatch.setattr(html_report, "OPEN_AT_MOST", 4)
    html = render_html(many(40))
    assert html.count("<details open>") == 4
    opened = [int(i) for i in re.findall(r'id="run-(\d+)" data-run=\d+><details open>', html)]
    assert opened == [1, 2, 3, 4]


def test_cli_html_to_file(tmp_path):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    steps = np.arange(0, 2000, 10)
    loss = 2.3 * np.exp(-steps / 400) + 0.1
    (run / "metrics.csv").write_text("step,train_loss,lr\n" + "".join(f"{s},{v},0.01\n" for s, v in zip(steps, loss)))
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "runs"), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and len(charts(html)) == 1
    assert result.stdout == ""  # nothing on stdout when writing to a file (where it wrote goes to stderr)


def test_many_runs_are_drawn_in_worker_processes_in_order(monkeypatch):
    from logdoctor.report import plots

    d = many(8, points=50)
    serial = [plots.RunPlotter().png(rd) for rd in d.runs]

    class NoPlotterHere:
        def __init__(self):
            raise AssertionError("drew in the main process: the pool was not used")

    monkeypatch.setattr(plots, "POOL_MIN_RUNS", 4)
    monkeypatch.setattr(plots, "_CHUNK", 2)
    monkeypatch.setattr(plots, "RunPlotter", NoPlotterHere)  # workers import their own, unpatched
    seen = []
    pooled = list(plots.draw_all(d.runs, progress=lambda i, n: seen.append((i, n)), jobs=2))
    assert [p.png for p in pooled] == serial
    assert seen == [(i, 8) for i in range(1, 9)]


def test_reused_figures_leak_nothing_between_runs():
    """The plotter empties and reuses axes; a run drawn after others must look exactly as when drawn alone."""
    from _report_fixtures import flat

    runs = [scaler(), diverging(), overfitting(), healthy(), flat(), evil()]
    alone = [RunPlotter().png(rd) for rd in runs]
    shared = RunPlotter()
    again = [shared.png(rd) for rd in runs + runs[::-1]]
    assert again[:6] == alone and again[6:] == alone[::-1]


def test_a_chart_that_fails_costs_only_that_card(monkeypatch):
    from logdoctor.report import charts as chart_module

    def broken(rd, compact=False):
        if rd.run.name == "amp/fp16-run":
            raise ValueError("bad axis")
        return original(rd, compact)

    original = chart_module.panels_for
    monkeypatch.setattr(chart_module, "panels_for", broken)
    html = render_html(mixed())
    assert "chart failed (ValueError: bad axis)" in html
    assert len(charts(html)) == 4


def test_past_compact_from_runs_healthy_runs_get_the_loss_panel_alone(monkeypatch):
    """A 1,000-run report spent most of its size on healthy runs' full figures."""
    from logdoctor.report import html as html_report

    monkeypatch.setattr(html_report, "COMPACT_FROM", 3)
    d = Diagnosis("runs/", [scaler(), healthy("h1"), healthy("h2"), diverging()])
    panels = [len(spec["panels"]) for spec in charts(render_html(d)).values()]
    assert sorted(panels[:2]) == [2, 3] and panels[2:] == [1, 1]  # the two with findings in full, then h1, h2


def test_evidence_long_tail_is_folded_not_dropped():
    rd = diverging()
    rd.findings[0].evidence = {f"item_{i}": i for i in range(9)}
    page = render_html(Diagnosis("runs/", [rd]), plots=False)
    shown, folded = page.split('<details class="more">')
    assert "item 5" in shown and "item 6" not in shown
    assert "+3 more" in folded and all(f"item {i}" in folded for i in (6, 7, 8))
