"""Start-up: what one everyday call costs, whole process, beside runmedic in the same run.

logdoctor is called once per run (in CI, over a sweep, by an agent, on every save), so each call
pays its start-up. Measured here, each command in a fresh process: `--version`, `explain flat`, and
`analyze` of one small run of each format (sample_runs/, plus a console log and a history JSONL
written to a temporary folder), next to `runmedic diagnose` of the same run, `python -c pass` (the
interpreter floor) and `python -c "import polars, numpy"` (the dataframe floor). CPU seconds
(user + system) and peak RSS come from the child's rusage; each repeat runs every command once, in
turn, so a load change hits all of them alike. Bytecode is cached in a temporary folder (a warm-up
call writes it), as in an installed package.

    python3 -m venv /tmp/rm-venv && /tmp/rm-venv/bin/pip install runmedic   # kept out of logdoctor's venv
    python benchmarks/bench_startup.py --runmedic /tmp/rm-venv/bin/runmedic [--repeats 7] [--markdown]
    python benchmarks/bench_startup.py --heavy      # also lists heavy modules each command imported
    python benchmarks/bench_startup.py --stages sample_runs/csv_healthy_amp_charlm   # where one analyze's CPU goes
    # an older tree beside this one: git archive REV logdoctor | tar -x -C OLD
    python benchmarks/bench_startup.py --runmedic ... --before OLD[:DIR_WITH_ITS_TYPER]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_runs"
HEAVY = ("scipy", "matplotlib", "torch", "sklearn", "optuna", "mcp", "pandas", "tbparse", "tensorboard", "dask", "markdown_it", "pydantic", "google", "crc32c", "polars", "numpy")

#: One small run of each format (label, folder under sample_runs/).
SAMPLE_RUNS = (
    ("CSV, 400 rows", "csv_healthy_amp_charlm"),
    ("Lightning metrics.csv", "pl_healthy_onecycle_cnn"),
    ("HF trainer_state.json", "hf_healthy_linear_warmup"),
    ("TensorBoard, simple_value", "tb_healthy_adam_constant"),
    ("TensorBoard, tensor (TF2)", "tbn_healthy_charlm_warmup_cosine"),
    ("Keras train/ + validation/", "keras_healthy_short_10_epochs"),
    ("MLflow mlruns/", "mlf_healthy_short_10_epochs"),
    ("W&B offline .wandb", "wb_healthy_amp_digits"),
)


def write_generated(folder: Path) -> list[tuple[str, Path]]:
    """A console log and a W&B history JSONL of 400 steps (formats sample_runs/ holds no run of)."""
    log = folder / "console" / "train.log"
    log.parent.mkdir(parents=True)
    hist = folder / "history" / "files" / "wandb-history.jsonl"
    hist.parent.mkdir(parents=True)
    lines, rows = [], []
    for step in range(1, 401):
        loss = 2.3 * math.exp(-step / 150) + 0.1 + 0.02 * math.sin(step)
        lines.append(f"epoch {step // 100} | step {step}/400 | loss {loss:.4f} | lr 3.0e-04")
        rows.append(json.dumps({"_step": step, "_runtime": step * 0.1, "train/loss": round(loss, 5), "lr": 3e-4}))
    log.write_text("\n".join(lines) + "\n")
    hist.write_text("\n".join(rows) + "\n")
    return [("console log, 400 lines", log.parent), ("W&B history JSONL, 400 rows", hist.parent.parent)]


@dataclass
class Case:
    label: str
    cmd: list[str]
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    rc: int = 0
    #: PYTHONPATH of this case alone (an older checkout), else the environment's.
    pythonpath: str | None = None

    def run(self, env: dict[str, str]) -> None:
        # `python -m` puts the working folder first on sys.path: an older tree runs from its own folder
        cwd = self.pythonpath.split(os.pathsep)[0] if self.pythonpath else REPO
        if self.pythonpath:
            env = dict(env, PYTHONPATH=self.pythonpath)
        start = time.perf_counter()
        proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        self.wall.append(time.perf_counter() - start)
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.rc = proc.returncode
        self.cpu.append(usage.ru_utime + usage.ru_stime)
        self.rss.append(usage.ru_maxrss / 1024)  # KiB on Linux

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu)

    @property
    def rss_mib(self) -> float:
        return statistics.median(self.rss)

    @property
    def wall_s(self) -> float:
        return statistics.median(self.wall)


def heavy_imports(args: list[str]) -> list[str]:
    """Top-level heavy modules a `logdoctor ARGS` call ended with (in a fresh interpreter)."""
    code = ("import json, sys\nfrom logdoctor.cli import main\nsys.argv = ['logdoctor', *json.loads(sys.argv[1])]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('\\nMODULES ' + ' '.join(sorted({m.split('.')[0] for m in sys.modules})) + '\\n')\n")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True).stderr
    loaded = next((line.split()[1:] for line in reversed(out.splitlines()) if line.startswith("MODULES")), [])
    return [m for m in HEAVY if m in loaded]


#: One `analyze` stage by stage in a fresh interpreter: CPU milliseconds per stage, '|'-separated.
_STAGES = """
import sys, time
marks = [("", time.process_time())]
def mark(name):
    marks.append((name, time.process_time()))
import numpy; mark("import numpy")
import polars; mark("import polars")
import typer, rich.console; mark("import typer, rich.console")
import logdoctor.cli, logdoctor.diagnose; mark("import logdoctor (cli, diagnose, model, config, roles)")
from logdoctor.ingest import _formats, load_runs; _formats(); mark("import the format modules (discovery offers each folder to all)")
from logdoctor.rules import all_rules; all_rules(); mark("import the rule modules")
from pathlib import Path
runs, errors = load_runs(Path(sys.argv[1])); mark("read the run (load_runs)")
from logdoctor.config import Config
from logdoctor.diagnose import build_rules, diagnose_run
config = Config(); results = [diagnose_run(run, config, build_rules(config)) for run in runs]; mark("diagnose (roles, rules, did-it-learn)")
from logdoctor.model import Diagnosis
from logdoctor.report.json_report import render_json
render_json(Diagnosis(root=sys.argv[1], runs=results, errors=errors)); mark("render the JSON report")
print("|".join(f"{name}={(t - t0) * 1000:.2f}" for (name, t), (_, t0) in zip(marks[1:], marks[:-1])))
"""


def stages(run: str, repeats: int, env: dict[str, str]) -> None:
    """Median CPU of each stage of one in-process analyze of `run` over `repeats` fresh interpreters."""
    got: dict[str, list[float]] = {}
    for _ in range(repeats + 1):  # the first writes the bytecode cache
        out = subprocess.run([sys.executable, "-c", _STAGES, run], capture_output=True, text=True, env=env, cwd=REPO, check=True).stdout
        for part in out.strip().split("|"):
            name, ms = part.rsplit("=", 1)
            got.setdefault(name, []).append(float(ms))
    print(f"| stage of `analyze {run}`, in process | CPU |\n| --- | ---: |")
    for name, values in got.items():
        print(f"| {name} | {statistics.median(values[1:]):.0f} ms |")
    print(f"| total | {sum(statistics.median(v[1:]) for v in got.values()):.0f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runmedic", default=shutil.which("runmedic"), help="runmedic executable (in its own venv)")
    parser.add_argument("--heavy", action="store_true", help="list the heavy modules each logdoctor command imported")
    parser.add_argument("--before", help="PYTHONPATH of an older logdoctor tree, timed beside this one")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--stages", metavar="RUN", help="only: where one analyze of RUN spends its CPU, stage by stage")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_startup_"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NO_COLOR="1", COLUMNS="100", PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    if args.stages:
        print(f"load average {os.getloadavg()[0]:.1f}")
        stages(args.stages, args.repeats, env)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    ld = [sys.executable, "-m", "logdoctor"]
    rm = [args.runmedic] if args.runmedic else None

    floors = [Case("python -c pass", [sys.executable, "-c", "pass"]),
              Case('python -c "import polars, numpy"', [sys.executable, "-c", "import polars, numpy"])]
    commands: list[tuple[str, Case, Case | None]] = [
        ("--version", Case("", [*ld, "--version"]), Case("", [*rm, "--version"]) if rm else None),
        ("explain flat", Case("", [*ld, "explain", "flat"]), None),
    ]
    runs = [(label, SAMPLES / name) for label, name in SAMPLE_RUNS] + write_generated(tmp / "runs")
    for label, path in runs:
        commands.append((f"analyze: {label}", Case(label, [*ld, "analyze", str(path), "-f", "json"]),
                         Case(label, [*rm, "diagnose", str(path), "--json"]) if rm else None))
    before = {name: Case(ours.label, ours.cmd, pythonpath=args.before) for name, ours, _ in commands} if args.before else {}
    every = floors + [c for name, a, b in commands for c in (before.get(name), a, b) if c is not None]

    load_before = os.getloadavg()
    for case in every:  # warm-up: writes the bytecode cache, touches the files
        case.run(env)
        case.cpu.clear(), case.wall.clear(), case.rss.clear()
    for _ in range(args.repeats):
        for case in every:
            case.run(env)
    load_after = os.getloadavg()
    shutil.rmtree(tmp, ignore_errors=True)

    note = (f"{args.repeats} repeats, medians; {os.cpu_count()} cores; load average {load_before[0]:.1f} before, "
            f"{load_after[0]:.1f} after; Python {sys.version.split()[0]}")
    floor = floors[0]
    if args.markdown:
        print(f"| floor | CPU | peak RSS |\n| --- | ---: | ---: |")
        for case in floors:
            print(f"| `{case.label}` | {case.cpu_s:.3f} s | {case.rss_mib:.0f} MiB |")
        print()
        old = " logdoctor before CPU |" if before else ""
        print(f"| command |{old} logdoctor CPU | runmedic CPU | CPU ratio | logdoctor wall | peak RSS logdoctor / runmedic |")
        print("| --- |" + " ---: |" * (6 if before else 5))
        for name, ours, theirs in commands:
            other = "—" if theirs is None else f"{theirs.cpu_s:.3f} s" + ("" if theirs.rc == 0 else " (cannot read it)")
            ratio = "—" if theirs is None or theirs.rc else f"{ours.cpu_s / theirs.cpu_s:.1f}×"
            rss = f"{ours.rss_mib:.0f}" + ("" if theirs is None else f" / {theirs.rss_mib:.0f}") + " MiB"
            was = f" {before[name].cpu_s:.3f} s ({before[name].rss_mib:.0f} MiB) |" if before else ""
            print(f"| {name} |{was} {ours.cpu_s:.3f} s | {other} | {ratio} | {ours.wall_s:.2f} s | {rss} |")
        print(f"\n{note}")
    else:
        print(note)
        for case in floors:
            print(f"{case.label:<44}{case.cpu_s:>8.3f}s CPU {case.rss_mib:>6.0f} MiB")
        print(f"{'command':<44}{'before' if before else '':>9}{'logdoctor':>10}{'runmedic':>10}{'ratio':>7}{'wall':>8}{'RSS MiB':>14}")
        for name, ours, theirs in commands:
            was = f"{before[name].cpu_s:.3f}s" if before else ""
            other = "-" if theirs is None else (f"{theirs.cpu_s:.3f}s" if theirs.rc == 0 else "failed")
            ratio = "-" if theirs is None or theirs.rc else f"{ours.cpu_s / theirs.cpu_s:.1f}x"
            rss = f"{ours.rss_mib:.0f}" + ("" if theirs is None else f"/{theirs.rss_mib:.0f}")
            flag = "" if ours.rc == 0 else f" (exit {ours.rc})"
            print(f"{name:<44}{was:>9}{ours.cpu_s:>9.3f}s{other:>10}{ratio:>7}{ours.wall_s:>7.2f}s{rss:>14}{flag}")
        print(f"(interpreter floor {floor.cpu_s:.3f} s CPU)")
    if args.heavy:
        for name, ours, _ in commands:
            print(f"heavy modules, {name}: {', '.join(heavy_imports(ours.cmd[3:])) or 'none'}")


if __name__ == "__main__":
    main()
