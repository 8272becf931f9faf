"""Hand-built diagnoses for the renderer tests.

Renderers are pure functions of a Diagnosis, so their tests build one
directly: runs with deterministic synthetic curves (a divergence to NaN, a flat
loss, an overfit, an AMP scaler collapse, a healthy run, one run whose name,
metric and config are HTML/Markdown injection attempts) and findings shaped
like the rules' (evidence dicts of numbers, causes, fixes, a replay probe).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from logdoctor.model import Diagnosis, Finding, Run, RunDiagnosis, tidy

EVIL = "<script>alert(1)</script>"


def frame(series: dict[str, tuple[np.ndarray, np.ndarray]]) -> pl.DataFrame:
    parts = [
        pl.DataFrame({"metric": [name] * len(steps), "step": np.asarray(steps, dtype=np.int64), "value": np.asarray(values, dtype=float)})
        for name, (steps, values) in series.items()
    ]
    return tidy(pl.concat(parts))


def _run(name: str, series: dict, fmt: str = "tensorboard", config: dict | None = None, warnings=None) -> Run:
    return Run(name=name, path=f"/runs/{name}", format=fmt, scalars=frame(series), config=config or {}, warnings=list(warnings or []))


def finding(code: str, severity: str, metric: str, steps, evidence: dict, title: str, conf: float = 0.9) -> Finding:
    return Finding(
        code=code,
        severity=severity,
        confidence=conf,
        title=title,
        metric=metric,
        steps=steps,
        evidence=evidence,
        causes=[f"{code} cause one: learning rate far from the stable range", f"{code} cause two", f"{code} cause three"],
        fixes=[f"{code} fix: run an LR range test and set the LR a decade below divergence", "Confirm with replay: update_ratio"],
        probe="update_ratio",
    )


def diverging() -> RunDiagnosis:
    steps = np.arange(0, 1500, 5)
    loss = 2.3 * np.exp(-steps / 600) + 0.4
    loss[steps > 1200] *= np.exp((steps[steps > 1200] - 1200) / 40.0)
    loss[steps >= 1450] = np.nan
    grad = 1 + np.where(steps > 1200, np.exp((steps - 1200) / 50.0), 0)
    run = _run("sweep/lr=1.0/seed0", {"train/loss": (steps, loss), "lr": (steps, np.full(len(steps), 1.0)), "grad_norm": (steps, grad)})
    f = finding(
        "diverge", "critical", "train/loss", (1200, 1450),
        {"loss_start": 0.53, "loss_end": float("inf"), "first_nonfinite_step": 1450, "growth_per_step": 0.025},
        "Loss blows up and becomes NaN at step 1,450", 0.97,
    )
    return RunDiagnosis(run=run, roles={"train_loss": "train/loss", "lr": "lr", "grad_norm": "grad_norm"}, findings=[f])


def flat() -> RunDiagnosis:
    rng = np.random.default_rng(1)
    steps = np.arange(0, 4001, 10)
    loss = 2.302 - 7e-7 * steps + rng.normal(0, 0.004, len(steps))
    run = _run("sweep/lr=1e-7/seed0", {"loss": (steps, loss), "learning_rate": (steps, np.full(len(steps), 1e-7))}, fmt="csv")
    f = finding(
        "flat", "critical", "loss", (0, 4000),
        {"loss_start": 2.301, "loss_end": 2.298, "slope_per_step": -7e-7, "p": 0.41},
        "Loss stays at its initial level (≈ log 10): no learning", 0.93,
    )
    return RunDiagnosis(run=run, roles={"train_loss": "loss", "lr": "learning_rate"}, findings=[f])


def overfitting() -> RunDiagnosis:
    steps = np.arange(0, 8001, 20)
    train = 2.0 * np.exp(-steps / 1500) + 0.05
    vsteps = np.arange(0, 8001, 500)
    val = 2.0 * np.exp(-vsteps / 1500) + 0.3 + np.maximum(0, vsteps - 3000) * 1e-4
    lr = 3e-4 * 0.5 * (1 + np.cos(np.pi * steps / 8000))
    run = _run("resnet18/cifar10", {"train_loss": (steps, train), "val_loss": (vsteps, val), "lr": (steps, lr)}, fmt="lightning")
    f = finding(
        "overfit", "warning", "val_loss", (3000, 8000),
        {"val_min": 0.41, "val_min_step": 3000, "val_end": 0.82, "train_drop_frac": 0.62},
        "Validation loss rises from step 3,000 while train loss keeps falling", 0.88,
    )
    info = Finding("spike", "info", 0.5, "One small loss spike that recovered", "train_loss", (4200, 4200), {"height_sigma": 4.1})
    return RunDiagnosis(run=run, roles={"train_loss": "train_loss", "val_loss": "val_loss", "lr": "lr"}, findings=[f, info])


def scaler() -> RunDiagnosis:
    steps = np.arange(0, 3000, 10)
    loss = 3.0 * np.exp(-steps / 5000) + 0.5
    scale = 65536.0 / 2 ** np.minimum(15, steps // 200)
    run = _run("amp/fp16-run", {"train/loss": (steps, loss), "scaler/scale": (steps, scale), "grad_norm": (steps, np.full(len(steps), 3.0))})
    f = finding(
        "scaler_collapse", "warning", "scaler/scale", (0, 3000),
        {"scale_start": 65536.0, "scale_end": 2.0, "halvings": 15, "frac_steps_skipped": 0.31},
        "AMP loss scale keeps halving toward 1: steps are being skipped", 0.9,
    )
    return RunDiagnosis(run=run, roles={"train_loss": "train/loss", "loss_scale": "scaler/scale", "grad_norm": "grad_norm"}, findings=[f])


def healthy(name: str = "baseline/seed1", n: int = 2000, seed: int = 0) -> RunDiagnosis:
    rng = np.random.default_rng(seed)
    steps = np.arange(n)
    loss = 2.3 * np.exp(-steps / (n / 4)) + 0.2 + rng.normal(0, 0.01, n)
    run = _run(name, {"train/loss": (steps, loss)})
    return RunDiagnosis(run=run, roles={"train_loss": "train/loss"}, findings=[])


def evil() -> RunDiagnosis:
    steps = np.arange(0, 500, 5)
    loss = 1.0 + 0.0 * steps
    metric = f"loss/{EVIL}"
    run = _run(EVIL, {metric: (steps, loss)}, config={"note": EVIL}, warnings=[f"{EVIL}.tfevents: truncated record skipped"])
    f = finding("flat", "critical", metric, (0, 495), {"loss_start": 1.0, "loss_end": 1.0, "tag": EVIL}, f"{metric} is constant")
    f.causes = [f"a cause quoting {EVIL}"]
    return RunDiagnosis(run=run, roles={"train_loss": metric}, findings=[f])


def mixed() -> Diagnosis:
    """Five runs covering every status, several panel layouts, NaN, an info finding and a warning line."""
    return Diagnosis(root="runs/", runs=[healthy(), diverging(), flat(), overfitting(), scaler()])


def many(n: int, points: int = 200) -> Diagnosis:
    """n small runs, one in four with a finding, for the scale test."""
    runs = []
    for i in range(n):
        rd = healthy(f"sweep/run-{i:04d}", n=points, seed=i)
        if i % 4 == 0:
            rd.findings.append(finding("crawl", "warning", "train/loss", (0, points - 1), {"slope_per_step": -1e-5, "p": 0.01}, "Loss falls too slowly"))
        runs.append(rd)
    return Diagnosis(root="sweep/", runs=runs)
