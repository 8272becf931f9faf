"""logdoctor against TensorBoard's own reader (RustBoard), whole process, side by side in one run.

RustBoard is the Rust data server the tensorboard package ships (`tensorboard-data-server`): it
reads event files on several threads. Here it loads each folder once with every record
checksummed and every scalar kept (`--reload once --checksum --samples-per-plugin scalars=all`);
its time is from start to its "Finished load cycle" log line, then it is stopped. logdoctor is
`logdoctor analyze DIR -f json` end to end (start-up, read, diagnosis, report). Each repeat runs
both, in turn; wall time, CPU (user + system) and peak RSS of the child, medians.

    python benchmarks/gen_large_tb.py                             # 2M scalars -> benchmarks/data/
    python benchmarks/gen_large_tb.py --steps 40000 --out /tmp/tb400k
    python benchmarks/bench_rustboard.py benchmarks/data/tb_simple_value /tmp/tb400k/tb_tensor [--repeats 3] [--markdown]
    python benchmarks/bench_rustboard.py --where /tmp/tb400k/tb_simple_value   # where logdoctor's reading goes
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def rustboard_binary() -> str:
    from tensorboard_data_server import server_binary

    return server_binary()


def rustboard(folder: Path, port_file: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of RustBoard loading `folder` once."""
    cmd = [rustboard_binary(), "--logdir", str(folder), "--reload", "once", "--checksum",
           "--samples-per-plugin", "scalars=all", "--port", "0", "--port-file", str(port_file), "-v"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finished = False
    for line in proc.stderr:
        if "Finished load cycle" in line:
            finished = True
            break
    wall = time.perf_counter() - start
    proc.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    if not finished:
        raise SystemExit(f"RustBoard did not finish loading {folder}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def logdoctor(folder: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of `logdoctor analyze folder -f json`."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "logdoctor", "analyze", str(folder), "-f", "json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def scalars(folder: Path) -> int:
    """How many scalars logdoctor reads from `folder` (for the table), counted in a child process:
    a child's peak RSS starts from its parent's high-water mark (Linux records the forked copy's
    at exec), so a parent that had loaded a 2M-row folder would lift every later peak to its own."""
    code = "import sys; from logdoctor.ingest import load_runs; from pathlib import Path; print(sum(r.scalars.height for r in load_runs(Path(sys.argv[1]))[0]))"
    return int(subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, cwd=REPO, check=True).stdout)


#: The stages of reading an event file, as functions of logdoctor.ingest (module, function).
_READ_STAGES = (
    ("tfrecord", "_frame_block", "framing: record lengths walked or predicted, header CRCs"),
    ("tfrecord", "_data_crc_ok", "data CRC-32C of every record (numpy table lookups)"),
    ("tfevents", "_decode_batch", "decoding the fields (wall time, step, tag, value) in numpy"),
    ("event_shapes", "fill", "  of which: records decoded by their shape"),
    ("tfevents", "_parse", "  of which: records parsed field by field"),
)


def where(folder: Path) -> None:
    """Share of one in-process read of `folder` (after a warm-up read) per stage, under cProfile."""
    import cProfile
    import pstats

    from logdoctor.ingest import load_runs

    load_runs(folder)
    profile = cProfile.Profile(time.process_time)  # CPU, not wall: the box is shared
    start = time.process_time()
    profile.enable()
    load_runs(folder)
    profile.disable()
    total = time.process_time() - start
    stats = pstats.Stats(profile).stats
    print(f"| reading {folder.name} (in process, under cProfile: {total:.2f} CPU-s) | share |\n| --- | ---: |")
    for module, function, label in _READ_STAGES:
        cum = sum(v[3] for (path, _, name), v in stats.items() if name == function and path.endswith(f"{module}.py"))
        print(f"| {label} | {cum / total * 100:.0f} % |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of event files (gen_large_tb.py)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--where", action="store_true", help="only: where logdoctor's reading of each folder goes")
    args = parser.parse_args()
    if args.where:
        for folder in args.folders:
            where(folder)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_rustboard_"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    load_before = os.getloadavg()[0]
    rows = []
    for folder in args.folders:
        logdoctor(folder, env)  # warm-up: bytecode cache, page cache
        ours, theirs = [], []
        for _ in range(args.repeats):
            theirs.append(rustboard(folder, tmp / "port"))
            ours.append(logdoctor(folder, env))
        med = lambda got, i: statistics.median(g[i] for g in got)  # noqa: E731
        rows.append((folder, scalars(folder), [med(ours, i) for i in range(3)], [med(theirs, i) for i in range(3)]))
    note = (f"{args.repeats} repeats, medians; {os.cpu_count()} cores; load average {load_before:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after")
    if args.markdown:
        print("| event folder | scalars | logdoctor wall / CPU / peak | RustBoard wall / CPU / peak | wall ratio | CPU ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
    else:
        print(note)
    for folder, n, (ow, oc, om), (tw, tc, tm) in rows:
        if args.markdown:
            print(f"| {folder.name} | {n:,} | {ow:.2f} s / {oc:.2f} s / {om:.0f} MiB | {tw:.2f} s / {tc:.2f} s / {tm:.0f} MiB "
                  f"| {ow / tw:.2f} | {oc / tc:.2f} |")
        else:
            print(f"{folder.name:<24}{n:>10,}  logdoctor {ow:6.2f}s wall {oc:6.2f}s CPU {om:6.0f} MiB   "
                  f"RustBoard {tw:6.2f}s wall {tc:6.2f}s CPU {tm:6.0f} MiB   ratio wall {ow / tw:.2f} CPU {oc / tc:.2f}")
    if args.markdown:
        print(f"\n{note}")


if __name__ == "__main__":
    main()
