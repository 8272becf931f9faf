"""What a run's figure draws: lone finite points, the clip threshold, spike ticks, codes in the legend."""
from __future__ import annotations

import numpy as np

from _report_fixtures import _run, finding
from logdoctor.model import RunDiagnosis
from logdoctor.report.plots import RunPlotter


def drawn(rd: RunDiagnosis) -> list:
    """Draw the run and return its figure's axes (the plotter keeps the figure for reuse)."""
    plotter = RunPlotter()
    assert plotter.png(rd)
    (fig, axes, _twin), = plotter._layouts.values()
    return axes


def test_a_lone_finite_point_between_nans_gets_a_marker():
    steps = np.arange(0, 400, 10)
    loss = np.full(len(steps), np.nan)
    loss[0] = 2.3
    rd = RunDiagnosis(_run("nan-run", {"loss": (steps, loss)}), {"train_loss": "loss"}, [])
    markers = [line for line in drawn(rd)[0].lines if line.get_marker() == "o" and line.get_linestyle() == "None"]
    assert len(markers) == 1 and list(markers[0].get_xdata()) == [0]


def test_clip_threshold_is_a_dashed_line_on_the_grad_norm_panel():
    steps = np.arange(300)
    rd = RunDiagnosis(
        _run("clip", {"loss": (steps, np.linspace(2, 1, 300)), "grad_norm": (steps, np.full(300, 3.0))}),
        {"train_loss": "loss", "grad_norm": "grad_norm"},
        [finding("clip_saturation", "warning", "grad_norm", (0, 299), {"clip_threshold": 0.5, "fraction_clipped": 1.0}, "clipped")],
    )
    grad = drawn(rd)[1]
    assert any(line.get_linestyle() == "--" and list(line.get_ydata()) == [0.5, 0.5] for line in grad.lines)
    assert "clip threshold 0.5" in [t.get_text() for t in grad.get_legend().get_texts()]


def test_spike_steps_are_ticks_and_codes_sit_in_the_legend_not_on_the_data():
    steps = np.arange(1000)
    rd = RunDiagnosis(
        _run("spiky", {"loss": (steps, np.linspace(2, 1, 1000))}),
        {"train_loss": "loss"},
        [finding("spike", "warning", "loss", (100, 900), {"spikes": 3, "spike_steps": [100, 500, 900]}, "spikes")],
    )
    ax = drawn(rd)[0]
    ticks = [c for c in ax.collections if len(c.get_segments()) == 3]
    assert ticks and sorted(seg[0][0] for seg in ticks[0].get_segments()) == [100, 500, 900]
    assert "spike" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert not ax.texts  # no label boxes over the curves
