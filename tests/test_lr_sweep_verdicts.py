"""A real SGD learning-rate sweep read as a user reads it: the verdicts follow the learning rate.

tests/data/lr_sweep (benchmarks/gen_lr_sweep.py) is 24 Lightning runs of one recipe at lr 0.01-30.
At lr >= 3 SGD overshoots: the runs blow up to NaN, sit at chance (ln 10) or climb above their
start; none of them learned, so none may read healthy. At lr <= 1 every run learned (its
validation got far below the untrained loss), however it bounced after: none may be said to
have not learned.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from logdoctor.diagnose import analyze

SWEEP = Path(__file__).parent / "data" / "lr_sweep"


@pytest.fixture(scope="module")
def verdicts():
    diagnosis = analyze(SWEEP)
    out = {}
    for r in diagnosis.runs:
        lr = yaml.safe_load((Path(r.run.path) / "hparams.yaml").read_text())["lr"]
        out[r.run.path] = (lr, r)
    assert len(out) == 24
    return out


def test_no_run_at_lr_3_or_more_is_healthy(verdicts):
    healthy = [path for path, (lr, r) in verdicts.items() if lr >= 3 and r.status == "healthy"]
    assert not healthy


def test_no_run_at_lr_1_or_less_is_said_to_have_not_learned(verdicts):
    unlearned = [path for path, (lr, r) in verdicts.items() if lr <= 1 and r.learning.learned is False]
    assert not unlearned


def test_a_run_that_never_left_chance_is_named_for_it(verdicts):
    """At lr 3 a run whose loss ends at ln 10 with validation never below the untrained loss is flat
    or diverged: a failure to learn, critical."""
    failing = [r for lr, r in verdicts.values() if lr >= 3]
    assert all(r.findings and r.findings[0].code in ("flat", "diverge") and r.findings[0].severity == "critical" for r in failing)
