"""benchmarks/bench_analyze.py: its stage breakdown covers every rule and adds up (a smoke run on a small CSV run)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from logdoctor.rules import all_rules

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_analyze.py"


def test_breakdown_names_every_stage_and_rule(tmp_path):
    steps = np.arange(400)
    loss = 2.0 * np.exp(-steps / 80) + 0.3 + 0.01 * np.sin(steps)
    rows = ["step,train/loss,lr"] + [f"{s},{v:.6f},0.001" for s, v in zip(steps, loss)]
    (tmp_path / "metrics.csv").write_text("\n".join(rows) + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--runs", "1"], capture_output=True, text=True, check=True).stdout
    assert "800 scalars" in out and "CLI analyze --format json: min" in out
    table = out.split("first imports\n", 1)[1].splitlines()
    stages = {line[:36].strip(): float(line[36:45]) for line in table if line.strip()}
    assert {f"rule {code}" for code in all_rules()} <= set(stages)
    assert {"import logdoctor", "read (load_runs)", "roles (split by metric + assign)", "rank", "render json"} <= set(stages)
    parts = sum(v for k, v in stages.items() if k != "total (in process)")
    assert 0 < parts <= stages["total (in process)"] + 1e-3
