"""What a run's figure draws: lone finite points, each finding's evidence (clip threshold, spike ticks, best
validation step, epoch boundaries, task metric), scales that show it, labels in the legend."""
from __future__ import annotations

import numpy as np

from _report_fixtures import _run, finding
from logdoctor.model import RunDiagnosis
from logdoctor.report.figure import panels_for
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
    assert "spike (steps 100–900)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert not ax.texts  # no label boxes over the curves


def overfit_run(task: bool = False) -> RunDiagnosis:
    """Train loss falls over four decades; validation bottoms at 0.32 (step 3000) and rises to 0.41."""
    steps = np.arange(0, 8001, 20)
    train = 0.3 * np.exp(-steps / 700) + 1e-4
    vsteps = np.arange(0, 8001, 500)
    val = np.where(vsteps <= 3000, 0.32 + 0.5 * np.exp(-vsteps / 600), 0.32 + (vsteps - 3000) * 1.8e-5)
    series = {"train_loss": (steps, train), "val_loss": (vsteps, val)}
    evidence = {"val_best": 0.32, "val_best_step": 3000, "val_end": 0.41}
    if task:
        series["eval_accuracy"] = (vsteps, np.linspace(0.5, 0.9, len(vsteps)))
        evidence |= {"task_metric": "eval_accuracy", "task_metric_at_val_best": 0.7, "task_metric_end": 0.9}
    return RunDiagnosis(
        _run("overfit", series), {"train_loss": "train_loss", "val_loss": "val_loss"},
        [finding("overfit", "warning", "val_loss", (3000, 8000), evidence, "validation rises")],
    )


def test_overfit_marks_the_best_validation_step_on_a_scale_where_the_rise_shows():
    panel, = panels_for(overfit_run())
    assert panel.scale == "linear"  # a log axis over 1e-4..0.8 would flatten 0.32 -> 0.41 to a sliver
    lo, hi = panel.ylim
    assert lo < 0.32 and 0.41 < hi
    assert (0.41 - 0.32) / (hi - lo) > 0.15  # the rise takes a visible share of the panel's height
    kinds = {(m.kind, m.x0, m.y) for m in panel.marks}
    assert ("point", 3000.0, 0.32) in kinds and ("level", 3000.0, 0.32) in kinds
    assert ("band", 3000.0, None) in kinds  # from the best step to the end, not the whole run
    assert drawn(overfit_run())  # and matplotlib draws it


def test_the_task_metric_the_finding_names_gets_its_own_panel():
    panels = panels_for(overfit_run(task=True))
    assert [p.key for p in panels] == ["loss", "metric"]
    assert panels[1].metrics == {"eval_accuracy"}
    assert [(m.kind, m.x0) for m in panels[1].marks] == [("vline", 3000.0)]


def test_a_clip_threshold_decades_below_the_norms_puts_grad_norm_on_a_log_scale():
    steps = np.arange(300)
    rd = RunDiagnosis(
        _run("clip", {"loss": (steps, np.linspace(2, 1, 300)), "grad_norm": (steps, np.linspace(1, 5, 300))}),
        {"train_loss": "loss", "grad_norm": "grad_norm"},
        [finding("clip_saturation", "warning", "grad_norm", (0, 299), {"clip_threshold": 0.01}, "clipped")],
    )
    grad = panels_for(rd)[1]
    assert grad.scale == "log" and ("level", 0.01) in {(m.kind, m.y) for m in grad.marks}


def test_epoch_boundaries_and_the_lr_floor_are_drawn_where_the_evidence_puts_them():
    steps = np.arange(1000)
    rd = RunDiagnosis(
        _run("epochs", {"loss": (steps, np.linspace(2, 1, 1000)), "lr": (steps, np.maximum(1e-3 - steps * 2e-6, 1e-5))}),
        {"train_loss": "loss", "lr": "lr"},
        [
            finding("epoch_jumps", "warning", "loss", (250, 999), {"boundary_steps": [250, 500, 750]}, "jumps"),
            finding("lr_schedule_mismatch", "warning", "lr", (495, 999), {"floor_step": 495}, "floor"),
        ],
    )
    panel, = panels_for(rd)
    assert ("vlines", (250.0, 500.0, 750.0)) in {(m.kind, tuple(m.xs)) for m in panel.marks}
    assert any(m.kind == "vline" and m.x0 == 495 and "floor" in m.label for m in panel.marks)


def test_a_nan_is_labelled_in_the_legend_not_over_the_curve():
    steps = np.arange(100)
    grad = np.where(steps >= 40, np.nan, 1.0)
    rd = RunDiagnosis(_run("nan", {"loss": (steps, np.linspace(2, 1, 100)), "g": (steps, grad)}), {"train_loss": "loss", "grad_norm": "g"}, [])
    axes = drawn(rd)
    assert "nan in g from step 40" in [t.get_text() for t in axes[1].get_legend().get_texts()]
    assert not axes[1].texts


def test_a_flat_loss_is_drawn_from_zero_with_the_chance_level_so_its_noise_keeps_its_size():
    """A flat run's noise of ±0.004 zoomed to the full height read as an oscillation."""
    from _report_fixtures import flat

    rd = flat()
    rd.findings[0].evidence["chance_level"] = 2.3026
    loss = panels_for(rd)[0]
    assert loss.scale == "linear" and loss.ylim[0] == 0 and loss.ylim[1] > 2.3
    chance = [m for m in loss.marks if m.kind == "level" and "chance" in m.label]
    assert [m.y for m in chance] == [2.3026] and chance[0].dashed
    ax = drawn(rd)[0]
    assert ax.get_ylim()[0] == 0 and "chance level 2.303 (ln K)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_loss_logged_in_parts_shows_every_part_and_an_aggregate_is_not_a_part():
    """A YOLO run showed its box loss alone, as if it were the loss."""
    from logdoctor.roles import assign_roles, primary

    steps = np.arange(100)
    names = ["train/box_loss", "train/cls_loss", "train/dfl_loss", "val/box_loss", "val/cls_loss"]
    run = _run("yolo", {n: (steps, np.linspace(2, 1, 100) + i) for i, n in enumerate(names)})
    roles = primary(assign_roles(run.metrics))
    loss = panels_for(RunDiagnosis(run, roles, []))[0]
    assert [line.label for line in loss.lines] == [
        "train: train/box_loss", "train: train/cls_loss", "train: train/dfl_loss", "val: val/box_loss", "val: val/cls_loss",
    ]
    assert len({line.color for line in loss.lines}) == len(loss.lines)
    lightning = _run("pl", {"train_loss_step": (steps, np.linspace(2, 1, 100)), "train_loss_epoch": (steps[::10], np.linspace(2, 1, 10))})
    assert [line.label for line in panels_for(RunDiagnosis(lightning, {"train_loss": "train_loss_step"}, []))[0].lines] == ["train: train_loss_step"]
