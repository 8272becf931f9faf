"""End-to-end `logdoctor analyze` on a long run, with a per-stage breakdown.

Two measurements, each in fresh interpreters so imports and caches are paid
as a user pays them:

* the CLI as a user runs it: `python -m logdoctor analyze DIR --format json`,
  wall time over `--runs` runs (min and median);
* one instrumented run of the same pipeline, stage by stage: importing
  logdoctor, reading (`load_runs`), roles (splitting the tidy table by metric
  and assigning roles), building the role series the rules read, each rule's
  `check` in catalogue order (a rule that is first to need a lazily imported
  module, e.g. scipy, pays for that import: such modules are named), ranking
  and rendering the JSON report.

The default run is the 2,000,000-scalar TensorBoard file written by
`gen_large_tb.py` (200k steps x 10 tags, simple_value encoding). Target: the
CLI end to end in <= 5 s on the 2-core reference machine.

    python benchmarks/gen_large_tb.py                    # once, writes benchmarks/data/
    nice -n 10 python benchmarks/bench_analyze.py        # CLI x3 + breakdown
    python benchmarks/bench_analyze.py --markdown        # tables for the README
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).parent / "data" / "tb_simple_value"
#: Packages whose first import inside a stage is worth naming (they cost tenths of a second).
HEAVY = ("scipy.stats", "scipy.ndimage", "scipy.signal", "scipy.special", "scipy.optimize", "sklearn", "matplotlib", "pandas", "torch")

#: The instrumented child: prints one JSON object {"stages": [[name, seconds, [imports]]...], "scalars", "findings"}.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
folder, heavy = sys.argv[1], sys.argv[2].split(",")
stages = []

def mark(name, start, before):
    new = sorted(m for m in heavy if m in sys.modules and m not in before)
    stages.append([name, time.perf_counter() - start, new])

def loaded():
    return {m for m in heavy if m in sys.modules}

before = loaded()
from logdoctor.config import Config
from logdoctor.diagnose import build_rules, rank
from logdoctor.ingest import load_runs
from logdoctor.model import Diagnosis, RunDiagnosis
from logdoctor.report.json_report import render_json
from logdoctor.view import RunView
mark("import logdoctor", t0, before)

before, start = loaded(), time.perf_counter()
runs, errors = load_runs(folder)
mark("read (load_runs)", start, before)
if errors or not runs:
    sys.exit(f"{folder}: {errors or 'no run found'}")

config = Config()
rules = build_rules(config)
results, scalars = [], 0
for run in runs:
    scalars += run.scalars.height
    before, start = loaded(), time.perf_counter()
    view = RunView(run, config.roles)
    roles = view.roles
    mark("roles (split by metric + assign)", start, before)
    before, start = loaded(), time.perf_counter()
    for name in set(roles.values()):
        view.metric(name)
    mark("role series (sort, dedupe)", start, before)
    findings = []
    for rule in rules:
        before, start = loaded(), time.perf_counter()
        findings.extend(rule.check(view))
        mark(f"rule {rule.code}", start, before)
    before, start = loaded(), time.perf_counter()
    results.append(RunDiagnosis(run=run, roles=roles, findings=rank(findings)))
    mark("rank", start, before)

before, start = loaded(), time.perf_counter()
text = render_json(Diagnosis(root=folder, runs=results, errors=errors))
mark("render json", start, before)
stages.append(["total (in process)", time.perf_counter() - t0, []])
print(json.dumps({"stages": stages, "scalars": scalars, "findings": sum(len(r.findings) for r in results)}))
"""


def cli_times(folder: Path, runs: int) -> list[float]:
    """Wall time of `python -m logdoctor analyze FOLDER --format json`, `runs` times."""
    out = []
    env = dict(os.environ, NO_COLOR="1")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "logdoctor", "analyze", str(folder), "--format", "json", "--quiet"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        out.append(time.perf_counter() - start)
    return out


def breakdown(folder: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(folder), ",".join(HEAVY)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit((proc.stderr.strip().splitlines() or ["breakdown failed"])[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DATA, help="a run folder (default: the 2M-scalar TensorBoard run)")
    parser.add_argument("--runs", type=int, default=3, help="end-to-end CLI runs")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if not args.folder.exists():
        sys.exit(f"{args.folder}: not found; run benchmarks/gen_large_tb.py first")
    load = os.getloadavg()[0]
    stages = breakdown(args.folder)
    times = cli_times(args.folder, args.runs) if args.runs else []
    md = args.markdown
    print(f"{args.folder}: {stages['scalars']:,} scalars, {stages['findings']} finding(s); "
          f"{os.cpu_count()} cores, load average {load:.1f} at start")
    if times:
        line = f"CLI analyze --format json: min {min(times):.2f} s, median {statistics.median(times):.2f} s ({len(times)} runs)"
        print(f"\n**{line}**" if md else line)
    print("\n| stage | seconds | first imports |\n| --- | --- | --- |" if md else f"\n{'stage':<36}{'seconds':>9}  first imports")
    for name, seconds, imports in stages["stages"]:
        extra = ", ".join(imports)
        print(f"| {name} | {seconds:.3f} | {extra} |" if md else f"{name:<36}{seconds:>9.3f}  {extra}")


if __name__ == "__main__":
    main()
