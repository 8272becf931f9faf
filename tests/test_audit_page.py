"""The audit's HTML page as data: what workers send back for it, what its charts plot, how its table sorts.

The page in a browser (offline loading, 400 px, hover and zoom) is tested in test_browser.py.
"""
from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from logdoctor.audit import audit
from logdoctor.audit import cache as cache_module
from logdoctor.audit.cache import ResultCache
from logdoctor.audit.page import LOG_SETTING_SPAN, render_page, sweep_data
from logdoctor.audit.result import CURVE_POINTS, RunResult, thin_curve
from logdoctor.audit.summary import AuditReport
from logdoctor.audit.tasks import plan
from logdoctor.audit.worker import run_task
from logdoctor.config import Config
from test_audit import write_run

IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    for i, lr in enumerate((1e-3, 3e-3, 1e-2, 3e-2) * 4):
        write_run(root / f"trial_{i + 1}", lr, seed=i % 4, steps=1000)
    return root


def result(name: str, status: str = "healthy", **params) -> RunResult:
    stats = {"train_loss_final": 1.0, "train_loss_best": 0.9, "val_loss_final": None, "val_loss_best": None, "steps": 10}
    return RunResult(run=name, path=name, format="csv", roles={}, status=status, findings=[], params=params, stats=stats)


def test_thin_curve_keeps_spikes_and_where_the_loss_turned_nan():
    steps = np.arange(5000)
    values = np.exp(-steps / 1000.0)
    values[1234] = 50.0  # a spike
    values[4000:] = np.nan
    curve = thin_curve(steps, values)
    assert len(curve["steps"]) <= CURVE_POINTS + 2 and curve["steps"] == sorted(curve["steps"])
    assert 1234 in curve["steps"] and 50.0 in curve["values"]
    nan_at = [s for s, v in zip(curve["steps"], curve["values"]) if v != v]
    assert nan_at == [4000, 4999]  # the first NaN, and the last step (NaN to the end: the chart spans the run)
    assert all(float(f"{v:.4g}") == v for v in curve["values"] if v == v)  # 4 significant digits


def test_workers_send_back_thinned_loss_curves(sweep: Path):
    report = audit(sweep, jobs=1, use_cache=False)
    for r in report.results:
        assert set(r.curves) == {"train_loss", "val_loss"}
        assert len(r.curves["train_loss"]["steps"]) <= CURVE_POINTS + 1 < 1000
        if r.params["lr"] < 0.01:
            assert len(r.curves["val_loss"]["steps"]) == 20  # every validation point of a short curve
    # the cards draw them: the run diagnosis handed to the renderers holds the thinned curves as its scalars
    rd = report.results[0].to_run_diagnosis()
    assert set(rd.run.metrics) == {"train_loss", "val_loss"}
    # and they stay out of the JSON report
    doc = report.to_json()
    assert "curves" not in json.dumps(doc) and all("curves" not in row for row in doc["table"])


def test_cache_entries_of_the_older_format_are_read_again(sweep: Path, tmp_path: Path, monkeypatch):
    task = plan(sweep)[0]
    config = Config()
    output = run_task(task, config)
    monkeypatch.setattr(cache_module, "CACHE_FORMAT", 1)
    ResultCache(tmp_path / "c", config).put(task, output)  # an entry written before results carried curves
    monkeypatch.setattr(cache_module, "CACHE_FORMAT", 2)
    assert ResultCache(tmp_path / "c", config).get(task) is None
    ResultCache(tmp_path / "c", config).put(task, output)
    again = ResultCache(tmp_path / "c", config).get(task)
    assert again is not None and again.results[0].curves == output.results[0].curves


def test_outcome_is_plotted_against_the_linked_setting_on_a_log_axis(sweep: Path):
    report = audit(sweep, jobs=1, use_cache=False)
    assert report.links and report.links[0].param == "lr"
    data = sweep_data(report, {r.run: f"run-{i}" for i, r in enumerate(report.results, 1)})
    assert data["setting"] == "lr" and data["numeric"] and data["log"]  # 0.001 .. 0.03 spans 30x > LOG_SETTING_SPAN
    assert data["y"] == "val loss"
    by_name = {r["name"]: r for r in data["runs"]}
    assert by_name["trial_4"]["x"] == 0.03 and by_name["trial_4"]["label"] == "0.03"
    assert by_name["trial_4"]["nonfinite"] and by_name["trial_4"]["final"] is None  # diverged to NaN
    assert by_name["trial_1"]["final"] is not None and by_name["trial_1"]["status"] == "healthy"
    # one colour per value, the same for runs that share it, low to high along the ramp
    colors = {r["x"]: r["color"] for r in data["runs"]}
    assert len(set(colors.values())) == 4 and [c for _, c in data["legend"]] == [colors[x] for x in sorted(colors)]
    assert all(r["id"] == f"run-{i}" for i, r in enumerate(data["runs"], 1))


def test_text_settings_are_categories_and_narrow_ones_linear():
    runs = [result(f"r{i}", optimizer=("sgd", "adam", "adamw")[i % 3], width=(64, 128)[i % 2]) for i in range(6)]
    report = AuditReport(root="x", results=runs, errors=[], links=[])
    data = sweep_data(report, {})
    assert data["setting"] == "width"  # no link: the first swept numeric setting
    assert data["numeric"] and not data["log"] and 128 / 64 < LOG_SETTING_SPAN
    assert data["y"] == "train loss"  # no run logs validation
    for r in runs:
        r.params.pop("width")
    data = sweep_data(AuditReport(root="x", results=runs, errors=[], links=[]), {})
    assert data["setting"] == "optimizer" and data["categories"] == ["adam", "adamw", "sgd"]
    assert sorted({r["x"] for r in data["runs"]}) == [0, 1, 2]


def test_a_seed_is_plotted_against_only_when_nothing_else_was_swept():
    runs = [result(f"r{i}", seed=i % 3, optimizer=("sgd", "adam")[i % 2]) for i in range(6)]
    assert sweep_data(AuditReport(root="x", results=runs, errors=[], links=[]), {})["setting"] == "optimizer"
    runs = [result(f"r{i}", data_seed=i % 3, lr=(0.1, 0.01)[i % 2]) for i in range(6)]
    assert sweep_data(AuditReport(root="x", results=runs, errors=[], links=[]), {})["setting"] == "lr"
    runs = [result(f"r{i}", seed=i % 3) for i in range(6)]
    assert sweep_data(AuditReport(root="x", results=runs, errors=[], links=[]), {})["setting"] == "seed"


def test_the_page_table_has_every_swept_setting_and_escapes_log_strings(tmp_path: Path):
    names = [f"version_{i}" for i in (1, 2, 10)] + [IMG]
    runs = [result(n, "critical" if i == 3 else "healthy", lr=10.0 ** -(i + 1), note=f"<b>{i % 2}</b>") for i, n in enumerate(names)]
    html = render_page(AuditReport(root=str(tmp_path), results=runs, errors=[IMG], links=[]))
    assert "<img src=x" not in html and "<b>" not in html  # names, values and errors escaped in markup
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in html  # ... and in the charts' JSON
    table = re.search(r'<table class="sweep">(.*?)</table>', html, re.S).group(1)
    heads = [unescape(re.sub("<.*?>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    assert heads[:5] == ["run", "lr", "status", "top finding", "note"]  # the key setting beside the run's name
    rows = re.findall(r'<td class="run" data-sort="(\d+)"><a href="#(run-\d+)">(.*?)</a>', table)
    natural = sorted(rows, key=lambda r: int(r[0]))
    assert [unescape(n) for _, _, n in natural] == [IMG, "version_1", "version_2", "version_10"]
    for _, anchor, name in rows:  # each row links to that run's card
        assert re.search(rf'<section class="run [a-z-]+" id="{anchor}"[^>]*><details[^>]*><summary>.*?<span class="runname">{re.escape(name)}</span>', html)
