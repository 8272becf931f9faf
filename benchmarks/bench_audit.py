"""Audit benchmark: 1,000 runs x 2,000 steps x 5 tags in mixed formats.

Writes the sweep once (real writers: torch `SummaryWriter`, a Lightning-style
`metrics.csv` + `hparams.yaml`, an HF-style `trainer_state.json`; a third each)
under benchmarks/data/audit_sweep/, then times the whole CLI, as a user runs it:

1. `logdoctor audit SWEEP -f json --no-cache --jobs 1`
2. `logdoctor audit SWEEP -f json --no-cache --jobs 2`
3. `logdoctor audit SWEEP -f json --jobs 2` twice: the first fills the cache, the
   second is the cached re-audit
4. the same after touching 10 runs: only those 10 are re-read

Curves are synthetic but shaped like training (noisy exponential decay, warmup +
cosine LR, grad norm, accuracy, validation loss); runs with lr >= 0.03 blow up
to NaN partway, so the link analysis has a real effect to find among 1,000 runs.

    python benchmarks/bench_audit.py [--runs 1000] [--steps 2000] [--out benchmarks/data/audit_sweep] [--jobs 1,2]

Each audit reports its wall time, seconds per 1,000 runs, the seconds of its statistics (links, effects,
importance) and the peak memory of the main process and of the largest worker. 10,000 runs, as published,
side by side with an older tree (its uncached audit alternating with this one's, reports compared):

    git archive REV logdoctor | tar -x -C /tmp/old
    python benchmarks/bench_audit.py --runs 10000 --steps 500 --out benchmarks/data/audit_sweep_10k --jobs 2 --before /tmp/old --rounds 3
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
WRITERS = ("tensorboard", "lightning", "hf")


def curves(rng: np.random.Generator, steps: int, lr: float) -> dict[str, np.ndarray]:
    t = np.arange(steps, dtype=float)
    warm = max(1, steps // 20)
    sched = lr * np.where(t < warm, (t + 1) / warm, 0.5 * (1 + np.cos(np.pi * (t - warm) / max(1, steps - warm))))
    speed = np.clip(lr / 1e-3, 0.05, 5.0)
    floor = 0.15 + rng.uniform(0, 0.1)
    loss = (2.3 - floor) * np.exp(-speed * t / (steps / 4)) + floor
    loss = loss * (1 + rng.normal(0, 0.03, steps))
    grad = 1.0 / (1 + t / 200) + rng.gamma(2.0, 0.05, steps)
    if lr >= 3e-2:
        start = int(rng.uniform(0.2, 0.6) * steps)
        n = steps - start
        loss[start:] = loss[start] * np.exp(np.arange(n) / 20.0)
        grad[start:] = grad[start] * np.exp(np.arange(n) / 20.0)
        loss[start + 60:], grad[start + 60:] = np.nan, np.nan
    acc = np.clip(1 - loss / 2.5, 0, 1)
    val = loss * 1.05 + rng.normal(0, 0.01, steps)
    return {"train/loss": loss, "train/lr": sched, "train/grad_norm": grad, "train/acc": acc, "val/loss": val}


def write_tensorboard(folder: Path, params: dict, series: dict) -> None:
    from torch.utils.tensorboard import SummaryWriter
    from torch.utils.tensorboard.summary import hparams

    with SummaryWriter(str(folder)) as w:
        for summary in hparams(params, {"val/loss": float("nan")}):
            w.file_writer.add_summary(summary)
        names = list(series)
        for step in range(len(series[names[0]])):
            for name in names:
                w.add_scalar(name, float(series[name][step]), step)


def write_lightning(folder: Path, params: dict, series: dict) -> None:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hparams.yaml").write_text(yaml.safe_dump(params))
    cols = {"train/loss": "train_loss", "train/lr": "lr-Adam", "train/grad_norm": "grad_norm", "train/acc": "train_acc", "val/loss": "val_loss"}
    with open(folder / "metrics.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["epoch", "step", *cols.values()])
        n = len(series["train/loss"])
        for step in range(n):
            out.writerow([step // 100, step, *(repr(float(series[k][step])) for k in cols)])


def write_hf(folder: Path, params: dict, series: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    n = len(series["train/loss"])
    history = []
    for step in range(n):
        history.append({"epoch": step / 100, "grad_norm": float(series["train/grad_norm"][step]),
                        "learning_rate": float(series["train/lr"][step]), "loss": float(series["train/loss"][step]),
                        "train_accuracy": float(series["train/acc"][step]), "step": step + 1})
        history.append({"epoch": step / 100, "eval_loss": float(series["val/loss"][step]), "step": step + 1})
    state = {"global_step": n, "max_steps": n, "logging_steps": 1, "eval_steps": 1, "train_batch_size": params["batch_size"],
             "num_train_epochs": n // 100, "log_history": history, "trial_params": params}
    (folder / "trainer_state.json").write_text(json.dumps(state))


def generate(out: Path, runs: int, steps: int) -> None:
    done = out / "COMPLETE"
    if done.is_file() and done.read_text() == f"{runs} {steps}":
        return
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    for i in range(runs):
        rng = np.random.default_rng(i)
        params = {"lr": LRS[i % len(LRS)], "batch_size": [32, 64, 128][(i // 7) % 3], "weight_decay": [0.0, 0.01][(i // 21) % 2], "seed": i}
        series = curves(rng, steps, params["lr"])
        writer = WRITERS[i % len(WRITERS)]
        folder = out / f"run{i:04d}_lr{params['lr']:g}"
        if writer == "tensorboard":
            write_tensorboard(folder, params, series)
        elif writer == "lightning":
            write_lightning(folder / "version_0", params, series)
        else:
            write_hf(folder, params, series)
        if (i + 1) % 100 == 0:
            print(f"  wrote {i + 1}/{runs} runs ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    done.write_text(f"{runs} {steps}")


def snapshot() -> Path:
    """A frozen copy of the logdoctor package, so every step times the same code (and the cache,
    which is keyed on logdoctor's source files, is not invalidated by edits made meanwhile)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="logdoctor-bench-"))
    shutil.copytree(HERE.parent / "logdoctor", folder / "logdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


#: Runs the CLI in a process that, as it exits, prints the peak resident memory of itself (the main process,
#: which holds every run's result) and of the largest worker process it started, in KiB.
PEAK = ("import resource, runpy, sys\n"
        "try:\n    runpy.run_module('logdoctor', run_name='__main__')\n"
        "finally:\n    print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
        " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n")


def timed(args: list[str], code: Path) -> tuple[float, dict]:
    """Seconds, the JSON report's `audit` section, with the peak memory (MB) of the main and the largest worker
    process added as `peak_mb`."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    # run from the snapshot: `python -m` puts the working folder ahead of PYTHONPATH
    proc = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True, env=env, cwd=code)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    audit = json.loads(proc.stdout)["audit"]
    main_kb, worker_kb = (int(x) for x in proc.stderr.rsplit("PEAK", 1)[1].split()[:2])
    audit["peak_mb"] = {"main": round(main_kb / 1024), "largest_worker": round(worker_kb / 1024)}
    return seconds, audit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=HERE / "data" / "audit_sweep")
    parser.add_argument("--jobs", default="1,2", help="Uncached audits to time, by worker count (10,000 runs: 2).")
    parser.add_argument("--before", type=Path, help="a folder holding an older `logdoctor` package (git archive REV logdoctor | "
                        "tar -x -C OLD): each uncached audit alternates with it, its report compared")
    parser.add_argument("--rounds", type=int, default=1, help="uncached audits per worker count (alternating with --before)")
    args = parser.parse_args()
    generate(args.out, args.runs, args.steps)
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    sweep = str(args.out.resolve())
    code = snapshot()
    try:
        run_all(args, sweep, size, code)
    finally:
        shutil.rmtree(code, ignore_errors=True)


def _report(audit: dict) -> dict:
    """An audit section without what differs from run to run (timings, memory)."""
    return {k: v for k, v in audit.items() if k not in ("stats", "peak_mb")}


def _entry(cache: Path) -> dict:
    """Salt and fingerprint of one cache entry (to explain a cache miss if one happens)."""
    first = min(cache.rglob("*.json"))
    data = json.loads(first.read_text())
    return {"file": first.name, "salt": data.get("salt"), "fingerprint": data.get("fingerprint")}


def run_all(args, sweep: str, size: int, code: Path) -> None:
    results = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               "runs": args.runs, "steps": args.steps, "tags": 5, "bytes": size,
               "load_average_before": round(os.getloadavg()[0], 2)}
    cache = f"{sweep}-cache"  # beside the sweep, emptied first: the first cached audit fills it
    shutil.rmtree(cache, ignore_errors=True)
    for jobs in (int(j) for j in args.jobs.split(",")):
        uncached = ["audit", sweep, "-f", "json", "--no-cache", "--jobs", str(jobs)]
        for round_ in range(args.rounds):  # alternating with the older tree: a load change hits both alike
            if args.before:
                old_seconds, old_audit = timed(uncached, args.before)
                results.setdefault(f"jobs{jobs}_before_s", []).append(round(old_seconds, 2))
                print(f"--jobs {jobs}, no cache, before: {old_seconds:.1f} s, statistics {old_audit['stats'].get('analysis_seconds')} s")
            seconds, audit = timed(uncached, code)
            if args.before and _report(old_audit) != _report(audit):
                print("warning: the two trees' audit reports differ (beyond their timings)")
            results.setdefault(f"jobs{jobs}_s", []).append(round(seconds, 2))
            results[f"jobs{jobs}_s_per_1000"] = round(seconds * 1000 / args.runs, 2)
            results[f"jobs{jobs}_analysis_s"] = audit["stats"].get("analysis_seconds")
            results[f"jobs{jobs}_peak_mb"] = audit["peak_mb"]
            print(f"--jobs {jobs}, no cache: {seconds:.1f} s, {seconds * 1000 / args.runs:.1f} s per 1,000 runs, statistics "
                  f"{audit['stats'].get('analysis_seconds')} s, peak {audit['peak_mb']} MB ({audit['run_count']} runs, {audit['by_status']})")
    seconds, audit = timed(["audit", sweep, "-f", "json", "--jobs", "2", "--cache-dir", cache], code)
    print(f"--jobs 2, filling the cache: {seconds:.1f} s (read {audit['stats']['read']})")
    filled = _entry(Path(cache))
    seconds, audit = timed(["audit", sweep, "-f", "json", "--jobs", "2", "--cache-dir", cache], code)
    if audit["stats"]["read"]:
        print(f"warning: the cached re-audit re-read runs; one entry before: {filled}, after: {_entry(Path(cache))}")
    results["cached_s"] = round(seconds, 2)
    results["cached_peak_mb"] = audit["peak_mb"]
    results["cached_reads"] = audit["stats"]["read"]
    print(f"cached re-audit: {seconds:.1f} s (read {audit['stats']['read']}, cached {audit['stats']['cached']})")
    for folder in sorted(p for p in args.out.iterdir() if p.is_dir() and not p.name.startswith("."))[:10]:
        for f in folder.rglob("*"):
            if f.is_file():
                os.utime(f)
    seconds, audit = timed(["audit", sweep, "-f", "json", "--jobs", "2", "--cache-dir", cache], code)
    results["ten_changed_s"] = round(seconds, 2)
    results["ten_changed_reads"] = audit["stats"]["read"]
    print(f"10 runs touched: {seconds:.1f} s (read {audit['stats']['read']})")
    results["links"] = [e["text"] for e in audit.get("effects", [])] + [link["text"] for link in audit["links"]]
    results["importance"] = audit.get("importance")
    for text in results["links"]:
        print("  link:", text)
    print("  importance:", results["importance"])
    (HERE / "data" / f"bench_audit_{args.runs}.json").write_text(json.dumps(results, indent=1))
    results["load_average_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps({k: v for k, v in results.items() if k != "links"}))


if __name__ == "__main__":
    main()
