"""Ingest speed: logdoctor vs tbparse vs TensorBoard's EventAccumulator on the same event files.

Each reader runs in its own fresh interpreter (so imports, caches and memory
do not leak between them) and reports its read time and peak RSS. Run
`gen_large_tb.py` first; then:

    nice -n 10 python benchmarks/bench_ingest.py               # both encodings + CSV/JSONL
    python benchmarks/bench_ingest.py --readers logdoctor      # just ours
    python benchmarks/bench_ingest.py --markdown               # table for the README

Readers:
* logdoctor — `logdoctor.ingest.load_runs` (fast path: framing + CRC32C of every record + vectorised decode);
* logdoctor-reference — the same with `Event.FromString` on every record (the reference path);
* tbparse — `SummaryReader(dir).scalars` (simple_value) / `.tensors` (tensor encoding: `.scalars` misses those);
* EventAccumulator — TensorBoard's loader with size_guidance 0 (keep everything), then every value read out.
CSV / JSONL: a wide CSV (step + metric columns), a dense history JSONL and a
W&B-shaped one (sparse validation keys, nested dicts, media dicts, a NaN tail
as Python's json writes it) through `load_runs`, in cells (non-null metric
values) per second; the JSONL files also through the per-row reference
reading (`json.loads` per line), which is what logdoctor used before.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).parent / "data"
ENCODINGS = ("simple_value", "tensor")
READERS = ("logdoctor", "logdoctor-reference", "tbparse", "EventAccumulator")

#: The code each child interpreter runs: prints {"seconds", "count", "rss_before_mb", "peak_mb"} as JSON.
CHILD = r"""
import json, resource, sys, time
reader, folder, encoding = sys.argv[1], sys.argv[2], sys.argv[3]

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if reader in ("logdoctor", "logdoctor-csv"):
    from logdoctor.ingest import load_runs
    def run():
        runs, errors = load_runs(folder)
        assert not errors, errors
        return sum(r.scalars.height for r in runs)
elif reader == "jsonl-reference":
    from pathlib import Path
    from logdoctor.ingest.wandb_history import frame_from_rows, read_jsonl
    def run():
        return sum(frame_from_rows(read_jsonl(p)[0]).height for p in sorted(Path(folder).glob("*.jsonl")))
elif reader == "logdoctor-reference":
    from pathlib import Path
    from logdoctor.ingest.tfevents import read_event_file
    def run():
        return sum(len(read_event_file(p, fast=False)) for p in sorted(Path(folder).glob("events.out.tfevents.*")))
elif reader == "tbparse":
    from tbparse import SummaryReader
    def run():
        reader_ = SummaryReader(folder)
        return len(reader_.scalars if encoding == "simple_value" else reader_.tensors)
else:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    def run():
        acc = EventAccumulator(folder, size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        if encoding == "simple_value":
            return sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
        return sum(len(acc.Tensors(t)) for t in acc.Tags()["tensors"])

before = rss_mb()
start = time.perf_counter()
count = run()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "count": count, "rss_before_mb": before, "peak_mb": rss_mb()}))
"""


def measure(reader: str, folder: Path, encoding: str, timeout: float) -> dict:
    """Run one reader in a fresh interpreter; its JSON result, or {"error": ...}."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, reader, str(folder), encoding],
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from google.protobuf.internal import api_implementation

        proto = api_implementation.Type()
    except ImportError:
        proto = "?"
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"protobuf backend {proto}, load average {os.getloadavg()[0]:.1f} at start")


def fmt_row(name: str, res: dict, ours: dict | None, markdown: bool) -> str:
    if "error" in res:
        cells = [name, res["error"], "", "", ""]
    else:
        rate = res["count"] / res["seconds"] if res["seconds"] else float("inf")
        ratio = f"{res['seconds'] / ours['seconds']:.1f}x" if ours and "error" not in ours else ""
        cells = [name, f"{res['seconds']:.2f} s", f"{rate:,.0f}", f"{res['peak_mb']:.0f} MB "
                 f"({res['peak_mb'] - res['rss_before_mb']:+.0f})", ratio]
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return f"{cells[0]:<22}{cells[1]:>16}{cells[2]:>14}{cells[3]:>18}  {cells[4]}"


def header(title: str, markdown: bool, unit: str = "scalars/s") -> list[str]:
    cols = ["reader", "time", unit, "peak RSS (read)", "time vs logdoctor"]
    if markdown:
        return [f"\n**{title}**\n", "| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    return [f"\n{title}", f"{cols[0]:<22}{cols[1]:>16}{cols[2]:>14}{cols[3]:>18}  {cols[4]}"]


def make_tabular(folder: Path, rows: int, cols: int) -> tuple[Path, Path, int]:
    """A wide CSV and a W&B-API-style history JSONL with rows x cols metric cells."""
    import numpy as np
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    data = {"step": np.arange(rows)} | {f"metric_{j}": rng.normal(size=rows) for j in range(cols)}
    csv_dir, jsonl_dir = folder / "wide_csv", folder / "history_jsonl"
    csv_dir.mkdir(exist_ok=True)
    jsonl_dir.mkdir(exist_ok=True)
    pl.DataFrame(data).write_csv(csv_dir / "metrics.csv")
    hist = {"_step": data["step"], "_runtime": data["step"] * 0.5, "_timestamp": 1.7e9 + data["step"] * 0.5}
    hist |= {k: v for k, v in data.items() if k != "step"}
    pl.DataFrame(hist).write_ndjson(jsonl_dir / "history.jsonl")
    return csv_dir, jsonl_dir, rows * cols


def make_wandb_history(folder: Path, rows: int, cols: int) -> tuple[Path, int]:
    """A history JSONL shaped like a real W&B run's; returns (its folder, its metric cells).

    Per row: `_step`/`_runtime`/`_timestamp`, the train loss and `cols - 3`
    other scalars; every 10th row a nested `val` dict (2 values); every
    1000th row an image media dict (skipped by readers); the last 5 % of the
    run has a NaN loss (bare `NaN`, as Python's json writes it).
    """
    import json

    import numpy as np

    out = folder / "wandb_history_jsonl"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(rows, cols))
    cells = 0
    with open(out / "history.jsonl", "w") as fh:  # an API dump (scan_history rows); wandb-history.jsonl is a run folder
        for i in range(rows):
            loss = 2.0 / (1 + i / 1000) + 0.01 * noise[i, 0] if i < 0.95 * rows else float("nan")
            row = {"train/loss": loss, "lr": 1e-3, "grad_norm": abs(noise[i, 1])}
            row |= {f"metric_{j}": noise[i, j] for j in range(3, cols)}
            if i % 10 == 0:
                row["val"] = {"loss": 2.2 / (1 + i / 1000), "acc": min(1.0, i / rows)}
            if i % 1000 == 0:
                row["samples"] = {"_type": "images/separated", "width": 64, "height": 64, "format": "png", "count": 8}
            row |= {"_step": i, "_runtime": i * 0.1, "_timestamp": 1.7e9 + i * 0.1}
            cells += len(row) - 3 - ("samples" in row) + ("val" in row)
            fh.write(json.dumps({k: float(v) if isinstance(v, np.floating) else v for k, v in row.items()}) + "\n")
    return out, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    parser.add_argument("--encodings", nargs="*", default=list(ENCODINGS), choices=ENCODINGS, help="none: tabular only")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--tabular-rows", type=int, default=200_000)
    parser.add_argument("--tabular-cols", type=int, default=25)
    parser.add_argument("--skip-tabular", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    print(f"machine: {machine()}", flush=True)
    for encoding in args.encodings:
        folder = args.data / f"tb_{encoding}"
        files = sorted(folder.glob("events.out.tfevents.*"))
        if not files:
            sys.exit(f"{folder}: no event file; run benchmarks/gen_large_tb.py first")
        size = sum(f.stat().st_size for f in files) / 1e6
        results = {}
        for reader in args.readers:
            start = time.perf_counter()
            results[reader] = measure(reader, folder, encoding, args.timeout)
            print(f"  {encoding}/{reader}: {results[reader]} ({time.perf_counter() - start:.0f} s wall)", file=sys.stderr, flush=True)
        ours = results.get("logdoctor")
        counts = {r["count"] for r in results.values() if "count" in r}
        title = f"{encoding} encoding: {folder.name} ({size:.0f} MB, {max(counts, default=0):,} scalars)"
        if len(counts) > 1:
            title += f" — readers disagree on the count: {sorted(counts)}"
        lines = header(title, args.markdown) + [fmt_row(r, res, ours, args.markdown) for r, res in results.items()]
        print("\n".join(lines), flush=True)
    if not args.skip_tabular:
        csv_dir, jsonl_dir, cells = make_tabular(args.data / "tabular", args.tabular_rows, args.tabular_cols)
        wandb_dir, wandb_cells = make_wandb_history(args.data / "tabular", args.tabular_rows, args.tabular_cols)
        title = (f"CSV / JSONL through load_runs ({args.tabular_rows:,} rows x {args.tabular_cols} metrics = {cells:,} cells;"
                 f" W&B-shaped: {wandb_cells:,} cells)")
        lines = header(title, args.markdown, unit="cells/s")
        cases = (("wide CSV", "logdoctor-csv", csv_dir), ("dense JSONL", "logdoctor-csv", jsonl_dir),
                 ("dense JSONL per-row ref", "jsonl-reference", jsonl_dir),
                 ("W&B JSONL", "logdoctor-csv", wandb_dir), ("W&B JSONL per-row ref", "jsonl-reference", wandb_dir))
        for name, reader, folder in cases:
            lines.append(fmt_row(name, measure(reader, folder, "", args.timeout), None, args.markdown))
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
