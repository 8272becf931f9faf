"""CLI start-up time: `logdoctor --help` end to end, and what the import of logdoctor.cli costs.

The target is <= 0.5 s: heavy modules (matplotlib, scipy, tensorboard's
protobufs, torch) must be imported only where they are used.

    python benchmarks/bench_startup.py            # 7 runs each, prints min / median
    python benchmarks/bench_startup.py --heavy    # also lists heavy modules pulled in by `import logdoctor.cli`
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HEAVY = ("matplotlib", "scipy", "torch", "tensorboard", "tbparse", "pandas", "sklearn", "wandb", "dask")


def timed(cmd: list[str], runs: int) -> list[float]:
    out = []
    env = dict(os.environ, NO_COLOR="1")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        out.append(time.perf_counter() - start)
    return out


def heavy_imports() -> list[str]:
    code = "import sys, logdoctor.cli; print(' '.join(sorted(m for m in sys.modules if '.' not in m)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return [m for m in HEAVY if m in loaded]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--heavy", action="store_true")
    args = parser.parse_args()
    script = shutil.which("logdoctor", path=os.path.dirname(sys.executable)) or shutil.which("logdoctor")
    cases = [("python -c pass (interpreter floor)", [sys.executable, "-c", "pass"]),
             ("python -m logdoctor --help", [sys.executable, "-m", "logdoctor", "--help"])]
    if script:
        cases.append(("logdoctor --help", [script, "--help"]))
    print(f"{'command':<38}{'min':>9}{'median':>9}   ({args.runs} runs, load average {os.getloadavg()[0]:.1f})")
    for name, cmd in cases:
        got = timed(cmd, args.runs)
        print(f"{name:<38}{min(got):>8.2f}s{statistics.median(got):>8.2f}s")
    if args.heavy:
        found = heavy_imports()
        print("heavy modules imported by logdoctor.cli:", ", ".join(found) if found else "none")


if __name__ == "__main__":
    main()
