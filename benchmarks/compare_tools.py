"""logdoctor against the offline log doctors a user could pick instead, on the same labelled runs.

    python benchmarks/compare_tools.py --corpus all                  # every known corpus on disk
    python benchmarks/compare_tools.py --corpus sample_runs --tool runmedic --tool logdoctor
    python benchmarks/compare_tools.py /tmp/holdout --markdown /tmp/tools.md --json /tmp/tools.json

Each tool lives in its own virtual environment (never logdoctor's), one per tool under --venvs:

    for t in runmedic==0.1.1 'trainspotter[tensorboard]==0.2.6' 'losslint[tb,fast]==0.4.1' \\
             gradsnitch==0.1.0 epochix==0.7.36; do
        n=${t%%[[=]*}; python3 -m venv /tmp/ctools/venv-$n && /tmp/ctools/venv-$n/bin/pip install "$t"; done

Every tool is run once per labelled run folder, as a subprocess with a timeout, on the inputs it
documents reading (`Tool.inputs`); a timeout, a crash or output that is not its report reads as
"not read" for that input. A run is *read* when at least one input gave the tool a metric series.
The tool's findings on all its inputs are pooled, ranked by the tool's own severity (stable, so
each tool's order within a severity is kept) and mapped onto logdoctor's codes by the table of
that tool below. A finding with no counterpart is a generic alarm (`alarm:<check>`): it is a false
alarm on a healthy run and never a top-1 hit. A tool's `error` / `critical` and `warning` fire, its
`info` does not: the same rule as logdoctor's own remarks.

Scoring is benchmarks/accuracy.py's, imported (labels, `Scored`, `headline`): top-1 on faulty
runs, false alarm on healthy runs, read. An unread faulty run is a miss; an unread healthy run is
no false alarm, so each tool is also scored on the runs it read (`read only`), where a tool that
reads few formats is judged on what it saw. logdoctor is scored the way an outside harness sees
it, through `logdoctor analyze RUN -f json` (the JSON contract), from --logdoctor-src (default:
this checkout; pass a `git archive HEAD` export to measure a commit, not a shared working tree).

Tool outputs are cached under --cache, keyed by the tool's version and the input's path (logdoctor's
only when --logdoctor-src is not a working tree), and never committed: third-party outputs on
third-party runs stay on this machine; only the aggregate tables go to docs/accuracy.md.
"""
from __future__ import annotations

import argparse
import atexit
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from accuracy import CORPORA, SHARED, Label, Scored, headline, load_labels, runs_root  # noqa: E402
from logdoctor.diagnose import rank  # noqa: E402
from logdoctor.model import Finding  # noqa: E402

COMPARED_CORPORA = {**{k: v for k, v in CORPORA.items() if k != "holdout"},
                    "real-logs-dev2": SHARED / "real-logs-dev2", "real-logs-dev2-text": SHARED / "real-logs-dev2-text"}
ORDER = ("sample_runs", "real-logs-dev", "real-logs-dev2", "real-logs-dev-text", "real-logs-dev2-text")
SEVERITY = {"critical": "critical", "error": "critical", "warning": "warning", "info": "info"}
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
TEXT_SUFFIXES = (".log", ".txt", ".out")
MAX_INPUTS = 6  # per tool per run: a run folder with more candidate files is read through its first six
# the labels' `format` spelled one way across corpora (pastes: see `summary`)
FORMAT_NAMES = {"wandb-offline": "wandb", "wandb_csv": "csv", "keras_csv": "csv", "text_log": "console log",
                "cyclegan_loss_log (pytorch-CycleGAN-and-pix2pix loss_log.txt)": "console log"}
PASTED = "console log (pasted)"


# --------------------------------------------------------------------------- what a tool said


@dataclass
class Outcome:
    """One tool on one run folder: whether it read anything, and its findings as (check, severity)."""

    read: bool = False
    findings: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # inputs not read, and why (one line each)

    def add(self, other: "Outcome") -> None:
        self.read |= other.read
        self.findings += other.findings
        self.notes += other.notes


@functools.cache
def neutral() -> Path:
    """An empty folder every tool runs from, removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="compare-tools-cwd-"))
    atexit.register(path.rmdir)
    return path


def call(argv: list[str], timeout: float) -> tuple[str, str]:
    """stdout, and a one-line reason when the call gave no usable output (else "").

    The working directory is an empty folder, not this checkout: `python -m logdoctor` run from the
    checkout imports the checkout's working tree ahead of --logdoctor-src, and no tool should find a
    configuration file in the current directory.
    """
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=neutral(),
                              env={**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return "", f"timeout after {timeout:.0f} s"
    except OSError as exc:
        return "", f"could not start: {exc}"
    tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:160]
    return done.stdout, "" if done.stdout.strip() else tail


def loads(stdout: str) -> object:
    """The JSON a tool printed: the whole of stdout, else its last line (a driver prints one line)."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return json.loads(stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- the tools


@dataclass(frozen=True)
class Tool:
    """A log doctor: how to call it on one input, how to read its report, and its code mapping.

    `mapping`: the tool's check -> logdoctor's code, or None for a generic alarm (no counterpart).
    `ignore`: checks that say something about the log file, not the training (never alarms).
    """

    name: str
    package: str  # the pip requirement measured
    argv: Callable[[Path, Path], list[str]]  # (venv, input) -> command line
    parse: Callable[[object], Outcome]  # the tool's JSON -> what it read and found
    inputs: Callable[[Path], list[Path]]  # a run folder -> what to hand the tool
    mapping: dict[str, str | None]
    reads: str  # what it reads, from its docs, as measured here
    ignore: frozenset[str] = frozenset()

    def code(self, check: str) -> str:
        mapped = self.mapping.get(check, self.mapping.get(check.split("/")[0]))
        return mapped if mapped else f"alarm:{check}"


def files(run: Path, keep: Callable[[Path], bool]) -> list[Path]:
    return sorted(p for p in run.rglob("*") if p.is_file() and keep(p))[:MAX_INPUTS]


def the_folder(run: Path) -> list[Path]:
    return [run]


def text_logs(run: Path) -> list[Path]:
    return files(run, lambda p: p.suffix in TEXT_SUFFIXES and p.name != "requirements.txt")


def csv_files(run: Path) -> list[Path]:
    return files(run, lambda p: p.suffix == ".csv")


def trainspotter_inputs(run: Path) -> list[Path]:
    """Its documented inputs: a TensorBoard logdir (the run folder when it holds event files),
    `trainer_state.json` (the longest copy: HF repeats it in every checkpoint), CSV and JSONL files."""
    logdir = [run] if any(run.rglob("events.out.tfevents*")) else []
    states = sorted(run.rglob("trainer_state.json"), key=lambda p: p.stat().st_size)[-1:]
    return (logdir + states + files(run, lambda p: p.suffix in (".csv", ".jsonl")))[:MAX_INPUTS]


def parse_logdoctor(report: object) -> Outcome:
    runs = report["runs"]
    found = [Finding(code=f["code"], severity=f["severity"], confidence=f["confidence"], title=f["title"],
                     metric=f.get("metric"), steps=tuple(f["steps"]) if f.get("steps") else None)
             for entry in runs for f in entry["findings"]]
    return Outcome(read=bool(runs), findings=[(f.code, f.severity) for f in rank(found)])


def parse_runmedic(report: object) -> Outcome:
    return Outcome(read=any(r["series"] for r in report),
                   findings=[(f["check"], f["severity"]) for r in report for f in r["findings"]])


def parse_losslint(report: object) -> Outcome:
    return Outcome(read=any(r["points"] for r in report["runs"]),
                   findings=[(f["check"], f["severity"]) for f in report["findings"]])


def parse_trainspotter(report: object) -> Outcome:
    return Outcome(read=any(m["count"] for m in report["run"]["metrics"].values()),
                   findings=[(f"{f['detector']}/{f['title']}", f["severity"]) for f in report["findings"]])


def parse_driver(report: object) -> Outcome:
    """gradsnitch's and epochix's drivers below print {"read": bool, "findings": [[check, severity]]}."""
    return Outcome(read=report["read"], findings=[tuple(f) for f in report["findings"]])


# gradsnitch has no command line that reads a file: its documented way is `gradsnitch.lint_csv(path)`.
GRADSNITCH_DRIVER = """
import json, sys, gradsnitch
try:
    found = gradsnitch.lint_csv(sys.argv[1])
except Exception as exc:
    print(exc.__class__.__name__, str(exc)[:120], file=sys.stderr); sys.exit(2)
print(json.dumps({"read": True, "findings": [[f.code, f.severity] for f in found]}))
"""

# epochix's documented batch API is `epochix.parse(path)`; its story frames carry the warnings, and
# `standing_warnings` applies their withdrawals (`overfit_cleared`, `plateau_cleared`) as its dashboard
# does. Its `divergence` warning has three messages: NaN, a 10x jump over the last reading, a climb.
EPOCHIX_DRIVER = """
import json, os, sys, tempfile
from epochix import parse
from epochix.store.sqlite_store import RunStore
from epochix.story_engine.messages import message
from epochix.story_engine.warnings import standing_warnings
db = tempfile.mktemp(suffix=".db")
try:
    run = parse(sys.argv[1], db=db)
    store = RunStore(db_path=db)
    read = bool(store.get_metric_events(run.id))
    frames = store.get_story_frames(run.id)
    kinds = {message(k): k for k in ("warn_nan", "warn_spike", "warn_climb")}
    found = [[w.kind + ("/" + kinds[w.message] if w.kind == "divergence" and w.message in kinds else ""),
              "info" if w.kind == "lr_drop" else "warning"]
             for w in standing_warnings(w for f in frames for w in f.warnings)]
    print(json.dumps({"read": read, "findings": found}))
finally:
    if os.path.exists(db):
        os.unlink(db)
"""

TOOLS = [
    Tool("logdoctor", "this checkout", lambda venv, p: [sys.executable, "-m", "logdoctor", "analyze", str(p), "-f", "json"],
         parse_logdoctor, the_folder, {},
         "every format in docs/formats.md"),
    # runmedic 0.1.1 (README "What it catches", runmedic/checks.py, runmedic/logpatterns.py)
    Tool("runmedic", "runmedic==0.1.1", lambda venv, p: [str(venv / "bin/runmedic"), "diagnose", str(p), "--json"],
         parse_runmedic, the_folder, {
             "non_finite": "diverge",        # a series became NaN / inf (critical)
             "divergence": "diverge",        # loss went down and came back up, progress lost (critical / warning)
             "loss_spikes": "spike",         # isolated loss spikes over a robust z-score (warning; info when few)
             "no_learning": "flat",          # smoothed loss never improved 2% on its start (warning)
             "overfitting": "overfit",       # val loss rose from its best (warning; info under 15%)
             "grad_spikes": "grad_norm_trend",  # grad norm above 10x its median (warning)
             "val_below_train": None,        # possible train/val leak (info)
             "constant_lr_plateau": None,    # plateau under a constant LR: decay would help (info)
             "input_bound": None, "slow_steps": None, "slowdown": None, "memory_growth": None,  # system metrics
             "log:amp_overflow": "scaler_collapse",  # 'Gradient overflow / Skipping step, loss scaler' lines (warning)
             "log:anomaly_nan": "diverge",   # autograd anomaly: NaN produced (critical)
             # other log:* patterns (CUDA OOM, DataLoader killed, NCCL timeout, device mismatch, backward
             # twice, in-place grad, unused params) are crashes or code errors: generic alarms
         }, "TensorBoard, MLflow (db and mlruns/), Lightning / any CSV with a step column, JSONL, HF "
            "trainer_state.json, stdout logs; W&B only through its online API (offline .wandb not read)"),
    # trainspotter 0.2.6 (README "Detectors", trainspotter/detectors/*.py); keyed detector/title
    Tool("trainspotter", "trainspotter[tensorboard]==0.2.6",
         lambda venv, p: [str(venv / "bin/trainspotter"), "analyze", str(p), "--output", "json"],
         parse_trainspotter, trainspotter_inputs, {
             "spikes": "spike",              # loss jump over a trailing median / MAD, |z| > 6 (warning / error)
             "divergence": "diverge",        # NaN / inf, or significant upward drift to 1.5x the running min (error)
             "plateau": "flat",              # metric stalled: insignificant slope, < 2% change (info)
             "overfitting": "overfit",       # eval rises significantly after its minimum while train falls (warning)
             "lr_schedule": "lr_schedule_mismatch",  # no warmup (warning), LR up after its peak, jumps (info)
             "grad_norm/Gradient-norm explosion": "grad_norm_trend",  # one-sided z > 10 on grad norm (warning)
             "grad_norm/Gradient clipping likely saturated": "clip_saturation",  # norm pinned at its max (info)
             "eval_noise": "oscillate",      # eval metric jitter >= 15% of its total improvement (warning)
             "throughput": None,             # step-time regression (warning)
             "loss_floor": None,             # implausibly low loss early, a heuristic (info)
         }, "HF trainer_state.json, CSV / JSONL with a step column, W&B history CSV, Lightning metrics.csv, "
            "TensorBoard logdirs; no MLflow, no W&B run folders, no console logs"),
    # losslint 0.4.1 (README "Checks", losslint/checks.py)
    Tool("losslint", "losslint[tb,fast]==0.4.1",
         lambda venv, p: [str(venv / "bin/losslint"), "check", str(p), "--format", "json", "--color", "never"],
         parse_losslint, the_folder, {
             "nan_inf": "diverge",           # NaN / inf in any numeric series (error)
             "divergence": "diverge",        # train loss ends materially above its start (error)
             "loss_spike": "spike",          # a point above 10x the local rolling median (warning)
             "overfit_onset": "overfit",     # eval worsening while train improves (info)
             "stagnation": "flat",           # < 1% train-loss improvement over the last quarter (info)
             "step_backtrack": None,         # step indices decreasing: a logging bug (warning)
         }, "json (HF trainer_state.json, metric dicts), JSONL, CSV, TensorBoard event files; no MLflow, "
            "no W&B run folders, no console logs",
         ignore=frozenset({"parse"})),       # 'malformed log lines skipped': about the file, not the run
    # gradsnitch 0.1.0 (README "What it catches today", rule ids GS001-GS010)
    Tool("gradsnitch", "gradsnitch==0.1.0", lambda venv, p: [str(venv / "bin/python"), "-c", GRADSNITCH_DRIVER, str(p)],
         parse_driver, csv_files, {
             "GS001": "diverge",             # loss NaN / inf (error)
             "GS002": "diverge",             # gradient norm inf (error)
             "GS003": "grad_norm_trend",     # gradient-norm spike (warning)
             "GS004": "overfit",             # val rises >= 3% while train falls (warning)
             "GS005": "flat",                # loss plateau: no early progress (warning)
             "GS006": "diverge",             # sustained rise above the run's best (error)
             "GS007": "grad_norm_trend",     # grad norm collapses while the loss is stuck (warning)
             "GS008": None,                  # update / weight ratio off (needs its live monitor)
             "GS009": "oscillate",           # growing-amplitude loss swings (warning)
             "GS010": "lr_schedule_mismatch",  # LR hits ~0 mid-run (warning)
         }, "CSV exports only (`lint_csv`; its live hooks need the training loop)"),
    # epochix 0.7.36 (README, epochix/story_engine/warnings.py): warnings beside a letter grade
    Tool("epochix", "epochix==0.7.36", lambda venv, p: [str(venv / "bin/python"), "-c", EPOCHIX_DRIVER, str(p)],
         parse_driver, text_logs, {
             "overfit": "overfit",           # val loss rose for consecutive readings while train fell
             "plateau": "flat",              # primary metric moved < 1% over the last 5 readings
             "divergence/warn_nan": "diverge",    # the loss became NaN
             "divergence/warn_climb": "diverge",  # 10x above the best loss seen
             "divergence/warn_spike": "spike",    # 10x the previous reading
             "divergence": "diverge",
             "lr_drop": None,                # LR fell by 40% (a statement of fact: info)
         }, "console logs (Keras, Lightning, HF, YOLO, fastai, key=value lines); its TensorBoard and W&B "
            "importers push to a running epochix server and are not measured"),
]
BY_NAME = {t.name: t for t in TOOLS}
SILENT = "(nothing fires)"


def venv_of(tool: Tool, venvs: Path) -> Path | None:
    """The tool's own environment (None for logdoctor, which runs from --logdoctor-src)."""
    return None if tool.name == "logdoctor" else venvs / f"venv-{tool.name}"


def run_tool(tool: Tool, run: Path, venvs: Path, timeout: float, cache: Path | None, version: str = "") -> Outcome:
    """The tool on every input of one run folder, pooled; an input that fails is one note.

    `version` keys the cache (no cache without one): the tool's version, or logdoctor's source tree.
    """
    out = Outcome()
    venv = venv_of(tool, venvs)
    for target in tool.inputs(run):
        key = cache / tool.name / (hashlib.sha1(f"{version}\0{target.resolve()}".encode()).hexdigest() + ".json") \
            if cache and version else None
        if key and key.exists():
            out.add(Outcome(**json.loads(key.read_text())))
            continue
        stdout, why = call(tool.argv(venv, target), timeout)
        try:
            one = tool.parse(loads(stdout)) if not why else Outcome(notes=[f"{target.name}: {why}"])
        except (json.JSONDecodeError, KeyError, TypeError, IndexError, AttributeError) as exc:
            one = Outcome(notes=[f"{target.name}: output not a report ({exc.__class__.__name__})"])
        if key and not any("timeout" in n for n in one.notes):
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_text(json.dumps({"read": one.read, "findings": one.findings, "notes": one.notes}))
        out.add(one)
    return out


def as_findings(tool: Tool, outcome: Outcome, count_info: bool = False) -> list[Finding]:
    """The tool's findings ranked by its own severity, mapped onto logdoctor's codes.

    `count_info`: another tool's info findings fire too (as warnings, after its own warnings), for
    tools that put a check at info by design (losslint's overfit_onset, trainspotter's plateau).
    """
    if tool.name == "logdoctor":
        return [Finding(code=c, severity=s, confidence=1.0, title=c, metric=None, steps=None) for c, s in outcome.findings]
    kept = [(check, SEVERITY.get(sev, "info")) for check, sev in outcome.findings if check not in tool.ignore]
    kept.sort(key=lambda f: SEVERITY_RANK[f[1]])
    if count_info:
        kept = [(check, "warning" if sev == "info" else sev) for check, sev in kept]
    return [Finding(code=tool.code(check), severity=sev, confidence=1.0, title=check, metric=None, steps=None)
            for check, sev in kept]


# --------------------------------------------------------------------------- one corpus


def score_corpus(tool: Tool, folder: Path, venvs: Path, timeout: float, cache: Path | None, version: str,
                 progress: bool, count_info: bool = False) -> tuple[list[Scored], dict[str, list[str]]]:
    """Every labelled run scored, and the notes of the inputs the tool could not read, per run."""
    labels: dict[str, Label] = load_labels(folder / "labels.json")
    root = runs_root(folder, labels)
    scored, notes = [], {}
    for i, (run_id, label) in enumerate(sorted(labels.items()), 1):
        run = root / run_id
        outcome = run_tool(tool, run, venvs, timeout, cache, version) if run.exists() else Outcome(notes=["no such folder"])
        scored.append(Scored(run_id, label, as_findings(tool, outcome, count_info), found=outcome.read))
        notes[run_id] = outcome.notes
        if progress:
            print(f"\r  {tool.name}: {i}/{len(labels)}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return scored, notes


def silent(folder: Path) -> list[Scored]:
    """The baseline of a doctor that reads every run and says nothing: borderline runs (a faulty label
    that accepts healthy) are its only top-1 hits, and it never raises a false alarm."""
    return [Scored(run_id, label, [], found=True) for run_id, label in sorted(load_labels(folder / "labels.json").items())]


def summary(scored: list[Scored], pasted: bool = False) -> dict:
    """accuracy.py's headline over all labelled runs, again over the runs the tool read, and reads per format.

    `pasted`: a corpus of pasted console logs, whose labels name the trainer (`framework`), not a format.
    """
    every, read = headline(scored), headline([s for s in scored if s.found])
    faulty = [s for s in scored if not s.label.healthy]
    by_format: dict[str, list[int]] = {}
    for s in scored:
        counts = by_format.setdefault(PASTED if pasted else FORMAT_NAMES.get(s.label.format, s.label.format), [0, 0])
        counts[0] += s.found
        counts[1] += 1
    return {**every, "read_only": read, "read_by_format": by_format,
            "generic_top": sum(1 for s in faulty if s.top.startswith("alarm:")),
            "alarms": sorted({f.code for s in scored for f in s.fired if f.code.startswith("alarm:")})}


# --------------------------------------------------------------------------- report


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def cell(h: dict, key: str, faulty_or_healthy: str) -> str:
    n = h[faulty_or_healthy]
    return "-" if not n else f"{fmt(h[key])} ({round(h[key] * n)}/{n})"


def markdown(results: dict[str, dict[str, dict]], stamp: str) -> str:
    lines = [stamp, "",
             "| corpus | tool | read | top-1 (faulty) | false alarm (healthy) | read only: top-1 | read only: false alarm |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for corpus, by_tool in results.items():
        for name, m in by_tool.items():
            r = m["read_only"]
            lines.append(f"| {corpus} | {name} | {m['read']}/{m['runs']} | {cell(m, 'top1', 'faulty')} | "
                         f"{cell(m, 'false_alarm', 'healthy')} | {cell(r, 'top1', 'faulty')} | "
                         f"{cell(r, 'false_alarm', 'healthy')} |")
    tools = [t for t in next(iter(results.values())) if t != SILENT]
    pooled: dict[str, dict[str, list[int]]] = {}
    for by_tool in results.values():
        for name in tools:
            for fmt_, (read, total) in by_tool[name]["read_by_format"].items():
                counts = pooled.setdefault(fmt_, {}).setdefault(name, [0, 0])
                counts[0] += read
                counts[1] += total
    lines += ["", "| runs read, by format (all corpora) | " + " | ".join(tools) + " |",
              "| --- |" + " --- |" * len(tools)]
    for fmt_ in sorted(pooled, key=lambda f: -next(iter(pooled[f].values()))[1]):
        lines.append(f"| {fmt_} | " + " | ".join("{}/{}".format(*pooled[fmt_][t]) for t in tools) + " |")
    return "\n".join(lines) + "\n"


def source_digest(src: Path) -> str:
    """A short digest of logdoctor's source files under `src`: what a cached logdoctor output was made by."""
    digest = hashlib.sha1()
    for path in sorted((src / "logdoctor").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(src).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:10]


def versions(venvs: Path, tools: list[Tool], src: Path) -> dict[str, str]:
    """The installed version of each tool, from its own environment's metadata; logdoctor's source."""
    found = {}
    for tool in tools:
        venv = venv_of(tool, venvs)
        if venv is None:
            head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
            found[tool.name] = f"main @ {head.stdout.strip()} (working tree)" if src.resolve() == ROOT else \
                f"{src} (source digest {source_digest(src)})"  # the cache stays true if the folder is reused
            continue
        stdout, _ = call([str(venv / "bin/python"), "-c",
                          f"import importlib.metadata as m; print(m.version({tool.name!r}))"], 60)
        found[tool.name] = stdout.strip() or "not installed"
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="labelled folders (labels.json inside)")
    ap.add_argument("--corpus", action="append", default=[], help=f"{', '.join(ORDER)}, or all (repeatable)")
    ap.add_argument("--tool", action="append", choices=list(BY_NAME), help="only these tools (repeatable)")
    ap.add_argument("--venvs", type=Path, default=Path("/tmp/ctools"), help="folder of venv-<tool> environments")
    ap.add_argument("--logdoctor-src", type=Path, default=ROOT, help="logdoctor source tree to measure")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per tool per input (default 120)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "logdoctor-compare-tools",
                    help="third-party outputs kept here between runs (never committed)")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--count-info", action="store_true",
                    help="other tools' info findings fire too (logdoctor's remarks stay remarks)")
    ap.add_argument("--json", type=Path, help="also write every number (and unread runs) as JSON here")
    ap.add_argument("--markdown", type=Path, help="also write the table as Markdown here")
    args = ap.parse_args(argv)

    names = list(ORDER) if "all" in args.corpus else args.corpus
    unknown = [n for n in names if n not in COMPARED_CORPORA]
    if unknown:
        ap.error(f"unknown corpus {', '.join(unknown)}")
    folders = [(n, COMPARED_CORPORA[n]) for n in names if (COMPARED_CORPORA[n] / "labels.json").exists()]
    folders += [(f.name, f.resolve()) for f in args.folders]  # the tools run from another folder
    if not folders:
        ap.error("no labelled corpus on disk (give --corpus or a folder)")
    tools = [t for t in TOOLS if not args.tool or t.name in args.tool]
    args.venvs = args.venvs.resolve()
    missing = [t.name for t in tools if (v := venv_of(t, args.venvs)) is not None and not (v / "bin/python").exists()]
    for name in missing:
        print(f"compare_tools: {name}: no environment at {args.venvs / f'venv-{name}'}; skipped", file=sys.stderr)
    tools = [t for t in tools if t.name not in missing]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.logdoctor_src.resolve()), os.environ.get("PYTHONPATH")]))
    cache = None if args.no_cache else args.cache
    found = versions(args.venvs, tools, args.logdoctor_src)
    cacheable = {t.name: t.package if t.name != "logdoctor" else "" if found[t.name].endswith("(working tree)")
                 else found[t.name] for t in tools}  # third-party: the pinned requirement it was installed from

    results: dict[str, dict[str, dict]] = {}
    runs: dict[str, dict[str, dict]] = {}  # per run: for a local look (--json), never published
    for corpus, folder in folders:  # one corpus, one tool at a time: the machine is shared
        results[corpus], runs[corpus] = {}, {}
        for tool in tools:
            started = time.monotonic()
            scored, notes = score_corpus(tool, folder, args.venvs, args.timeout, cache, cacheable[tool.name],
                                          sys.stderr.isatty(), args.count_info)
            results[corpus][tool.name] = m = summary(scored, pasted=corpus.endswith("-text"))
            runs[corpus][tool.name] = {s.run_id: {"label": s.label.main, "read": s.found, "right": s.right,
                                                  "fired": [f.code for f in s.fired], "notes": notes[s.run_id]}
                                       for s in scored}
            print(f"{corpus:<20} {tool.name:<13} read {m['read']:>3}/{m['runs']:<3} top-1 {fmt(m['top1'])}  "
                  f"false alarm {fmt(m['false_alarm'])}  | read only: top-1 {fmt(m['read_only']['top1'])}  "
                  f"false alarm {fmt(m['read_only']['false_alarm'])}  ({time.monotonic() - started:.0f} s)", flush=True)
        results[corpus][SILENT] = summary(silent(folder), pasted=corpus.endswith("-text"))
    stamp = (f"Measured {time.strftime('%Y-%m-%d')}: " + ", ".join(f"{k} {v}" for k, v in found.items())
             + ("; other tools' info findings counted as firing (--count-info)" if args.count_info else ""))
    print(stamp)
    if args.markdown:
        args.markdown.write_text(markdown(results, stamp), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"versions": found, "results": results, "runs": runs,
                                         "reads": {t.name: t.reads for t in tools}}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
